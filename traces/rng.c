/*
 * rng.c - xoshiro256** seeded through splitmix64, and the few distributions
 * the generator and the Poisson re-timing need.  Integer arithmetic only in
 * the generator core, so a seed gives the same stream on every platform.
 */
#include "trace_internal.h"
#include "common/fastmath.h"
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

double kvs_normal_of(double u1, double u2)
{
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double kvs_rng_normal(kvs_rng *r)
{
	/* Box-Muller, one value per call (the second is dropped to keep the
	 * state a pure function of the number of calls). */
	double u1 = kvs_rng_uniform_pos(r);
	double u2 = kvs_rng_uniform(r);
	return kvs_normal_of(u1, u2);
}

/*
 * exp(mu + sigma kvs_normal_of(u1, u2)) through common/fastmath.h.  How
 * far it can lie from libm's value of the same expression, step by step
 * (each libm function within one ulp of the true value):
 *  - ln u1 (u1 >= 2^-54): both within 2.2e-14 of each other, |ln u1| >=
 *    0.69, for u1 < 1/2; within 1.6e-15 for u1 >= 1/2, where |ln u1| >=
 *    9.8e-4 (u1 <= 1 - 2^-10; above that the relative error of the
 *    difference grows without bound, and libm's path is taken); so
 *    sqrt(-2 ln u1), which moves by d / sqrt(2 |ln u1|) when ln u1
 *    moves by d, differs by at most 3.6e-14, 3.8e-14 with its rounding;
 *  - cos: this one within 5e-16 of cos(2 pi u2); libm's is the cosine
 *    of 2 pi u2 rounded twice (within 7e-16), to one ulp: 1.3e-15 apart;
 *  - z = the product, |sqrt(-2 ln u1)| <= 8.65: 5.2e-14 apart, rounding
 *    included;
 *  - t = mu + sigma z, rounded twice each: |sigma| 5.2e-14 + 2 ulp(t),
 *    the second term at most 2.3e-13 for |t| < 700;
 *  - e^t: this one within 1e-15 relative, libm's one ulp.
 * So y lies within y (1 + |sigma|) 2.4e-13, under y (1 + |sigma|) 2^-41,
 * of libm's value.  false (y not
 * written) where the path does not apply: u1 > 1 - 2^-10, t outside
 * (-700, 40), or the tables not yet filled.
 */
static inline __attribute__((always_inline)) bool
lognormal_fast(double u1, double u2, double mu, double sigma, double *y)
{
	if (!kvs_fastmath_ready || !(u1 <= 1.0 - 0x1p-10))
		return false;
	double t = mu + sigma * (sqrt(-2.0 * kvs_fast_ln(u1)) * kvs_cos_2pi(u2));
	if (!(t > -700.0 && t < 40.0))
		return false;
	*y = kvs_fast_exp(t);
	return true;
}

bool kvs_lognormal_fast(double u1, double u2, double mu, double sigma, double *y)
{
	return lognormal_fast(u1, u2, mu, sigma, y);
}

/* floor(y + 0.5) clamped to [1, max_tokens], for y >= 0, without the
 * floor: a positive value's conversion truncates, which is its floor, and
 * floor(z) > max exactly when z >= max + 1 */
static inline uint32_t round_to_len(double y, uint32_t max_tokens)
{
	double z = y + 0.5;
	if (!(z >= 1))
		return 1;
	if (z >= (double)max_tokens + 1.0)
		return max_tokens;
	return (uint32_t)z;
}

/* The value without libm where its error bound keeps y + 0.5 clear of
 * whole numbers (every test in round_to_len is then decided alike for it
 * and for libm's value), else libm's: the length is libm's in every case.
 * The margin, 2^-30 of y per unit of 1 + |sigma|, is 2,048 times the
 * bound.  About one draw in a thousand goes to libm, nearly all of them
 * with u1 > 1 - 2^-10. */
static inline uint32_t lognormal_len(double u1, double u2, double mu, double sigma,
				     uint32_t max_tokens)
{
	double y;
	if (lognormal_fast(u1, u2, mu, sigma, &y)) {
		double z = y + 0.5, f = z - floor(z), e = y * 0x1p-30 * (1.0 + fabs(sigma));
		if (KVS_LIKELY(f > e && f < 1.0 - e))
			return round_to_len(y, max_tokens);
	}
	return round_to_len(exp(mu + sigma * kvs_normal_of(u1, u2)), max_tokens);
}

uint32_t kvs_lognormal_len(double u1, double u2, double mu, double sigma, uint32_t max_tokens)
{
	return lognormal_len(u1, u2, mu, sigma, max_tokens);
}

uint32_t kvs_rng_lognormal_len(kvs_rng *r, double mu, double sigma, uint32_t max_tokens)
{
	double u1 = kvs_rng_uniform_pos(r);
	double u2 = kvs_rng_uniform(r);
	return lognormal_len(u1, u2, mu, sigma, max_tokens);
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
