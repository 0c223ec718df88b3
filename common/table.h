/*
 * common/table.h - the one open-addressing hash table of the library
 * (private).
 *
 * Linear probing over cap slots (any cap >= 1; owners keep the load at
 * most 1/2, so a probe sequence always meets an empty slot), the home slot
 * of a key the high word of HOME(key) x cap, deletion by backward shift: no
 * tombstones, so probe lengths never build up however many keys come and
 * go.  Slots are the owner's type, so a table can hold bare keys (the trace
 * summary's id set), (key, value) pairs (the allocator's sequence map) or
 * ids whose keys live elsewhere (the paged prefix index keeps 4-byte block
 * ids and reads each block's hash from the block).  The owner allocates the
 * slots, counts the entries and rehashes (kvs_table_rehash-style loops over
 * the old slots with pfx_probe) when it grows.
 *
 * KVS_TABLE_DEFINE(pfx, SLOT, CTX, IS_EMPTY, KEY_OF, SET_EMPTY, HOME)
 *   IS_EMPTY(ctx, const SLOT *)  -> bool
 *   KEY_OF(ctx, const SLOT *)    -> uint64_t, for a full slot
 *   SET_EMPTY(ctx, SLOT *)
 *   HOME(uint64_t key)           -> uint64_t, well-mixed bits:
 *       kvs_table_mixed (kvs_mix64: any key family) or
 *       kvs_table_fibonacci (one multiply: dense consecutive ids)
 * defines
 *   pfx_probe(ctx, t, cap, key, &probes)  the slot holding key, or the empty
 *       slot ending its probe sequence (where it goes); probes += slots
 *       examined.  O(1) expected.
 *   pfx_vacate(ctx, t, cap, i)  empty full slot i, pulling later entries of
 *       its cluster back; returns the slots examined.
 */
#ifndef KVS_COMMON_TABLE_H
#define KVS_COMMON_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/mix.h"

static inline uint64_t kvs_table_mixed(uint64_t key)
{
	return kvs_mix64(key);
}

/* Fibonacci hashing: with a power-of-two cap the home is the top bits of
 * key x golden, which spreads consecutive ids perfectly. */
static inline uint64_t kvs_table_fibonacci(uint64_t key)
{
	return key * KVS_GOLDEN64;
}

#define KVS_TABLE_DEFINE(pfx, SLOT, CTX, IS_EMPTY, KEY_OF, SET_EMPTY, HOME) \
static inline uint64_t pfx##_home(uint64_t key_, uint64_t cap_) \
{ \
	return kvs_mul_range(HOME(key_), cap_); \
} \
static inline uint64_t pfx##_probe(CTX ctx_, const SLOT *t_, uint64_t cap_, \
				   uint64_t key_, uint64_t *probes_) \
{ \
	uint64_t i_ = pfx##_home(key_, cap_), n_ = 1; \
	for (;; n_++) { \
		if (IS_EMPTY(ctx_, &t_[i_]) || KEY_OF(ctx_, &t_[i_]) == key_) { \
			*probes_ += n_; \
			return i_; \
		} \
		i_ = i_ + 1 == cap_ ? 0 : i_ + 1; \
	} \
} \
static inline uint64_t pfx##_vacate(CTX ctx_, SLOT *t_, uint64_t cap_, uint64_t i_) \
{ \
	uint64_t j_ = i_, n_ = 0; \
	for (;;) { \
		j_ = j_ + 1 == cap_ ? 0 : j_ + 1; \
		n_++; \
		if (IS_EMPTY(ctx_, &t_[j_])) \
			break; \
		uint64_t k_ = pfx##_home(KEY_OF(ctx_, &t_[j_]), cap_); \
		bool stays_ = i_ <= j_ ? (i_ < k_ && k_ <= j_) : (i_ < k_ || k_ <= j_); \
		if (stays_) \
			continue; \
		t_[i_] = t_[j_]; \
		i_ = j_; \
	} \
	SET_EMPTY(ctx_, &t_[i_]); \
	return n_; \
}

#endif
