/*
 * cmd_size.c - `kvsim size`: KV bytes per token and per conversation, the
 * KV budget, num_gpu_blocks and conversations per GPU for one model on one
 * deployment; what shrinks the cache; and, for long contexts, the ways out
 * with numbers.  Printing only: every figure comes from sizing/.
 */
#include "commands.h"
#include "cli_sim.h"
#include "common/json.h"

#include <stdlib.h>

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

void kvs_cmd_size_usage(FILE *f)
{
	fprintf(f,
		"usage: kvsim size [OPTIONS]\n"
		"\n"
		"How much GPU memory one conversation's KV cache takes, and how many\n"
		"conversations fit on a GPU at once.  With no options: llama-2-7b on an\n"
		"" KVS_CLI_DEFAULT_GPU " at 4,000 tokens per conversation.\n"
		"\n");
	kvs_cli_deploy_help(f);
	fprintf(f,
		"\n"
		"  --max-num-seqs N             sequences of the engine's profile run (default:\n"
		"                               vLLM's serve default, 1024 on >= 70 GiB GPUs\n"
		"                               other than A100, else 256)\n"
		"  --max-num-batched-tokens N   tokens of the profile run (8192, else 2048)\n"
		"\n"
		"output:\n"
		"  --json [FILE]                one JSON object (snake_case keys, sorted)\n"
		"  (--json, --json - : standard output instead of the table; --json FILE.json,\n"
		"  --json=FILE: the file, the table stays)\n"
		"  --help                       show this help\n"
		"\n"
		"examples:\n"
		"  kvsim size --model llama-3-8b --gpu h100-80gb --context 8192\n"
		"  kvsim size --model llama-2-70b --tp 4 --kv-cache-dtype fp8\n"
		"  kvsim size --model path/to/config.json --gpu-mem 79.2GiB --context 128000\n");
}

/* ---- formatting ---------------------------------------------------------- */
/* v in units of base (1024 or 1000) from u[0], two decimals past bytes */
static const char *scaled(uint64_t v, double base, const char *const u[6],
			  char *buf, size_t cap)
{
	double x = (double)v;
	int i = 0;
	while (x >= base && i < 5) {
		x /= base;
		i++;
	}
	snprintf(buf, cap, i ? "%.2f %s" : "%.0f %s", x, u[i]);
	return buf;
}

/* ", name" when kept in all `all` layers it can be, else ", name (n
 * layers)"; 0 for none.  Returns the length written. */
static size_t wide_one(char *buf, size_t cap, const char *name, uint32_t n, uint32_t all)
{
	if (!n)
		return 0;
	int r = n < all ? snprintf(buf, cap, ", %s (%u layer%s)", name, n, n == 1 ? "" : "s")
			: snprintf(buf, cap, ", %s", name);
	return r < 0 ? 0 : (size_t)r;
}

/* The projections p0..p1 of one family kept one by one: those kept in
 * as many layers together, ", gate/up_proj (1 layer), down_proj (2
 * layers)"; `whole` when all are kept in as many ("MLP").  Returns the
 * length written. */
static size_t wide_family(char *buf, size_t cap, const uint32_t *n, kvs_proj p0, kvs_proj p1,
			  const char *whole, uint32_t all)
{
	size_t len = 0;
	bool same = true;
	for (kvs_proj p = p0; p <= p1; p++)
		same &= n[p] == n[p0];
	if (same)
		return wide_one(buf, cap, whole, n[p0], all);
	for (kvs_proj p = p0; p <= p1 && len < cap; p++) {
		bool first = true;
		for (kvs_proj e = p0; e < p; e++)
			first &= n[e] != n[p];
		if (!n[p] || !first)
			continue;
		/* the short names of those kept in as many layers */
		char names[48] = "";
		size_t nl = 0;
		for (kvs_proj e = p; e <= p1 && nl < sizeof names; e++)
			if (n[e] == n[p])
				nl += (size_t)snprintf(names + nl, sizeof names - nl, "%s%.*s",
						       nl ? "/" : "", (int)strlen(kvs_proj_name(e)) - 5,
						       kvs_proj_name(e));
		if (nl < sizeof names)
			snprintf(names + nl, sizeof names - nl, "_proj");
		len += wide_one(buf + len, cap - len, names, n[p], all);
	}
	return len;
}

/* The projections kept one by one (kvs_model_wide_projs): q, k, v, o in
 * the layers whose attention is not kept whole, gate, up, down in the
 * dense layers.  Returns the length written. */
static size_t wide_projs(const kvs_model *m, char *buf, size_t cap)
{
	uint32_t n[KVS_PROJ_COUNT_], na, nr, ns;
	kvs_model_wide_projs(m, n);
	kvs_model_wide_layers(m, &na, &nr, &ns);
	size_t len = wide_family(buf, cap, n, KVS_PROJ_Q, KVS_PROJ_O, "q/k/v/o_proj",
				 m->num_layers - na);
	if (len < cap)
		len += wide_family(buf + len, cap - len, n, KVS_PROJ_GATE, KVS_PROJ_DOWN, "MLP",
				   kvs_model_dense_layers(m));
	return len;
}

/* ", embeddings/lm_head, attention at 16 bits": what a quantised
 * checkpoint keeps wide (kvs_model_wide_params), a part kept in some
 * layers only with their count. */
static void wide_parts(const kvs_model *m, char *buf, size_t cap)
{
	uint32_t na, nr, ns;
	kvs_model_wide_layers(m, &na, &nr, &ns);
	const struct {
		uint32_t n;
		const char *what;
	} parts[] = {
		{ na, "attention" },
		{ nr, "routers" },
		{ ns, "shared experts" },
	};
	size_t len = (size_t)snprintf(buf, cap, ", embeddings%s",
				      m->tie_word_embeddings || m->quant_lm_head ? "" : "/lm_head");
	for (size_t i = 0; i < KVS_ARRAY_LEN(parts) && len < cap; i++) {
		if (!parts[i].n)
			continue;
		/* attention in every layer, routers and shared experts in
		 * the MoE layers */
		uint32_t all = i == 0 ? m->num_layers : kvs_model_moe_layers(m);
		len += (size_t)(parts[i].n < all
				? snprintf(buf + len, cap - len, ", %s (%u layer%s)", parts[i].what,
					   parts[i].n, parts[i].n == 1 ? "" : "s")
				: snprintf(buf + len, cap - len, ", %s", parts[i].what));
	}
	if (len < cap)
		len += wide_projs(m, buf + len, cap - len);
	if (len < cap)
		snprintf(buf + len, cap - len, " at 16 bits");
}

/* binary units for cache sizes (KiB, MiB, GiB, TiB) */
static const char *ibytes(uint64_t v, char *buf, size_t cap)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	return scaled(v, 1024.0, u, buf, cap);
}

/* decimal units for device memory (GB as datasheets print it) */
static const char *dbytes(uint64_t v, char *buf, size_t cap)
{
	static const char *const u[] = { "B", "KB", "MB", "GB", "TB", "PB" };
	return scaled(v, 1000.0, u, buf, cap);
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* Print text wrapped at 78 columns: first line after `first`, the rest
 * after `indent`. */
static void wrap(const char *first, const char *indent, const char *text)
{
	int col = printf("%s", first);
	int start = col;
	const char *p = text;
	while (*p) {
		const char *e = strchr(p, ' ');
		int len = e ? (int)(e - p) : (int)strlen(p);
		if (col > start && col + 1 + len > 78) {
			col = printf("\n%s", indent) - 1;
			start = col;
		} else if (col > start) {
			putchar(' ');
			col++;
		}
		col += printf("%.*s", len, p);
		p += len;
		while (*p == ' ')
			p++;
	}
	putchar('\n');
}

typedef struct row {
	char label[64];
	char value[40];
	char note[256];
} row;

typedef struct table {
	row rows[32];
	int n;
} table;

static void add(table *t, const char *label, const char *value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void add(table *t, const char *label, const char *value, const char *fmt, ...)
{
	if (t->n >= (int)KVS_ARRAY_LEN(t->rows))
		return;
	row *r = &t->rows[t->n++];
	snprintf(r->label, sizeof r->label, "%s", label);
	snprintf(r->value, sizeof r->value, "%s", value);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->note, sizeof r->note, fmt, ap);
	va_end(ap);
}

static void print_table(const table *t)
{
	int wl = 0, wv = 0;
	for (int i = 0; i < t->n; i++) {
		int a = (int)strlen(t->rows[i].label), b = (int)strlen(t->rows[i].value);
		wl = a > wl ? a : wl;
		wv = b > wv ? b : wv;
	}
	for (int i = 0; i < t->n; i++)
		printf("  %-*s  %*s  %s\n", wl, t->rows[i].label, wv, t->rows[i].value,
		       t->rows[i].note);
}

static const char *model_shape(const kvs_model *m, char *buf, size_t cap)
{
	char p[32];
	if (m->kv_lora_rank)
		snprintf(buf, cap, "%u layers, %u heads, MLA latent %u + rope %u",
			 m->num_layers, m->num_heads, m->kv_lora_rank, m->qk_rope_head_dim);
	else
		snprintf(buf, cap, "%u layers, %u heads, %u kv heads, head_dim %u",
			 m->num_layers, m->num_heads, m->num_kv_heads, m->head_dim);
	size_t n = strlen(buf);
	snprintf(buf + n, cap - n, ", %s parameters%s", kvs_fmt_commas(m->num_params, p, sizeof p),
		 m->params_from_config ? "" : " (from the config's shapes)");
	if (m->vision_params) {
		n = strlen(buf);
		snprintf(buf + n, cap - n, ", of which vision tower %.2fB",
			 (double)m->vision_params / 1e9);
	}
	if (m->num_experts) {
		n = strlen(buf);
		snprintf(buf + n, cap - n, " (%s active: %u of %u experts per token)",
			 kvs_fmt_commas(m->num_active_params, p, sizeof p), m->num_experts_per_tok,
			 m->num_experts);
	}
	return buf;
}

/* ---- table output -------------------------------------------------------- */
static void print_formula(const kvs_deploy *d, const kvs_sizing *s)
{
	const kvs_model *m = &d->model;
	char a[32], b[32];
	unsigned bits = kvs_dtype_bits(d->kv_dtype);
	char eb[16];
	if (bits % 8)
		snprintf(eb, sizeof eb, "%g", bits / 8.0);
	else
		snprintf(eb, sizeof eb, "%u", bits / 8);
	uint64_t elem = s->kv_bytes_per_token - s->kv_scale_bytes_per_token;
	if (s->kv_factor == 1)
		printf("  (%u latent + %u rope) x %u layers x %s bytes (%s) = %s B\n"
		       "  MLA: one compressed latent per layer, shared by all %u heads: no K/V\n"
		       "  factor and no per-head factor; kept whole on every tp rank\n",
		       m->kv_lora_rank, m->qk_rope_head_dim, s->layers_per_rank, eb,
		       kvs_dtype_name(d->kv_dtype), kvs_fmt_commas(elem, a, sizeof a), m->num_heads);
	else
		printf("  2 (K and V) x %u layers x %u kv heads x %u head_dim x %s bytes (%s) = %s B\n",
		       s->layers_per_rank, s->kv_heads_per_rank, m->head_dim, eb,
		       kvs_dtype_name(d->kv_dtype), kvs_fmt_commas(elem, a, sizeof a));
	if (s->kv_scale_bytes_per_token)
		printf("  + %s B of quantisation scales (fp16 %s per %u elements) = %s B\n",
		       kvs_fmt_commas(s->kv_scale_bytes_per_token, a, sizeof a),
		       d->kv_dtype == KVS_DTYPE_INT4 ? "scale and zero point" : "scale",
		       d->kv_quant_group, kvs_fmt_commas(s->kv_bytes_per_token, b, sizeof b));
	if (d->tp > 1 && s->kv_factor == 2)
		printf("  tp %u: %u kv heads per GPU%s\n", d->tp, s->kv_heads_per_rank,
		       d->tp > m->num_kv_heads ? " (replicated: tp exceeds the kv heads)" : "");
	if (d->pp > 1)
		printf("  pp %u: %u of %u layers on the largest stage\n", d->pp,
		       s->layers_per_rank, m->num_layers);
	if (s->sliding_layers_per_rank && m->window_chunked)
		printf("  chunked attention: %u of these %u layers keep only their chunk of %s "
		       "tokens\n", s->sliding_layers_per_rank, s->layers_per_rank,
		       kvs_fmt_commas(m->sliding_window, a, sizeof a));
	else if (s->sliding_layers_per_rank)
		printf("  sliding window: %u of these %u layers keep only the last %s tokens\n",
		       s->sliding_layers_per_rank, s->layers_per_rank,
		       kvs_fmt_commas(m->sliding_window, a, sizeof a));
	else if (kvs_deploy_windows_in_full(d) && !d->hybrid_kv_off)
		printf("  chunked attention: %u of %u layers attend within chunks of %s tokens,\n"
		       "  their KV held in full: vLLM turns its hybrid manager off for chunked\n"
		       "  attention (--allow-chunked-local-attn-with-hybrid-kv-cache keeps it)\n",
		       m->num_sliding_layers, m->num_layers,
		       kvs_fmt_commas(m->sliding_window, a, sizeof a));
	else if (kvs_deploy_windows_in_full(d))
		printf("  %s: %u of %u layers attend %s %s tokens, their\n"
		       "  KV held in full (--disable-hybrid-kv-cache-manager)\n",
		       m->window_chunked ? "chunked attention" : "sliding window",
		       m->num_sliding_layers, m->num_layers,
		       m->window_chunked ? "within chunks of" : "to the last",
		       kvs_fmt_commas(m->sliding_window, a, sizeof a));
}

static void print_shrinks(const kvs_shrink_row *rows, unsigned gpus)
{
	char kv[24], conv[24], n[24], x[16];
	int wl = (int)strlen("what changes");
	for (int i = 0; i < KVS_SHRINK_COUNT_; i++) {
		int l = (int)strlen(rows[i].label);
		wl = l > wl ? l : wl;
	}
	if (gpus > 1)
		printf("\nWhat shrinks it (same GPUs, weights and reserve; bytes per GPU, "
		       "conversations per replica)\n");
	else
		printf("\nWhat shrinks it (same GPU, weights and reserve; per GPU)\n");
	printf("  %-*s  %12s  %14s  %13s  %8s\n", wl, "what changes", "KV/token",
	       "per conv.", "conversations", "vs now");
	for (int i = 0; i < KVS_SHRINK_COUNT_; i++) {
		const kvs_shrink_row *r = &rows[i];
		if (!r->applicable) {
			printf("  %-*s  %12s  %14s  %13s  %8s\n", wl, r->label, "-", "-", "-", "-");
			continue;
		}
		snprintf(x, sizeof x, "%.2fx", r->vs_baseline);
		printf("  %-*s  %12s  %14s  %13s  %8s\n", wl, r->label,
		       ibytes(r->kv_bytes_per_token, kv, sizeof kv),
		       ibytes(r->bytes_per_context, conv, sizeof conv),
		       kvs_fmt_commas(r->max_conversations, n, sizeof n), x);
	}
}

static void print_advice(const kvs_deploy *d, const kvs_sizing *s, const kvs_size_advice *a)
{
	char b1[32], b2[32], b3[32], c1[32];
	const char *gpu = d->gpu.name;
	kvs_fmt_commas(d->context_tokens, c1, sizeof c1);
	printf("\nLong context\n");
	if (!a->weights_fit)
		printf("  The weights (%s per GPU) and the working-space reserve (%s) do not\n"
		       "  fit in the usable %s of one %s: no room for any KV cache.\n",
		       dbytes(s->weight_bytes, b1, sizeof b1), dbytes(s->reserve_bytes, b2, sizeof b2),
		       dbytes(s->usable_bytes, b3, sizeof b3), gpu);
	else if (!a->context_fits)
		printf("  One conversation of %s tokens needs %s of KV cache per GPU, more than\n"
		       "  the %s KV budget of one %s: it does not fit at all.\n",
		       c1, ibytes(s->bytes_per_context, b1, sizeof b1),
		       ibytes(s->kv_budget_bytes, b2, sizeof b2), gpu);
	if (a->cache_exceeds_weights)
		printf("  One conversation's cache (%s) is %.2fx the weights (%s): at this\n"
		       "  context the cache, not the model, decides how many GPUs you need.\n",
		       ibytes(s->bytes_per_context, b1, sizeof b1), s->cache_to_weights,
		       ibytes(s->weight_bytes, b2, sizeof b2));
	if (a->few_conversations) {
		char text[320];
		snprintf(text, sizeof text, "Only %s %s of %s tokens %s per replica: one needs "
			 "%s of KV cache per GPU, %.0f%% of the %s KV budget%s",
			 kvs_fmt_commas(s->max_conversations, b3, sizeof b3),
			 plural(s->max_conversations, "conversation", "conversations"), c1,
			 plural(s->max_conversations, "fits", "fit"),
			 ibytes(s->bytes_per_context, b1, sizeof b1),
			 s->kv_budget_bytes ? 100.0 * (double)s->bytes_per_context /
					      (double)s->kv_budget_bytes : 0.0,
			 ibytes(s->kv_budget_bytes, b2, sizeof b2),
			 a->cache_exceeds_weights ? "." : "; at this context the cache "
			 "decides how many GPUs you need.");
		wrap("  ", "  ", text);
	}
	if (a->over_max_model_len)
		printf("  %s tokens is beyond max_model_len %s: the model was not trained for\n"
		       "  positions this far (it needs RoPE scaling or a long-context variant).\n",
		       c1, kvs_fmt_commas(s->max_model_len, b1, sizeof b1));

	printf("\nWays out\n");
	/* only the ways that work: with weights that do not fit, no cache
	 * setting helps; quantised weights and more GPUs come first */
	if (!a->weights_fit) {
		const struct { const kvs_parallel_option *o; const char *flag; } w[2] = {
			{ &a->fp8_weights, "--dtype fp8" }, { &a->int4_weights, "--dtype int4" },
		};
		if (a->fp8_weights.tp || a->int4_weights.tp)
			printf("  quantised weights (the fewest GPUs that then hold a conversation):\n");
		for (int i = 0; i < 2; i++) {
			const kvs_parallel_option *o = w[i].o;
			if (!o->tp)
				continue;
			printf("    %-12s tp %-2u pp %-2u (%2u GPU%s): %s %s, KV budget %s per GPU\n",
			       w[i].flag, o->tp, o->pp, o->tp * o->pp, o->tp * o->pp > 1 ? "s" : "",
			       kvs_fmt_commas(o->max_conversations, b1, sizeof b1),
			       plural(o->max_conversations, "conversation", "conversations"),
			       ibytes(o->kv_budget_bytes, b2, sizeof b2));
		}
	}
	if (a->n_parallel) {
		printf("  more GPUs (conversations per tp x pp replica):\n");
		for (size_t i = 0; i < a->n_parallel; i++) {
			const kvs_parallel_option *o = &a->parallel[i];
			printf("    tp %-2u pp %-2u (%2u GPUs): %s %s, KV budget %s per GPU\n",
			       o->tp, o->pp, o->tp * o->pp,
			       kvs_fmt_commas(o->max_conversations, b1, sizeof b1),
			       plural(o->max_conversations, "conversation", "conversations"),
			       ibytes(o->kv_budget_bytes, b2, sizeof b2));
		}
	} else {
		printf("  more GPUs: no layout up to 64 GPUs holds one conversation\n");
	}
	if (!a->weights_fit) {
		printf("  (a smaller cache, offloading or a shorter context cannot help while\n"
		       "  the weights do not fit)\n");
		goto questions;
	}
	if (a->data_parallel_total > s->max_conversations)
		printf("  data-parallel attention: --tp 1 --dp %u --enable-expert-parallel holds\n"
		       "    %s conversations on the same %u GPUs (%s per rank; now %s)\n",
		       a->data_parallel_ranks,
		       kvs_fmt_commas(a->data_parallel_total, b1, sizeof b1),
		       a->data_parallel_ranks * d->pp,
		       kvs_fmt_commas(a->data_parallel.max_conversations, b2, sizeof b2),
		       kvs_fmt_commas(s->max_conversations, b3, sizeof b3));
	if (a->fp8_conversations > s->max_conversations ||
	    a->int4_conversations > s->max_conversations)
		printf("  quantised cache: FP8 holds %s %s, INT4 %s (now %s)\n",
		       kvs_fmt_commas(a->fp8_conversations, b1, sizeof b1),
		       plural(a->fp8_conversations, "conversation", "conversations"),
		       kvs_fmt_commas(a->int4_conversations, b2, sizeof b2),
		       kvs_fmt_commas(s->max_conversations, b3, sizeof b3));
	if (a->offload_bytes)
		printf("  offload to host memory: the %s of one conversation beyond the budget\n"
		       "    must cross PCIe (%.0f GB/s) on every decode step: %.3f s per token\n",
		       ibytes(a->offload_bytes, b1, sizeof b1), a->pcie_bytes_per_s / 1e9,
		       a->offload_s_per_step);
	printf("  offload the whole cache: %s per conversation over PCIe (%.0f GB/s) is\n"
	       "    %.3f s per decode step per conversation",
	       ibytes(s->bytes_per_context, b1, sizeof b1), a->pcie_bytes_per_s / 1e9,
	       a->offload_full_s_per_step);
	if (s->decode_step_s > 0)
		printf(" (on-GPU step: %.1f ms for all %s)\n", s->decode_step_s * 1e3,
		       kvs_fmt_commas(s->max_conversations, b2, sizeof b2));
	else
		printf("\n");
	char text[320];
	size_t n = 0;
	for (int i = 0; i < KVS_ADVICE_CONTEXTS && n < sizeof text; i++) {
		uint64_t t = a->context_tokens_for_n[i];
		if (t == 0)   /* not even one block's worth: no way out */
			continue;
		n += (size_t)snprintf(text + n, sizeof text - n, "%s%u up to %s tokens%s",
				      n ? ", " : "", a->context_for_n[i],
				      kvs_fmt_commas(t, b1, sizeof b1),
				      t >= s->max_model_len ? " (max_model_len)" : "");
	}
	if (n)
		wrap("  shorter context: ", "    ", text);
	if (a->prefix_half_conversations > s->max_conversations)
		printf("  prefix sharing: if half of each context is one shared, cached prefix,\n"
		       "    %s %s (now %s)\n",
		       kvs_fmt_commas(a->prefix_half_conversations, b1, sizeof b1),
		       plural(a->prefix_half_conversations, "conversation fits", "conversations fit"),
		       kvs_fmt_commas(s->max_conversations, b2, sizeof b2));
questions:
	printf("\nAsk the customer first\n");
	for (const char *const *q = kvs_size_questions(); *q; q++)
		wrap("  - ", "    ", *q);
}

/* Where vLLM's vision-encoder run takes a tenth of the KV budget or more:
 * the pool without it (a text-only deployment), and the flag that shrinks
 * the largest image. */
static void print_encoder_note(const kvs_deploy *d, const kvs_sizing *s)
{
	const kvs_mem_terms *mt = &s->mem;
	if (!mt->encoder_bytes || !(mt->counted & KVS_MEM_ENCODER) || !s->reserve_estimated ||
	    d->num_gpu_blocks_override || d->kv_cache_memory_bytes ||
	    mt->encoder_bytes < s->kv_budget_bytes / 10)
		return;
	kvs_deploy text = *d;
	text.mm_image_limit = text.mm_video_limit = KVS_MM_LIMIT_ZERO;
	kvs_sizing ts;
	if (kvs_size_compute(&text, &ts) != KVS_OK || ts.kv_capacity_tokens <= s->kv_capacity_tokens)
		return;
	char b1[32], b2[32], b3[32], line[512];
	snprintf(line, sizeof line, "The vision encoder's profile run takes %s of the pool: "
		 "%s tokens of KV cache, %s without it (text-only serving: "
		 "--limit-mm-per-prompt '{\"image\": 0, \"video\": 0}')%s.",
		 ibytes(mt->encoder_bytes, b1, sizeof b1),
		 kvs_fmt_commas(s->kv_capacity_tokens, b2, sizeof b2),
		 kvs_fmt_commas(ts.kv_capacity_tokens, b3, sizeof b3),
		 d->model.vision_profile.patch_side
			 ? "; smaller images shrink it: --mm-processor-kwargs "
			   "'{\"max_pixels\": N}'" : "");
	printf("\n");
	wrap("", "", line);
}

/* The lines a user compares with the engine's own start-up log. */
static void print_engine_lines(const kvs_deploy *d, const kvs_sizing *s)
{
	char b1[32], b2[32];
	if (s->mem.engine != KVS_ENGINE_VLLM) {
		printf("\nAs %s would size it: %s tokens of KV cache per GPU\n",
		       kvs_engine_name(s->mem.engine),
		       kvs_fmt_commas(s->kv_capacity_tokens, b1, sizeof b1));
		return;
	}
	printf("\nAs vLLM logs it (per GPU)\n");
	printf("  Available KV cache memory: %.2f GiB\n",
	       (double)s->vllm_check_bytes / (double)(1ull << 30));
	printf("  GPU KV cache size: %s tokens\n",
	       kvs_fmt_commas(s->vllm_kv_tokens, b1, sizeof b1));
	printf("  Maximum concurrency for %s tokens per request: %.2fx\n",
	       kvs_fmt_commas(s->max_model_len, b2, sizeof b2), s->vllm_max_concurrency);
	char text[640], n1[32], n2[32], n3[32];
	uint32_t groups = s->vllm_full_groups + s->vllm_window_groups;
	if (s->vllm_window_groups) {
		uint64_t full = s->vllm_full_groups *
				kvs_div_ceil(s->max_model_len, d->block_size);
		snprintf(text, sizeof text,
			 "(%u KV cache group%s of %u layers share %s blocks of %u tokens x %u "
			 "layers; one request of max_model_len may hold %s of them: %s for "
			 "the full layers, %s for the %s layers at %u batched tokens a step. "
			 "kvsim's max_concurrency above is for --context.)",
			 groups, plural(groups, "", "s"), s->vllm_group_layers,
			 kvs_fmt_commas(s->vllm_num_blocks, b1, sizeof b1), d->block_size,
			 s->vllm_group_layers,
			 kvs_fmt_commas(s->vllm_blocks_per_request, n1, sizeof n1),
			 kvs_fmt_commas(full, n2, sizeof n2),
			 kvs_fmt_commas(s->vllm_blocks_per_request - full, n3, sizeof n3),
			 d->model.window_chunked ? "chunked" : "windowed",
			 s->mem.profile_tokens);
		wrap("  ", "  ", text);
	}
	if (!s->vllm_starts) {
		double gib = (double)(1ull << 30);
		if (s->vllm_fit_max_model_len)
			snprintf(n1, sizeof n1, "%s tokens",
				 kvs_fmt_commas(s->vllm_fit_max_model_len, b1, sizeof b1));
		snprintf(text, sizeof text,
			 "vLLM would not start: one request of max_model_len %s tokens needs "
			 "%.2f GiB of KV cache, more than the %.2f GiB available. %s%s%s",
			 kvs_fmt_commas(s->max_model_len, b2, sizeof b2),
			 (double)s->vllm_request_bytes / gib, (double)s->vllm_check_bytes / gib,
			 s->vllm_fit_max_model_len ? "The longest max_model_len that fits is "
						   : "Not even one token fits.",
			 s->vllm_fit_max_model_len ? n1 : "",
			 s->vllm_fit_max_model_len ? ": set --max-model-len to at most that, or raise "
						     "--gpu-memory-utilization." : "");
		wrap("  ", "  ", text);
	} else if (s->vllm_request_bytes_all_stages > s->vllm_check_bytes) {
		double gib = (double)(1ull << 30);
		snprintf(text, sizeof text,
			 "vLLM from 0.14.0 until PR #33698 (February 2026) would not start: "
			 "those versions check one max_model_len request over the layers of "
			 "all %u stages, %.2f GiB, against one GPU's %.2f GiB "
			 "(vllm-project/vllm issue #32105); with them lower --max-model-len "
			 "or raise --gpu-memory-utilization.",
			 d->pp, (double)s->vllm_request_bytes_all_stages / gib,
			 (double)s->vllm_check_bytes / gib);
		wrap("  ", "  ", text);
	}
}

static void print_text(const kvs_deploy *d, const kvs_sizing *s,
		       const kvs_shrink_row *rows, const kvs_size_advice *a,
		       const kvs_cli_deploy *c)
{
	const kvs_model *m = &d->model;
	const kvs_gpu *g = &d->gpu;
	char b1[64], b2[64], c1[32], shape[256];
	char dps[32] = "";
	if (s->dp > 1)
		snprintf(dps, sizeof dps, " x dp %u", s->dp);
	uint64_t all = kvs_deploy_gpus(d);
	printf("kvsim size: %s on %s, tp %u x pp %u%s (%llu GPU%s), %s tokens per conversation\n\n",
	       m->name, g->name, d->tp, d->pp, dps, (unsigned long long)all, all > 1 ? "s" : "",
	       kvs_fmt_commas(d->context_tokens, c1, sizeof c1));
	printf("  model  %s\n", model_shape(m, shape, sizeof shape));
	printf("  gpu    %s (%s), %.0f GB/s, %.0f TFLOP/s dense fp16",
	       ibytes(g->mem_bytes, b1, sizeof b1),
	       c->gpu_mem ? "--gpu-mem" : "the total the driver reports",
	       g->hbm_bytes_per_s / 1e9, g->fp16_flops / 1e12);
	if (g->fp8_flops > 0)
		printf(", %.0f fp8", g->fp8_flops / 1e12);
	printf("\n");
	if (!c->gpu_mem && g->mem_source[0])
		wrap("         memory: ", "         ", g->mem_source);
	if (!c->gpu_mem && g->datasheet_mem_bytes)
		printf("         (the label's %s is not what engines size from)\n",
		       dbytes(g->datasheet_mem_bytes, b2, sizeof b2));
	if (kvs_gpu_matmul_rate(g, d->weight_dtype) != g->fp16_flops)
		printf("  step   %s weights: matmuls at the %s rate, %.0f TFLOP/s\n",
		       kvs_dtype_name(d->weight_dtype),
		       d->weight_dtype == KVS_DTYPE_FP8 ? "FP8" : "INT8",
		       kvs_gpu_matmul_rate(g, d->weight_dtype) / 1e12);

	if (s->dp > 1)
		printf("  dp     %u data-parallel ranks of %u GPU%s, each with its own KV pool and\n"
		       "         requests%s\n", s->dp, d->tp * d->pp, d->tp * d->pp > 1 ? "s" : "",
		       s->experts_per_gpu
		       ? "; the routed experts spread over all of them (expert parallel)" : "");
	if (d->pp > 1 && d->pp_balanced && c->pp_balanced_arg == 1)
		printf("  pp     %u stages, up to %u balanced micro-batches in flight (--pp-balanced):\n"
		       "         a step lasts one micro-batch's pass through every stage, each\n"
		       "         stage reading its weights once per micro-batch (an upper bound\n"
		       "         on the decode rate)\n", d->pp, d->pp);
	else if (d->pp > 1 && d->pp_balanced)
		printf("  pp     %u stages, up to %u balanced micro-batches in flight, as SGLang's\n"
		       "         scheduler keeps them (each at most max_running_requests / pp): a\n"
		       "         step lasts one micro-batch's pass through every stage, each stage\n"
		       "         reading its weights once per micro-batch (an upper bound on the\n"
		       "         decode rate; --no-pp-balanced gives the other)\n", d->pp, d->pp);
	else if (d->pp > 1)
		printf("  pp     %u stages run one after another (one batch in flight, as vLLM\n"
		       "         V1's scheduler mostly runs them): a lower bound on the decode\n"
		       "         rate; --pp-balanced gives the other bound\n", d->pp);

	printf("\nKV bytes per token, per GPU\n");
	print_formula(d, s);

	table t = { .n = 0 };
	add(&t, "kv_bytes_per_token", kvs_fmt_commas(s->kv_bytes_per_token, b1, sizeof b1), "%s",
	    ibytes(s->kv_bytes_per_token, b2, sizeof b2));
	char lab[64];
	snprintf(lab, sizeof lab, "bytes per block (%u tokens)", d->block_size);
	add(&t, lab, kvs_fmt_commas(s->bytes_per_block, b1, sizeof b1), "%s",
	    ibytes(s->bytes_per_block, b2, sizeof b2));
	snprintf(lab, sizeof lab, "per conversation (%s tokens)", c1);
	add(&t, lab, kvs_fmt_commas(s->bytes_per_context, b1, sizeof b1), "%s%s",
	    ibytes(s->bytes_per_context, b2, sizeof b2),
	    s->sliding_layers_per_rank ? ", windows honoured" : "");
	unsigned gpus = d->tp * d->pp;
	if (gpus > 1)
		add(&t, "  on the whole replica", kvs_fmt_commas(s->bytes_per_context_replica, b1,
								  sizeof b1),
		    "%s, summed over the replica's %u GPUs", ibytes(s->bytes_per_context_replica, b2,
								    sizeof b2), gpus);
	add(&t, "device memory", kvs_fmt_commas(g->mem_bytes, b1, sizeof b1), "%s, %s",
	    ibytes(g->mem_bytes, b2, sizeof b2), c->gpu_mem ? "--gpu-mem" : "driver total");
	const kvs_mem_terms *mt = &s->mem;
	if (mt->engine == KVS_ENGINE_TRTLLM)
		snprintf(lab, sizeof lab, "taken (x %.2f of the free)", mt->fraction);
	else
		/* SGLang's own default has three decimals */
		snprintf(lab, sizeof lab, "usable (x %.*f%s)",
			 mt->engine == KVS_ENGINE_SGLANG ? 3 : 2, mt->fraction,
			 mt->engine == KVS_ENGINE_SGLANG ? " mem_fraction_static" : "");
	/* SGLang's default, from the total nvidia-smi shows (its own rule,
	 * docs/SIZING.md): that total said, so the figure can be checked */
	char why[192] = "", smi[32];
	if (mt->engine == KVS_ENGINE_SGLANG && !(d->mem_fraction_static > 0)) {
		int n = snprintf(why, sizeof why, ", SGLang's default for %s MiB (%s), tp %u x pp %u",
				 kvs_fmt_commas(kvs_gpu_smi_bytes(g) >> 20, smi, sizeof smi),
				 g->smi_mem_bytes ? "nvidia-smi" : "the driver total", d->tp, d->pp);
		if (mt->vlm_factor != 1.0 && n > 0 && (size_t)n < sizeof why)
			snprintf(why + n, sizeof why - (size_t)n, ", x %.4f for the vision "
				 "tower (%u layers of %u)", mt->vlm_factor,
				 d->model.vision_profile.attr_layers,
				 d->model.vision_profile.attr_hidden);
	}
	add(&t, lab, kvs_fmt_commas(s->usable_bytes, b1, sizeof b1), "%s%s",
	    ibytes(s->usable_bytes, b2, sizeof b2), why);
	/* the checkpoint's own method beside the width it is counted at */
	bool method = d->model.quant_method[0] && d->weight_dtype == d->model.weight_dtype &&
		      strcmp(d->model.quant_method, kvs_dtype_name(d->weight_dtype)) != 0;
	snprintf(lab, sizeof lab, "- weights (%s%s%.20s)", kvs_dtype_name(d->weight_dtype),
		 method ? ", " : "", method ? d->model.quant_method : "");
	char wide[256] = "", b3[32];
	if (kvs_dtype_bits(d->weight_dtype) < 16)
		wide_parts(&d->model, wide, sizeof wide);
	if (s->experts_per_gpu) {
		size_t len = strlen(wide);
		snprintf(wide + len, sizeof wide - len, ", %u of the %u routed experts of a "
			 "layer (expert parallel)", s->experts_per_gpu, d->model.num_experts);
	}
	if (s->vision_weight_bytes) {
		/* the tower: first stage only, split over tp; 16 bits when kept */
		size_t len = strlen(wide);
		bool kept = d->model.vision_wide && kvs_dtype_bits(d->weight_dtype) < 16;
		snprintf(wide + len, sizeof wide - len, ", vision tower %s%s%s",
			 ibytes(s->vision_weight_bytes, b3, sizeof b3), kept ? " at 16 bits" : "",
			 d->pp > 1 ? " (first stage)" : "");
	}
	add(&t, lab, kvs_fmt_commas(s->weight_bytes, b1, sizeof b1), "%s%s%s",
	    ibytes(s->weight_bytes, b2, sizeof b2),
	    d->tp * d->pp > 1 || s->experts_per_gpu ? ", this GPU's share" : "", wide);
	if (s->reserve_estimated) {
		const char *cnt = "subtracted";
		const char *no = "not subtracted (in the headroom)";
		add(&t, "- RoPE cache", kvs_fmt_commas(mt->rope_cache_bytes, b1, sizeof b1),
		    "%s, loaded with the weights", ibytes(mt->rope_cache_bytes, b2, sizeof b2));
		snprintf(lab, sizeof lab, "- activations (%u tokens)", mt->profile_tokens);
		add(&t, lab, kvs_fmt_commas(mt->activation_bytes, b1, sizeof b1),
		    "%s, profile-run peak, %s", ibytes(mt->activation_bytes, b2, sizeof b2),
		    mt->counted & KVS_MEM_ACTIVATION ? cnt : no);
		snprintf(lab, sizeof lab, "- logits, sampler (%u seqs)", mt->profile_seqs);
		add(&t, lab, kvs_fmt_commas(mt->sampler_bytes, b1, sizeof b1),
		    "%s, x %u vocab, %s", ibytes(mt->sampler_bytes, b2, sizeof b2),
		    d->model.vocab_size, mt->counted & KVS_MEM_SAMPLER ? cnt : no);
		add(&t, "- non-torch memory", kvs_fmt_commas(mt->non_torch_bytes, b1, sizeof b1),
		    "%s%s, %s", ibytes(mt->non_torch_bytes, b2, sizeof b2),
		    mt->comm_bytes ? " incl. NCCL/all-reduce" : "",
		    mt->counted & KVS_MEM_NON_TORCH ? cnt : no);
		add(&t, "- CUDA context", kvs_fmt_commas(mt->cuda_context_bytes, b1, sizeof b1),
		    "%s, %s", ibytes(mt->cuda_context_bytes, b2, sizeof b2),
		    mt->counted & KVS_MEM_CONTEXT ? cnt : "before vLLM's snapshot, not subtracted");
		snprintf(lab, sizeof lab, "  CUDA graphs (%u sizes)", mt->cudagraph_sizes);
		add(&t, lab, kvs_fmt_commas(mt->cudagraph_bytes, b1, sizeof b1),
		    "%s, estimate, %s%s", ibytes(mt->cudagraph_bytes, b2, sizeof b2),
		    mt->counted & KVS_MEM_CUDAGRAPH ? cnt : no,
		    mt->engine == KVS_ENGINE_VLLM
			    ? "; vLLM 0.21 and later, on CUDA GPUs, subtract a profiled "
			      "estimate of their own by default "
			      "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS), docs/SIZING.md" : "");
		if (mt->encoder_items) {
			char b4[32], b5[32], b6[32];
			snprintf(lab, sizeof lab, "- vision encoder (%u item%s)", mt->encoder_items,
				 mt->encoder_items == 1 ? "" : "s");
			add(&t, lab, kvs_fmt_commas(mt->encoder_bytes, b1, sizeof b1),
			    "%s, profile run of the tower on %s patches (peak %s, embeddings "
			    "kept %s), beyond the activations and sampler, %s%s",
			    ibytes(mt->encoder_bytes, b2, sizeof b2),
			    kvs_fmt_commas(mt->encoder_patches, b4, sizeof b4),
			    ibytes(mt->encoder_peak_bytes, b5, sizeof b5),
			    ibytes(mt->encoder_out_bytes, b6, sizeof b6),
			    mt->counted & KVS_MEM_ENCODER ? cnt : no,
			    mt->encoder_video ? "; images are off, so vLLM profiles a video, "
						"which kvsim does not model: the largest images "
						"stand in" : "");
		} else if (d->model.vision_profile.has_tower && mt->engine == KVS_ENGINE_VLLM &&
			   !kvs_deploy_mm_profiled(d)) {
			add(&t, "  vision encoder profile", "-", "not run (%s): no encoder "
			    "peak before vLLM sizes the pool",
			    d->skip_mm_profiling ? "--skip-mm-profiling"
			    : "--limit-mm-per-prompt: no modality the tower takes");
		} else if (d->model.vision_params && mt->engine == KVS_ENGINE_VLLM) {
			add(&t, "  vision encoder profile", "-",
			    "not estimated for this tower: vLLM runs the encoder on its "
			    "largest input before sizing the pool (docs/SIZING.md); "
			    "--reserve sets the whole non-KV term");
		}
	}
	add(&t, "- non-KV total", kvs_fmt_commas(s->reserve_bytes, b1, sizeof b1), "%s, %s",
	    ibytes(s->reserve_bytes, b2, sizeof b2),
	    s->reserve_estimated ? "the subtracted terms above (see --reserve)" : "given (--reserve)");
	add(&t, "= KV budget", kvs_fmt_commas(s->kv_budget_bytes, b1, sizeof b1), "%s = %s%s",
	    dbytes(s->kv_budget_bytes, b2, sizeof b2), ibytes(s->kv_budget_bytes, b3, sizeof b3),
	    s->kv_from_override ? ", from the override" : "");
	add(&t, "num_gpu_blocks", kvs_fmt_commas(s->num_gpu_blocks, b1, sizeof b1), "blocks of %u tokens",
	    d->block_size);
	/* a token's KV is spread over the replica's GPUs: token and conversation
	 * counts are the replica's */
	const char *per = gpus > 1 ? "per replica, " : "";
	add(&t, "KV capacity", kvs_fmt_commas(s->kv_capacity_tokens, b1, sizeof b1), "tokens%s",
	    gpus > 1 ? " per replica" : "");
	snprintf(b1, sizeof b1, "%.2fx", s->max_concurrency);
	add(&t, "max_concurrency", b1, "%sfor %s tokens per request, kvsim's figure%s", per, c1,
	    s->sliding_layers_per_rank ? " (windows honoured)" : "");
	add(&t, "conversations that fit", kvs_fmt_commas(s->max_conversations, b1, sizeof b1),
	    "%swhole conversations in whole blocks (%s blocks each)",
	    s->dp > 1 ? "per data-parallel rank, " : per,
	    kvs_fmt_commas(s->blocks_per_conversation, b2, sizeof b2));
	if (s->dp > 1)
		add(&t, "  on all ranks", kvs_fmt_commas(s->max_conversations_total, b1, sizeof b1),
		    "conversations on the %u ranks (%llu GPUs)", s->dp,
		    (unsigned long long)kvs_deploy_gpus(d));
	snprintf(b1, sizeof b1, "%.3f", s->cache_to_weights);
	add(&t, "cache / weights", b1, "one conversation's cache over the weights");
	if (s->decode_tokens_per_s > 0) {
		snprintf(b1, sizeof b1, "%.0f", s->decode_tokens_per_s);
		add(&t, "decode at full occupancy", b1,
		    "tokens/s per %s, %.1f ms per step (roofline at peak bandwidth)",
		    s->dp > 1 ? "rank" : "replica", s->decode_step_s * 1e3);
		if (s->decode_tokens_per_s_other > 0) {
			snprintf(b1, sizeof b1, "%.0f", s->decode_tokens_per_s_other);
			add(&t, "  other pipeline bound", b1, "tokens/s per %s %s",
			    s->dp > 1 ? "rank" : "replica",
			    d->pp_balanced ? "with one batch in flight (--no-pp-balanced)"
					   : "with balanced micro-batches (--pp-balanced)");
		}
		if (s->dp > 1) {
			snprintf(b1, sizeof b1, "%.0f", s->decode_tokens_per_s_total);
			add(&t, "  on all ranks", b1, "tokens/s (no expert all-to-all modelled)");
		}
	}
	if (d->gpu_hour_price > 0) {
		snprintf(b1, sizeof b1, "$%.4f", s->dollars_per_conv_hour);
		add(&t, "per conversation-hour", s->max_conversations ? b1 : "-",
		    "at $%.2f per GPU-hour, %u GPU%s full", d->gpu_hour_price, d->tp * d->pp,
		    d->tp * d->pp > 1 ? "s" : "");
		snprintf(b1, sizeof b1, "$%.4f", s->dollars_per_mtok);
		add(&t, "per million tokens", s->dollars_per_mtok > 0 ? b1 : "-",
		    "generated, at full occupancy");
	}
	if (gpus > 1)
		printf("\nMemory per GPU (engine %s); tokens and conversations per replica of "
		       "%u GPUs\n", kvs_engine_name(s->mem.engine), gpus);
	else
		printf("\nMemory per GPU (engine %s)\n", kvs_engine_name(s->mem.engine));
	print_table(&t);
	print_encoder_note(d, s);
	print_engine_lines(d, s);
	print_shrinks(rows, gpus);
	if (a->needed)
		print_advice(d, s, a);
	else if (d->context_tokens < 128000)
		printf("\nOne conversation's cache is %.1f%% of the weights and %s conversations fit:\n"
		       "no long-context trouble (try --context 128000 to see the ways out).\n",
		       s->cache_to_weights * 100.0, kvs_fmt_commas(s->max_conversations, b1, sizeof b1));
	else
		printf("\nOne conversation's cache is %.1f%% of the weights and %s conversations fit:\n"
		       "no long-context trouble (the ways out are shown when fewer than %d fit).\n",
		       s->cache_to_weights * 100.0, kvs_fmt_commas(s->max_conversations, b1, sizeof b1),
		       KVS_ADVICE_FEW_CONVERSATIONS);
}

/* ---- JSON ----------------------------------------------------------------
 * Most members copy one field of a result struct under its name: a table
 * row names the key and the field, and _Generic reads the field's C type,
 * so a row cannot read a field as the wrong type.  The keys come out sorted
 * (JSON_SORT_KEYS), so a table's order is free. */
static json_t *j_u64(uint64_t v)
{
	return json_integer((json_int_t)(v > (uint64_t)INT64_MAX ? INT64_MAX : v));
}

typedef enum { JF_U32, JF_U64, JF_REAL, JF_BOOL } jf_type;

typedef struct jfield {
	const char *key;
	size_t off;        /* of the field in its struct */
	jf_type type;
} jfield;

#define JF_TYPE(x) _Generic((x), uint32_t: JF_U32, uint64_t: JF_U64, double: JF_REAL, \
			    bool: JF_BOOL)
/* the member `key` from field f of struct T; JF_SAME: the key is the name */
#define JF(T, key, f) { key, offsetof(T, f), JF_TYPE(((T *)0)->f) }
#define JF_SAME(T, f) JF(T, #f, f)

static void json_fields(json_t *o, const void *base, const jfield *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *p = (const char *)base + f[i].off;
		json_t *v = NULL;
		switch (f[i].type) {
		case JF_U32: v = json_integer(*(const uint32_t *)p); break;
		case JF_U64: v = j_u64(*(const uint64_t *)p); break;
		case JF_REAL: v = json_real(*(const double *)p); break;
		case JF_BOOL: v = json_boolean(*(const bool *)p); break;
		}
		json_object_set_new(o, f[i].key, v);
	}
}

/* a new object holding the table's members */
#define JSON_TABLE(base, table) json_table_new(base, table, KVS_ARRAY_LEN(table))
static json_t *json_table_new(const void *base, const jfield *f, size_t n)
{
	json_t *o = json_object();
	json_fields(o, base, f, n);
	return o;
}

static const jfield deploy_fields[] = {
	JF_SAME(kvs_deploy, tp),
	JF_SAME(kvs_deploy, pp),
	JF_SAME(kvs_deploy, dp),
	JF_SAME(kvs_deploy, expert_parallel),
	JF(kvs_deploy, "disable_hybrid_kv_cache_manager", hybrid_kv_off),
	JF(kvs_deploy, "allow_chunked_local_attn_with_hybrid_kv_cache", chunked_hybrid_on),
	JF_SAME(kvs_deploy, gpu_memory_utilization),
	JF_SAME(kvs_deploy, kv_quant_group),
	JF_SAME(kvs_deploy, block_size),
	JF_SAME(kvs_deploy, context_tokens),
	JF_SAME(kvs_deploy, gpu_hour_price),
	JF_SAME(kvs_deploy, num_gpu_blocks_override),
	JF_SAME(kvs_deploy, kv_cache_memory_bytes),
};

static const jfield formula_fields[] = {
	JF_SAME(kvs_sizing, kv_factor),
	JF(kvs_sizing, "layers", layers_per_rank),
	JF(kvs_sizing, "kv_heads", kv_heads_per_rank),
	JF(kvs_sizing, "width", kv_width),
	JF(kvs_sizing, "scale_bytes_per_token", kv_scale_bytes_per_token),
	JF(kvs_sizing, "sliding_layers", sliding_layers_per_rank),
};

static const jfield sizing_fields[] = {
	JF_SAME(kvs_sizing, kv_bytes_per_token),
	JF_SAME(kvs_sizing, kv_bytes_per_token_total),
	JF_SAME(kvs_sizing, bytes_per_block),
	JF_SAME(kvs_sizing, bytes_per_context),
	JF_SAME(kvs_sizing, bytes_per_context_replica),
	JF_SAME(kvs_sizing, weight_bytes),
	JF_SAME(kvs_sizing, reserve_bytes),
	JF_SAME(kvs_sizing, reserve_estimated),
	JF_SAME(kvs_sizing, usable_bytes),
	JF_SAME(kvs_sizing, kv_from_override),
	JF_SAME(kvs_sizing, kv_budget_bytes),
	JF_SAME(kvs_sizing, num_gpu_blocks),
	JF_SAME(kvs_sizing, kv_capacity_tokens),
	JF_SAME(kvs_sizing, max_concurrency),
	JF_SAME(kvs_sizing, max_conversations),
	JF_SAME(kvs_sizing, blocks_per_conversation),
	JF_SAME(kvs_sizing, cache_to_weights),
	JF_SAME(kvs_sizing, decode_step_s),
	JF_SAME(kvs_sizing, decode_tokens_per_s),
	JF_SAME(kvs_sizing, max_conversations_total),
	JF_SAME(kvs_sizing, decode_tokens_per_s_total),
};

static const jfield cost_fields[] = {   /* with a GPU-hour price */
	JF_SAME(kvs_sizing, dollars_per_conv_hour),
	JF_SAME(kvs_sizing, dollars_per_mtok),
};

static const jfield vllm_log_fields[] = {
	JF(kvs_sizing, "gpu_kv_cache_tokens", vllm_kv_tokens),
	JF(kvs_sizing, "max_concurrency", vllm_max_concurrency),
	JF_SAME(kvs_sizing, max_model_len),
	JF(kvs_sizing, "num_blocks", vllm_num_blocks),
	JF(kvs_sizing, "group_layers", vllm_group_layers),
	JF(kvs_sizing, "full_groups", vllm_full_groups),
	JF(kvs_sizing, "window_groups", vllm_window_groups),
	JF(kvs_sizing, "blocks_per_request", vllm_blocks_per_request),
	JF(kvs_sizing, "request_bytes", vllm_request_bytes),
	JF(kvs_sizing, "fit_max_model_len", vllm_fit_max_model_len),
};

static const jfield mem_fields[] = {
	JF_SAME(kvs_mem_terms, fraction),
	JF_SAME(kvs_mem_terms, profile_tokens),
	JF_SAME(kvs_mem_terms, profile_seqs),
	JF_SAME(kvs_mem_terms, rope_cache_bytes),
	JF_SAME(kvs_mem_terms, activation_bytes),
	JF_SAME(kvs_mem_terms, sampler_bytes),
	JF_SAME(kvs_mem_terms, non_torch_bytes),
	JF_SAME(kvs_mem_terms, comm_bytes),
	JF_SAME(kvs_mem_terms, cuda_context_bytes),
	JF_SAME(kvs_mem_terms, cudagraph_bytes),
	JF_SAME(kvs_mem_terms, cudagraph_sizes),
};

static const jfield encoder_fields[] = {   /* with a modelled vision tower */
	JF_SAME(kvs_mem_terms, encoder_items),
	JF_SAME(kvs_mem_terms, encoder_patches),
	JF_SAME(kvs_mem_terms, encoder_peak_bytes),
	JF_SAME(kvs_mem_terms, encoder_out_bytes),
	JF_SAME(kvs_mem_terms, encoder_bytes),
	JF_SAME(kvs_mem_terms, encoder_video),
};

static const jfield shrink_fields[] = {   /* applicable rows only */
	JF_SAME(kvs_shrink_row, kv_bytes_per_token),
	JF_SAME(kvs_shrink_row, bytes_per_context),
	JF_SAME(kvs_shrink_row, max_conversations),
	JF_SAME(kvs_shrink_row, max_concurrency),
	JF_SAME(kvs_shrink_row, vs_baseline),
};

static const jfield advice_fields[] = {
	JF_SAME(kvs_size_advice, needed),
	JF_SAME(kvs_size_advice, weights_fit),
	JF_SAME(kvs_size_advice, context_fits),
	JF_SAME(kvs_size_advice, cache_exceeds_weights),
	JF_SAME(kvs_size_advice, over_max_model_len),
	JF_SAME(kvs_size_advice, few_conversations),
	JF_SAME(kvs_size_advice, fp8_conversations),
	JF_SAME(kvs_size_advice, int4_conversations),
	JF_SAME(kvs_size_advice, offload_bytes),
	JF_SAME(kvs_size_advice, offload_s_per_step),
	JF_SAME(kvs_size_advice, offload_full_s_per_step),
	JF_SAME(kvs_size_advice, prefix_half_conversations),
};

static const jfield parallel_fields[] = {
	JF_SAME(kvs_parallel_option, tp),
	JF_SAME(kvs_parallel_option, pp),
	JF_SAME(kvs_parallel_option, kv_budget_bytes),
	JF_SAME(kvs_parallel_option, max_conversations),
	JF_SAME(kvs_parallel_option, max_concurrency),
};

static json_t *json_report(const kvs_deploy *d, const kvs_sizing *s,
			   const kvs_shrink_row *rows, const kvs_size_advice *a)
{
	json_t *o = json_object();
	json_object_set_new(o, "kvsim_version", json_string(kvs_version()));
	json_object_set_new(o, "command", json_string("size"));
	json_object_set_new(o, "model", kvs_json_jt(kvs_sim_model_json(&d->model)));
	json_object_set_new(o, "gpu", kvs_json_jt(kvs_sim_gpu_json(&d->gpu)));

	json_t *e = JSON_TABLE(d, deploy_fields);
	json_object_set_new(e, "dtype", json_string(kvs_dtype_name(d->weight_dtype)));
	json_object_set_new(e, "kv_cache_dtype", json_string(kvs_dtype_name(d->kv_dtype)));
	json_object_set_new(e, "max_model_len", j_u64(s->max_model_len));
	json_object_set_new(e, "engine", json_string(kvs_engine_name(d->engine)));
	json_object_set_new(e, "windows_in_full", json_boolean(kvs_deploy_windows_in_full(d)));
	if (d->pp_balanced)   /* only when used: other documents stay as they were */
		json_object_set_new(e, "pp_balanced", json_true());
	json_t *mm = kvs_json_jt(kvs_sim_mm_json(d));   /* only those given */
	json_object_update(e, mm);
	json_decref(mm);
	json_object_set_new(o, "deploy", e);

	json_t *f = JSON_TABLE(s, formula_fields);
	json_object_set_new(f, "head_dim", json_integer(d->model.kv_lora_rank ? 0 : d->model.head_dim));
	json_object_set_new(f, "bits_per_element", json_integer(kvs_dtype_bits(d->kv_dtype)));
	json_object_set_new(o, "kv_formula", f);

	json_fields(o, s, sizing_fields, KVS_ARRAY_LEN(sizing_fields));
	if (d->pp > 1)   /* the other pipeline bound; documents at pp 1 stay as they were */
		json_object_set_new(o, "decode_tokens_per_s_other",
				    json_real(s->decode_tokens_per_s_other));
	/* only with a vision tower, so other documents stay as they were */
	if (s->vision_weight_bytes)
		json_object_set_new(o, "vision_weight_bytes", json_integer((json_int_t)
					    s->vision_weight_bytes));
	if (d->gpu_hour_price > 0)
		json_fields(o, s, cost_fields, KVS_ARRAY_LEN(cost_fields));

	const kvs_mem_terms *mt = &s->mem;
	json_t *nk = JSON_TABLE(mt, mem_fields);
	json_object_set_new(nk, "engine", json_string(kvs_engine_name(mt->engine)));
	json_t *cl = json_array();
	static const struct { unsigned bit; const char *key; } terms[] = {
		{ KVS_MEM_ACTIVATION, "activation" }, { KVS_MEM_SAMPLER, "sampler" },
		{ KVS_MEM_CUDAGRAPH, "cudagraph" }, { KVS_MEM_NON_TORCH, "non_torch" },
		{ KVS_MEM_CONTEXT, "cuda_context" }, { KVS_MEM_ROPE, "rope_cache" },
		{ KVS_MEM_ENCODER, "encoder" },
	};
	/* "encoder" only where a tower's run is modelled (kvs_mem_terms sets
	 * it then), so other documents stay as they were */
	for (size_t i = 0; i < KVS_ARRAY_LEN(terms); i++)
		if (mt->counted & terms[i].bit)
			json_array_append_new(cl, json_string(terms[i].key));
	json_object_set_new(nk, "counted", cl);
	if (mt->encoder_items)
		json_fields(nk, mt, encoder_fields, KVS_ARRAY_LEN(encoder_fields));
	if (mt->vlm_factor != 1.0)   /* SGLang's default for a vision model only */
		json_object_set_new(nk, "vlm_factor", json_real(mt->vlm_factor));
	json_object_set_new(o, "non_kv", nk);

	json_t *vl = JSON_TABLE(s, vllm_log_fields);
	json_object_set_new(vl, "available_kv_cache_gib",
			    json_real((double)s->vllm_check_bytes / (double)(1ull << 30)));
	json_object_set_new(vl, "starts", json_boolean(s->vllm_starts));
	if (d->pp > 1) {   /* vLLM's check from 0.14.0 until PR #33698 (docs/SIZING.md) */
		json_object_set_new(vl, "request_bytes_all_stages",
				    j_u64(s->vllm_request_bytes_all_stages));
		json_object_set_new(vl, "starts_v0_14",
				    json_boolean(s->vllm_request_bytes_all_stages <=
						 s->vllm_check_bytes));
	}
	json_object_set_new(o, "vllm_log", vl);

	json_t *sh = json_array();
	for (int i = 0; i < KVS_SHRINK_COUNT_; i++) {
		const kvs_shrink_row *r = &rows[i];
		json_t *x = json_object();
		json_object_set_new(x, "key", json_string(r->key));
		json_object_set_new(x, "label", json_string(r->label));
		json_object_set_new(x, "applicable", json_boolean(r->applicable));
		if (r->applicable)
			json_fields(x, r, shrink_fields, KVS_ARRAY_LEN(shrink_fields));
		json_array_append_new(sh, x);
	}
	json_object_set_new(o, "shrinks", sh);

	json_t *ad = JSON_TABLE(a, advice_fields);
	json_t *par = json_array();
	for (size_t i = 0; i < a->n_parallel; i++) {
		json_t *x = JSON_TABLE(&a->parallel[i], parallel_fields);
		json_object_set_new(x, "gpus", json_integer(a->parallel[i].tp * a->parallel[i].pp));
		json_array_append_new(par, x);
	}
	json_object_set_new(ad, "parallel", par);
	/* quantised weights: the layout found, null when none */
	const struct { const char *key; const kvs_parallel_option *o; } wq[2] = {
		{ "fp8_weights", &a->fp8_weights }, { "int4_weights", &a->int4_weights },
	};
	for (int i = 0; i < 2; i++) {
		json_t *x = json_null();
		if (wq[i].o->tp) {
			x = JSON_TABLE(wq[i].o, parallel_fields);
			json_object_set_new(x, "gpus", json_integer(wq[i].o->tp * wq[i].o->pp));
		}
		json_object_set_new(ad, wq[i].key, x);
	}
	json_t *dpx = json_null();
	if (a->data_parallel_ranks) {
		dpx = JSON_TABLE(&a->data_parallel, parallel_fields);
		json_object_set_new(dpx, "dp", json_integer(a->data_parallel_ranks));
		json_object_set_new(dpx, "gpus", json_integer(a->data_parallel_ranks *
							      a->data_parallel.pp));
		json_object_set_new(dpx, "max_conversations_total",
				    j_u64(a->data_parallel_total));
	}
	json_object_set_new(ad, "data_parallel", dpx);
	json_t *ctx = json_array();
	for (int i = 0; i < KVS_ADVICE_CONTEXTS; i++) {
		json_t *x = json_object();
		json_object_set_new(x, "conversations", json_integer(a->context_for_n[i]));
		json_object_set_new(x, "max_context_tokens", j_u64(a->context_tokens_for_n[i]));
		json_array_append_new(ctx, x);
	}
	json_object_set_new(ad, "shorter_context", ctx);
	json_object_set_new(o, "advice", ad);

	json_t *qs = json_array();
	for (const char *const *q = kvs_size_questions(); *q; q++)
		json_array_append_new(qs, json_string(*q));
	json_object_set_new(o, "questions", qs);
	return o;
}

int kvs_cmd_size(kvs_args *it)
{
	kvs_cli_deploy c;
	const char *json = NULL;
	const char *pos;
	kvs_cli_deploy_init(&c, "llama-2-7b", NULL);
	while (kvs_args_next(it, &pos)) {
		if (!it->flag) {
			kvs_args_usage_error(it, "unexpected argument '%s' (see 'kvsim size --help')",
					     pos);
			return KVS_EXIT_USAGE;
		}
		if (kvs_args_help(it))
			return KVS_EXIT_OK;
		int r = kvs_args_output(it, "--json", &json, true);
		if (r < 0)
			return KVS_EXIT_USAGE;
		if (r > 0)
			continue;
		if (kvs_args_is(it, "--max-num-seqs")) {
			if (!kvs_args_u32(it, 1, 1u << 20, &c.d.max_num_seqs))
				return KVS_EXIT_USAGE;
			continue;
		}
		if (kvs_args_is(it, "--max-num-batched-tokens")) {
			if (!kvs_args_u32(it, 1, 1u << 30, &c.d.max_num_batched_tokens))
				return KVS_EXIT_USAGE;
			continue;
		}
		if (!kvs_args_taken(it, kvs_cli_deploy_arg(it, &c)))
			return KVS_EXIT_USAGE;
	}
	if (!kvs_cli_deploy_finish(&c, "size"))
		return c.fail_exit;
	/* a --json path that cannot be written fails before the table */
	kvs_outfile *jo = NULL;
	if (json && !(jo = kvs_cli_out_open("size", "--json", json)))
		return KVS_EXIT_FAIL;

	kvs_sizing s;
	kvs_shrink_row rows[KVS_SHRINK_COUNT_];
	kvs_size_advice a;
	kvs_status st;
	if ((st = kvs_size_compute(&c.d, &s)) || (st = kvs_size_shrinks(&c.d, rows)) ||
	    (st = kvs_size_advise(&c.d, &s, &a))) {
		kvs_cli_report_error("size", st);
		kvs_cli_out_close("size", "--json", jo, false);
		return KVS_EXIT_FAIL;
	}
	kvs_cli_override_warn("size", &c.d, &s);
	if (json) {
		json_t *o = json_report(&c.d, &s, rows, &a);
		char *text = kvs_cli_json_text(o, JSON_INDENT(2) | JSON_SORT_KEYS);
		json_decref(o);
		/* JSON on standard output replaces the table; in a file, both */
		if (text && strcmp(json, "-") != 0)
			print_text(&c.d, &s, rows, &a, &c);
		int rc = kvs_cli_write_text("size", "--json", jo, text);
		free(text);
		return rc;
	}
	print_text(&c.d, &s, rows, &a, &c);
	return KVS_EXIT_OK;
}
