/*
 * allocator/owed.h - the engine's entries to the allocator (private to the
 * library): calls whose callers have already made the checks the public
 * ones repeat.
 */
#ifndef KVSIM_ALLOC_OWED_H
#define KVSIM_ALLOC_OWED_H

#include "kvsim/alloc.h"

/* kvs_alloc_grow_taken for a caller that took each of the m ids with
 * kvs_alloc_blocks_take_owed (pin as it gave there) and has neither given
 * nor granted it since (the engine's owed blocks): the test that each id
 * is pinned, once, runs only with debug_checks >= 2; unpinned, the ids
 * already hold a table's state word and none is written; pinned, each is
 * written without being read.  Otherwise the same call. */
kvs_status kvs_alloc_grow_owed(kvs_alloc *a, kvs_seq_id seq, uint32_t n,
			       uint32_t m, const kvs_block_id *ids, bool pin);

/* kvs_alloc_grow_owed followed by kvs_alloc_release of seq, in one call
 * (a sequence that finishes with owed blocks): the pool, the account and
 * the record's buffers end as the two calls leave them, without the ids
 * passing through the table. */
kvs_status kvs_alloc_release_owed(kvs_alloc *a, kvs_seq_id seq, uint32_t n,
				  uint32_t m, const kvs_block_id *ids, bool pin);

/* kvs_alloc_blocks_take for blocks that will go to kvs_alloc_grow_owed:
 * unless pin (a caller that runs the validator) or debug_checks >= 2,
 * each taken id holds state word 1 (a table's) instead of being marked
 * taken: ids a lazy release left on the stack keep theirs, the others
 * get it, so that neither call reads a state word or writes it twice.
 * The validator would not know such a block: the caller pins whenever it
 * runs it. */
kvs_status kvs_alloc_blocks_take_owed(kvs_alloc *a, uint32_t n, kvs_block_id *ids,
				      bool pin);

/* kvs_alloc_admit for a caller whose kvs_alloc_can_admit(d) just said
 * NOW, nothing having changed since: the verdict is not asked again (it
 * is with debug_checks >= 2); the description's own checks still run. */
kvs_status kvs_alloc_admit_now(kvs_alloc *a, const kvs_seq_desc *d,
			       uint32_t *cached_tokens);

#endif /* KVSIM_ALLOC_OWED_H */
