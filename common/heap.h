/*
 * common/heap.h - the one binary min-heap of the library (private).
 *
 * KVS_HEAP_DEFINE(pfx, T, less) defines static inline functions over an
 * array of T kept as an implicit binary heap (children of i at 2i+1 and
 * 2i+2) ordered by less(const T *a, const T *b), a strict weak order that
 * callers make total with a sequence number, so that pops are
 * deterministic.  The comparator is inlined: no function pointer on the
 * hot path (the simulator's event and decode heaps, the trace reader's
 * sort window and the generator's conversations all use it).  Room is the
 * caller's (KVS_ARRAY_RESERVE in common/array.h); the heap never allocates.
 *
 *   pfx_sift_up(h, i)        h[i] may be smaller than its parent
 *   pfx_sift_down(h, n, i)   h[i] may be larger than its children
 *   pfx_push(h, &n, v)       insert v (room for n + 1 entries), O(log n)
 *   pfx_pop(h, &n)           remove and return the least, n > 0, O(log n)
 *   pfx_remove_at(h, &n, i)  remove entry i (found by the caller), O(log n)
 *   pfx_is_valid(h, n)       every entry not less than its parent (KVS_VALID:
 *                            names the broken check), O(n)
 * Moves use a hole (one copy per level, not a swap).
 */
#ifndef KVS_COMMON_HEAP_H
#define KVS_COMMON_HEAP_H

#include <stdbool.h>
#include <stddef.h>

#include "kvsim/common.h"

#define KVS_HEAP_DEFINE(pfx, T, less) \
static inline void pfx##_sift_up(T *h_, size_t i_) \
{ \
	T e_ = h_[i_]; \
	while (i_ > 0) { \
		size_t p_ = (i_ - 1) / 2; \
		if (!less(&e_, &h_[p_])) \
			break; \
		h_[i_] = h_[p_]; \
		i_ = p_; \
	} \
	h_[i_] = e_; \
} \
static inline void pfx##_sift_down(T *h_, size_t n_, size_t i_) \
{ \
	T e_ = h_[i_]; \
	for (;;) { \
		size_t c_ = 2 * i_ + 1; \
		if (c_ >= n_) \
			break; \
		if (c_ + 1 < n_ && less(&h_[c_ + 1], &h_[c_])) \
			c_++; \
		if (!less(&h_[c_], &e_)) \
			break; \
		h_[i_] = h_[c_]; \
		i_ = c_; \
	} \
	h_[i_] = e_; \
} \
static inline void pfx##_push(T *h_, size_t *n_, T v_) \
{ \
	h_[*n_] = v_; \
	pfx##_sift_up(h_, (*n_)++); \
} \
static inline T pfx##_pop(T *h_, size_t *n_) \
{ \
	T top_ = h_[0]; \
	h_[0] = h_[--*n_]; \
	if (*n_ > 0) \
		pfx##_sift_down(h_, *n_, 0); \
	return top_; \
} \
static inline T pfx##_remove_at(T *h_, size_t *n_, size_t i_) \
{ \
	T out_ = h_[i_]; \
	h_[i_] = h_[--*n_]; \
	if (i_ < *n_) { \
		pfx##_sift_up(h_, i_); \
		pfx##_sift_down(h_, *n_, i_); \
	} \
	return out_; \
} \
static inline bool pfx##_is_valid(__typeof__(T) const *h_, size_t n_) \
{ \
	for (size_t i_ = 1; i_ < n_; i_++) \
		KVS_VALID(!less(&h_[i_], &h_[(i_ - 1) / 2])); \
	return true; \
}

#endif
