/*
 * fastmath.h - logarithm, exponential and cosine of doubles without a
 * call to libm, each within a stated bound of the true value.  They never
 * replace libm in a result: a caller uses one only where the bound proves
 * that libm's answer would give the same outcome (the same bucket, the
 * same whole number), and calls libm otherwise, so that outputs stay bit
 * for bit those of libm (sim/sketch.c's bucket index, traces/gen.c's
 * log-normal lengths).
 *
 * The tables are filled when the library loads; until then
 * kvs_fastmath_ready is false and callers take libm's path.
 *
 * The polynomials are evaluated in Estrin's scheme, not Horner's: the
 * terms in pairs, a + b x, combined with x^2 and x^4, so that the chain of
 * dependent multiplies and adds is about half as long (a length of the
 * generator is a chain of a logarithm, a square root, a cosine and an
 * exponential, each waiting on the last; the sketch's bucket waits on its
 * logarithm).  The bounds below hold for this order of evaluation; the
 * tests check them against long double.
 */
#ifndef KVSIM_FASTMATH_H
#define KVSIM_FASTMATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define KVS_LN_BITS 7
#define KVS_LN_N (1 << KVS_LN_BITS)
#define KVS_EXP_BITS 6
#define KVS_EXP_N (1 << KVS_EXP_BITS)

__attribute__((visibility("hidden"))) extern double kvs_ln_inv_c[KVS_LN_N];
__attribute__((visibility("hidden"))) extern double kvs_ln_neg_log_inv[KVS_LN_N];
__attribute__((visibility("hidden"))) extern double kvs_exp2_frac[KVS_EXP_N];
__attribute__((visibility("hidden"))) extern double kvs_cos_poly[9], kvs_sin_poly[9];
__attribute__((visibility("hidden"))) extern bool kvs_fastmath_ready;

/*
 * ln v for a positive normal double v (the caller checks: biased exponent
 * 1..2046).  ln v = e ln 2 + ln m, m in [1, 2), and ln m = -ln(1/c) +
 * ln(1 + r), r = m (1/c) - 1, with c the centre of m's 1/128 of [1, 2)
 * (|r| < 1/256) and ln(1 + r) to the fifth power of r (truncation below
 * 6e-16).  Absolute error at most 1e-15 + 2 ulp(|e ln 2| + 1), about 1e-13
 * for the largest exponents; libm's log is within one ulp.
 */
static inline double kvs_fast_ln(double v)
{
	uint64_t b;
	memcpy(&b, &v, sizeof b);
	uint64_t eb = b >> 52;
	uint64_t mb = (b & ((1ull << 52) - 1)) | (1023ull << 52);
	double m;
	memcpy(&m, &mb, sizeof m);
	uint32_t j = (uint32_t)(b >> (52 - KVS_LN_BITS)) & (KVS_LN_N - 1);
	double r = m * kvs_ln_inv_c[j] - 1.0;
	double r2 = r * r;
	double p = r + r2 * ((-0.5 + r * (1.0 / 3.0)) + r2 * (-0.25 + r * 0.2));
	return (double)((int64_t)eb - 1023) * M_LN2 + kvs_ln_neg_log_inv[j] + p;
}

/*
 * e^t for -700 < t < 700 (the caller checks).  t = (k / 64) ln 2 + r, k
 * the nearest whole number to 64 t / ln 2, ln 2 / 64 in two parts (the
 * first, times any such k, exact), so |r| <= ln 2 / 128 to within 1e-19;
 * e^t = 2^(k / 64) e^r with 2^(j / 64) from a table of 64 and e^r to the
 * fifth power of r (truncation below 4e-17).  Relative error at most
 * 1e-15.
 */
static inline double kvs_fast_exp(double t)
{
	/* fdlibm's split of ln 2: the high part's low 32 bits are zero */
	const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
	const double shift = 0x1.8p52;
	double kd = t * (KVS_EXP_N / M_LN2) + shift;
	uint64_t kb;
	memcpy(&kb, &kd, sizeof kb);
	int64_t k = (int64_t)(int32_t)(uint32_t)kb;   /* |k| < 2^17 */
	kd -= shift;
	double r = (t - kd * (ln2_hi / KVS_EXP_N)) - kd * (ln2_lo / KVS_EXP_N);
	double r2 = r * r;
	double p = (1.0 + r) + r2 * ((0.5 + r * (1.0 / 6.0)) + r2 * (1.0 / 24.0 + r * (1.0 / 120.0)));
	uint64_t sb = (uint64_t)((k >> KVS_EXP_BITS) + 1023) << 52;   /* 2^floor(k / 64) */
	double scale;
	memcpy(&scale, &sb, sizeof scale);
	return scale * kvs_exp2_frac[k & (KVS_EXP_N - 1)] * p;
}

/*
 * cos(2 pi u) for 0 <= u < 1 a multiple of 2^-53 (what kvs_rng_uniform
 * returns).  4u = q + f exactly, q whole, |f| <= 1/2, and cos(2 pi u) is
 * +-cos or +-sin of (pi / 2) f, each a Taylor polynomial in f to the
 * 16th or 17th power (truncation below 1e-17).  Absolute error at most
 * 5e-16.  (libm's cos(2.0 * M_PI * u) is the cosine of that product
 * rounded, which lies within 9e-16 of 2 pi u.)
 */
static inline double kvs_cos_2pi(double u)
{
	double w = 4.0 * u;
	int32_t q = (int32_t)(w + 0.5);
	double f = w - (double)q;
	double f2 = f * f;
	const double *c = (q & 1) ? kvs_sin_poly : kvs_cos_poly;
	double f4 = f2 * f2, f8 = f4 * f4;
	double s = ((c[0] + f2 * c[1]) + f4 * (c[2] + f2 * c[3])) +
		   f8 * (((c[4] + f2 * c[5]) + f4 * (c[6] + f2 * c[7])) + f8 * c[8]);
	if (q & 1)
		s *= f;
	return ((q + 1) & 2) ? -s : s;
}

/* The three as calls, for the tests (the tables are the library's own). */
double kvs_fastmath_ln(double v);
double kvs_fastmath_exp(double t);
double kvs_fastmath_cos_2pi(double u);

#endif /* KVSIM_FASTMATH_H */
