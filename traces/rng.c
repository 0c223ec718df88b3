/*
 * rng.c - xoshiro256** seeded through splitmix64, and the few distributions
 * the generator and the Poisson re-timing need.  Integer arithmetic only in
 * the generator core, so a seed gives the same stream on every platform.
 */
#include "trace_internal.h"
#include "common/mix.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
	return kvs_mix64(*x += KVS_GOLDEN64);
}

void kvs_rng_seed(kvs_rng *r, uint64_t seed)
{
	uint64_t x = seed;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t kvs_rng_u64(kvs_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double kvs_rng_uniform(kvs_rng *r)
{
	return (double)(kvs_rng_u64(r) >> 11) * 0x1.0p-53;
}

double kvs_rng_uniform_pos(kvs_rng *r)
{
	return ((double)(kvs_rng_u64(r) >> 11) + 0.5) * 0x1.0p-53;
}

double kvs_rng_exp(kvs_rng *r, double rate)
{
	return -log(kvs_rng_uniform_pos(r)) / rate;
}

double kvs_rng_normal(kvs_rng *r)
{
	/* Box-Muller, one value per call (the second is dropped to keep the
	 * state a pure function of the number of calls). */
	double u1 = kvs_rng_uniform_pos(r);
	double u2 = kvs_rng_uniform(r);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Marsaglia and Tsang (2000); shape < 1 through gamma(shape + 1) * U^(1/shape). */
double kvs_rng_gamma(kvs_rng *r, double shape, double scale)
{
	if (shape < 1.0) {
		double u = kvs_rng_uniform_pos(r);
		return kvs_rng_gamma(r, shape + 1.0, scale) * pow(u, 1.0 / shape);
	}
	double d = shape - 1.0 / 3.0;
	double c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		double x, v;
		do {
			x = kvs_rng_normal(r);
			v = 1.0 + c * x;
		} while (v <= 0.0);
		v = v * v * v;
		double u = kvs_rng_uniform_pos(r);
		if (u < 1.0 - 0.0331 * x * x * x * x)
			return d * v * scale;
		if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
			return d * v * scale;
	}
}

uint64_t kvs_rng_below(kvs_rng *r, uint64_t n)
{
	/* Lemire's multiply-shift with rejection: unbiased. */
	if (n == 0)
		return 0;
	unsigned __int128 m = (unsigned __int128)kvs_rng_u64(r) * n;
	uint64_t lo = (uint64_t)m;
	if (lo < n) {
		uint64_t t = -n % n;
		while (lo < t) {
			m = (unsigned __int128)kvs_rng_u64(r) * n;
			lo = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}
