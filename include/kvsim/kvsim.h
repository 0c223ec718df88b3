/* kvsim/kvsim.h - umbrella header: includes every public kvsim header. */
#ifndef KVSIM_KVSIM_H
#define KVSIM_KVSIM_H

#include "kvsim/common.h"
#include "kvsim/model.h"
#include "kvsim/alloc.h"
#include "kvsim/trace.h"
#include "kvsim/sim.h"
#include "kvsim/fleet.h"
#include "kvsim/sweep.h"
#include "kvsim/kernels.h"
#include "kvsim/report.h"

#endif /* KVSIM_KVSIM_H */
