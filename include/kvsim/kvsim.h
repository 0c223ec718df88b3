/* kvsim/kvsim.h - umbrella header: includes every public kvsim header. */
#ifndef KVSIM_KVSIM_H
#define KVSIM_KVSIM_H

#include "kvsim/common.h"
#include "kvsim/model.h"
#include "kvsim/alloc.h"
#include "kvsim/trace.h"
#if __has_include("kvsim/sim.h")
#include "kvsim/sim.h"
#endif
#if __has_include("kvsim/fleet.h")
#include "kvsim/fleet.h"
#endif
#if __has_include("kvsim/sweep.h")
#include "kvsim/sweep.h"
#endif
#if __has_include("kvsim/kernels.h")
#include "kvsim/kernels.h"
#endif
#if __has_include("kvsim/report.h")
#include "kvsim/report.h"
#endif

#endif /* KVSIM_KVSIM_H */
