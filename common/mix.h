/*
 * common/mix.h - the one 64-bit mixer of the library (private).
 *
 * kvs_mix64 is splitmix64's finaliser (Steele, Lea and Flood, "Fast
 * splittable pseudorandom number generators", OOPSLA 2014): a bijection on
 * 64 bits with full avalanche, so any key family (consecutive ids, strided
 * or split ids, chained hashes) behaves like random bits.  It seeds the
 * PRNG (traces/rng.c), finishes the prefix hashes (allocator/alloc.c) and
 * spreads the keys of the open-addressing tables (common/table.h).
 * Cost: two multiplies and three shifts, about 1 ns.
 */
#ifndef KVS_COMMON_MIX_H
#define KVS_COMMON_MIX_H

#include <stdint.h>

/* 2^64 / golden ratio, odd: splitmix64's increment and Fibonacci hashing's
 * multiplier. */
#define KVS_GOLDEN64 0x9e3779b97f4a7c15ull

static inline uint64_t kvs_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* The 128-bit product of a and b folded to 64 bits (high ^ low): spreads
 * every input bit of both words over the result (prefix hashes). */
static inline uint64_t kvs_mul_fold(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* x scaled into [0, n): the high word of x * n (Lemire's range reduction,
 * no division; uses x's top bits, so x must be well mixed). */
static inline uint64_t kvs_mul_range(uint64_t x, uint64_t n)
{
	return (uint64_t)(((__uint128_t)x * n) >> 64);
}

#endif
