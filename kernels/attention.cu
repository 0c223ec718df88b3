/*
 * attention.cu - decode attention (one query token per sequence) over the
 * paged KV cache, and the same kernel over contiguous K/V as the baseline.
 *
 * Launch path: kvs_cu_attention() (host entry, arguments checked by
 * kernels_cuda.c) -> dispatch on dtype, head_dim and block_size (a small
 * compiled set: f32/f16/bf16 x 64/128 x 8/16/32/64 + contiguous) ->
 * decode_kernel, then reduce_kernel when contexts are split.
 *
 * Work decomposition.  One thread block of 4 warps per
 *   (kv head, chunk of <= 4 query heads of its group) x sequence x partition.
 * All query heads of a chunk share each K/V row the block reads, so with
 * grouped-query attention the cache is read once per chunk, not once per
 * query head.  A partition is a range of partition_tokens context tokens
 * (all of them when the plan does not split).  Inside the block, warp w
 * takes tiles w, w + 4, ... of TILE consecutive tokens (4 KiB of K and 4 KiB
 * of V per tile whatever the type and head dim), so the loads of a tile are
 * all issued before any of them is used.
 *
 *   K phase: a token's row is split over TPT = head_dim / 16 lanes, 16
 *            elements each (one or more 16-byte loads); partial dot products
 *            with the lane's slice of each query head are summed by
 *            log2(TPT) xor-shuffles.
 *   softmax: online, in base 2 (scores pre-multiplied by scale * log2 e):
 *            the tile's max and sum by shuffles; running (m, l) rescale the
 *            accumulator by 2^(m_old - m_new).
 *   V phase: lane owns head_dim / 32 dimensions of the output and walks the
 *            tile's rows (each row one coalesced warp-wide load).
 *
 * The four warps' (m, l, acc) merge through shared memory.  With one
 * partition the block writes the output; otherwise it writes
 * (m, l, acc / l) per partition and reduce_kernel merges them:
 *   out = sum_p l_p 2^(m_p - M) o_p / sum_p l_p 2^(m_p - M).
 *
 * Memory: each block reads its rows once; block-table entries are 4 bytes
 * per block_size tokens, so the paged kernel moves the same bytes as the
 * contiguous one plus the tables.
 */
#include "cuda_check.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kGroup = (int)KVS_CU_MAX_GROUP; // query heads per block
constexpr int kKDims = 16;                     // elements per lane, K phase
constexpr unsigned kFull = 0xffffffffu;

struct Params {
	void *out;                       // [num_seqs, num_q_heads, head_dim]
	const void *query;               // [num_seqs, num_q_heads, head_dim]
	const void *k;                   // paged: [num_blocks, kv_heads, block_size, head_dim]
	const void *v;                   // contiguous: [num_seqs, kv_heads, capacity, head_dim]
	const uint32_t *context_lens;    // [num_seqs]
	const kvs_block_id *block_tables; // [num_seqs, max_blocks_per_seq]
	float *tmp_out;                  // [num_seqs, num_q_heads, num_partitions, head_dim]
	float *max_logits;               // [num_seqs, num_q_heads, num_partitions]
	float *exp_sums;                 // [num_seqs, num_q_heads, num_partitions]
	float scale_log2;
	uint32_t num_q_heads, num_kv_heads;
	uint32_t max_blocks_per_seq;
	uint32_t capacity;               // contiguous tokens per sequence
	uint32_t partition_tokens, num_partitions;
};

template <typename T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x)
{
	return __float2bfloat16_rn(x);
}

/* Element i (of 32-bit word array w) as float. */
template <typename T>
__device__ __forceinline__ float word_elem(const uint32_t *w, int i)
{
	if constexpr (sizeof(T) == 4) {
		return __uint_as_float(w[i]);
	} else if constexpr (std::is_same<T, __half>::value) {
		const unsigned short bits = (unsigned short)(w[i / 2] >> (16 * (i % 2)));
		return __half2float(__ushort_as_half(bits));
	} else {   /* bf16 -> f32 is a 16-bit shift */
		return __uint_as_float(i % 2 ? (w[i / 2] & 0xffff0000u) : (w[i / 2] << 16));
	}
}

/* N elements of T held as raw words in registers: loaded early, converted
 * when used.  The row pointer is aligned to the load width (checked by the
 * host: tensors 16-byte aligned, offsets multiples of the slice). */
template <typename T, int N>
struct Raw {
	static constexpr int kBytes = N * (int)sizeof(T);
	static_assert(kBytes % 4 == 0, "slices are whole 32-bit words");
	static constexpr int kWords = kBytes / 4;
	uint32_t w[kWords];

	__device__ __forceinline__ void load(const T *p)
	{
		if constexpr (kBytes % 16 == 0) {
#pragma unroll
			for (int i = 0; i < kBytes / 16; i++) {
				const uint4 u = __ldg(reinterpret_cast<const uint4 *>(p) + i);
				w[4 * i] = u.x;
				w[4 * i + 1] = u.y;
				w[4 * i + 2] = u.z;
				w[4 * i + 3] = u.w;
			}
		} else if constexpr (kBytes == 8) {
			const uint2 u = __ldg(reinterpret_cast<const uint2 *>(p));
			w[0] = u.x;
			w[1] = u.y;
		} else {
			static_assert(kBytes == 4, "4, 8 or 16k bytes");
			w[0] = __ldg(reinterpret_cast<const unsigned int *>(p));
		}
	}
	__device__ __forceinline__ void zero()
	{
#pragma unroll
		for (int i = 0; i < kWords; i++)
			w[i] = 0;
	}
	__device__ __forceinline__ float operator[](int i) const
	{
		return word_elem<T>(w, i);
	}
};

/* Element offset of token t's row for kv head kvh: through the block table
 * (BS > 0) or directly (BS == 0, contiguous). */
template <int HD, int BS>
__device__ __forceinline__ size_t row_offset(const Params &p,
					     const kvs_block_id *table,
					     size_t contig_base, uint32_t kvh,
					     uint32_t t)
{
	if constexpr (BS == 0) {
		return contig_base + (size_t)t * HD;
	} else {
		const size_t block = __ldg(table + t / BS);
		return ((block * p.num_kv_heads + kvh) * BS + t % BS) * HD;
	}
}

template <typename T, int HD, int BS>
__global__ void __launch_bounds__(kThreads)
decode_kernel(const Params p)
{
	constexpr int TPT = HD / kKDims;          // lanes per token, K phase
	constexpr int TPP = 32 / TPT;             // tokens per K pass
	constexpr int TILE = 4096 / (HD * (int)sizeof(T)); // tokens per tile
	constexpr int PASSES = TILE / TPP;
	constexpr int VD = HD / 32;               // dims per lane, V phase
	static_assert(TILE <= 32 && TILE % TPP == 0, "tile shape");

	__shared__ float s_score[kWarps][kGroup][32];
	__shared__ float s_prob[kWarps][kGroup][32];
	__shared__ float s_m[kWarps][kGroup];
	__shared__ float s_l[kWarps][kGroup];
	__shared__ float s_acc[kWarps][kGroup][HD];

	const int lane = threadIdx.x & 31;
	const int warp = threadIdx.x >> 5;
	const int sub = lane % TPT;

	const uint32_t group = p.num_q_heads / p.num_kv_heads;
	const uint32_t chunks = (group + kGroup - 1) / kGroup;
	const uint32_t kvh = blockIdx.x / chunks;
	const uint32_t chunk = blockIdx.x % chunks;
	const uint32_t q_first = kvh * group + chunk * kGroup;
	const int g = (int)min((uint32_t)kGroup, group - chunk * kGroup);
	const uint32_t seq = blockIdx.y;
	const uint32_t part = blockIdx.z;

	const uint32_t len = p.context_lens[seq];
	const uint64_t begin64 = (uint64_t)part * p.partition_tokens;
	if (begin64 >= len)
		return;                   // uniform over the block
	const uint32_t t_begin = (uint32_t)begin64;
	const uint32_t t_end = (uint32_t)min((uint64_t)len, begin64 + p.partition_tokens);

	const T *__restrict__ kc = static_cast<const T *>(p.k);
	const T *__restrict__ vc = static_cast<const T *>(p.v);
	const kvs_block_id *table = BS ? p.block_tables + (size_t)seq * p.max_blocks_per_seq
				       : nullptr;
	const size_t contig_base = ((size_t)seq * p.num_kv_heads + kvh) *
				   (size_t)p.capacity * HD;

	/* this lane's K-phase slice of each query head, in log2 units */
	float q[kGroup][kKDims];
	const T *qp = static_cast<const T *>(p.query) +
		      ((size_t)seq * p.num_q_heads + q_first) * HD + sub * kKDims;
#pragma unroll
	for (int j = 0; j < kGroup; j++) {
		Raw<T, kKDims> r;
		if (j < g)
			r.load(qp + (size_t)j * HD);
		else
			r.zero();
#pragma unroll
		for (int e = 0; e < kKDims; e++)
			q[j][e] = r[e] * p.scale_log2;
	}

	float m[kGroup], l[kGroup], acc[kGroup][VD];
#pragma unroll
	for (int j = 0; j < kGroup; j++) {
		m[j] = -INFINITY;
		l[j] = 0.0f;
#pragma unroll
		for (int d = 0; d < VD; d++)
			acc[j][d] = 0.0f;
	}

	const uint32_t n_tiles = (t_end - t_begin + TILE - 1) / TILE;
	for (uint32_t tile = warp; tile < n_tiles; tile += kWarps) {
		const uint32_t t0 = t_begin + tile * TILE;

		/* issue every load of the tile first */
		Raw<T, kKDims> kr[PASSES];
#pragma unroll
		for (int ps = 0; ps < PASSES; ps++) {
			const uint32_t t = t0 + ps * TPP + lane / TPT;
			if (t < t_end)
				kr[ps].load(kc + row_offset<HD, BS>(p, table, contig_base, kvh, t) +
					    sub * kKDims);
			else
				kr[ps].zero();
		}
		Raw<T, VD> vr[TILE];
#pragma unroll
		for (int i = 0; i < TILE; i++) {
			const uint32_t t = t0 + i;
			if (t < t_end)
				vr[i].load(vc + row_offset<HD, BS>(p, table, contig_base, kvh, t) +
					   lane * VD);
			else
				vr[i].zero();
		}

		/* K phase: scores of the tile's tokens */
#pragma unroll
		for (int ps = 0; ps < PASSES; ps++) {
			float s[kGroup];
#pragma unroll
			for (int j = 0; j < kGroup; j++)
				s[j] = 0.0f;
#pragma unroll
			for (int e = 0; e < kKDims; e++) {
				const float kv = kr[ps][e];
#pragma unroll
				for (int j = 0; j < kGroup; j++)
					if (j < g)
						s[j] = fmaf(q[j][e], kv, s[j]);
			}
#pragma unroll
			for (int off = TPT / 2; off > 0; off >>= 1) {
#pragma unroll
				for (int j = 0; j < kGroup; j++)
					if (j < g)   // uniform
						s[j] += __shfl_xor_sync(kFull, s[j], off);
			}
			if (sub == 0) {
				const int i = ps * TPP + lane / TPT;
				const bool valid = t0 + i < t_end;
#pragma unroll
				for (int j = 0; j < kGroup; j++)
					s_score[warp][j][i] = valid ? s[j] : -INFINITY;
			}
		}
		__syncwarp();

		/* online softmax over the tile (lanes >= TILE mirror lane % TILE) */
#pragma unroll
		for (int j = 0; j < kGroup; j++) {
			if (j >= g)
				break;                   // uniform
			const float sc = s_score[warp][j][lane % TILE];
			float mt = sc;
#pragma unroll
			for (int off = TILE / 2; off > 0; off >>= 1)
				mt = fmaxf(mt, __shfl_xor_sync(kFull, mt, off));
			const float m_new = fmaxf(m[j], mt);   // finite: t0 is valid
			const float pr = exp2f(sc - m_new);     // 0 for -inf scores
			float lt = pr;
#pragma unroll
			for (int off = TILE / 2; off > 0; off >>= 1)
				lt += __shfl_xor_sync(kFull, lt, off);
			const float alpha = exp2f(m[j] - m_new); // 0 on the first tile
			l[j] = l[j] * alpha + lt;
			m[j] = m_new;
#pragma unroll
			for (int d = 0; d < VD; d++)
				acc[j][d] *= alpha;
			if (lane < TILE)
				s_prob[warp][j][lane] = pr;
		}
		__syncwarp();

		/* V phase */
#pragma unroll
		for (int i = 0; i < TILE; i++) {
#pragma unroll
			for (int d = 0; d < VD; d++) {
				const float vv = vr[i][d];
#pragma unroll
				for (int j = 0; j < kGroup; j++)
					if (j < g)
						acc[j][d] = fmaf(s_prob[warp][j][i], vv, acc[j][d]);
			}
		}
		__syncwarp();   // s_score / s_prob are rewritten by the next tile
	}

	/* merge the warps */
	if (lane == 0) {
#pragma unroll
		for (int j = 0; j < kGroup; j++) {
			s_m[warp][j] = m[j];
			s_l[warp][j] = l[j];
		}
	}
#pragma unroll
	for (int j = 0; j < kGroup; j++)
#pragma unroll
		for (int d = 0; d < VD; d++)
			s_acc[warp][j][lane * VD + d] = acc[j][d];
	__syncthreads();

	for (int idx = threadIdx.x; idx < g * HD; idx += kThreads) {
		const int j = idx / HD, d = idx % HD;
		float big_m = -INFINITY;
#pragma unroll
		for (int w = 0; w < kWarps; w++)
			big_m = fmaxf(big_m, s_m[w][j]);
		float sum = 0.0f, o = 0.0f;
#pragma unroll
		for (int w = 0; w < kWarps; w++) {
			if (s_m[w][j] == -INFINITY)
				continue;                // warp had no tile
			const float f = exp2f(s_m[w][j] - big_m);
			sum = fmaf(s_l[w][j], f, sum);
			o = fmaf(s_acc[w][j][d], f, o);
		}
		o /= sum;                                // sum >= 1: warp 0 ran
		const size_t row = (size_t)seq * p.num_q_heads + q_first + j;
		if (p.num_partitions == 1) {
			static_cast<T *>(p.out)[row * HD + d] = from_f32<T>(o);
		} else {
			const size_t prow = row * p.num_partitions + part;
			p.tmp_out[prow * HD + d] = o;
			if (d == 0) {
				p.max_logits[prow] = big_m;
				p.exp_sums[prow] = sum;
			}
		}
	}
}

/* Merge the partitions of one (query head, sequence); HD threads. */
template <typename T, int HD>
__global__ void __launch_bounds__(HD)
reduce_kernel(const Params p)
{
	const uint32_t qh = blockIdx.x, seq = blockIdx.y;
	const uint32_t len = p.context_lens[seq];
	const uint32_t n = (uint32_t)(((uint64_t)len + p.partition_tokens - 1) /
				      p.partition_tokens);
	const size_t row = (size_t)seq * p.num_q_heads + qh;
	const float *ml = p.max_logits + row * p.num_partitions;
	const float *es = p.exp_sums + row * p.num_partitions;
	const float *to = p.tmp_out + row * p.num_partitions * HD;

	float big_m = -INFINITY;
	for (uint32_t k = 0; k < n; k++)
		big_m = fmaxf(big_m, ml[k]);
	float sum = 0.0f;
	for (uint32_t k = 0; k < n; k++)
		sum = fmaf(es[k], exp2f(ml[k] - big_m), sum);
	const float inv = 1.0f / sum;
	for (int d = threadIdx.x; d < HD; d += blockDim.x) {
		float o = 0.0f;
		for (uint32_t k = 0; k < n; k++)
			o = fmaf(es[k] * exp2f(ml[k] - big_m), to[(size_t)k * HD + d], o);
		static_cast<T *>(p.out)[row * HD + d] = from_f32<T>(o * inv);
	}
}

template <typename T, int HD, int BS>
kvs_status launch(const kvs_cu_attn_args *a)
{
	Params p;
	p.out = a->out;
	p.query = a->query;
	p.k = a->k;
	p.v = a->v;
	p.context_lens = a->context_lens;
	p.block_tables = a->block_tables;
	p.tmp_out = a->tmp_out;
	p.max_logits = a->max_logits;
	p.exp_sums = a->exp_sums;
	p.scale_log2 = a->scale_log2;
	p.num_q_heads = a->num_q_heads;
	p.num_kv_heads = a->num_kv_heads;
	p.max_blocks_per_seq = a->max_blocks_per_seq;
	p.capacity = a->max_blocks_per_seq * a->block_size;
	p.partition_tokens = a->partition_tokens;
	p.num_partitions = a->num_partitions;

	cudaStream_t s = (cudaStream_t)a->stream;
	const uint32_t group = a->num_q_heads / a->num_kv_heads;
	const uint32_t chunks = (group + kGroup - 1) / kGroup;
	const dim3 grid(a->num_kv_heads * chunks, a->num_seqs, a->num_partitions);
	decode_kernel<T, HD, BS><<<grid, kThreads, 0, s>>>(p);
	KVS_CUDA_CHECK(cudaGetLastError());
	if (a->num_partitions > 1) {
		reduce_kernel<T, HD><<<dim3(a->num_q_heads, a->num_seqs), HD, 0, s>>>(p);
		KVS_CUDA_CHECK(cudaGetLastError());
	}
	return KVS_OK;
}

template <typename T, int HD>
kvs_status dispatch_block(const kvs_cu_attn_args *a)
{
	switch (a->paged ? a->block_size : 0) {
	case 0: return launch<T, HD, 0>(a);
	case 8: return launch<T, HD, 8>(a);
	case 16: return launch<T, HD, 16>(a);
	case 32: return launch<T, HD, 32>(a);
	case 64: return launch<T, HD, 64>(a);
	default:
		return kvs_fail(KVS_ERR_UNSUPPORTED, "cuda attention: block_size %u "
				"not compiled in", a->block_size);
	}
}

template <typename T>
kvs_status dispatch_head(const kvs_cu_attn_args *a)
{
	switch (a->head_dim) {
	case 64: return dispatch_block<T, 64>(a);
	case 128: return dispatch_block<T, 128>(a);
	default:
		return kvs_fail(KVS_ERR_UNSUPPORTED, "cuda attention: head_dim %u "
				"not compiled in", a->head_dim);
	}
}

} // namespace

extern "C" kvs_status kvs_cu_attention(const kvs_cu_attn_args *a)
{
	switch (a->dtype) {
	case KVS_KV_F32: return dispatch_head<float>(a);
	case KVS_KV_F16: return dispatch_head<__half>(a);
	case KVS_KV_BF16: return dispatch_head<__nv_bfloat16>(a);
	default:
		return kvs_fail(KVS_ERR_UNSUPPORTED, "cuda attention: dtype %d",
				(int)a->dtype);
	}
}
