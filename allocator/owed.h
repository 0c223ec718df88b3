/*
 * allocator/owed.h - the engine's entry to the block pool (private to the
 * library).
 */
#ifndef KVSIM_ALLOC_OWED_H
#define KVSIM_ALLOC_OWED_H

#include "kvsim/alloc.h"

/* kvs_alloc_grow_taken for a caller that took each of the m ids with
 * kvs_alloc_blocks_take and has neither given nor granted it since (the
 * engine's owed blocks): the test that each id is pinned, once, runs only
 * with debug_checks >= 2, and each id's state word is written without
 * being read.  Otherwise the same call. */
kvs_status kvs_alloc_grow_owed(kvs_alloc *a, kvs_seq_id seq, uint32_t n,
			       uint32_t m, const kvs_block_id *ids);

#endif /* KVSIM_ALLOC_OWED_H */
