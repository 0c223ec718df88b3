/*
 * kernels_ref.c - element types, layout and batch validation, and the plain
 * C reference kernels: the oracle every CUDA kernel is tested against.
 *
 * The references favour clarity and accuracy over speed: FP64 arithmetic,
 * one (sequence, kv head) at a time, each K and V row converted once and
 * used by every query head of its group.  Paged and contiguous attention
 * share one core (attend()); they differ only in how a token's row is found,
 * so the paged result equals the contiguous one bit for bit when the data
 * are the same.
 *
 * Online softmax, per query head over the tokens of one partition:
 *   m = max score so far, l = sum exp(s - m), acc = sum exp(s - m) v;
 * a larger score s' rescales l and acc by exp(m - s').  Partitions keep
 * (m, l, acc / l) and merge as the CUDA reduction does:
 *   out = sum_p l_p e^(m_p - M) o_p / sum_p l_p e^(m_p - M),  M = max_p m_p.
 */
#include "kvs_config.h"
#include "kernels_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- element types -------------------------------------------------------- */

static const char *const dtype_names[KVS_KV_DTYPE_COUNT_] = {
	[KVS_KV_F32] = "f32", [KVS_KV_F16] = "f16", [KVS_KV_BF16] = "bf16",
};

const char *kvs_kv_dtype_name(kvs_kv_dtype dt)
{
	return (unsigned)dt < KVS_KV_DTYPE_COUNT_ ? dtype_names[dt] : NULL;
}

kvs_status kvs_kv_dtype_parse(const char *text, kvs_kv_dtype *out)
{
	static const struct { const char *name; kvs_kv_dtype dt; } names[] = {
		{ "f32", KVS_KV_F32 }, { "fp32", KVS_KV_F32 },
		{ "float32", KVS_KV_F32 }, { "float", KVS_KV_F32 },
		{ "f16", KVS_KV_F16 }, { "fp16", KVS_KV_F16 },
		{ "float16", KVS_KV_F16 }, { "half", KVS_KV_F16 },
		{ "bf16", KVS_KV_BF16 }, { "bfloat16", KVS_KV_BF16 },
	};
	if (!text)
		return kvs_fail(KVS_ERR_INVALID, "kv dtype: missing value");
	for (size_t i = 0; i < KVS_ARRAY_LEN(names); i++) {
		if (strcmp(text, names[i].name) == 0) {
			*out = names[i].dt;
			return KVS_OK;
		}
	}
	return kvs_fail(KVS_ERR_INVALID,
			"kv dtype: unknown \"%s\" (expected f32, f16 or bf16)", text);
}

size_t kvs_kv_dtype_size(kvs_kv_dtype dt)
{
	switch (dt) {
	case KVS_KV_F32: return 4;
	case KVS_KV_F16:
	case KVS_KV_BF16: return 2;
	default: return 0;
	}
}

static uint32_t f32_bits(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof u);
	return u;
}

static float f32_from_bits(uint32_t u)
{
	float x;
	memcpy(&x, &u, sizeof x);
	return x;
}

uint16_t kvs_f16_from_f32(float x)
{
	uint32_t u = f32_bits(x);
	uint32_t sign = (u >> 16) & 0x8000u;
	uint32_t a = u & 0x7fffffffu;

	if (a >= 0x7f800000u) {                  /* inf, NaN (kept quiet) */
		if (a == 0x7f800000u)
			return (uint16_t)(sign | 0x7c00u);
		return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
	}
	if (a >= 0x477ff000u)                    /* >= 65520 rounds to inf */
		return (uint16_t)(sign | 0x7c00u);
	if (a < 0x38800000u) {                   /* below 2^-14: subnormal */
		if (a < 0x33000000u)             /* below 2^-25: rounds to 0 */
			return (uint16_t)sign;
		uint32_t e = a >> 23;            /* 102..112 */
		uint32_t m = (a & 0x7fffffu) | 0x800000u;
		uint32_t shift = 126u - e;       /* 14..24: units of 2^-24 */
		uint32_t r = m >> shift;
		uint32_t rem = m & ((1u << shift) - 1u);
		uint32_t half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (r & 1u)))
			r++;                     /* may carry into the normals */
		return (uint16_t)(sign | r);
	}
	uint32_t r = (a - 0x38000000u) >> 13;    /* rebias 127 -> 15 */
	uint32_t rem = a & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (r & 1u)))
		r++;                             /* carry into exponent is right */
	return (uint16_t)(sign | r);
}

float kvs_f32_from_f16(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t e = (h >> 10) & 0x1fu;
	uint32_t m = h & 0x3ffu;
	uint32_t u;

	if (e == 0) {
		if (m == 0) {
			u = sign;
		} else {                         /* subnormal: normalise */
			int32_t ee = 1;
			while (!(m & 0x400u)) {
				m <<= 1;
				ee--;
			}
			m &= 0x3ffu;
			u = sign | ((uint32_t)(ee + 112) << 23) | (m << 13);
		}
	} else if (e == 31) {
		u = sign | 0x7f800000u | (m << 13);
	} else {
		u = sign | ((e + 112u) << 23) | (m << 13);
	}
	return f32_from_bits(u);
}

uint16_t kvs_bf16_from_f32(float x)
{
	uint32_t u = f32_bits(x);
	if ((u & 0x7fffffffu) > 0x7f800000u)     /* NaN: keep it quiet */
		return (uint16_t)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);         /* round to nearest even */
	return (uint16_t)(u >> 16);
}

float kvs_f32_from_bf16(uint16_t h)
{
	return f32_from_bits((uint32_t)h << 16);
}

/* Element i of an array of dt, as a float (exact: each KV dtype widens to
 * binary32 without rounding). */
static inline float kv_get(kvs_kv_dtype dt, const void *p, size_t i)
{
	switch (dt) {
	case KVS_KV_F32: return ((const float *)p)[i];
	case KVS_KV_F16: return kvs_f32_from_f16(((const uint16_t *)p)[i]);
	default: return kvs_f32_from_bf16(((const uint16_t *)p)[i]);
	}
}

/* Element i of an array of dt set to x, rounded to nearest even. */
static inline void kv_set(kvs_kv_dtype dt, void *p, size_t i, float x)
{
	switch (dt) {
	case KVS_KV_F32: ((float *)p)[i] = x; break;
	case KVS_KV_F16: ((uint16_t *)p)[i] = kvs_f16_from_f32(x); break;
	default: ((uint16_t *)p)[i] = kvs_bf16_from_f32(x); break;
	}
}

void kvs_kv_from_f32(kvs_kv_dtype dt, void *dst, const float *src, size_t n)
{
	kvs_require(kvs_kv_dtype_size(dt) != 0);
	for (size_t i = 0; i < n; i++)
		kv_set(dt, dst, i, src[i]);
}

void kvs_kv_to_f32(kvs_kv_dtype dt, float *dst, const void *src, size_t n)
{
	kvs_require(kvs_kv_dtype_size(dt) != 0);
	for (size_t i = 0; i < n; i++)
		dst[i] = kv_get(dt, src, i);
}

/* n elements of dt at element index idx of src, widened to double. */
static void load_row(kvs_kv_dtype dt, double *dst, const void *src,
		     uint64_t idx, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		dst[i] = kv_get(dt, src, idx + i);
}

/* n doubles into elements idx.. of dst, rounded to float, then to dt. */
static void store_row(kvs_kv_dtype dt, void *dst, uint64_t idx,
		      const double *src, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		kv_set(dt, dst, idx + i, (float)src[i]);
}

/* ---- layout and argument checks ------------------------------------------- */

kvs_status kvs_kv_cache_bytes(const kvs_kv_layout *layout, uint64_t *bytes)
{
	if (!layout)
		return kvs_fail(KVS_ERR_INVALID, "kv layout: NULL");
	if (kvs_kv_dtype_size(layout->dtype) == 0)
		return kvs_fail(KVS_ERR_INVALID, "kv layout: dtype: unknown value %d",
				(int)layout->dtype);
	static const char *const names[] = { "num_blocks", "block_size",
					     "num_kv_heads", "head_dim" };
	const uint32_t vals[] = { layout->num_blocks, layout->block_size,
				  layout->num_kv_heads, layout->head_dim };
	uint64_t n = kvs_kv_dtype_size(layout->dtype);
	for (size_t i = 0; i < KVS_ARRAY_LEN(vals); i++) {
		if (vals[i] == 0)
			return kvs_fail(KVS_ERR_INVALID,
					"kv layout: %s: must be at least 1", names[i]);
		if (kvs_mul_overflow(n, vals[i], &n))
			return kvs_fail(KVS_ERR_OVERFLOW,
					"kv layout: cache size overflows 64 bits at %s",
					names[i]);
	}
	if (n > (uint64_t)SIZE_MAX / 2)
		return kvs_fail(KVS_ERR_OVERFLOW,
				"kv layout: cache of %llu bytes does not fit in memory",
				(unsigned long long)n);
	*bytes = n;
	return KVS_OK;
}

kvs_status kvs_kv_layout_check(const kvs_kv_layout *layout)
{
	uint64_t bytes;
	return kvs_kv_cache_bytes(layout, &bytes);
}

uint64_t kvs_kv_block_bytes(const kvs_kv_layout *layout)
{
	return (uint64_t)layout->num_kv_heads * layout->block_size *
	       layout->head_dim * kvs_kv_dtype_size(layout->dtype);
}

/* The head of a batch check: a valid layout, the `what` array present
 * unless the batch is empty, and *ids room for nids ids (ids_unique sorts
 * them).  *ids is NULL on failure and for an empty batch, which has
 * nothing more to check. */
static kvs_status batch_head(const kvs_kv_layout *layout, size_t n, const void *items,
			     const char *what, size_t nids, uint64_t **ids)
{
	*ids = NULL;
	kvs_status st = kvs_kv_layout_check(layout);
	if (st == KVS_OK && n && !items)
		st = kvs_fail(KVS_ERR_INVALID, "%s: NULL", what);
	if (st != KVS_OK || n == 0)
		return st;
	*ids = kvs_reallocarray(NULL, nids, sizeof **ids);
	if (!*ids)
		return kvs_fail(KVS_ERR_NOMEM, "%s: no memory to check %zu entries", what, n);
	return KVS_OK;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The tail of a batch check: sorts ids[0, n) (each a key << tag_bits with
 * a tag in the low bits) and fails when two neighbours have the same key
 * and the first one's tag is 0: "`what` KEY `clash`".  Frees ids.
 * O(n log n). */
static kvs_status ids_unique(uint64_t *ids, size_t n, unsigned tag_bits, const char *what,
			     const char *clash)
{
	uint64_t tag = (1ull << tag_bits) - 1;
	size_t i = 1;
	qsort(ids, n, sizeof *ids, cmp_u64);
	while (i < n && ((ids[i - 1] >> tag_bits) != (ids[i] >> tag_bits) || (ids[i - 1] & tag)))
		i++;
	uint64_t key = i < n ? ids[i] >> tag_bits : 0;
	kvs_free(ids);
	if (i < n)
		return kvs_fail(KVS_ERR_INVALID, "%s %llu %s", what, (unsigned long long)key,
				clash);
	return KVS_OK;
}

kvs_status kvs_kv_slots_check(const kvs_kv_layout *layout,
			      const uint64_t *slot_mapping, uint32_t num_tokens)
{
	uint64_t *sorted;
	kvs_status st = batch_head(layout, num_tokens, slot_mapping,
				   "cache write: slot_mapping", num_tokens, &sorted);
	if (!sorted)
		return st;
	uint64_t num_slots = (uint64_t)layout->num_blocks * layout->block_size;
	uint32_t n = 0;
	for (uint32_t t = 0; t < num_tokens; t++) {
		uint64_t s = slot_mapping[t];
		if (s == KVS_SLOT_NONE)
			continue;
		if (s >= num_slots) {
			kvs_free(sorted);
			return kvs_fail(KVS_ERR_INVALID,
					"cache write: slot_mapping[%u] = %llu: beyond the "
					"cache's %llu slots (%u blocks of %u tokens)",
					t, (unsigned long long)s,
					(unsigned long long)num_slots,
					layout->num_blocks, layout->block_size);
		}
		sorted[n++] = s;
	}
	return ids_unique(sorted, n, 0, "cache write: slot", "appears twice in slot_mapping");
}

kvs_status kvs_kv_copies_check(const kvs_kv_layout *layout,
			       const kvs_block_copy *copies, size_t num_copies)
{
	/* dst ids (low bit 0) and src ids (low bit 1) in one array: a
	 * repeated dst or a dst that is also a src shows up as a dst followed
	 * by the same id */
	uint64_t *ids;
	kvs_status st = batch_head(layout, num_copies, copies, "block copy: copies",
				   2 * num_copies, &ids);
	if (!ids)
		return st;
	for (size_t i = 0; i < num_copies; i++) {
		if (copies[i].src >= layout->num_blocks ||
		    copies[i].dst >= layout->num_blocks) {
			kvs_free(ids);
			return kvs_fail(KVS_ERR_INVALID,
					"block copy: copies[%zu] = {%u -> %u}: block id "
					"beyond the pool's %u blocks", i, copies[i].src,
					copies[i].dst, layout->num_blocks);
		}
		ids[2 * i] = (uint64_t)copies[i].dst << 1;
		ids[2 * i + 1] = ((uint64_t)copies[i].src << 1) | 1u;
	}
	return ids_unique(ids, 2 * num_copies, 1, "block copy: block",
			  "is a destination twice or both a source and a destination");
}

kvs_status kvs_decode_batch_check(const kvs_kv_layout *layout,
				  const kvs_decode_batch *b, bool paged)
{
	kvs_status st = kvs_kv_layout_check(layout);
	if (st != KVS_OK)
		return st;
	if (!b)
		return kvs_fail(KVS_ERR_INVALID, "decode batch: NULL");
	if (b->num_seqs == 0)
		return kvs_fail(KVS_ERR_INVALID, "decode batch: num_seqs: must be at least 1");
	if (b->num_q_heads == 0 || b->num_q_heads % layout->num_kv_heads != 0)
		return kvs_fail(KVS_ERR_INVALID,
				"decode batch: num_q_heads = %u: must be a positive "
				"multiple of num_kv_heads = %u", b->num_q_heads,
				layout->num_kv_heads);
	if (!(b->scale > 0.0f) || !isfinite(b->scale))
		return kvs_fail(KVS_ERR_INVALID,
				"decode batch: scale = %g: must be finite and > 0",
				(double)b->scale);
	if (b->max_blocks_per_seq == 0)
		return kvs_fail(KVS_ERR_INVALID,
				"decode batch: max_blocks_per_seq: must be at least 1");
	if (!b->context_lens)
		return kvs_fail(KVS_ERR_INVALID, "decode batch: context_lens: NULL");
	if (paged && !b->block_tables)
		return kvs_fail(KVS_ERR_INVALID, "decode batch: block_tables: NULL");
	uint64_t capacity = (uint64_t)b->max_blocks_per_seq * layout->block_size;
	if (capacity > UINT32_MAX)
		return kvs_fail(KVS_ERR_OVERFLOW,
				"decode batch: max_blocks_per_seq * block_size = %llu "
				"tokens: beyond 2^32 - 1", (unsigned long long)capacity);
	/* query/out and contiguous K/V sizes must fit too */
	uint64_t n;
	if (kvs_mul_overflow((uint64_t)b->num_seqs * layout->num_kv_heads,
			     capacity * layout->head_dim, &n) ||
	    kvs_mul_overflow(n, kvs_kv_dtype_size(layout->dtype), &n) ||
	    n > (uint64_t)SIZE_MAX / 2)
		return kvs_fail(KVS_ERR_OVERFLOW,
				"decode batch: %u sequences of %llu tokens: "
				"contiguous size overflows", b->num_seqs,
				(unsigned long long)capacity);
	for (uint32_t s = 0; s < b->num_seqs; s++) {
		uint32_t len = b->context_lens[s];
		if (len == 0 || len > capacity)
			return kvs_fail(KVS_ERR_INVALID,
					"decode batch: context_lens[%u] = %u: must be in "
					"1..%llu (max_blocks_per_seq %u x block_size %u)",
					s, len, (unsigned long long)capacity,
					b->max_blocks_per_seq, layout->block_size);
		if (!paged)
			continue;
		const kvs_block_id *row =
			b->block_tables + (size_t)s * b->max_blocks_per_seq;
		uint32_t nb = (uint32_t)kvs_div_ceil(len, layout->block_size);
		for (uint32_t i = 0; i < nb; i++) {
			if (row[i] >= layout->num_blocks)
				return kvs_fail(KVS_ERR_INVALID,
						"decode batch: block_tables[%u][%u] = %u: "
						"beyond the pool's %u blocks (context %u "
						"tokens)", s, i, row[i],
						layout->num_blocks, len);
		}
	}
	return KVS_OK;
}

uint32_t kvs_decode_batch_max_len(const kvs_decode_batch *b)
{
	uint32_t m = 0;
	for (uint32_t s = 0; s < b->num_seqs; s++)
		if (b->context_lens[s] > m)
			m = b->context_lens[s];
	return m;
}

/* ---- reference kernels ------------------------------------------------------ */

kvs_status kvs_ref_cache_write(const kvs_kv_layout *layout, void *k_cache,
			       void *v_cache, const void *key, const void *value,
			       const uint64_t *slot_mapping, uint32_t num_tokens)
{
	kvs_status st = kvs_kv_slots_check(layout, slot_mapping, num_tokens);
	if (st != KVS_OK)
		return st;
	if (num_tokens == 0)
		return KVS_OK;
	if (!k_cache || !v_cache || !key || !value)
		return kvs_fail(KVS_ERR_INVALID, "cache write: NULL %s",
				!k_cache ? "k_cache" : !v_cache ? "v_cache" :
				!key ? "key" : "value");
	size_t es = kvs_kv_dtype_size(layout->dtype);
	size_t row = (size_t)layout->head_dim * es;
	for (uint32_t t = 0; t < num_tokens; t++) {
		uint64_t slot = slot_mapping[t];
		if (slot == KVS_SLOT_NONE)
			continue;
		for (uint32_t h = 0; h < layout->num_kv_heads; h++) {
			size_t src = ((size_t)t * layout->num_kv_heads + h) * row;
			size_t dst = (size_t)kvs_kv_slot_index(layout, slot, h) * es;
			memcpy((char *)k_cache + dst, (const char *)key + src, row);
			memcpy((char *)v_cache + dst, (const char *)value + src, row);
		}
	}
	return KVS_OK;
}

kvs_status kvs_ref_block_copy(const kvs_kv_layout *layout, void *k_cache,
			      void *v_cache, const kvs_block_copy *copies,
			      size_t num_copies)
{
	kvs_status st = kvs_kv_copies_check(layout, copies, num_copies);
	if (st != KVS_OK)
		return st;
	if (num_copies == 0)
		return KVS_OK;
	if (!k_cache || !v_cache)
		return kvs_fail(KVS_ERR_INVALID, "block copy: NULL %s",
				!k_cache ? "k_cache" : "v_cache");
	size_t bytes = (size_t)kvs_kv_block_bytes(layout);
	for (size_t i = 0; i < num_copies; i++) {
		size_t src = (size_t)copies[i].src * bytes;
		size_t dst = (size_t)copies[i].dst * bytes;
		memcpy((char *)k_cache + dst, (const char *)k_cache + src, bytes);
		memcpy((char *)v_cache + dst, (const char *)v_cache + src, bytes);
	}
	return KVS_OK;
}

/* Where token t of sequence s, kv head h starts (element index). */
typedef struct rows {
	const kvs_kv_layout *layout;
	const kvs_decode_batch *batch;
	bool paged;
	uint64_t capacity;   /* contiguous: tokens per sequence region */
} rows;

static uint64_t row_index(const rows *r, uint32_t s, uint32_t h, uint32_t t)
{
	const kvs_kv_layout *L = r->layout;
	if (r->paged) {
		const kvs_block_id *table = r->batch->block_tables +
			(size_t)s * r->batch->max_blocks_per_seq;
		uint64_t slot = (uint64_t)table[t / L->block_size] * L->block_size +
				t % L->block_size;
		return kvs_kv_slot_index(L, slot, h);
	}
	return (((uint64_t)s * L->num_kv_heads + h) * r->capacity + t) *
	       L->head_dim;
}

/* Scratch for one (sequence, kv head): g query heads of d dims. */
typedef struct attn_work {
	double *q;       /* [g][d] query, pre-scaled */
	double *acc;     /* [g][d] partition accumulator */
	double *merged;  /* [g][d] sum over partitions of w_p * o_p */
	double *m, *l;   /* [g] partition max and sum */
	double *big_m;   /* [g] running max over partitions */
	double *wsum;    /* [g] sum of partition weights */
	double *k, *v;   /* [d] current rows */
} attn_work;

static kvs_status attend(const kvs_kv_layout *L, const kvs_decode_batch *b,
			 bool paged, void *out, const void *query,
			 const void *kc, const void *vc)
{
	const uint32_t d = L->head_dim;
	const uint32_t g = b->num_q_heads / L->num_kv_heads;
	const kvs_kv_dtype dt = L->dtype;
	const rows r = { L, b, paged,
			 (uint64_t)b->max_blocks_per_seq * L->block_size };

	size_t gd = (size_t)g * d;
	size_t n = 3 * gd + 4 * (size_t)g + 2 * (size_t)d;
	double *mem = kvs_reallocarray(NULL, n, sizeof *mem);
	if (!mem)
		return kvs_fail(KVS_ERR_NOMEM, "attention: %zu doubles of scratch", n);
	attn_work w = {
		.q = mem, .acc = mem + gd, .merged = mem + 2 * gd,
		.m = mem + 3 * gd, .l = mem + 3 * gd + g,
		.big_m = mem + 3 * gd + 2 * (size_t)g,
		.wsum = mem + 3 * gd + 3 * (size_t)g,
		.k = mem + 3 * gd + 4 * (size_t)g,
		.v = mem + 3 * gd + 4 * (size_t)g + d,
	};

	for (uint32_t s = 0; s < b->num_seqs; s++) {
		const uint32_t len = b->context_lens[s];
		const uint32_t part = b->partition_tokens ? b->partition_tokens : len;
		for (uint32_t h = 0; h < L->num_kv_heads; h++) {
			uint64_t q0 = ((uint64_t)s * b->num_q_heads + (uint64_t)h * g) * d;
			load_row(dt, w.q, query, q0, (uint32_t)gd);
			for (size_t i = 0; i < gd; i++)
				w.q[i] *= b->scale;
			for (uint32_t j = 0; j < g; j++) {
				w.big_m[j] = -INFINITY;
				w.wsum[j] = 0.0;
			}
			memset(w.merged, 0, gd * sizeof(double));

			for (uint64_t p0 = 0; p0 < len; p0 += part) {
				uint64_t p1 = len - p0 < part ? len : p0 + part;
				for (uint32_t j = 0; j < g; j++) {
					w.m[j] = -INFINITY;
					w.l[j] = 0.0;
				}
				memset(w.acc, 0, gd * sizeof(double));
				for (uint32_t t = (uint32_t)p0; t < p1; t++) {
					uint64_t idx = row_index(&r, s, h, t);
					load_row(dt, w.k, kc, idx, d);
					load_row(dt, w.v, vc, idx, d);
					for (uint32_t j = 0; j < g; j++) {
						const double *qj = w.q + (size_t)j * d;
						double *aj = w.acc + (size_t)j * d;
						double sc = 0.0;
						for (uint32_t e = 0; e < d; e++)
							sc += qj[e] * w.k[e];
						if (sc > w.m[j]) {
							double alpha = exp(w.m[j] - sc);
							w.l[j] *= alpha;
							for (uint32_t e = 0; e < d; e++)
								aj[e] *= alpha;
							w.m[j] = sc;
						}
						double pr = exp(sc - w.m[j]);
						w.l[j] += pr;
						for (uint32_t e = 0; e < d; e++)
							aj[e] += pr * w.v[e];
					}
				}
				/* merge o_p = acc / l with weight l e^(m - M) */
				for (uint32_t j = 0; j < g; j++) {
					double *mj = w.merged + (size_t)j * d;
					const double *aj = w.acc + (size_t)j * d;
					if (w.m[j] > w.big_m[j]) {
						double alpha = exp(w.big_m[j] - w.m[j]);
						w.wsum[j] *= alpha;
						for (uint32_t e = 0; e < d; e++)
							mj[e] *= alpha;
						w.big_m[j] = w.m[j];
					}
					double wt = w.l[j] * exp(w.m[j] - w.big_m[j]);
					w.wsum[j] += wt;
					for (uint32_t e = 0; e < d; e++)
						mj[e] += wt * (aj[e] / w.l[j]);
				}
			}
			for (size_t i = 0; i < gd; i++)
				w.merged[i] /= w.wsum[i / d];
			store_row(dt, out, q0, w.merged, (uint32_t)gd);
		}
	}
	kvs_free(mem);
	return KVS_OK;
}

static kvs_status attention_args(const kvs_kv_layout *L,
				 const kvs_decode_batch *b, bool paged,
				 const void *out, const void *query,
				 const void *k, const void *v)
{
	kvs_status st = kvs_decode_batch_check(L, b, paged);
	if (st != KVS_OK)
		return st;
	if (!out || !query || !k || !v)
		return kvs_fail(KVS_ERR_INVALID, "%s attention: NULL %s",
				paged ? "paged" : "contiguous",
				!out ? "out" : !query ? "query" :
				!k ? "k" : "v");
	return KVS_OK;
}

kvs_status kvs_ref_paged_attention(const kvs_kv_layout *layout,
				   const kvs_decode_batch *batch, void *out,
				   const void *query, const void *k_cache,
				   const void *v_cache)
{
	kvs_status st = attention_args(layout, batch, true, out, query,
				       k_cache, v_cache);
	if (st != KVS_OK)
		return st;
	return attend(layout, batch, true, out, query, k_cache, v_cache);
}

kvs_status kvs_ref_contiguous_attention(const kvs_kv_layout *layout,
					const kvs_decode_batch *batch,
					void *out, const void *query,
					const void *k, const void *v)
{
	if (!layout)
		return kvs_fail(KVS_ERR_INVALID, "kv layout: NULL");
	/* the contiguous layout has no pool: num_blocks is not used */
	kvs_kv_layout L = *layout;
	L.num_blocks = 1;
	kvs_status st = attention_args(&L, batch, false, out, query, k, v);
	if (st != KVS_OK)
		return st;
	return attend(&L, batch, false, out, query, k, v);
}
