/*
 * common/array.h - the one array-growth helper of the library (private).
 *
 * Growable arrays are a pointer and a capacity (and a count kept by the
 * owner).  KVS_ARRAY_RESERVE(arr, cap, need, min_cap) makes room for need
 * elements: when cap < need it doubles cap (starting at min_cap) until it
 * holds need and reallocates through kvs_reallocarray.  It evaluates to true
 * on success; on overflow (of the byte count or of cap's own type) or
 * allocation failure it is false and leaves arr and cap untouched, so the
 * caller returns KVS_ERR_NOMEM with its own message.  Amortised O(1) per
 * appended element; the growth itself is out of line (kvs_array_grow).
 */
#ifndef KVS_COMMON_ARRAY_H
#define KVS_COMMON_ARRAY_H

#include <stdbool.h>
#include <stddef.h>

#include "kvsim/common.h"

/* *p holds *cap elements of size elem; grow both so that *cap >= need (see
 * above).  limit is the largest capacity cap's type can hold. */
bool kvs_array_grow(void **p, size_t *cap, size_t need, size_t elem,
		    size_t min_cap, size_t limit);

#define KVS_ARRAY_RESERVE(arr, cap, need, min_cap) \
	__extension__({ \
		bool ok_ = true; \
		if (KVS_UNLIKELY((size_t)(need) > (size_t)(cap))) { \
			void *p_ = (arr); \
			size_t c_ = (size_t)(cap); \
			__typeof__(cap) lim_ = (__typeof__(cap))~(__typeof__(cap))0; \
			ok_ = kvs_array_grow(&p_, &c_, (size_t)(need), sizeof *(arr), \
					     (min_cap), (size_t)lim_); \
			if (ok_) { \
				(arr) = p_; \
				(cap) = (__typeof__(cap))c_; \
			} \
		} \
		ok_; \
	})

#endif
