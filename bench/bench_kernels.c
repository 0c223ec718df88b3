/*
 * bench_kernels.c - paged versus contiguous decode attention: time per step,
 * achieved bandwidth and share of the GPU's peak HBM bandwidth, for block
 * sizes 8..64, batches 1..256 and contexts 512..32K.  --json prints the
 * kernel profile that block-size tuning reads (docs/KERNELS.md, "Kernel
 * profile").
 *
 * Without a CUDA device (or without CUDA in the build) it says so and times
 * the C reference on the CPU on a small grid instead; those rows are
 * labelled "cpu_reference" and are not GPU figures.
 *
 * Bytes counted per step: K and V rows read (context x kv heads x head_dim x
 * element size, twice), query read and output written, and for paged the
 * block-table entries read.  Caches hold constant values (timing does not
 * depend on them); physical blocks are shuffled so paged reads are scattered
 * the way a long-running allocator leaves them.
 */
#include "bench_util.h"
#include "kvsim/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct opts {
	double peak_gbps;
	bool all;
	int iters;
	uint32_t q_heads, kv_heads, head_dim;
	kvs_kv_dtype dtype;
	uint32_t only_batch, only_context, only_block;
} opts;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_kernels [--json] [options]\n"
		"  paged vs contiguous decode attention; without a GPU, the C reference\n"
		"  --json             print the kernel profile as one JSON object\n"
		"  --peak-gbps X      peak HBM bandwidth for the share column (4800: H200)\n"
		"  --all              full grid: blocks 8,16,32,64 x batch 1,4,16,64,256 x\n"
		"                     context 512,1K,2K,4K,8K,16K,32K (default: a subset)\n"
		"  --iters N          timed runs per point (default 20 GPU, 2 CPU)\n"
		"  --batch N          only this batch size\n"
		"  --context N        only this context length (tokens)\n"
		"  --block-size N     only this block size\n"
		"  --q-heads N        query heads (32)\n"
		"  --kv-heads N       kv heads (8)\n"
		"  --head-dim N       head dim, 64 or 128 on the GPU (128)\n"
		"  --dtype T          f16, bf16 or f32 (f16)\n"
		"  --help             this text\n");
}

static bool parse_u32(const char *flag, const char *text, uint32_t *out)
{
	char *end;
	unsigned long v = text ? strtoul(text, &end, 10) : 0;
	if (!text || *end || v == 0 || v > UINT32_MAX) {
		fprintf(stderr, "bench_kernels: %s: expected a positive integer, got "
			"\"%s\"\n", flag, text ? text : "");
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

/* Returns -1 to continue, else the exit code. */
static int parse_args(int argc, char **argv, opts *o)
{
	*o = (opts){ .peak_gbps = 4800, .q_heads = 32, .kv_heads = 8,
		     .head_dim = 128, .dtype = KVS_KV_F16 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint32_t n;
		if (strcmp(a, "--json") == 0) {
			continue;
		} else if (strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "--all") == 0) {
			o->all = true;
			continue;
		} else if (strcmp(a, "--peak-gbps") == 0) {
			char *end;
			o->peak_gbps = v ? strtod(v, &end) : 0;
			if (!v || *end || !(o->peak_gbps > 0) || !isfinite(o->peak_gbps)) {
				fprintf(stderr, "bench_kernels: --peak-gbps: expected a "
					"positive number, got \"%s\"\n", v ? v : "");
				return 2;
			}
		} else if (strcmp(a, "--dtype") == 0) {
			if (kvs_kv_dtype_parse(v, &o->dtype) != KVS_OK) {
				fprintf(stderr, "bench_kernels: --dtype: %s\n", kvs_last_error());
				return 2;
			}
		} else if (strcmp(a, "--iters") == 0 || strcmp(a, "--batch") == 0 ||
			   strcmp(a, "--context") == 0 || strcmp(a, "--block-size") == 0 ||
			   strcmp(a, "--q-heads") == 0 || strcmp(a, "--kv-heads") == 0 ||
			   strcmp(a, "--head-dim") == 0) {
			if (!parse_u32(a, v, &n))
				return 2;
			if (strcmp(a, "--iters") == 0) o->iters = (int)(n > 100000 ? 100000 : n);
			else if (strcmp(a, "--batch") == 0) o->only_batch = n;
			else if (strcmp(a, "--context") == 0) o->only_context = n;
			else if (strcmp(a, "--block-size") == 0) o->only_block = n;
			else if (strcmp(a, "--q-heads") == 0) o->q_heads = n;
			else if (strcmp(a, "--kv-heads") == 0) o->kv_heads = n;
			else o->head_dim = n;
		} else {
			fprintf(stderr, "bench_kernels: unknown option \"%s\" (see --help)\n", a);
			return 2;
		}
		i++;   /* consumed a value */
	}
	if (o->q_heads % o->kv_heads != 0) {
		fprintf(stderr, "bench_kernels: --q-heads %u is not a multiple of "
			"--kv-heads %u\n", o->q_heads, o->kv_heads);
		return 2;
	}
	return -1;
}

typedef struct point {
	uint32_t block_size, batch, context;
} point;

static const uint32_t kBlocks[] = { 8, 16, 32, 64 };

/* The grid: --all, the default subset, or the CPU subset; filtered by the
 * --batch / --context / --block-size flags.  Returns the count. */
static size_t make_grid(const opts *o, bool gpu, point *pts, size_t cap)
{
	static const uint32_t all_b[] = { 1, 4, 16, 64, 256 };
	static const uint32_t all_c[] = { 512, 1024, 2048, 4096, 8192, 16384, 32768 };
	/* default GPU subset: the target point (64 x 4K), a context sweep at
	 * batch 64 and a batch sweep at 4K */
	static const point gpu_sub[] = {
		{ 0, 64, 512 }, { 0, 64, 4096 }, { 0, 64, 32768 },
		{ 0, 1, 4096 }, { 0, 16, 4096 }, { 0, 256, 4096 },
	};
	static const point cpu_sub[] = {
		{ 0, 1, 512 }, { 0, 1, 2048 }, { 0, 4, 512 }, { 0, 4, 2048 },
	};
	size_t n = 0;
	for (size_t k = 0; k < KVS_ARRAY_LEN(kBlocks); k++) {
		point base[64];
		size_t nb = 0;
		if (o->all || o->only_batch || o->only_context) {
			for (size_t i = 0; i < KVS_ARRAY_LEN(all_b); i++)
				for (size_t j = 0; j < KVS_ARRAY_LEN(all_c); j++)
					base[nb++] = (point){ 0, all_b[i], all_c[j] };
			if (o->only_batch || o->only_context)
				base[nb++] = (point){ 0, o->only_batch ? o->only_batch : 64,
						      o->only_context ? o->only_context : 4096 };
		} else if (gpu) {
			memcpy(base, gpu_sub, sizeof gpu_sub);
			nb = KVS_ARRAY_LEN(gpu_sub);
		} else {
			memcpy(base, cpu_sub, sizeof cpu_sub);
			nb = KVS_ARRAY_LEN(cpu_sub);
		}
		for (size_t i = 0; i < nb && n < cap; i++) {
			point p = base[i];
			p.block_size = kBlocks[k];
			if (o->only_block && p.block_size != o->only_block)
				continue;
			if (o->only_batch && p.batch != o->only_batch)
				continue;
			if (o->only_context && p.context != o->only_context)
				continue;
			bool dup = false;
			for (size_t j = 0; j < n && !dup; j++)
				dup = pts[j].block_size == p.block_size &&
				      pts[j].batch == p.batch && pts[j].context == p.context;
			if (!dup)
				pts[n++] = p;
		}
	}
	return n;
}

static double step_bytes(const opts *o, const point *p, bool paged)
{
	double es = (double)kvs_kv_dtype_size(o->dtype);
	double kv = 2.0 * p->batch * (double)p->context * o->kv_heads * o->head_dim * es;
	double qo = 2.0 * p->batch * (double)o->q_heads * o->head_dim * es;
	double tables = paged ? (double)p->batch * kvs_div_ceil(p->context, p->block_size) *
				sizeof(kvs_block_id) : 0.0;
	return kv + qo + tables;
}

/* Shuffled block tables for p: seq s gets ceil(context / block) blocks. */
static kvs_block_id *make_tables(const point *p, uint32_t *mbps, uint32_t *nblocks)
{
	*mbps = (uint32_t)kvs_div_ceil(p->context, p->block_size);
	*nblocks = *mbps * p->batch;
	kvs_block_id *t = kvs_reallocarray(NULL, *nblocks, sizeof *t);
	if (!t)
		return NULL;
	uint64_t r = 12345;
	for (uint32_t i = 0; i < *nblocks; i++)
		t[i] = i;
	for (uint32_t i = *nblocks - 1; i > 0; i--) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t j = (uint32_t)((r >> 33) % (i + 1));
		kvs_block_id x = t[i];
		t[i] = t[j];
		t[j] = x;
	}
	return t;
}

typedef struct result {
	double paged_us, contig_us;
} result;

/* One decode batch at point p: every sequence at p->context tokens, over
 * shuffled block tables.  The paged pool holds exactly batch x capacity
 * tokens, so buffers of that size serve as the contiguous K and V too. */
typedef struct batch {
	kvs_kv_layout L;
	kvs_decode_batch b;
	kvs_block_id *tables;
	uint32_t *lens;
} batch;

/* false when out of memory (batch_free still applies) */
static bool batch_make(const opts *o, const point *p, batch *bt)
{
	uint32_t mbps, nblocks;
	bt->tables = make_tables(p, &mbps, &nblocks);
	bt->lens = kvs_reallocarray(NULL, p->batch, sizeof *bt->lens);
	bt->L = (kvs_kv_layout){ o->dtype, nblocks, p->block_size, o->kv_heads, o->head_dim };
	bt->b = (kvs_decode_batch){ .num_seqs = p->batch, .num_q_heads = o->q_heads,
				    .scale = 1.0f / sqrtf((float)o->head_dim),
				    .context_lens = bt->lens, .block_tables = bt->tables,
				    .max_blocks_per_seq = mbps };
	if (!bt->tables || !bt->lens)
		return false;
	for (uint32_t s = 0; s < p->batch; s++)
		bt->lens[s] = p->context;
	return true;
}

static void batch_free(batch *bt)
{
	kvs_free(bt->tables);
	kvs_free(bt->lens);
}

/* The timing loop of both back ends: `warmup` untimed steps then `iters`
 * timed ones of each kind (0 paged, 1 contiguous); step(ctx, kind) runs
 * one, drain(ctx) waits until the steps run so far are done. */
typedef struct stepper {
	kvs_status (*step)(void *ctx, int kind);
	kvs_status (*drain)(void *ctx);
	void *ctx;
	int warmup;
} stepper;

static kvs_status time_kinds(const stepper *sp, int iters, result *res)
{
	kvs_status st = KVS_OK;
	for (int kind = 0; kind < 2 && st == KVS_OK; kind++) {
		for (int i = 0; i < sp->warmup && st == KVS_OK; i++)
			st = sp->step(sp->ctx, kind);
		if (st == KVS_OK && sp->warmup)
			st = sp->drain(sp->ctx);
		uint64_t t0 = kvs_bench_now_ns();
		for (int i = 0; i < iters && st == KVS_OK; i++)
			st = sp->step(sp->ctx, kind);
		if (st == KVS_OK)
			st = sp->drain(sp->ctx);
		double us = (double)(kvs_bench_now_ns() - t0) / 1e3 / iters;
		if (kind == 0)
			res->paged_us = us;
		else
			res->contig_us = us;
	}
	return st;
}

/* ---- GPU ------------------------------------------------------------------ */

typedef struct gpu_bufs {
	void *q, *out, *kc, *vc, *kd, *vd;
	size_t tensor_bytes;       /* each of kc, vc, kd, vd */
} gpu_bufs;

typedef struct gpu_run {
	kvs_cuda_ctx *ctx;
	kvs_cuda_plan *paged, *contig;
	gpu_bufs *g;
} gpu_run;

static kvs_status gpu_step(void *run, int kind)
{
	gpu_run *r = run;
	gpu_bufs *g = r->g;
	return kind == 0 ? kvs_cuda_paged_attention(r->paged, g->out, g->q, g->kc, g->vc)
			 : kvs_cuda_contiguous_attention(r->contig, g->out, g->q, g->kd, g->vd);
}

static kvs_status gpu_drain(void *run)
{
	return kvs_cuda_sync(((gpu_run *)run)->ctx);
}

static kvs_status gpu_time(kvs_cuda_ctx *ctx, const opts *o, const point *p,
			   gpu_bufs *g, int iters, result *res)
{
	batch bt;
	if (!batch_make(o, p, &bt)) {
		batch_free(&bt);
		return kvs_fail(KVS_ERR_NOMEM, "bench: block tables");
	}
	gpu_run r = { ctx, NULL, NULL, g };
	kvs_status st = kvs_cuda_plan_create(ctx, &bt.L, &bt.b, true, &r.paged);
	if (st == KVS_OK)
		st = kvs_cuda_plan_create(ctx, &bt.L, &bt.b, false, &r.contig);
	if (st == KVS_OK)
		st = time_kinds(&(stepper){ gpu_step, gpu_drain, &r, 3 }, iters, res);
	kvs_cuda_plan_destroy(r.paged);
	kvs_cuda_plan_destroy(r.contig);
	batch_free(&bt);
	return st;
}

static kvs_status gpu_alloc(kvs_cuda_ctx *ctx, const opts *o, const point *pts,
			    size_t n, gpu_bufs *g)
{
	uint64_t max_tokens = 0, max_q = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t t = (uint64_t)pts[i].batch *
			     kvs_div_ceil(pts[i].context, pts[i].block_size) * pts[i].block_size;
		max_tokens = t > max_tokens ? t : max_tokens;
		max_q = pts[i].batch > max_q ? pts[i].batch : max_q;
	}
	size_t es = kvs_kv_dtype_size(o->dtype);
	g->tensor_bytes = (size_t)(max_tokens * o->kv_heads * o->head_dim * es);
	size_t qb = (size_t)(max_q * o->q_heads * o->head_dim * es);
	void **t[] = { &g->kc, &g->vc, &g->kd, &g->vd };
	kvs_status st = KVS_OK;
	for (size_t i = 0; i < 4 && st == KVS_OK; i++) {
		st = kvs_cuda_malloc(ctx, g->tensor_bytes, t[i]);
		if (st == KVS_OK)   /* f16 0x2c2c ~ 0.065: any constant will do */
			st = kvs_cuda_memset(ctx, *t[i], 0x2c, g->tensor_bytes);
	}
	if (st == KVS_OK)
		st = kvs_cuda_malloc(ctx, qb, &g->q);
	if (st == KVS_OK)
		st = kvs_cuda_memset(ctx, g->q, 0x2c, qb);
	if (st == KVS_OK)
		st = kvs_cuda_malloc(ctx, qb, &g->out);
	return st;
}

static void gpu_free(kvs_cuda_ctx *ctx, gpu_bufs *g)
{
	void *t[] = { g->q, g->out, g->kc, g->vc, g->kd, g->vd };
	for (size_t i = 0; i < KVS_ARRAY_LEN(t); i++)
		kvs_cuda_free(ctx, t[i]);
}

/* ---- CPU reference ---------------------------------------------------------- */

typedef struct cpu_run {
	const batch *bt;
	void *kc, *vc, *q, *out;
} cpu_run;

static kvs_status cpu_step(void *run, int kind)
{
	cpu_run *r = run;
	return kind == 0 ? kvs_ref_paged_attention(&r->bt->L, &r->bt->b, r->out, r->q, r->kc, r->vc)
			 : kvs_ref_contiguous_attention(&r->bt->L, &r->bt->b, r->out, r->q, r->kc,
							r->vc);
}

static kvs_status cpu_drain(void *run)
{
	kvs_bench_keep(((cpu_run *)run)->out);
	return KVS_OK;
}

static kvs_status cpu_time(const opts *o, const point *p, int iters, result *res)
{
	batch bt;
	bool ok = batch_make(o, p, &bt);
	size_t es = kvs_kv_dtype_size(o->dtype);
	size_t tensor = (size_t)bt.L.num_blocks * p->block_size * o->kv_heads * o->head_dim;
	size_t qn = (size_t)p->batch * o->q_heads * o->head_dim;
	cpu_run r = { &bt, kvs_calloc(tensor, es), kvs_calloc(tensor, es), kvs_calloc(qn, es),
		      kvs_calloc(qn, es) };
	kvs_status st = KVS_OK;
	if (!ok || !r.kc || !r.vc || !r.q || !r.out)
		st = kvs_fail(KVS_ERR_NOMEM, "bench: CPU buffers");
	if (st == KVS_OK) {
		memset(r.kc, 0x2c, tensor * es);
		memset(r.vc, 0x2c, tensor * es);
		memset(r.q, 0x2c, qn * es);
		st = time_kinds(&(stepper){ cpu_step, cpu_drain, &r, 0 }, iters, res);
	}
	kvs_free(r.kc);
	kvs_free(r.vc);
	kvs_free(r.q);
	kvs_free(r.out);
	batch_free(&bt);
	return st;
}

int main(int argc, char **argv)
{
	opts o;
	int rc = parse_args(argc, argv, &o);
	if (rc >= 0)
		return rc;
	kvs_bench b;
	int exit_code = 0;
	if (!kvs_bench_init(&b, "kernels", argc, argv, &exit_code))
		return exit_code;

	kvs_cuda_ctx *ctx = NULL;
	kvs_cuda_device_info info = { .name = "" };
	kvs_status st = kvs_cuda_create(0, &ctx);
	bool gpu = st == KVS_OK;
	if (gpu) {
		kvs_cuda_get_info(ctx, &info);
		kvs_kv_layout probe = { o.dtype, 1, 16, o.kv_heads, o.head_dim };
		if (kvs_cuda_shape_supported(&probe) != KVS_OK) {
			fprintf(stderr, "bench_kernels: %s\n", kvs_last_error());
			kvs_cuda_destroy(ctx);
			json_decref(b.rows);
			json_decref(b.root);
			return 2;
		}
	} else {
		/* stderr, so that --json output stays one JSON object */
		fprintf(stderr,
			"bench_kernels: NO GPU: %s\n"
			"bench_kernels: timing the C reference on the CPU instead "
			"(labelled cpu_reference; these are not GPU figures)\n",
			kvs_last_error());
		st = KVS_OK;
	}
	int iters = o.iters ? o.iters : gpu ? 20 : 2;

	point pts[256];
	size_t n = make_grid(&o, gpu, pts, KVS_ARRAY_LEN(pts));
	gpu_bufs g = { 0 };
	if (gpu && (st = gpu_alloc(ctx, &o, pts, n, &g)) != KVS_OK) {
		fprintf(stderr, "bench_kernels: %s\n", kvs_last_error());
		gpu_free(ctx, &g);
		kvs_cuda_destroy(ctx);
		return 1;
	}

	const char *device = gpu ? "cuda" : "cpu_reference";
	kvs_bench_figure_str(&b, "device", device);
	kvs_bench_figure_str(&b, "gpu", gpu ? info.name : "none");
	kvs_bench_figure(&b, "peak_gbps", o.peak_gbps, "GB/s");
	kvs_bench_figure_str(&b, "dtype", kvs_kv_dtype_name(o.dtype));
	kvs_bench_figure(&b, "num_q_heads", o.q_heads, "");
	kvs_bench_figure(&b, "num_kv_heads", o.kv_heads, "");
	kvs_bench_figure(&b, "head_dim", o.head_dim, "");
	kvs_bench_figure(&b, "iters", iters, "");
	if (!b.json)
		printf("\n%-14s %5s %5s %7s %11s %11s %9s %6s %9s %7s\n", "device",
		       "block", "batch", "context", "paged_us", "contig_us",
		       "paged_GB/s", "%peak", "contig_GB/s", "p/c");

	json_t *entries = json_array();
	for (size_t i = 0; i < n && st == KVS_OK; i++) {
		result r = { 0, 0 };
		st = gpu ? gpu_time(ctx, &o, &pts[i], &g, iters, &r)
			 : cpu_time(&o, &pts[i], iters, &r);
		if (st != KVS_OK)
			break;
		double pg = step_bytes(&o, &pts[i], true) / (r.paged_us * 1e3);
		double cg = step_bytes(&o, &pts[i], false) / (r.contig_us * 1e3);
		json_t *e = json_object();
		json_object_set_new(e, "block_size", json_integer(pts[i].block_size));
		json_object_set_new(e, "batch", json_integer(pts[i].batch));
		json_object_set_new(e, "context", json_integer(pts[i].context));
		json_object_set_new(e, "paged_us", json_real(r.paged_us));
		json_object_set_new(e, "contiguous_us", json_real(r.contig_us));
		json_object_set_new(e, "gbps", json_real(pg));
		json_object_set_new(e, "contiguous_gbps", json_real(cg));
		json_object_set_new(e, "peak_share", json_real(pg / o.peak_gbps));
		json_array_append_new(entries, e);
		if (!b.json) {
			printf("%-14s %5u %5u %7u %11.1f %11.1f %9.1f %5.1f%% %9.1f %7.3f\n",
			       device, pts[i].block_size, pts[i].batch, pts[i].context,
			       r.paged_us, r.contig_us, pg, 100.0 * pg / o.peak_gbps, cg,
			       r.paged_us / r.contig_us);
			fflush(stdout);
		}
	}
	json_object_set_new(b.root, "entries", entries);
	if (gpu) {
		gpu_free(ctx, &g);
		kvs_cuda_destroy(ctx);
	}
	if (st != KVS_OK) {
		fprintf(stderr, "bench_kernels: %s\n", kvs_last_error());
		json_decref(b.rows);
		json_decref(b.root);
		return 1;
	}
	if (!b.json)
		printf("\n");
	return kvs_bench_finish(&b);
}
