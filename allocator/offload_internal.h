/*
 * offload_internal.h - the KV offload tiers behind a paged allocator
 * (allocator/offload.c), called by paged.c at two points only: when the
 * device prefix cache evicts a hashed block (kvs_offload_store) and when an
 * admission's device prefix hit ends (kvs_offload_match).
 */
#ifndef KVSIM_OFFLOAD_INTERNAL_H
#define KVSIM_OFFLOAD_INTERNAL_H

#include "alloc_internal.h"

typedef struct kvs_offload kvs_offload;

/* True when cfg names at least one tier. */
bool kvs_offload_configured(const kvs_offload_config *cfg);

/* Tiers of cfg for blocks of block_bytes bytes.  KVS_ERR_INVALID naming the
 * tier when its size holds no block or its bandwidth is not positive. */
kvs_status kvs_offload_create(const kvs_offload_config *cfg, uint64_t block_bytes,
			      kvs_offload **out);
void kvs_offload_destroy(kvs_offload *o);

/* The device evicted the cached block of hash h: it enters the first tier
 * (or becomes its most recent entry when there already; a copy in the disk
 * tier moves up to the host tier), whose least recent entry, when full,
 * cascades to the next tier or is dropped.  O(1) expected. */
void kvs_offload_store(kvs_offload *o, uint64_t h);

/* The longest run of h[0..n) held by the tiers (each hash in any tier):
 * those blocks are loaded back.  Each becomes its tier's most recent entry
 * and its load time is added to the pending load.  O(run + 1) expected. */
uint32_t kvs_offload_match(kvs_offload *o, const uint64_t *h, uint32_t n);

/* The tier holding h (KVS_OFFLOAD_HOST or KVS_OFFLOAD_DISK) or -1; no side
 * effects (tests).  O(1) expected. */
int kvs_offload_where(const kvs_offload *o, uint64_t h);

void kvs_offload_get_stats(const kvs_offload *o, kvs_offload_stats *out);
/* The pending load time, reset to 0. */
double kvs_offload_take_load_s(kvs_offload *o);

/* Full check: lists, index and counters agree; no hash in two tiers.
 * O(resident blocks). */
bool kvs_offload_is_valid(const kvs_offload *o);

#endif /* KVSIM_OFFLOAD_INTERNAL_H */
