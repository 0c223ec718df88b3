/*
 * sketch.c - bounded-memory quantiles of latencies.
 *
 * A log-bucketed histogram: value v > 0 falls in bucket i = ceil(log_g v)
 * with g = (1 + a) / (1 - a), a = 0.001, and is represented by
 * 2 g^i / (g + 1), within a relative 0.1% of every value in the bucket.
 * The bucket array covers the range of indices seen so far and grows at
 * either end, at least doubling each time: about 6,900 buckets (55 KiB)
 * span six decades, whatever the number of values (the array is less
 * than three times the range it covers).  min, max, sum and count are exact.  Quantiles
 * interpolate linearly between the two ranks around q (count - 1), numpy's
 * default method.  Deterministic: the
 * same values in any order give the same answers.
 */
#include "sim_internal.h"
#include "common/fastmath.h"

#include <math.h>
#include <string.h>

#define SKETCH_ALPHA 0.001
#define SKETCH_ZERO 1e-12

static double sketch_log_gamma(void)
{
	return log((1.0 + SKETCH_ALPHA) / (1.0 - SKETCH_ALPHA));
}

void kvs_sketch_init(kvs_sketch *s)
{
	memset(s, 0, sizeof *s);
}

void kvs_sketch_free(kvs_sketch *s)
{
	kvs_free(s->counts);
	memset(s, 0, sizeof *s);
}

/* The n counts of buckets lo.. in a new array of the m buckets from nlo
 * (covering them), zero elsewhere; the old array is freed.  NULL on
 * failure, the old array kept.  Not calloc: a large calloc of reused
 * memory is zeroed by the kernel (a page purge and a fault per page, and
 * with threads a TLB shootdown on every other core); only the new
 * buckets are cleared here. */
static uint64_t *widen(uint64_t *old, int32_t lo, uint32_t n, int32_t nlo, uint32_t m)
{
	uint64_t *c = kvs_malloc((size_t)m * sizeof *c);
	if (!c)
		return NULL;
	size_t head = n ? (size_t)(lo - nlo) : m;
	memset(c, 0, head * sizeof *c);
	if (n) {
		memcpy(c + head, old, (size_t)n * sizeof *c);
		memset(c + head + n, 0, (m - head - n) * sizeof *c);
	}
	kvs_free(old);
	return c;
}

kvs_status kvs_sketch_add(kvs_sketch *s, double v)
{
	return kvs_sketch_add_n(s, v, 1);
}

/* ceil(log(v) / log g): the definition of v's bucket. */
int32_t kvs_sketch_bucket_exact(double v)
{
	return (int32_t)ceil(log(v) / sketch_log_gamma());
}

/*
 * The same index without a call to log in all but about one value in a
 * million: common/fastmath.h's logarithm is within about 1e-13 of ln v,
 * and so is log's: in units of a bucket (ln g = 0.002) both are within
 * about 1e-10 of ln v / ln g.  When the approximation lies farther than
 * 1e-7 from a whole number, both have the same ceiling; otherwise (and
 * before the tables are set up, and for subnormals and infinities) log
 * decides.  The tests compare the two on values across 24 decades and at
 * every bucket boundary's neighbours.
 */
static inline int32_t bucket_fast(double v)
{
	uint64_t b;
	memcpy(&b, &v, sizeof b);
	uint64_t eb = b >> 52;   /* v > 0: the sign bit is clear */
	if (KVS_UNLIKELY(eb - 1 >= 0x7fe || !kvs_fastmath_ready))   /* subnormal, inf */
		return kvs_sketch_bucket_exact(v);
	double y = kvs_fast_ln(v) * (1.0 / sketch_log_gamma());
	int32_t t = (int32_t)y;                 /* toward zero */
	int32_t n = t + ((double)t < y);       /* the ceiling */
	double d = (double)n - y;
	if (KVS_LIKELY(d > 1e-7 && d < 1.0 - 1e-7))
		return n;
	return kvs_sketch_bucket_exact(v);
}

int32_t kvs_sketch_bucket(double v)
{
	return bucket_fast(v);
}

/* v's bucket index (0 for a zero); v clamped to >= 0 */
static int32_t bucket_of(double *v, bool *zero)
{
	if (!(*v >= 0))
		*v = 0;   /* latencies are never negative; guards rounding */
	*zero = *v <= SKETCH_ZERO;
	return *zero ? 0 : bucket_fast(*v);
}

/* Room for bucket i (the first bucket, or the array widened toward it);
 * on failure nothing changes */
static __attribute__((noinline)) kvs_status sketch_room(kvs_sketch *s, int32_t i)
{
	if (s->n == 0) {
		s->counts = kvs_calloc(64, sizeof *s->counts);
		if (!s->counts)
			return kvs_fail(KVS_ERR_NOMEM, "out of memory (quantile sketch)");
		s->n = 64;
		s->lo = i - 32;
	}
	if (i < s->lo || i >= s->lo + (int32_t)s->n) {
		/* the range at least doubles toward i (64 buckets past it at
		 * least): a sketch whose values spread over decades grows
		 * in a logarithmic number of copies, not one per 64 buckets */
		int32_t end = s->lo + (int32_t)s->n, grow = (int32_t)s->n;
		int32_t lo = s->lo, hi = end;
		if (i < s->lo)
			lo = i - 64 < s->lo - grow ? i - 64 : s->lo - grow;
		if (i >= end)
			hi = i + 64 > end + grow ? i + 64 : end + grow;
		uint32_t n = (uint32_t)(hi - lo);
		uint64_t *c = widen(s->counts, s->lo, s->n, lo, n);
		if (!c)
			return kvs_fail(KVS_ERR_NOMEM, "out of memory (quantile sketch)");
		s->counts = c;
		s->lo = lo;
		s->n = n;
	}
	return KVS_OK;
}

/* s's min and max widened to [lo, hi], and (with values not zero) its
 * range of buckets holding them to [nlo, nhi]: one value (add) or
 * another sketch (merge); s's counts not yet updated */
static inline void widen_bounds(kvs_sketch *s, double lo, double hi, bool nonzero,
				int32_t nlo, int32_t nhi)
{
	if (s->count == 0) {
		s->min = lo;
		s->max = hi;
	} else {
		if (lo < s->min)
			s->min = lo;
		if (hi > s->max)
			s->max = hi;
	}
	if (nonzero) {
		if (s->count == s->zeros) {
			s->nz_lo = nlo;   /* the first values not zero */
			s->nz_hi = nhi;
		} else {
			if (nlo < s->nz_lo)
				s->nz_lo = nlo;
			if (nhi > s->nz_hi)
				s->nz_hi = nhi;
		}
	}
}

static inline kvs_status add_at(kvs_sketch *s, double v, int32_t i, bool zero, uint64_t times)
{
	if (!zero && KVS_UNLIKELY(i < s->lo || i >= s->lo + (int32_t)s->n)) {
		/* room for the bucket first (n == 0: no bucket yet) */
		kvs_status st = sketch_room(s, i);
		if (st != KVS_OK)
			return st;
	}
	widen_bounds(s, v, v, !zero, i, i);
	s->count += times;
	s->sum += times == 1 ? v : v * (double)times;
	if (zero)
		s->zeros += times;
	else
		s->counts[i - s->lo] += times;
	return KVS_OK;
}

kvs_status kvs_sketch_add_n(kvs_sketch *s, double v, uint64_t times)
{
	if (times == 0)
		return KVS_OK;
	bool zero;
	int32_t i = bucket_of(&v, &zero);
	return add_at(s, v, i, zero, times);
}

kvs_status kvs_sketch_add2(kvs_sketch *a, kvs_sketch *b, double v, uint64_t times_b)
{
	bool zero;
	int32_t i = bucket_of(&v, &zero);
	kvs_status st = add_at(a, v, i, zero, 1);
	if (st == KVS_OK && times_b)
		st = add_at(b, v, i, zero, times_b);
	return st;
}

/* The array positions of the buckets holding values that are not zero:
 * [first_used, end_used) (empty when every value is a zero); the array
 * at least doubles as it grows, so most of it can be empty. */
static uint32_t first_used(const kvs_sketch *s)
{
	return s->count > s->zeros ? (uint32_t)(s->nz_lo - s->lo) : 0;
}

static uint32_t end_used(const kvs_sketch *s)
{
	return s->count > s->zeros ? (uint32_t)(s->nz_hi - s->lo) + 1 : 0;
}

double kvs_sketch_std(const kvs_sketch *s)
{
	/* population standard deviation (numpy's np.std, ddof 0) about the
	 * exact mean, each value at its bucket's representative */
	if (s->count < 2)
		return 0;
	double mean = s->sum / (double)s->count;
	double lg = sketch_log_gamma(), g = exp(lg);
	double ss = (double)s->zeros * mean * mean;
	for (uint32_t k = first_used(s); k < end_used(s); k++) {
		if (!s->counts[k])
			continue;
		double v = 2.0 * exp((double)(s->lo + (int32_t)k) * lg) / (g + 1.0);
		if (v < s->min)
			v = s->min;
		if (v > s->max)
			v = s->max;
		ss += (double)s->counts[k] * (v - mean) * (v - mean);
	}
	return sqrt(ss / (double)s->count);
}

/* The value of 0-based ascending rank `rank` (< count): min for the zeros,
 * else its bucket's representative clamped to [min, max]. */
static double sketch_at_rank(const kvs_sketch *s, uint64_t rank)
{
	if (rank < s->zeros)
		return s->min;
	if (rank + 1 >= s->count)
		return s->max;
	uint64_t seen = s->zeros;
	double lg = sketch_log_gamma(), g = exp(lg);
	for (uint32_t k = first_used(s); k < end_used(s); k++) {
		seen += s->counts[k];
		if (seen > rank) {
			double v = 2.0 * exp((double)(s->lo + (int32_t)k) * lg) / (g + 1.0);
			if (v < s->min)
				v = s->min;
			if (v > s->max)
				v = s->max;
			return v;
		}
	}
	return s->max;
}

double kvs_sketch_quantile(const kvs_sketch *s, double q)
{
	if (s->count == 0)
		return 0;
	if (q <= 0)
		return s->min;
	if (q >= 1)
		return s->max;
	/* numpy's default ("linear", Hyndman-Fan type 7, as pandas and vLLM's
	 * benchmark report): h = q (count - 1), the values of ranks floor(h)
	 * and floor(h) + 1 weighted by the fraction of h */
	double h = q * (double)(s->count - 1);
	uint64_t lo = (uint64_t)floor(h);
	double frac = h - (double)lo;
	double a = sketch_at_rank(s, lo);
	if (frac <= 0 || lo + 1 >= s->count)
		return a;
	double b = sketch_at_rank(s, lo + 1);
	return a + frac * (b - a);
}

void kvs_sketch_dist(const kvs_sketch *s, kvs_sim_dist *out)
{
	memset(out, 0, sizeof *out);
	out->count = s->count;
	if (!s->count)
		return;
	out->mean = s->sum / (double)s->count;
	out->p50 = kvs_sketch_quantile(s, 0.50);
	out->p90 = kvs_sketch_quantile(s, 0.90);
	out->p99 = kvs_sketch_quantile(s, 0.99);
	out->max = s->max;
}

kvs_status kvs_sketch_merge(kvs_sketch *dst, const kvs_sketch *src)
{
	if (src->count == 0)
		return KVS_OK;
	if (src->n) {
		int32_t lo = dst->n ? (src->lo < dst->lo ? src->lo : dst->lo) : src->lo;
		int32_t hi_d = dst->lo + (int32_t)dst->n, hi_s = src->lo + (int32_t)src->n;
		int32_t hi = dst->n ? (hi_s > hi_d ? hi_s : hi_d) : hi_s;
		if (!dst->n || lo < dst->lo || hi > hi_d) {
			uint64_t *c = widen(dst->counts, dst->lo, dst->n, lo, (uint32_t)(hi - lo));
			if (!c)
				return kvs_fail(KVS_ERR_NOMEM, "out of memory (quantile sketch)");
			dst->counts = c;
			dst->lo = lo;
			dst->n = (uint32_t)(hi - lo);
		}
		for (uint32_t k = 0; k < src->n; k++)
			dst->counts[src->lo - dst->lo + (int32_t)k] += src->counts[k];
	}
	widen_bounds(dst, src->min, src->max, src->count > src->zeros, src->nz_lo,
		     src->nz_hi);
	dst->count += src->count;
	dst->zeros += src->zeros;
	dst->sum += src->sum;
	return KVS_OK;
}
