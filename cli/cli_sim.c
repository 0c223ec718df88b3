/*
 * cli_sim.c - the engine flag group (see cli_sim.h), the progress line, and
 * the replay / compare tables.
 */
#include "cli_sim.h"
#include "common/json.h"

#include <errno.h>
#include <signal.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void kvs_cli_sim_init(kvs_cli_sim *c)
{
	memset(c, 0, sizeof *c);
	kvs_sim_config_defaults(&c->cfg, NULL);
	c->fail_exit = KVS_EXIT_USAGE;
}

static int parse_policies(kvs_args *it, kvs_cli_sim *c, bool one)
{
	const char *v = kvs_args_value(it);
	if (!v)
		return -1;
	if (kvs_policy_parse_list(v, c->policies, KVS_POLICY_CAP, &c->npolicies) != KVS_OK) {
		kvs_args_usage_error(it, "%s: %s", it->flag, kvs_last_error());
		return -1;
	}
	if (one && c->npolicies > 1) {
		kvs_args_usage_error(it, "%s: one policy (use --policies or 'kvsim compare' "
				     "for several)", it->flag);
		return -1;
	}
	return 1;
}

/* --step-time-linear B[,T[,C[,S]]]: each field given is a number (an empty
 * one is not taken for a missing one, nor is a long one cut short). */
static int parse_linear(kvs_args *it, kvs_cli_sim *c)
{
	static const char *const field[4] = {
		"BASE_S", "PER_TOKEN_S", "PER_CONTEXT_TOKEN_S", "PER_SEQ_S"
	};
	const char *v = kvs_args_value(it);
	if (!v)
		return -1;
	double x[4] = { 0, 0, 0, 0 };
	int n = 0;
	for (const char *p = v;; p++) {
		size_t len = strcspn(p, ",");
		char buf[64];
		if (n == 4) {
			kvs_args_usage_error(it, "%s: more than four fields (expected BASE_S"
					     "[,PER_TOKEN_S[,PER_CONTEXT_TOKEN_S[,PER_SEQ_S]]]), "
					     "got '%s'", it->flag, v);
			return -1;
		}
		if (len == 0 || len >= sizeof buf) {
			kvs_args_usage_error(it, "%s: field %d (%s) is %s", it->flag, n + 1,
					     field[n], len ? "longer than 63 characters" : "empty");
			return -1;
		}
		memcpy(buf, p, len);
		buf[len] = '\0';
		if (!kvs_parse_double(buf, &x[n]) || !(x[n] >= 0) ||
		    x[n] > KVS_COST_MAX_COEF_S) {
			kvs_args_usage_error(it, "%s: field %d (%s) is '%s'; expected BASE_S"
					     "[,PER_TOKEN_S[,PER_CONTEXT_TOKEN_S[,PER_SEQ_S]]] "
					     "(numbers in [0, %g] s)", it->flag, n + 1, field[n],
					     buf, KVS_COST_MAX_COEF_S);
			return -1;
		}
		n++;
		p += len;
		if (!*p)
			break;
	}
	if (x[0] + x[1] + x[3] <= 0) {
		kvs_args_usage_error(it, "%s: a step must take some time, got '%s'", it->flag, v);
		return -1;
	}
	c->cfg.cost.kind = KVS_COST_LINEAR;
	c->cfg.cost.linear_base_s = x[0];
	c->cfg.cost.linear_per_token_s = x[1];
	c->cfg.cost.linear_per_context_s = x[2];
	c->cfg.cost.linear_per_seq_s = x[3];
	c->step_linear_set = true;
	return 1;
}

int kvs_cli_sim_arg(kvs_args *it, kvs_cli_sim *c)
{
	kvs_sim_config *g = &c->cfg;
	if (kvs_args_is(it, "--policy"))
		return parse_policies(it, c, true);
	if (kvs_args_is(it, "--policies"))
		return parse_policies(it, c, false);
	if (kvs_args_is(it, "--max-num-seqs")) {
		c->seqs_set = true;
		return kvs_args_u32(it, 1, 1u << 20, &g->max_num_seqs) ? 1 : -1;
	}
	if (kvs_args_is(it, "--max-num-batched-tokens")) {
		c->batched_tokens_set = true;
		return kvs_args_u32(it, 1, 1u << 30, &g->max_num_batched_tokens) ? 1 : -1;
	}
	if (kvs_args_is(it, "--enable-chunked-prefill") ||
	    kvs_args_is(it, "--no-enable-chunked-prefill")) {
		if (!kvs_args_no_value(it))
			return -1;
		g->chunked_prefill_off = it->flag[2] == 'n';
		return 1;
	}
	if (kvs_args_is(it, "--enable-prefix-caching")) {
		if (!kvs_args_no_value(it))
			return -1;
		g->enable_prefix_caching = true;
		return 1;
	}
	if (kvs_args_is(it, "--no-enable-prefix-caching")) {
		if (!kvs_args_no_value(it))
			return -1;
		g->enable_prefix_caching = false;
		return 1;
	}
	if (kvs_args_is(it, "--preemption-mode")) {
		const char *v = kvs_args_value(it);
		if (!v)
			return -1;
		if (kvs_preempt_mode_parse(v, &g->preemption_mode) != KVS_OK) {
			kvs_args_usage_error(it, "--preemption-mode: expected recompute or swap, "
					     "got '%s'", v);
			return -1;
		}
		return 1;
	}
	if (kvs_args_is(it, "--scheduling-policy")) {
		const char *v = kvs_args_value(it);
		if (!v)
			return -1;
		if (kvs_sched_policy_parse(v, &g->scheduling_policy) != KVS_OK) {
			kvs_args_usage_error(it, "--scheduling-policy: expected fcfs or priority, "
					     "got '%s'", v);
			return -1;
		}
		return 1;
	}
	if (kvs_args_is(it, "--swap-space")) {
		double gib;
		if (!kvs_args_double(it, 0, 1 << 20, &gib))
			return -1;
		g->swap_bytes = (uint64_t)llround(gib * 1073741824.0);
		return 1;
	}
	if (kvs_args_is(it, "--kv-offload")) {
		const char *v = kvs_args_value(it);
		if (!v)
			return -1;
		if (kvs_offload_parse(v, &g->kv_offload) != KVS_OK) {
			kvs_args_usage_error(it, "--kv-offload: %s", kvs_last_error());
			return -1;
		}
		return 1;
	}
	if (kvs_args_is(it, "--watermark"))
		return kvs_args_double(it, 0, 0.99, &g->watermark) ? 1 : -1;
	if (kvs_args_is(it, "--page-size")) {
		if (!kvs_args_bytes(it, &g->page_bytes))
			return -1;
		if (g->page_bytes < (64u << 10) || g->page_bytes > (2u << 20)) {
			kvs_args_usage_error(it, "--page-size: must be between 64KiB and 2MiB");
			return -1;
		}
		return 1;
	}
	if (kvs_args_is(it, "--best-fit")) {
		if (!kvs_args_no_value(it))
			return -1;
		g->best_fit = true;
		g->buddy = false;
		c->placement_flag = "--best-fit";
		return 1;
	}
	if (kvs_args_is(it, "--placement")) {
		const char *v = kvs_args_value(it);
		if (!v)
			return -1;
		c->placement_flag = "--placement";
		if (strcmp(v, "first-fit") == 0) {
			g->best_fit = g->buddy = false;
		} else if (strcmp(v, "best-fit") == 0) {
			g->best_fit = true;
			g->buddy = false;
		} else if (strcmp(v, "buddy") == 0) {
			g->best_fit = false;
			g->buddy = true;
		} else {
			kvs_args_usage_error(it, "%s: expected first-fit, best-fit or buddy, "
					     "got '%s'", it->flag, v);
			return -1;
		}
		return 1;
	}
	if (kvs_args_is(it, "--slo-ttft")) {
		c->slo_flags |= KVS_CLI_SLO_TTFT;
		return kvs_args_double(it, 1e-9, 1e9, &g->slo_ttft_s) ? 1 : -1;
	}
	if (kvs_args_is(it, "--slo-tpot")) {
		c->slo_flags |= KVS_CLI_SLO_TPOT;
		return kvs_args_double(it, 1e-9, 1e9, &g->slo_tpot_s) ? 1 : -1;
	}
	if (kvs_args_is(it, "--flops-efficiency"))
		return kvs_args_double(it, 1e-3, 1, &g->cost.flops_efficiency) ? 1 : -1;
	if (kvs_args_is(it, "--bandwidth-efficiency"))
		return kvs_args_double(it, 1e-3, 1, &g->cost.bandwidth_efficiency) ? 1 : -1;
	if (kvs_args_is(it, "--step-overhead"))
		return kvs_args_double(it, 0, 10, &g->cost.step_overhead_s) ? 1 : -1;
	if (kvs_args_is(it, "--allreduce-latency"))
		return kvs_args_double(it, 0, 1, &g->cost.allreduce_latency_s) ? 1 : -1;
	if (kvs_args_is(it, "--kv-read-factor"))
		return kvs_args_double(it, 1e-3, 1e3, &g->cost.kv_read_factor) ? 1 : -1;
	if (kvs_args_is(it, "--step-time-table"))
		return (c->table_path = kvs_args_value(it)) ? 1 : -1;
	if (kvs_args_is(it, "--max-concurrency"))
		return kvs_args_u32(it, 1, 1u << 30, &g->max_concurrency) ? 1 : -1;
	if (kvs_args_is(it, "--step-time-profile"))
		return (c->profile_dir = kvs_args_value(it)) ? 1 : -1;
	if (kvs_args_is(it, "--step-overhead-per-seq"))
		return kvs_args_double(it, 0, 1, &g->cost.step_overhead_per_seq_s) ? 1 : -1;
	if (kvs_args_is(it, "--step-overhead-per-token"))
		return kvs_args_double(it, 0, 1, &g->cost.step_overhead_per_token_s) ? 1 : -1;
	if (kvs_args_is(it, "--step-time-linear"))
		return parse_linear(it, c);
	if (kvs_args_is(it, "--sample-interval"))
		return kvs_args_double(it, 1e-6, 1e9, &g->sample_interval_s) ? 1 : -1;
	if (kvs_args_is(it, "--horizon"))
		return kvs_args_double(it, 1e-9, 1e12, &g->horizon_s) ? 1 : -1;
	if (kvs_args_is(it, "--seed")) {
		if (!kvs_args_u64(it, 0, UINT64_MAX, &g->seed))
			return -1;
		c->seed_set = true;
		return 1;
	}
	if (kvs_args_is(it, "--quiet") || kvs_args_is(it, "-q")) {
		if (!kvs_args_no_value(it))
			return -1;
		c->quiet = true;
		return 1;
	}
	if (kvs_args_is(it, "--no-fast-path")) {
		if (!kvs_args_no_value(it))
			return -1;
		g->fast_path = false;
		return 1;
	}
	if (kvs_args_is(it, "--wall-time")) {
		if (!kvs_args_no_value(it))
			return -1;
		g->record_wall_time = true;
		return 1;
	}
	return 0;
}

/* The paged pool numbers its blocks below the pool tag of a block's state
 * word (allocator/paged.c), 2^31 - 1 at most. */
#define PAGED_POOL_MAX_BLOCKS (KVS_BLOCK_POOL_TAG_ - 1u)

/* A pool of blocks that the paged allocator could not number is refused
 * before the run, naming the flag that sized it (the allocator's own
 * message knows no flags).  Sizing errors are left to the run. */
static bool pool_blocks_ok(const kvs_cli_sim *c, const kvs_deploy *d, const char *cmd)
{
	bool pooled = false;
	for (size_t i = 0; i < c->npolicies; i++)
		pooled |= kvs_policy_has(c->policies[i], KVS_TRAIT_BLOCK_GRANULAR);
	kvs_sizing sz;
	if (kvs_size_compute(d, &sz) != KVS_OK)
		return true;
	kvs_cli_override_warn(cmd, d, &sz);
	if (!pooled)
		return true;
	uint64_t budget = c->cfg.kv_budget_bytes ? c->cfg.kv_budget_bytes : sz.kv_budget_bytes;
	uint64_t kvb = c->cfg.kv_bytes_per_token ? c->cfg.kv_bytes_per_token
						 : kvs_sizing_pool_bytes_per_token(&sz);
	uint64_t bs = d->block_size ? d->block_size : 16;
	if (!kvb || kvb > UINT64_MAX / bs || budget / (bs * kvb) <= PAGED_POOL_MAX_BLOCKS)
		return true;
	unsigned long long n = (unsigned long long)(budget / (bs * kvb));
	if (d->num_gpu_blocks_override)
		fprintf(stderr, "kvsim %s: --num-gpu-blocks-override %llu: the paged pool "
			"holds at most %u blocks\n", cmd,
			(unsigned long long)d->num_gpu_blocks_override, PAGED_POOL_MAX_BLOCKS);
	else
		fprintf(stderr, "kvsim %s: %s: a KV pool of %llu blocks of %llu token%s, past "
			"the paged pool's %u blocks: give less memory or a larger "
			"--block-size\n", cmd,
			d->kv_cache_memory_bytes ? "--kv-cache-memory-bytes" :
			strcmp(d->gpu.mem_source, "--gpu-mem") == 0 ? "--gpu-mem" :
			"the --gpu preset's memory", n, (unsigned long long)bs,
			bs == 1 ? "" : "s", PAGED_POOL_MAX_BLOCKS);
	return false;
}

/* A Vidur profile names its GPU by its place, <root>/compute/<gpu>/<org>/
 * <model> (its files do not): one measured on another GPU than --gpu's is
 * said, with the all-reduce file that comes from the same <gpu> at tp > 1.
 * The GPU is taken to match when the preset's name starts with the
 * directory's ("a100" for a100-40gb and a100-80gb). */
static void warn_profile_gpu(const char *cmd, const char *dir, const kvs_deploy *d)
{
	const char *g = strstr(dir, "/compute/");
	if (g)
		g += strlen("/compute/");
	else if (strncmp(dir, "compute/", 8) == 0)
		g = dir + 8;
	else
		return;
	size_t n = strcspn(g, "/");
	const char *name = d->gpu.name;
	if (n == 0 || (strncasecmp(name, g, n) == 0 &&
		       (name[n] == '\0' || name[n] == '-' || name[n] == '_')))
		return;
	fprintf(stderr, "kvsim %s: warning: --step-time-profile was measured on %.*s "
		"(its directory compute/%.*s/), not on --gpu %s: the step times%s are "
		"%.*s's\n", cmd, (int)n, g, (int)n, g, name,
		d->tp > 1 ? " and the all-reduce times" : "", (int)n, g);
}

bool kvs_cli_sim_finish(kvs_cli_sim *c, const kvs_deploy *d, kvs_trace_opts *o,
			const char *cmd)
{
	c->cfg.deploy = *d;
	/* the limits not given are the engine's defaults for this GPU, the
	 * ones size's profile run assumes: the pool and the scheduler agree */
	uint32_t dseqs, dtokens;
	kvs_engine_batch_defaults(d->engine, &d->gpu, &dseqs, &dtokens);
	if (!c->seqs_set)
		c->cfg.max_num_seqs = dseqs;
	if (!c->batched_tokens_set)
		c->cfg.max_num_batched_tokens = dtokens;
	if (c->cfg.chunked_prefill_off && !c->batched_tokens_set) {
		/* vLLM V0's default without chunked prefill: a whole prompt
		 * of max_model_len fits one step, and at least 2048 tokens */
		uint64_t m = d->max_model_len ? d->max_model_len
					      : d->model.max_position_embeddings;
		c->cfg.max_num_batched_tokens = m > 2048 ? (m < (1u << 30) ? (uint32_t)m : 1u << 30)
							 : 2048;
	}
	/* the engine profiles the batch it will run */
	c->cfg.deploy.max_num_seqs = c->cfg.max_num_seqs;
	c->cfg.deploy.max_num_batched_tokens = c->cfg.max_num_batched_tokens;
	if (c->npolicies == 0) {
		/* the first registered policy (paged) */
		c->policies[0] = (kvs_policy)0;
		c->npolicies = 1;
	}
	c->cfg.policy = c->policies[0];
	/* the engine holds windowed layers as vLLM's hybrid allocator does
	 * when the model also has full-attention layers; when every layer is
	 * windowed, or the bytes per token are given, it holds every token's
	 * KV on every layer, which `size` does not: said once, not silently */
	const kvs_model *mw = &c->cfg.deploy.model;
	uint64_t wmml = c->cfg.deploy.max_model_len ? c->cfg.deploy.max_model_len
						   : mw->max_position_embeddings;
	if (mw->sliding_window && mw->num_sliding_layers && wmml > mw->sliding_window &&
	    !kvs_deploy_windows_in_full(&c->cfg.deploy) &&
	    (mw->num_sliding_layers >= mw->num_layers || c->cfg.kv_bytes_per_token)) {
		char w[32], at[160] = "";
		kvs_fmt_commas(mw->sliding_window, w, sizeof w);
		/* by how much: one sequence's KV on a rank, every token kept
		 * against the windows honoured, at 4,000 tokens and at
		 * max_model_len */
		const kvs_deploy *dw = &c->cfg.deploy;
		kvs_model full = *mw;
		full.sliding_window = 0;
		full.num_sliding_layers = 0;
		uint64_t lens[2] = { 4000 < wmml ? 4000 : wmml, wmml };
		size_t len = 0;
		for (int i = 0; i < 2 && len < sizeof at; i++) {
			uint64_t kept, win;
			char n[32];
			if (i == 1 && lens[1] == lens[0])
				break;
			if (kvs_kv_bytes_for_tokens(&full, dw->kv_dtype, dw->kv_quant_group,
						    dw->tp ? dw->tp : 1, dw->pp ? dw->pp : 1,
						    lens[i], &kept) != KVS_OK ||
			    kvs_kv_bytes_for_tokens(mw, dw->kv_dtype, dw->kv_quant_group,
						    dw->tp ? dw->tp : 1, dw->pp ? dw->pp : 1,
						    lens[i], &win) != KVS_OK || !win)
				break;
			len += (size_t)snprintf(at + len, sizeof at - len,
						i ? ", one of %s tokens %.2fx"
						  : " (in the simulator a sequence of %s tokens "
						    "holds %.2fx the KV vLLM keeps",
						kvs_fmt_commas(lens[i], n, sizeof n),
						(double)kept / (double)win);
		}
		if (at[0] && len < sizeof at)
			snprintf(at + len, sizeof at - len, ")");
		fprintf(stderr, "kvsim %s: warning: %s has a %s-token sliding window on %u of its "
			"%u layers; %s, the simulator keeps every token's KV on every layer "
			"(vLLM frees the blocks that leave a window), so its memory figures are "
			"an upper bound past the window%s, and `kvsim size` (which honours the "
			"windows) can fit a conversation that a replay rejects\n", cmd, mw->name,
			w, mw->num_sliding_layers, mw->num_layers,
			c->cfg.kv_bytes_per_token ? "with the bytes per token given"
						  : "with every layer windowed", at);
	}
	/* a placement for policies of which none places regions: said */
	bool places = false;
	for (size_t i = 0; i < c->npolicies; i++)
		places |= kvs_policy_has(c->policies[i], KVS_TRAIT_PLACEMENT);
	if (c->placement_flag && !places) {
		fprintf(stderr, "kvsim %s: warning: %s applies to the policies that place a "
			"contiguous region per sequence (", cmd, c->placement_flag);
		const char *sep = "";
		for (size_t i = 0; i < kvs_policy_count(); i++)
			if (kvs_policy_has((kvs_policy)i, KVS_TRAIT_PLACEMENT)) {
				fprintf(stderr, "%s%s", sep, kvs_policy_name((kvs_policy)i));
				sep = ", ";
			}
		fprintf(stderr, "); %s ignore%s it\n", c->npolicies == 1
			? kvs_policy_name(c->policies[0]) : "the policies run",
			c->npolicies == 1 ? "s" : "");
	}
	/* (a sweep sizes a pool per block size of its own) */
	if (strcmp(cmd, "sweep") != 0 && !pool_blocks_ok(c, &c->cfg.deploy, cmd)) {
		c->fail_exit = KVS_EXIT_USAGE;
		return false;
	}
	if (c->table_path && c->step_linear_set) {
		fprintf(stderr, "kvsim %s: --step-time-table and --step-time-linear both "
			"set the step time; give one\n", cmd);
		c->fail_exit = KVS_EXIT_USAGE;
		return false;
	}
	if (d->pp_balanced && d->pp > 1 && (c->table_path || c->step_linear_set))
		fprintf(stderr, "kvsim %s: warning: balanced pipeline micro-batches "
			"(--pp-balanced, or --engine sglang's default) change nothing under "
			"--step-time-%s, a fit of whole steps that kvsim does not split\n",
			cmd, c->table_path ? "table" : "linear");
	if (c->profile_dir && (c->table_path || c->step_linear_set)) {
		fprintf(stderr, "kvsim %s: --step-time-profile and --step-time-%s both set "
			"the step time; give one\n", cmd, c->table_path ? "table" : "linear");
		c->fail_exit = KVS_EXIT_USAGE;
		return false;
	}
	if (c->profile_dir) {
		kvs_status st = kvs_cost_load_profile(c->profile_dir, d->tp, &c->cfg.cost);
		if (st != KVS_OK) {
			fprintf(stderr, "kvsim %s: --step-time-profile: %s\n", cmd, kvs_last_error());
			c->fail_exit = st == KVS_ERR_IO || st == KVS_ERR_PARSE ? KVS_EXIT_FAIL
									 : KVS_EXIT_USAGE;
			return false;
		}
		/* the model's shape is checked now, not after the trace is read */
		double t;
		kvs_step_shape one = { 1, 1, 1, 1.0, 0, 0 };
		if ((st = kvs_sim_step_time(&c->cfg, &one, &t)) != KVS_OK) {
			fprintf(stderr, "kvsim %s: --step-time-profile: %s\n", cmd, kvs_last_error());
			c->fail_exit = KVS_EXIT_USAGE;
			return false;
		}
		if (!c->quiet)
			fprintf(stderr, "kvsim %s: step time: %s\n", cmd, c->cfg.cost.profile_desc);
		warn_profile_gpu(cmd, c->profile_dir, d);
	}
	if (c->table_path) {
		kvs_status st = kvs_cost_fit_table(c->table_path, &c->cfg.cost);
		if (st != KVS_OK) {
			/* the file's fault (unreadable, malformed, unfittable):
			 * as a trace's, exit 1 */
			fprintf(stderr, "kvsim %s: --step-time-table: %s\n", cmd, kvs_last_error());
			c->fail_exit = st == KVS_ERR_IO || st == KVS_ERR_PARSE || st == KVS_ERR_NOMEM
				       ? KVS_EXIT_FAIL : KVS_EXIT_USAGE;
			return false;
		}
	}
	if (c->cfg.chunked_prefill_off) {
		uint64_t m = d->max_model_len ? d->max_model_len : d->model.max_position_embeddings;
		if (c->cfg.max_num_batched_tokens < m) {
			fprintf(stderr, "kvsim %s: --no-enable-chunked-prefill computes a prompt "
				"in one step: --max-num-batched-tokens (%u) must be at least "
				"max_model_len (%llu)\n", cmd, c->cfg.max_num_batched_tokens,
				(unsigned long long)m);
			c->fail_exit = KVS_EXIT_USAGE;
			return false;
		}
	}
	if (c->cfg.max_num_batched_tokens < c->cfg.max_num_seqs) {
		fprintf(stderr, "kvsim %s: --max-num-batched-tokens (%u) must be at least "
			"--max-num-seqs (%u)\n", cmd, c->cfg.max_num_batched_tokens,
			c->cfg.max_num_seqs);
		c->fail_exit = KVS_EXIT_USAGE;
		return false;
	}
	if (kvs_offload_config_on(&c->cfg.kv_offload)) {
		const char *why = NULL;
		if (strcmp(cmd, "sweep") == 0)
			why = "is for replay, compare and fleet (sweep rows do not carry "
			      "the tier figures)";
		else if (!c->cfg.enable_prefix_caching)
			why = "needs --enable-prefix-caching (the tiers hold evicted "
			      "prefix-cache blocks)";
		for (size_t i = 0; !why && i < c->npolicies; i++)
			if (!kvs_policy_has(c->policies[i], KVS_TRAIT_PREFIX_HASHES))
				why = "needs the paged policy (a policy without a prefix "
				      "cache has nothing to offload)";
		if (why) {
			fprintf(stderr, "kvsim %s: --kv-offload %s\n", cmd, why);
			c->fail_exit = KVS_EXIT_USAGE;
			return false;
		}
	}
	if (c->cfg.preemption_mode == KVS_PREEMPT_SWAP && c->cfg.swap_bytes == 0) {
		fprintf(stderr, "kvsim %s: --preemption-mode swap needs --swap-space > 0\n", cmd);
		c->fail_exit = KVS_EXIT_USAGE;
		return false;
	}
	if (c->seed_set)
		o->seed = c->cfg.seed;
	else
		c->cfg.seed = o->seed;
	o->block_size = d->block_size ? d->block_size : 16;
	if (strcmp(cmd, "replay") == 0 || strcmp(cmd, "compare") == 0) {
		/* the trace's hash ids serve the prefix cache alone: without it
		 * they stay as in the file, unused, and a block size they could
		 * not be re-split to is no error (as in sweep) */
		if (!c->cfg.enable_prefix_caching)
			o->block_size = 0;
	}
	uint64_t mml = d->max_model_len ? d->max_model_len : d->model.max_position_embeddings;
	if (mml > UINT32_MAX) {
		/* the simulator counts a sequence's tokens in 32 bits */
		fprintf(stderr, "kvsim %s: %s %llu is beyond the simulator's %lu tokens per "
			"sequence; give a smaller --max-model-len\n", cmd,
			d->max_model_len ? "--max-model-len" : "the model's max_position_embeddings",
			(unsigned long long)mml, (unsigned long)UINT32_MAX);
		c->fail_exit = KVS_EXIT_USAGE;
		return false;
	}
	o->max_model_len = (uint32_t)mml;
	return true;
}

/* The --policy / --policies lines, from the registry: the names wrapped
 * at 79 columns under the description column. */
static void print_policy_flag(FILE *f, bool several)
{
	static const char *const count[] = { "none", "one", "two", "three", "four",
		"five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
		"thirteen", "fourteen", "fifteen", "sixteen" };
	const int indent = 31, width = 79;
	size_t n = kvs_policy_count();
	int col = fprintf(f, "  %-*s%s", indent - 2, several ? "--policies LIST" : "--policy P",
			  several ? "comma-separated:" : "");
	for (size_t i = 0; i < n; i++) {
		char word[96];
		const char *name = kvs_policy_name((kvs_policy)i);
		if (several)
			snprintf(word, sizeof word, "%s%s", name, i + 1 < n ? "," : "");
		else
			snprintf(word, sizeof word, "%s%s%s", name, i == 0 ? " (default)" : "",
				 i + 1 < n ? "," : "");
		bool first = !several && i == 0;
		if (!first && col + 1 + (int)strlen(word) > width) {
			col = fprintf(f, "\n%*s", indent, "") - 1;
			first = true;
		}
		col += fprintf(f, "%s%s", first ? "" : " ", word);
	}
	if (several) {
		char tail[64];
		snprintf(tail, sizeof tail, "(default: all %s)",
			 n < KVS_ARRAY_LEN(count) ? count[n] : "of them");
		if (col + 1 + (int)strlen(tail) > width)
			fprintf(f, "\n%*s%s\n", indent, "", tail);
		else
			fprintf(f, " %s\n", tail);
	} else {
		fputc('\n', f);
	}
}

static void print_policies(FILE *f)
{
	size_t n = kvs_policy_count();
	fprintf(f, "policies:\n");
	for (size_t i = 0; i < n; i++) {
		const kvs_policy_info *p = kvs_policy_get((kvs_policy)i);
		fprintf(f, "  %-29s%s\n", p->name, p->help ? p->help : "");
	}
}

void kvs_cli_sim_help(FILE *f, bool several)
{
	fprintf(f,
		"engine (vLLM names where vLLM has one):\n");
	print_policy_flag(f, several);
	fprintf(f,
		"  --max-num-seqs N             running sequences at most (default as vLLM's\n"
		"                               server: 1024 on GPUs of >= 70 GiB that are\n"
		"                               not A100s, else 256; see docs/SIZING.md)\n"
		"  --max-num-batched-tokens N   tokens per step; prompts are chunked to fit\n"
		"                               (default 8192 on those GPUs, else 2048; at\n"
		"                               least --max-num-seqs)\n"
		"  --no-enable-chunked-prefill  vLLM V0's scheduler: waiting prompts run whole\n"
		"                               in steps of their own while decodes wait;\n"
		"                               --max-num-batched-tokens then defaults to\n"
		"                               max(max_model_len, 2048)\n"
		"  --enable-chunked-prefill     V1's mixed steps: decodes and prompt chunks\n"
		"                               share each step (default)\n"
		"  --enable-prefix-caching      paged: share prompt blocks by the trace's\n"
		"                               hash ids (--no-enable-prefix-caching: off, default)\n"
		"  --preemption-mode M          recompute (default) or swap (to host over PCIe)\n"
		"  --scheduling-policy P        fcfs (default) or priority: the waiting queue by\n"
		"                               the trace's priority column (lower first, ties\n"
		"                               by arrival), the lowest-priority running request\n"
		"                               preempted first (as vLLM)\n"
		"  --swap-space GIB             host swap space per GPU in GiB (default 4)\n"
		"  --kv-offload KIND:SIZE[:BW]  replay, compare, fleet: KV offload tier per GPU for\n"
		"                               evicted prefix blocks, KIND host or disk, BW in\n"
		"                               GB/s (default: host the GPU's PCIe link, disk 7);\n"
		"                               a hit loads at BW within its step; host then\n"
		"                               disk: host:64GiB,disk:1TiB:7 (needs\n"
		"                               --enable-prefix-caching)\n"
		"  --watermark F                share of blocks kept free at admission (default 0.01)\n"
		"  --page-size SIZE             vattention physical page, 64KiB..2MiB (default 2MiB)\n"
		"  --best-fit                   contiguous policies: best-fit placement (default first fit)\n"
		"  --placement P                contiguous policies: first-fit (default), best-fit,\n"
		"                               or buddy (regions of 2^k tokens aligned to their\n"
		"                               size, as the PagedAttention paper's baselines)\n"
		"\n"
		"step time (docs/COST-MODEL.md):\n"
		"  --flops-efficiency F         share of peak FLOP/s reached (default 0.5)\n"
		"  --bandwidth-efficiency F     share of peak HBM bandwidth reached (default 0.8)\n"
		"  --step-overhead S            fixed time per step in seconds (default 0.002)\n"
		"  --step-overhead-per-seq S    + S per sequence in the step (default 0)\n"
		"  --step-overhead-per-token S  + S per batched token (default 0)\n"
		"  --max-concurrency N          closed-loop client: N requests in flight, the\n"
		"                               next sent (its latency counted) when one leaves,\n"
		"                               as vllm bench serve --max-concurrency (default:\n"
		"                               open loop at the trace's arrival times)\n"
		"  --step-time-profile DIR      measured Vidur operator profile (DIR/mlp.csv,\n"
		"                               all-reduce from the network/ tree beside it);\n"
		"                               attention stays on the roofline\n"
		"  --allreduce-latency S        per all-reduce with --tp > 1 (default 10e-6)\n"
		"  --kv-read-factor X           attention-kernel cost relative to an ideal\n"
		"                               contiguous KV read: multiplies the KV-read\n"
		"                               time of every step (default 1; a sweep row's\n"
		"                               paged kernel cost, kernel_relative_cost, is\n"
		"                               reproduced with this flag)\n"
		"  --step-time-table CSV        measured steps (num_tokens,context_tokens,\n"
		"                               step_time_s[,num_seqs]) fitted by least squares\n"
		"  --step-time-linear B[,T[,C[,S]]]  step = B + T*tokens + C*context tokens + S*seqs\n"
		"\n"
		"metrics and run:\n"
		"  --slo-ttft S                 goodput: time-to-first-token objective in seconds\n"
		"  --slo-tpot S                 goodput: time-per-output-token objective in seconds\n"
		"  --goodput KEY:MS ...         goodput as vllm bench serve: ttft:MS, tpot:MS,\n"
		"                               e2el:MS (milliseconds; the SLOs above: one\n"
		"                               objective by both flags is refused)\n"
		"  --sample-interval S          time series spacing in simulated seconds\n"
		"                               (default: 1 s, coarsened to at most 4096\n"
		"                               samples; a given S is doubled, with a warning,\n"
		"                               where it would pass 65536 samples)\n"
		"  --horizon S                  stop at S simulated seconds: requests in the\n"
		"                               system are unfinished; replay and compare count\n"
		"                               later ones as after the horizon (not simulated)\n"
		"  --seed N                     seed (recorded; also the trace's Poisson re-timing)\n"
		"  --quiet, -q                  no progress line on stderr\n"
		"  --no-fast-path               step one token at a time (slow; for checking)\n"
		"  --wall-time                  record the run's wall time in the JSON (not\n"
		"                               byte-identical between runs then)\n");
	fputc('\n', f);
	print_policies(f);
}

/* ---- progress -------------------------------------------------------------- */

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Seconds between plain progress lines when stderr is not a terminal
 * (nohup, CI logs): KVSIM_PROGRESS_INTERVAL, default 5. */
static double plain_interval(void)
{
	const char *e = getenv("KVSIM_PROGRESS_INTERVAL");
	double v;
	return e && kvs_parse_double(e, &v) && v >= 0 ? v : 5.0;
}

/* "1h02m", "3m05s", "42s" */
static const char *fmt_dur(double s, char *buf, size_t n)
{
	long t = s < 0 ? 0 : (long)(s + 0.5);
	if (t >= 3600)
		snprintf(buf, n, "%ldh%02ldm", t / 3600, t % 3600 / 60);
	else if (t >= 60)
		snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, n, "%lds", t);
	return buf;
}

static void on_progress(void *ctx, const kvs_sim_progress *p)
{
	kvs_cli_sim *c = ctx;
	double now = mono_s();
	if (now - c->progress_last < (c->progress_tty ? 0.25 : plain_interval()))
		return;
	c->progress_last = now;
	double el = now - c->progress_t0;
	char share[32] = "", eta[64] = "", e1[32], e2[32];
	if (p->input_share >= 0)
		snprintf(share, sizeof share, "%.1f%% of trace, ", 100.0 * p->input_share);
	/* done: the share of the trace read while it is being read; once all
	 * of it is in, the share of its requests finished */
	uint64_t fin = p->completed + p->rejected;
	double done = p->input_share >= 1 && p->arrived ? (double)fin / (double)p->arrived
		      : p->input_share;
	if (done > 0.001 && done < 1)
		snprintf(eta, sizeof eta, ", ETA %s", fmt_dur(el * (1 - done) / done, e2, sizeof e2));
	fprintf(stderr, "%s%s: %s%llu arrived, %llu finished, %.1f s simulated, "
		"elapsed %s, %.0f finished/s%s%s", c->progress_tty ? "\r" : "",
		c->progress_label, share, (unsigned long long)p->arrived,
		(unsigned long long)p->completed, p->sim_time_s, fmt_dur(el, e1, sizeof e1),
		el > 0 ? (double)fin / el : 0.0, eta, c->progress_tty ? "   " : "\n");
	fflush(stderr);
	c->progress_shown = c->progress_tty;
}

void kvs_cli_sim_progress_begin(kvs_cli_sim *c, const char *label)
{
	c->progress_label = label;
	c->progress_t0 = c->progress_last = mono_s();
	c->progress_shown = false;
	c->progress_tty = kvs_cli_stderr_is_tty();
	if (!c->quiet) {
		c->cfg.on_progress = on_progress;
		c->cfg.on_progress_ctx = c;
	} else {
		c->cfg.on_progress = NULL;
	}
}

void kvs_cli_sim_progress_end(kvs_cli_sim *c)
{
	/* the terminal line is cleared, so the table starts on a clean line */
	if (c->progress_shown)
		fprintf(stderr, "\r%*s\r", 110, "");
	c->progress_shown = false;
}

static kvs_status cli_trace_next(void *ctx, kvs_request *req)
{
	return kvs_trace_next(((kvs_cli_trace_source *)ctx)->t, req);
}

static double cli_trace_progress(void *ctx)
{
	kvs_cli_trace_source *ts = ctx;
	if (!(ts->file_bytes > 0))
		return -1;
	double x = (double)kvs_trace_get_stats(ts->t)->bytes_read / ts->file_bytes;
	return x > 1 ? 1 : x;
}

kvs_request_source kvs_cli_trace_source_init(kvs_cli_trace_source *ts,
					     kvs_trace *t, const char *path)
{
	struct stat sb;
	ts->t = t;
	ts->file_bytes = path && strcmp(path, "-") != 0 && stat(path, &sb) == 0 &&
			 S_ISREG(sb.st_mode) ? (double)sb.st_size : 0;
	kvs_request_source s = { cli_trace_next, ts, cli_trace_progress };
	return s;
}

/* ---- printing ----------------------------------------------------------------- */

static void human_bytes(char *buf, size_t n, double b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;
	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, n, u ? "%.2f %s" : "%.0f %s", b, unit[u]);
}

static void print_engine_trace(FILE *f, const kvs_sim_config *cfg, const kvs_sim_stats *st,
			       const char *trace_path, kvs_trace_format format,
			       bool limits_per_pool, const char *inactive);

/* The header; inactive: why --enable-prefix-caching had no effect (NULL:
 * it had, or was off). */
static void print_header(FILE *f, const kvs_sim_config *cfg, const kvs_sim_stats *st,
			 const char *trace_path, kvs_trace_format format,
			 const char *inactive)
{
	const kvs_deploy *d = &cfg->deploy;
	char par[48] = "";
	if (d->pp > 1)   /* the pool below is per GPU of tp x pp */
		snprintf(par, sizeof par, ", pp %u%s", d->pp,
			 d->pp_balanced ? " balanced" : "");
	fprintf(f, "model %s on %s (tp %u%s), KV cache %s\n", d->model.name, d->gpu.name,
		d->tp ? d->tp : 1, par, kvs_dtype_name(d->kv_dtype));
	kvs_cli_sim_print_pool(f, cfg, st, NULL);
	print_engine_trace(f, cfg, st, trace_path, format, false, inactive);
}

void kvs_cli_sim_print_pool(FILE *f, const kvs_sim_config *cfg, const kvs_sim_stats *st,
			    const kvs_sim_config *limits)
{
	char budget[32], per_tok[32];
	human_bytes(budget, sizeof budget, (double)st->kv_budget_bytes);
	human_bytes(per_tok, sizeof per_tok, (double)st->kv_bytes_per_token);
	uint32_t bs = cfg->deploy.block_size ? cfg->deploy.block_size : 16;
	fprintf(f, "KV pool per GPU %s = %llu tokens (%llu blocks of %u), %s per token, "
		"max_model_len %llu", budget,
		(unsigned long long)(st->num_blocks * bs),
		(unsigned long long)st->num_blocks, bs, per_tok,
		(unsigned long long)st->max_model_len);
	if (limits)
		fprintf(f, ", max_num_seqs %u, max_num_batched_tokens %u",
			limits->max_num_seqs, limits->max_num_batched_tokens);
	fputc('\n', f);
	if (st->window_groups)
		fprintf(f, "  windowed layers as vLLM's hybrid allocator holds them: %u "
			"group%s of %u layers with a %u-token %s beside %u full-attention "
			"group%s, held from admission to release\n", st->window_groups,
			st->window_groups == 1 ? "" : "s", st->group_layers, st->window_tokens,
			cfg->deploy.model.window_chunked ? "chunk" : "window", st->full_groups,
			st->full_groups == 1 ? "" : "s");
}

void kvs_cli_human_bytes(char *buf, size_t n, double b)
{
	human_bytes(buf, n, b);
}

void kvs_cli_sim_print_header_engine(FILE *f, const kvs_sim_config *cfg,
				     const kvs_sim_stats *st, const char *trace_path,
				     kvs_trace_format format, bool limits_per_pool)
{
	print_engine_trace(f, cfg, st, trace_path, format, limits_per_pool, NULL);
}

/* The header's engine and trace lines; limits_per_pool: a fleet's pools
 * gave their limits on their own lines; inactive: as print_header's. */
static void print_engine_trace(FILE *f, const kvs_sim_config *cfg, const kvs_sim_stats *st,
			       const char *trace_path, kvs_trace_format format,
			       bool limits_per_pool, const char *inactive)
{
	if (limits_per_pool)
		fputs("engine max_num_seqs and max_num_batched_tokens per pool (above), ", f);
	else
		fprintf(f, "engine max_num_seqs %u, max_num_batched_tokens %u, ",
			cfg->max_num_seqs, cfg->max_num_batched_tokens);
	fprintf(f, "%s%spreemption %s, prefix caching %s%s%s%s, step time %s\n",
		cfg->chunked_prefill_off ? "no chunked prefill, " : "",
		cfg->scheduling_policy == KVS_SCHED_PRIORITY ? "priority scheduling, " : "",
		kvs_preempt_mode_name(cfg->preemption_mode),
		cfg->enable_prefix_caching ? "on" : "off", inactive ? " (inactive: " : "",
		inactive ? inactive : "", inactive ? ")" : "",
		cfg->cost.table_path[0] ? "from table" :
		cfg->cost.profile_points ? "profile + roofline" :
		cfg->cost.kind == KVS_COST_LINEAR ? "linear" : "roofline");
	double span = st->arrived > 1 ? st->last_arrival_s - st->first_arrival_s : 0;
	fprintf(f, "trace %s (%s): %llu requests over %.1f s", trace_path ? trace_path : "-",
		format == KVS_TRACE_AUTO ? "memory" : kvs_trace_format_name(format),
		(unsigned long long)st->arrived, span);
	if (span > 0)
		fprintf(f, " (%.2f req/s)", (double)(st->arrived - 1) / span);
	fputs("\n\n", f);
}

/* The KV offload tiers' lines (nothing without tiers). */
static void print_offload(FILE *f, const kvs_sim_result *r)
{
	const kvs_sim_stats *st = kvs_sim_result_stats(r);
	const kvs_offload_stats *os = kvs_sim_result_offload(r);
	uint64_t tier_hits = 0;
	bool on = false;
	for (int k = 0; k < KVS_OFFLOAD_KINDS_; k++) {
		const kvs_offload_tier_stats *t = &os->tier[k];
		if (!t->capacity_blocks)
			continue;
		on = true;
		tier_hits += t->hit_blocks;
		char cap[32], ld[32], sto[32];
		human_bytes(cap, sizeof cap, (double)t->capacity_bytes);
		human_bytes(ld, sizeof ld, (double)t->load_bytes);
		human_bytes(sto, sizeof sto, (double)t->store_bytes);
		fprintf(f, "  KV offload %s %s (%llu blocks) at %.3g GB/s: %llu blocks hit, "
			"%s loaded in %.4g s, %s stored, %llu evicted\n",
			kvs_offload_kind_name((kvs_offload_kind)k), cap,
			(unsigned long long)t->capacity_blocks, t->bytes_per_s / 1e9,
			(unsigned long long)t->hit_blocks, ld, t->load_s, sto,
			(unsigned long long)t->evicted_blocks);
	}
	if (!on)
		return;
	uint64_t all = st->prefix_hit_blocks;
	fprintf(f, "  prefix hits %llu blocks = HBM %llu + offload tiers %llu "
		"(%.1f%% from the tiers)\n", (unsigned long long)all,
		(unsigned long long)(all - tier_hits), (unsigned long long)tier_hits,
		all ? 100.0 * (double)tier_hits / (double)all : 0.0);
}

void kvs_cli_sim_print_accounting(FILE *f, const kvs_sim_stats *st)
{
	fprintf(f, "%s: arrived %llu = completed %llu + rejected %llu", kvs_policy_name(st->policy),
		(unsigned long long)st->arrived, (unsigned long long)st->completed,
		(unsigned long long)st->rejected);
	if (st->rejected) {
		fputs(" (", f);
		bool first = true;
		for (int i = 0; i < KVS_SIM_REJECT_COUNT_; i++)
			if (st->rejected_by[i]) {
				fprintf(f, "%s%s %llu", first ? "" : ", ",
					kvs_sim_reject_name((kvs_sim_reject)i),
					(unsigned long long)st->rejected_by[i]);
				first = false;
			}
		fputs(")", f);
	}
	fprintf(f, " + unfinished %llu\n", (unsigned long long)st->unfinished);
	if (st->multi_sample_requests)
		fprintf(f, "  (%llu requests asked for parallel sampling n > 1: prefilled once, "
			"forked into %llu more sequences, %llu copy-on-write block copies)\n",
			(unsigned long long)st->multi_sample_requests,
			(unsigned long long)st->forked_sequences,
			(unsigned long long)st->cow_copies);
}

static double ratio_of(double a, double b)
{
	return b > 0 ? a / b : NAN;
}

/* Could the run have ended before its trace (interrupted, or a horizon)? */
static bool may_end_early(const kvs_sim_result *r)
{
	return kvs_sim_result_stats(r)->interrupted || kvs_sim_result_config(r)->horizon_s > 0;
}

uint64_t kvs_cli_after_end(const kvs_sim_result *r, uint64_t requests)
{
	uint64_t arrived = kvs_sim_result_stats(r)->arrived;
	return may_end_early(r) && requests > arrived ? requests - arrived : 0;
}

const char *kvs_cli_after_end_key(const kvs_sim_result *r)
{
	if (!may_end_early(r))
		return NULL;
	/* an interrupt ends the run whatever its horizon */
	return kvs_sim_result_stats(r)->interrupted ? "after_interrupt" : "after_horizon";
}

void kvs_cli_after_end_json(kvs_json *doc, const kvs_sim_result *r, uint64_t after)
{
	const char *key = r ? kvs_cli_after_end_key(r) : NULL;
	if (!doc || !key)
		return;
	json_t *pols = json_object_get(kvs_json_jt(doc), "policies");
	json_t *po = pols ? json_object_get(pols,
		kvs_policy_name(kvs_sim_result_stats(r)->policy)) : NULL;
	json_t *acc = po ? json_object_get(po, "accounting") : NULL;
	if (acc)
		json_object_set_new(acc, key, json_integer((json_int_t)after));
}

/* The requests of the trace a run did not take, having ended at its
 * horizon or been interrupted (after: the count of each result; NULL:
 * none known). */
static void print_after_end(FILE *f, const kvs_sim_result *r, const uint64_t *after)
{
	const kvs_sim_stats *st = kvs_sim_result_stats(r);
	uint64_t n = after ? *after : 0;
	if (st->interrupted) {
		/* the table of an interrupted run says so, whatever the rest */
		fprintf(f, "  (interrupted at %.3f simulated s: the figures cover what was "
			"done", st->sim_time_s);
		if (n)
			fprintf(f, "; the trace's %llu requests = arrived %llu + %llu after "
				"the interruption, not simulated", (unsigned long long)(st->arrived + n),
				(unsigned long long)st->arrived, (unsigned long long)n);
		fprintf(f, ")\n");
	} else if (n) {
		fprintf(f, "  (the trace's %llu requests = arrived %llu + %llu after the horizon "
			"at %g s, not simulated)\n", (unsigned long long)(st->arrived + n),
			(unsigned long long)st->arrived, (unsigned long long)n,
			kvs_sim_result_config(r)->horizon_s);
	}
}

/* A goodput share in percent, one decimal: a share under 1 never reads
 * 100.0 (99.95% and up are cut to 99.9, not rounded up). */
static void fraction_cell(char *cell, size_t n, double x)
{
	snprintf(cell, n, "%.1f", x * 100);
	if (x < 1 && strcmp(cell, "100.0") == 0)
		snprintf(cell, n, "99.9");
}

/* The figures' column: the metric table's rows that have a label, in
 * table order, under their section titles. */
void kvs_cli_sim_print_results(FILE *f, kvs_sim_result *const *res, size_t n,
			       const uint64_t *after)
{
	const int lw = 32, cw = 12;
	fprintf(f, "%-*s", lw, "");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%*s", cw, kvs_policy_name(kvs_sim_result_stats(res[i])->policy));
	fputc('\n', f);
	for (int id = 0; id < KVS_M_COUNT_; id++) {
		const kvs_metric_info *m = kvs_metric_get((kvs_metric_id)id);
		if (m->section)
			fprintf(f, "%s\n", m->section);
		if (!m->label)
			continue;
		fprintf(f, "%-*s", lw, m->label);
		bool no_slo = false;
		for (size_t i = 0; i < n; i++) {
			char cell[32];
			double v = kvs_metric_value(m->id, kvs_sim_result_stats(res[i]));
			if ((m->flags & KVS_MF_SLO) &&
			    !kvs_sim_config_has_slo(kvs_sim_result_config(res[i]))) {
				/* every request meets no objective: not a 100% */
				snprintf(cell, sizeof cell, "n/a");
				no_slo = true;
			} else if (kvs_metric_is_empty(m, kvs_sim_result_stats(res[i]))) {
				/* no request got that far: no latency, not 0 */
				snprintf(cell, sizeof cell, "n/a");
			} else if (m->id == KVS_M_GOODPUT_FRACTION) {
				fraction_cell(cell, sizeof cell, v);
			} else {
				snprintf(cell, sizeof cell, m->fmt, v * m->scale);
			}
			fprintf(f, "%*s", cw, cell);
		}
		if (no_slo)
			fputs("  (no SLO)", f);
		fputc('\n', f);
	}
	/* ratios baseline / each */
	const kvs_sim_stats *paged = NULL;
	for (size_t i = 0; i < n && !paged; i++)
		if (kvs_policy_has(kvs_sim_result_stats(res[i])->policy, KVS_TRAIT_BASELINE))
			paged = kvs_sim_result_stats(res[i]);
	if (paged && n > 1) {
		fprintf(f, "%s / each policy\n", kvs_policy_name(paged->policy));
		static const struct { const char *label; kvs_metric_id m; } rr[] = {
			{ "  concurrency (mean)", KVS_M_CONC_MEAN },
			{ "  throughput (output tokens/s)", KVS_M_OUTPUT_TOKENS_PER_S },
			{ "  waste (reserved + fragmented)", KVS_M_WASTE_PCT },
			{ "  p99 queue delay", KVS_M_QUEUE_P99 },
		};
		for (size_t k = 0; k < KVS_ARRAY_LEN(rr); k++) {
			fprintf(f, "%-*s", lw, rr[k].label);
			for (size_t i = 0; i < n; i++) {
				const kvs_sim_stats *o = kvs_sim_result_stats(res[i]);
				double x = ratio_of(kvs_metric_value(rr[k].m, paged),
						    kvs_metric_value(rr[k].m, o));
				char cell[32];
				if (isfinite(x))
					snprintf(cell, sizeof cell, "%.3gx", x);
				else
					snprintf(cell, sizeof cell, "-");
				fprintf(f, "%*s", cw, cell);
			}
			fputc('\n', f);
		}
		/* An open loop offers every policy the same load: all serve
		 * it while memory lasts, so throughput ties and the memory
		 * gap shows as queueing and concurrency, not as tokens/s. */
		bool open_loop = true, tied = true;
		for (size_t i = 0; i < n; i++) {
			const kvs_sim_stats *o = kvs_sim_result_stats(res[i]);
			double x = ratio_of(kvs_metric_value(KVS_M_OUTPUT_TOKENS_PER_S, paged),
					    kvs_metric_value(KVS_M_OUTPUT_TOKENS_PER_S, o));
			open_loop &= kvs_sim_result_config(res[i])->max_concurrency == 0;
			tied &= isfinite(x) && fabs(x - 1) <= 0.02;
		}
		if (open_loop && tied)
			fputs("  (open loop: each policy served the offered load, so throughput "
			      "ties; capacity\n   shows with --max-concurrency N or kvsim sweep "
			      "--find-max-rate)\n", f);
	}
	fputc('\n', f);
	for (size_t i = 0; i < n; i++) {
		kvs_cli_sim_print_accounting(f, kvs_sim_result_stats(res[i]));
		print_after_end(f, res[i], after ? &after[i] : NULL);
		print_offload(f, res[i]);
	}
}

/* ---- replay / compare ---------------------------------------------------------- */

/* --goodput (replay and compare only) */
static int goodput_arg(kvs_args *it, kvs_cli_front *fe, void *ctx)
{
	/* which objectives this --goodput sets: each unset one is marked
	 * negative for the call, and put back when the call left it so */
	kvs_sim_config *g = &fe->sim.cfg;
	double *slo[3] = { &g->slo_ttft_s, &g->slo_tpot_s, &g->slo_e2e_s };
	double was[3];
	for (int k = 0; k < 3; k++) {
		was[k] = *slo[k];
		*slo[k] = -1;
	}
	int r = kvs_cli_goodput_arg(it, g, ctx);
	for (int k = 0; k < 3; k++) {
		if (*slo[k] >= 0)
			fe->sim.goodput_flags |= 1u << k;
		else
			*slo[k] = was[k];
	}
	return r;
}

/* An objective given by both --slo-* and --goodput: which one was meant
 * is not for the order of the flags to decide. */
static bool slo_flags_ok(const kvs_cli_sim *sim, const char *cmd)
{
	static const char *const name[2][2] = {
		{ "--slo-ttft", "ttft" }, { "--slo-tpot", "tpot" },
	};
	for (int k = 0; k < 2; k++)
		if (sim->slo_flags & sim->goodput_flags & (1u << k)) {
			fprintf(stderr, "kvsim %s: %s and --goodput %s:MS both set the %s "
				"objective; give one\n", cmd, name[k][0], name[k][1],
				k ? "TPOT" : "TTFT");
			return false;
		}
	return true;
}

typedef struct replay_run {
	const kvs_sim_config *cfg;
	kvs_sim_result **out;
} replay_run;

static kvs_status replay_one(void *ctx, kvs_request_source *src)
{
	replay_run *r = ctx;
	return kvs_sim_replay(r->cfg, src, r->out);
}

/* --bench-json: one object, or a list of them with several policies
 * (after: the trace's requests each run did not take) */
static int write_bench_json(FILE *f, kvs_sim_result *const *res, size_t nres,
			    const kvs_cli_bench_opts *bo, const uint64_t *after)
{
	json_t *bj = nres == 1 ? kvs_cli_bench_json(res[0], bo, after[0]) : json_array();
	for (size_t i = 0; nres > 1 && i < nres; i++)
		json_array_append_new(bj, kvs_cli_bench_json(res[i], bo, after[i]));
	char *bt = kvs_cli_json_text(bj, JSON_INDENT(2) | JSON_SORT_KEYS);
	int rc = !bt || fputs(bt, f) < 0 || fputc('\n', f) == EOF ? KVS_EXIT_FAIL : KVS_EXIT_OK;
	free(bt);
	json_decref(bj);
	return rc;
}

/* A given --sample-interval that a run coarsened (doubled, to keep its time
 * series bounded) is said on stderr: the coarsest interval used. */
void kvs_cli_warn_empty_trace(const char *cmd, const char *path, const kvs_trace_stats *ts)
{
	if (ts->requests)
		return;
	fprintf(stderr, "kvsim %s: warning: %s holds no request (%llu line%s read%s): the "
		"figures are empty\n", cmd, path ? path : "the trace",
		(unsigned long long)ts->lines_read, ts->lines_read == 1 ? "" : "s",
		ts->skipped[KVS_SKIP_BAD_LINE] || ts->skipped[KVS_SKIP_FAILED] || ts->filtered_limit ||
		ts->filtered_window ? ", the rest skipped or filtered" : "");
}

void kvs_cli_warn_coarsened(const char *cmd, double given_s, kvs_sim_result *const *res,
			    size_t nres)
{
	double worst = 0, span = 0;
	size_t kept = 0;
	for (size_t i = 0; given_s > 0 && i < nres; i++) {
		size_t n;
		double iv;
		(void)kvs_sim_result_samples(res[i], &n, &iv);
		if (iv > given_s && iv > worst) {
			worst = iv;
			kept = n;
			span = kvs_sim_result_stats(res[i])->sim_time_s;
		}
	}
	if (worst > 0)
		fprintf(stderr, "kvsim %s: warning: --sample-interval %g s over %.6g simulated "
			"seconds is more samples than a time series keeps: sampled every "
			"%g s instead (%zu samples; timeseries.interval_s in the JSON)\n",
			cmd, given_s, span, worst, kept);
}

/* Why --enable-prefix-caching has no effect on a replay or compare, or
 * NULL: no policy of the run keeps a prefix cache (buf names the one of a
 * replay), or the trace has no hash ids (tstats: NULL before it is read). */
static const char *caching_inactive(const kvs_cli_sim *sim, const kvs_trace_stats *tstats,
				    char *buf, size_t n)
{
	if (!sim->cfg.enable_prefix_caching)
		return NULL;
	for (size_t i = 0; i < sim->npolicies; i++)
		if (kvs_policy_has(sim->policies[i], KVS_TRAIT_PREFIX_HASHES))
			return tstats && tstats->requests && !tstats->hashed
			       ? "the trace has no prefix hash ids" : NULL;
	if (sim->npolicies == 1)
		snprintf(buf, n, "policy %s keeps no prefix cache",
			 kvs_policy_name(sim->policies[0]));
	else
		snprintf(buf, n, "none of these policies keeps a prefix cache");
	return buf;
}

int kvs_cli_sim_command(kvs_args *it, bool several)
{
	kvs_cli_front fe;
	kvs_cli_front_init(&fe, it, KVS_CLI_OUT_ALL);
	const char *cmd = fe.cmd;
	kvs_cli_sim *sim = &fe.sim;
	bool goodput = false;
	int rc = kvs_cli_front_parse(&fe, goodput_arg, &goodput);
	if (rc != KVS_CLI_GO_ON)
		return rc;
	if (several && sim->npolicies == 0) {
		sim->npolicies = kvs_policy_count();
		for (size_t p = 0; p < sim->npolicies; p++)
			sim->policies[p] = (kvs_policy)p;
	}
	if (!slo_flags_ok(sim, cmd))
		return KVS_EXIT_USAGE;
	if (!several && sim->npolicies > 1) {
		fprintf(stderr, "kvsim replay: one policy per replay; use 'kvsim compare "
			"--policies ...' for several\n");
		return KVS_EXIT_USAGE;
	}
	if ((rc = kvs_cli_front_finish(&fe)) != KVS_CLI_GO_ON ||
	    (rc = kvs_cli_front_open(&fe, true)) != KVS_CLI_GO_ON)
		return rc;
	goodput |= kvs_sim_config_has_slo(&sim->cfg);
	char why_buf[96];
	const char *why = caching_inactive(sim, NULL, why_buf, sizeof why_buf);
	if (why)
		fprintf(stderr, "kvsim %s: warning: --enable-prefix-caching has no effect: "
			"%s\n", cmd, why);
	kvs_sim_request_csv rcsv = { kvs_cli_front_stream(&fe, KVS_CLI_OUT_REQUESTS), NULL };
	if (rcsv.f)
		kvs_sim_request_csv_header(rcsv.f);
	if ((rc = kvs_cli_front_load(&fe, sim->npolicies > 1)) != KVS_CLI_GO_ON)
		return rc;
	rc = KVS_EXIT_OK;
	kvs_sim_result *res[KVS_POLICY_CAP] = { 0 };
	uint64_t after[KVS_POLICY_CAP] = { 0 };
	size_t nres = 0;
	kvs_status st = KVS_OK;
	for (size_t i = 0; i < sim->npolicies && st == KVS_OK && !kvs_cli_front_interrupted(&fe);
	     i++) {
		kvs_sim_config cfg;
		char label[64];
		snprintf(label, sizeof label, "%s %s", cmd, kvs_policy_name(sim->policies[i]));
		kvs_cli_sim_progress_begin(sim, label);
		cfg = sim->cfg;
		cfg.policy = sim->policies[i];
		if (rcsv.f) {
			rcsv.policy = kvs_policy_name(cfg.policy);
			cfg.on_request = kvs_sim_request_csv_on_request;
			cfg.on_request_ctx = &rcsv;
		}
		replay_run run = { &cfg, &res[nres] };
		st = kvs_cli_front_run(&fe, 1.0, replay_one, &run);
		kvs_cli_sim_progress_end(sim);
		if (st == KVS_OK) {
			after[nres] = kvs_cli_after_end(res[nres], fe.trace_requests);
			nres++;
		} else {
			/* a run can end well and the trace's rest fail to read */
			kvs_sim_result_destroy(res[nres]);
			res[nres] = NULL;
		}
	}
	if (st != KVS_OK) {
		kvs_cli_report_error(cmd, st);
		rc = st == KVS_ERR_INVALID ? KVS_EXIT_USAGE : KVS_EXIT_FAIL;
	}
	int sig = kvs_cli_front_interrupted(&fe);
	if (sig && nres == 0 && rc == KVS_EXIT_OK) {
		/* (while the trace was read into memory) */
		return kvs_cli_front_unrun(&fe, sig);
	}
	if (rc == KVS_EXIT_OK && sig)
		fprintf(stderr, "kvsim %s: interrupted at %.3f simulated seconds: %zu of %zu "
			"policies; the outputs hold what was done, marked \"interrupted\"\n",
			cmd, kvs_sim_result_stats(res[nres - 1])->sim_time_s, nres,
			sim->npolicies);
	if (rc == KVS_EXIT_OK) {
		kvs_cli_warn_empty_trace(cmd, fe.path, &fe.tstats);
		kvs_cli_warn_coarsened(cmd, sim->cfg.sample_interval_s, res, nres);
	}
	if (rc == KVS_EXIT_OK && !why &&
	    (why = caching_inactive(sim, &fe.tstats, why_buf, sizeof why_buf)))
		fprintf(stderr, "kvsim %s: warning: --enable-prefix-caching had no effect: "
			"%s\n", cmd, why);
	if (rc == KVS_EXIT_OK && kvs_cli_front_table(&fe)) {
		print_header(stdout, kvs_sim_result_config(res[0]), kvs_sim_result_stats(res[0]),
			     fe.path, fe.format, why);
		kvs_cli_sim_print_results(stdout, res, nres, after);
		if (fe.tstats.truncated)
			printf("  (%llu request%s cut to max_model_len %llu by --overlong "
			       "truncate)\n",
			       (unsigned long long)fe.tstats.truncated,
			       fe.tstats.truncated == 1 ? "" : "s",
			       (unsigned long long)kvs_sim_result_stats(res[0])->max_model_len);
		if (fe.tstats.kept_failed)
			/* the engine runs them as requests: their prefill is the
			 * load --keep-failed keeps, their figures are not a user's */
			printf("  (%llu BurstGPT failure row%s kept by --keep-failed: no output "
			       "in the trace, run as a prompt\n   and one token; within "
			       "completed, TTFT, end-to-end and goodput above)\n",
			       (unsigned long long)fe.tstats.kept_failed,
			       fe.tstats.kept_failed == 1 ? "" : "s");
		kvs_cli_cost_print(stdout, res, nres);
	}
	if (rc == KVS_EXIT_OK && kvs_cli_front_wants_json(&fe)) {
		kvs_json *doc = kvs_sim_report_json(cmd, res, nres, fe.path, fe.format, &fe.tstats);
		if (doc && sig)
			json_object_set_new(kvs_json_jt(doc), "interrupted", json_true());
		/* --gpu-hour-price: each policy's cost object; after a horizon
		 * or an interrupt, the requests of the trace not taken */
		json_t *pols = doc ? json_object_get(kvs_json_jt(doc), "policies") : NULL;
		for (size_t i = 0; pols && i < nres; i++) {
			json_t *cost = kvs_cli_cost_json(res[i]);
			json_t *po = json_object_get(pols,
				kvs_policy_name(kvs_sim_result_stats(res[i])->policy));
			if (cost && po)
				json_object_set_new(po, "cost", cost);
			else
				json_decref(cost);
			kvs_cli_after_end_json(doc, res[i], after[i]);
		}
		rc = kvs_cli_front_json(&fe, doc);
	}
	FILE *f;
	if (rc == KVS_EXIT_OK && (f = kvs_cli_front_stream(&fe, KVS_CLI_OUT_BENCH_JSON))) {
		kvs_cli_bench_opts bo = { fe.path, fe.topts.rate, goodput };
		rc = write_bench_json(f, res, nres, &bo, after);
	}
	if (rc == KVS_EXIT_OK && (f = kvs_cli_front_stream(&fe, KVS_CLI_OUT_SUMMARY_CSV)))
		kvs_cli_summary_csv(f, res, nres, goodput, after);
	if (rc == KVS_EXIT_OK && (f = kvs_cli_front_stream(&fe, KVS_CLI_OUT_TIMESERIES)))
		(void)kvs_sim_timeseries_csv(res, nres, f);
	for (size_t i = 0; i < nres; i++)
		kvs_sim_result_destroy(res[i]);
	rc = kvs_cli_front_close(&fe, rc);
	if (rc == KVS_EXIT_OK && !sig && (sig = kvs_cli_front_interrupted(&fe)))
		fprintf(stderr, "kvsim %s: interrupted after the runs had finished: the "
			"outputs are whole\n", cmd);
	if (rc == KVS_EXIT_OK && sig)
		rc = 128 + sig;
	return rc;
}

void kvs_cli_sim_usage_tail(FILE *f, bool several)
{
	fprintf(f,
		"  --bench-json FILE            the result in vllm bench serve --save-result's\n"
		"                               schema (ms; mean/median/std/p50/p90/p95/p99 of\n"
		"                               ttft, tpot, itl, e2el; goodput)%s\n"
		"  --summary-csv FILE           one row per policy: the same figures, the KV\n"
		"                               memory split and, with --gpu-hour-price, cost\n"
		"  --help                       show this help\n"
		"  Ctrl-C (SIGINT), SIGTERM     stop at the next event: the table and every\n"
		"                               output hold what was done, marked\n"
		"                               interrupted; exit 130 (143)\n"
		"\n", several ? ", a list per policy" : "");
	kvs_cli_sim_usage_groups(f, several);
}

void kvs_cli_sim_usage_groups(FILE *f, bool several)
{
	kvs_cli_sim_help(f, several);
	fputc('\n', f);
	kvs_cli_deploy_help(f);
	fputc('\n', f);
	kvs_cli_trace_help(f);
}
