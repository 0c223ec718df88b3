/*
 * cli_deploy.c - the "model, GPU and deployment" flag group shared by size,
 * replay, compare and sweep.  Flags are named as vLLM names them where it
 * has a name (--gpu-memory-utilization, --kv-cache-dtype, --block-size,
 * --max-model-len, --tensor-parallel-size/--tp, ...).
 *
 * Parsing only records the raw values; kvs_cli_deploy_finish loads the
 * presets or config file, applies overrides and checks the whole deployment
 * with kvs_size_compute, so every command refuses the same bad input with
 * the same message.
 */
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void kvs_cli_deploy_init(kvs_cli_deploy *c, const char *default_model,
			 const char *default_gpu)
{
	memset(c, 0, sizeof *c);
	c->model_arg = default_model ? default_model : "llama-2-7b";
	c->gpu_arg = default_gpu ? default_gpu : KVS_CLI_DEFAULT_GPU;
	kvs_deploy_defaults(&c->d, NULL, NULL);
	c->pp_balanced_arg = -1;
	c->fail_exit = KVS_EXIT_USAGE;
}

/* Strict positive integer with messages that say what is wrong. */
static bool arg_uint(kvs_args *it, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *v = kvs_args_value(it);
	if (!v)
		return false;
	const char *p = v;
	if (*p == '-' || *p == '+') {
		bool num = p[1] >= '0' && p[1] <= '9';
		kvs_args_usage_error(it, "%s: %s, got '%s'", it->flag,
				     num && *p == '-' ? "must be positive" :
				     "expected a positive integer", v);
		return false;
	}
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			break;
	if (p == v || *p) {
		kvs_args_usage_error(it, "%s: expected a positive integer, got '%s'",
				     it->flag, v);
		return false;
	}
	errno = 0;
	unsigned long long x = strtoull(v, NULL, 10);
	if (errno == ERANGE || x > max) {
		kvs_args_usage_error(it, "%s: %s is too large (at most %llu)", it->flag, v,
				     (unsigned long long)max);
		return false;
	}
	if (x < min) {
		kvs_args_usage_error(it, "%s: must be at least %llu, got %s", it->flag,
				     (unsigned long long)min, v);
		return false;
	}
	*out = x;
	return true;
}

/* A token count: a plain integer as arg_uint, or with vLLM's suffixes
 * (8k = 8000, 8K = 8192, 1.5k, 1M = 2^20). */
static bool arg_tokens(kvs_args *it, uint64_t *out)
{
	const char *v = it->inline_val ? it->inline_val
		: it->i < it->argc ? it->argv[it->i] : NULL;
	size_t n = v ? strlen(v) : 0;
	if (n < 2 || !strchr("kKmMgG", v[n - 1]) || v[0] < '0' || v[0] > '9')
		return arg_uint(it, 1, UINT64_MAX, out);
	return kvs_args_tokens(it, 1, UINT64_MAX, out);
}

static bool arg_u32(kvs_args *it, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t x;
	if (!arg_uint(it, min, max, &x))
		return false;
	*out = (uint32_t)x;
	return true;
}

/* A positive real in (0, max]. */
static bool arg_pos_double(kvs_args *it, double max, double *out)
{
	double x;
	const char *v = kvs_args_number(it, &x);
	if (!v)
		return false;
	if (!(x > 0.0)) {
		kvs_args_usage_error(it, "%s: must be greater than 0, got '%s'", it->flag, v);
		return false;
	}
	if (x > max) {
		kvs_args_usage_error(it, "%s: %s is too large (at most %g)", it->flag, v, max);
		return false;
	}
	*out = x;
	return true;
}

/* A flag's value that must be a JSON object (duplicate keys refused), or
 * NULL with the usage error ("expected a JSON object <what>"). */
static json_t *json_object_arg(kvs_args *it, const char *v, const char *what)
{
	json_error_t e;
	json_t *o = json_loads(v, JSON_REJECT_DUPLICATES, &e);
	if (o && json_is_object(o))
		return o;
	kvs_args_usage_error(it, "%s: expected a JSON object %s, got '%s'%s%s", it->flag, what, v,
			     o ? "" : ": ", o ? "" : e.text);
	json_decref(o);
	return NULL;
}

/* One modality's count of --limit-mm-per-prompt: image and video are
 * kept (video counts for the towers vLLM may profile a video of), audio
 * is accepted and left out; any other key is refused.  false, with the
 * usage error, on a bad key or count. */
static bool mm_limit_set(kvs_args *it, kvs_deploy *d, const char *key, long long n)
{
	uint32_t *slot = strcmp(key, "image") == 0 ? &d->mm_image_limit
		       : strcmp(key, "video") == 0 ? &d->mm_video_limit : NULL;
	if (!slot && strcmp(key, "audio") != 0) {
		kvs_args_usage_error(it, "%s: unknown modality '%s' (image, video or audio)",
				     it->flag, key);
		return false;
	}
	if (n < 0 || n > INT32_MAX) {
		kvs_args_usage_error(it, "%s: the count of '%s' must be an integer from 0 to "
				     "%d, got %lld", it->flag, key, INT32_MAX, n);
		return false;
	}
	if (slot)
		*slot = n ? (uint32_t)n : KVS_MM_LIMIT_ZERO;
	return true;
}

/* vLLM's --limit-mm-per-prompt: a JSON object ('{"image": 2, "video":
 * 0}') or the older key=value list ('image=2,video=0'). */
static bool arg_mm_limits(kvs_args *it, kvs_deploy *d)
{
	const char *v = kvs_args_value(it);
	if (!v)
		return false;
	if (v[0] == '{') {
		json_t *o = json_object_arg(it, v, "of counts such as '{\"image\": 2}'");
		if (!o)
			return false;
		const char *key;
		json_t *val;
		bool ok = true;
		json_object_foreach(o, key, val) {
			if (!json_is_integer(val)) {
				kvs_args_usage_error(it, "%s: the count of '%s' must be an "
						     "integer, in '%s'", it->flag, key, v);
				ok = false;
				break;
			}
			if (!(ok = mm_limit_set(it, d, key, (long long)json_integer_value(val))))
				break;
		}
		json_decref(o);
		return ok;
	}
	const char *p = v;
	do {
		const char *eq = strchr(p, '='), *end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		char key[32];
		char *num_end;
		if (!eq || eq > end || eq == p || (size_t)(eq - p) >= sizeof key ||
		    eq + 1 == end || !(eq[1] >= '0' && eq[1] <= '9') || (*end && !end[1])) {
			kvs_args_usage_error(it, "%s: expected MODALITY=COUNT[,...] such as "
					     "'image=2,video=0' or a JSON object, got '%s'",
					     it->flag, v);
			return false;
		}
		memcpy(key, p, (size_t)(eq - p));
		key[eq - p] = '\0';
		errno = 0;
		long long n = strtoll(eq + 1, &num_end, 10);
		if (num_end != end || errno) {
			kvs_args_usage_error(it, "%s: the count of '%s' must be an integer from 0 "
					     "to %d, got '%.*s'", it->flag, key, INT32_MAX,
					     (int)(end - eq - 1), eq + 1);
			return false;
		}
		if (!mm_limit_set(it, d, key, n))
			return false;
		p = *end ? end + 1 : end;
	} while (*p);
	return true;
}

/* vLLM's --mm-processor-kwargs, a JSON object: max_pixels (a positive
 * integer) caps the Qwen-VL towers' largest image; other keys are the
 * processor's and are accepted as they are. */
static bool arg_mm_processor_kwargs(kvs_args *it, kvs_deploy *d)
{
	const char *v = kvs_args_value(it);
	if (!v)
		return false;
	json_t *o = json_object_arg(it, v, "such as '{\"max_pixels\": 1003520}'");
	if (!o)
		return false;
	json_t *mp = json_object_get(o, "max_pixels");
	bool ok = true;
	if (mp) {
		if (!json_is_integer(mp) || json_integer_value(mp) < 1) {
			kvs_args_usage_error(it, "%s: 'max_pixels' must be a positive integer",
					     it->flag);
			ok = false;
		} else {
			d->mm_max_pixels = (uint64_t)json_integer_value(mp);
		}
	}
	json_decref(o);
	return ok;
}

int kvs_cli_deploy_arg(kvs_args *it, kvs_cli_deploy *c)
{
	kvs_deploy *d = &c->d;
	bool ok;
	if (kvs_args_is(it, "--model")) {
		ok = (c->model_arg = kvs_args_value(it)) != NULL;
	} else if (kvs_args_is(it, "--gpu")) {
		ok = (c->gpu_arg = kvs_args_value(it)) != NULL;
		c->gpu_given = true;
	} else if (kvs_args_is(it, "--gpu-mem")) {
		ok = kvs_args_bytes(it, &c->gpu_mem);
	} else if (kvs_args_is(it, "--gpu-memory-utilization")) {
		ok = arg_pos_double(it, 1.0, &d->gpu_memory_utilization);
	} else if (kvs_args_is(it, "--tp") || kvs_args_is(it, "--tensor-parallel-size") ||
		   kvs_args_is(it, "-tp")) {
		ok = arg_u32(it, 1, 1024, &d->tp);
	} else if (kvs_args_is(it, "--pp") || kvs_args_is(it, "--pipeline-parallel-size") ||
		   kvs_args_is(it, "-pp")) {
		ok = arg_u32(it, 1, 1024, &d->pp);
	} else if (kvs_args_is(it, "--pp-balanced") || kvs_args_is(it, "--no-pp-balanced")) {
		ok = kvs_args_no_value(it);
		c->pp_balanced_arg = strcmp(it->flag, "--pp-balanced") == 0;
	} else if (kvs_args_is(it, "--dp") || kvs_args_is(it, "--data-parallel-size") ||
		   kvs_args_is(it, "-dp")) {
		ok = arg_u32(it, 1, 1024, &d->dp);
	} else if (kvs_args_is(it, "--enable-expert-parallel")) {
		ok = kvs_args_no_value(it);
		d->expert_parallel = ok;
	} else if (kvs_args_is(it, "--limit-mm-per-prompt")) {
		ok = arg_mm_limits(it, d);
		c->mm_flag = c->mm_flag ? c->mm_flag : "--limit-mm-per-prompt";
	} else if (kvs_args_is(it, "--mm-processor-kwargs")) {
		ok = arg_mm_processor_kwargs(it, d);
		c->mm_flag = c->mm_flag ? c->mm_flag : "--mm-processor-kwargs";
	} else if (kvs_args_is(it, "--skip-mm-profiling")) {
		ok = kvs_args_no_value(it);
		d->skip_mm_profiling = ok;
		c->mm_flag = c->mm_flag ? c->mm_flag : "--skip-mm-profiling";
	} else if (kvs_args_is(it, "--disable-hybrid-kv-cache-manager")) {
		ok = kvs_args_no_value(it);
		d->hybrid_kv_off = ok;
	} else if (kvs_args_is(it, "--allow-chunked-local-attn-with-hybrid-kv-cache")) {
		ok = kvs_args_no_value(it);
		d->chunked_hybrid_on = ok;
	} else if (kvs_args_is(it, "--dtype")) {
		ok = (c->dtype_arg = kvs_args_value(it)) != NULL;
	} else if (kvs_args_is(it, "--kv-cache-dtype")) {
		ok = (c->kv_dtype_arg = kvs_args_value(it)) != NULL;
	} else if (kvs_args_is(it, "--kv-quant-group")) {
		ok = arg_u32(it, 1, 1u << 20, &d->kv_quant_group);
	} else if (kvs_args_is(it, "--block-size")) {
		ok = arg_u32(it, 1, 1u << 16, &d->block_size);
		c->set_block_size = true;
		if (ok && (d->block_size & (d->block_size - 1)) != 0)
			fprintf(stderr, "kvsim %s: warning: --block-size %u is not a power of "
				"two (vLLM's CUDA attention kernels take 8, 16 or 32; other "
				"backends powers of two)\n", it->cmd, d->block_size);
	} else if (kvs_args_is(it, "--context")) {
		ok = arg_tokens(it, &d->context_tokens);
		c->set_context = true;
	} else if (kvs_args_is(it, "--max-model-len")) {
		ok = arg_tokens(it, &d->max_model_len);
	} else if (kvs_args_is(it, "--reserve")) {
		const char *v = kvs_args_value(it);
		uint64_t b = 0;
		ok = v != NULL;
		if (ok && strcmp(v, "auto") == 0) {
			d->reserve_bytes = -1;
		} else if (ok && strcmp(v, "0") == 0) {
			d->reserve_bytes = 0;
		} else if (ok) {
			if (kvs_parse_bytes(v, &b) != KVS_OK) {
				kvs_args_usage_error(it, "%s: %s (or 'auto', or 0)", it->flag,
						     kvs_last_error());
				ok = false;
			} else if (b > (uint64_t)INT64_MAX) {
				kvs_args_usage_error(it, "%s: '%s' is too large", it->flag, v);
				ok = false;
			} else {
				d->reserve_bytes = (int64_t)b;
			}
		}
	} else if (kvs_args_is(it, "--layers")) {
		ok = arg_u32(it, 1, 1u << 20, &c->layers);
	} else if (kvs_args_is(it, "--kv-heads")) {
		ok = arg_u32(it, 1, 1u << 20, &c->kv_heads);
	} else if (kvs_args_is(it, "--head-dim")) {
		ok = arg_u32(it, 1, 1u << 20, &c->head_dim);
	} else if (kvs_args_is(it, "--params")) {
		const char *v = kvs_args_value(it);
		double x;
		ok = v != NULL;
		if (ok && (!kvs_parse_double(v, &x) || !(x >= 1.0) || x >= 9.2e18 ||
			   (v[0] == '-'))) {
			kvs_args_usage_error(it, "%s: expected a positive parameter count such "
					     "as 6738415616 or 7e9, got '%s'", it->flag, v);
			ok = false;
		} else if (ok) {
			c->params = (uint64_t)llround(x);
		}
	} else if (kvs_args_is(it, "--gpu-hour-price")) {
		ok = arg_pos_double(it, 1e6, &d->gpu_hour_price);
	} else if (kvs_args_is(it, "--engine")) {
		const char *v = kvs_args_value(it);
		ok = v != NULL;
		if (ok && kvs_engine_parse(v, &d->engine) != KVS_OK) {
			kvs_args_usage_error(it, "%s: %s", it->flag, kvs_last_error());
			ok = false;
		}
	} else if (kvs_args_is(it, "--mem-fraction-static")) {
		ok = arg_pos_double(it, 1.0, &d->mem_fraction_static);
	} else if (kvs_args_is(it, "--free-gpu-memory-fraction")) {
		ok = arg_pos_double(it, 1.0, &d->free_gpu_memory_fraction);
	} else if (kvs_args_is(it, "--num-gpu-blocks-override")) {
		ok = arg_uint(it, 1, UINT64_MAX / 2, &d->num_gpu_blocks_override);
	} else if (kvs_args_is(it, "--kv-cache-memory-bytes") ||
		   kvs_args_is(it, "--kv-cache-memory")) {
		ok = kvs_args_bytes(it, &d->kv_cache_memory_bytes);
	} else {
		return 0;
	}
	return ok ? 1 : -1;
}

static bool deploy_fail(kvs_cli_deploy *c, const char *cmd, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static bool deploy_fail(kvs_cli_deploy *c, const char *cmd, int code, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "kvsim %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	c->fail_exit = code;
	return false;
}

/* vLLM's reading of the variable: "1" or "true", any case */
static bool allow_long_max_model_len(void)
{
	const char *v = getenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN");
	return v && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0);
}

static int exit_for(kvs_status st)
{
	return st == KVS_ERR_IO || st == KVS_ERR_PARSE || st == KVS_ERR_NOMEM
		? KVS_EXIT_FAIL : KVS_EXIT_USAGE;
}

void kvs_cli_override_warn(const char *cmd, const kvs_deploy *d, const kvs_sizing *s)
{
	if (!s->kv_from_override || !d->gpu.mem_bytes)
		return;
	uint64_t need;
	if (!kvs_add_overflow(s->kv_budget_bytes, s->weight_bytes, &need) &&
	    need <= d->gpu.mem_bytes)
		return;
	fprintf(stderr, "kvsim %s: warning: %s: a KV pool of %.2f GiB and %.2f GiB of "
		"weights exceed the %.2f GiB of one %s: vLLM could not allocate it\n", cmd,
		d->num_gpu_blocks_override ? "--num-gpu-blocks-override"
					   : "--kv-cache-memory-bytes",
		(double)s->kv_budget_bytes / 1073741824.0, (double)s->weight_bytes / 1073741824.0,
		(double)d->gpu.mem_bytes / 1073741824.0, d->gpu.name);
}

bool kvs_cli_deploy_finish(kvs_cli_deploy *c, const char *cmd)
{
	kvs_model m;
	kvs_gpu g;
	kvs_status st = kvs_model_load(c->model_arg, &m);
	if (st != KVS_OK)
		return deploy_fail(c, cmd, exit_for(st), "--model: %s", kvs_last_error());
	st = kvs_gpu_load(c->gpu_arg, &g);
	if (st != KVS_OK)
		return deploy_fail(c, cmd, exit_for(st), "--gpu: %s", kvs_last_error());
	if (c->gpu_mem) {
		g.mem_bytes = c->gpu_mem;
		g.smi_mem_bytes = 0;   /* the given total stands for both */
		snprintf(g.mem_source, sizeof g.mem_source, "--gpu-mem");
		if (!c->gpu_given)
			fprintf(stderr, "kvsim %s: warning: --gpu-mem without --gpu: the bandwidth "
				"and FLOP/s of the default GPU %s are borrowed for step times "
				"(give --gpu NAME or --gpu FILE.json)\n", cmd, g.name);
	}

	/* data parallelism: each rank an engine of its own, with its own
	 * requests; a replay simulates one engine */
	if (c->d.dp > 1 && strcmp(cmd, "size") != 0 && strcmp(cmd, "fleet") != 0)
		return deploy_fail(c, cmd, KVS_EXIT_USAGE, "--data-parallel-size %u: %s simulates "
				   "one engine, one data-parallel rank (give it its share of "
				   "the load); 'kvsim fleet --dp %u' runs the %u ranks behind "
				   "vLLM's balancer, 'kvsim size' sizes them", c->d.dp, cmd,
				   c->d.dp, c->d.dp);
	if (c->d.expert_parallel && !m.num_experts)
		fprintf(stderr, "kvsim %s: warning: --enable-expert-parallel: %s has no "
			"experts, it changes nothing\n", cmd, m.name);
	else if (c->d.expert_parallel && c->d.dp <= 1)
		fprintf(stderr, "kvsim %s: warning: --enable-expert-parallel without "
			"--data-parallel-size > 1: the experts spread over the tp GPUs, as "
			"tensor parallelism shards them, and each GPU's memory is the same\n", cmd);
	/* the pipeline's batches: as given, else the engine's own (SGLang
	 * caps each micro-batch at max_running_requests / pp) */
	c->d.pp_balanced = c->d.pp > 1 && (c->pp_balanced_arg >= 0 ? c->pp_balanced_arg == 1
								   : c->d.engine == KVS_ENGINE_SGLANG);
	if (c->pp_balanced_arg >= 0 && c->d.pp <= 1)
		fprintf(stderr, "kvsim %s: warning: --%spp-balanced without "
			"--pipeline-parallel-size > 1 changes nothing\n", cmd,
			c->pp_balanced_arg ? "" : "no-");
	if (c->d.mm_max_pixels && !m.vision_profile.patch_side)
		fprintf(stderr, "kvsim %s: warning: --mm-processor-kwargs max_pixels changes "
			"nothing for %s (kvsim reads it for the Qwen-VL towers only)\n", cmd,
			m.name);

	/* architecture overrides */
	bool reshaped = false;
	if (m.kv_lora_rank && (c->kv_heads || c->head_dim))
		return deploy_fail(c, cmd, KVS_EXIT_USAGE,
			    "%s: model %s caches an MLA latent (kv_lora_rank %u), it has "
			    "no kv heads to override", c->kv_heads ? "--kv-heads" : "--head-dim",
			    m.name, m.kv_lora_rank);
	if (c->layers) {
		uint32_t old = m.num_layers;
		uint64_t sl = (uint64_t)m.num_sliding_layers * c->layers;
		m.num_sliding_layers = (uint32_t)((sl + old / 2) / old);
		if (m.first_dense_layers > c->layers)
			m.first_dense_layers = c->layers;
		m.num_layers = c->layers;
		reshaped = true;
		/* modules kept at 16 bits layer by layer name the config's
		 * layers, which --layers replaced: no longer counted apart */
		uint32_t *wl[] = { &m.wide_attn_layers, &m.wide_router_layers,
				   &m.wide_shared_layers };
		bool dropped = false;
		for (size_t i = 0; i < KVS_ARRAY_LEN(wl); i++)
			if (*wl[i] && *wl[i] != KVS_WIDE_ALL) {
				*wl[i] = 0;
				dropped = true;
			}
		for (size_t i = 0; i < KVS_PROJ_COUNT_; i++)
			if (m.wide_proj_layers[i] && m.wide_proj_layers[i] != KVS_WIDE_ALL) {
				m.wide_proj_layers[i] = 0;
				dropped = true;
			}
		if (dropped)
			fprintf(stderr, "kvsim %s: warning: --layers %u: the modules %s's "
				"quantization_config keeps at 16 bits in named layers are counted at "
				"the quantised width (the layers it names are the config's)\n", cmd,
				c->layers, m.name);
	}
	if (c->kv_heads) {
		if (c->kv_heads > m.num_heads || m.num_heads % c->kv_heads)
			return deploy_fail(c, cmd, KVS_EXIT_USAGE,
				    "--kv-heads: %u does not divide the model's %u attention heads",
				    c->kv_heads, m.num_heads);
		m.num_kv_heads = c->kv_heads;
		reshaped = true;
	}
	if (c->head_dim) {
		m.head_dim = c->head_dim;
		reshaped = true;
	}
	if (c->params) {
		double ratio = m.num_params ? (double)m.num_active_params / (double)m.num_params : 1.0;
		m.num_params = c->params;
		m.num_active_params = (uint64_t)llround((double)c->params * ratio);
		m.params_from_config = true;
	} else if (reshaped && !m.params_from_config) {
		m.num_params = kvs_model_estimate_params(&m);
		m.num_active_params = kvs_model_estimate_active_params(&m);
		if (m.num_params == UINT64_MAX)
			return deploy_fail(c, cmd, KVS_EXIT_USAGE,
				    "the parameter count of the overridden model does not fit in 64 bits");
	}

	/* the flags are in c->d already; the model and the GPU join them with
	 * the dtypes kvs_deploy_defaults derives from the model */
	kvs_deploy *d = &c->d;
	kvs_deploy base;
	kvs_deploy_defaults(&base, &m, &g);
	d->model = base.model;
	d->gpu = base.gpu;
	d->weight_dtype = base.weight_dtype;
	d->kv_dtype = base.kv_dtype;
	if ((d->mem_fraction_static > 0 && d->engine != KVS_ENGINE_SGLANG) ||
	    (d->free_gpu_memory_fraction > 0 && d->engine != KVS_ENGINE_TRTLLM))
		return deploy_fail(c, cmd, KVS_EXIT_USAGE, "%s applies to --engine %s only",
			    d->mem_fraction_static > 0 ? "--mem-fraction-static"
						       : "--free-gpu-memory-fraction",
			    d->mem_fraction_static > 0 ? "sglang" : "trtllm");
	if ((d->num_gpu_blocks_override || d->kv_cache_memory_bytes || d->hybrid_kv_off ||
	     d->chunked_hybrid_on || c->mm_flag) && d->engine != KVS_ENGINE_VLLM)
		return deploy_fail(c, cmd, KVS_EXIT_USAGE, "%s is a vLLM option (--engine vllm)",
			    d->num_gpu_blocks_override ? "--num-gpu-blocks-override"
			    : d->kv_cache_memory_bytes ? "--kv-cache-memory-bytes"
			    : d->hybrid_kv_off ? "--disable-hybrid-kv-cache-manager"
			    : d->chunked_hybrid_on ? "--allow-chunked-local-attn-with-hybrid-kv-cache"
						   : c->mm_flag);
	if (c->dtype_arg && strcmp(c->dtype_arg, "auto") != 0) {
		if (kvs_dtype_parse(c->dtype_arg, &d->weight_dtype) != KVS_OK)
			return deploy_fail(c, cmd, KVS_EXIT_USAGE, "--dtype: %s", kvs_last_error());
	} else if (m.quant_unread[0]) {
		/* a quantised checkpoint whose width is not read: sized as if
		 * unquantised, which overstates the weights; said, not hidden */
		fprintf(stderr, "kvsim %s: warning: %s: quantization_config (%s) is not a "
			"storage kvsim reads: the weights count at %s, unquantised (give --dtype "
			"fp8, int8 or int4 for their stored width)\n", cmd, m.name, m.quant_unread,
			kvs_dtype_name(d->weight_dtype));
	}
	if (m.wide_unread[0] && kvs_dtype_bits(d->weight_dtype) < 16)
		/* a module kept at 16 bits that is no part kvsim counts apart
		 * (an MoE layer's MLP, a layer or part the model lacks):
		 * counted narrow, said */
		fprintf(stderr, "kvsim %s: warning: %s: quantization_config lists modules kept "
			"at 16 bits that kvsim does not count apart (counted at %s): %s\n", cmd,
			m.name, kvs_dtype_name(d->weight_dtype), m.wide_unread);
	if (m.vision_unread[0] && !m.params_from_config)
		/* an encoder kvsim has no shapes for: left out, said */
		fprintf(stderr, "kvsim %s: warning: %s: %s not counted: the weights leave it "
			"out (--params gives the checkpoint's total)\n", cmd, m.name,
			m.vision_unread);
	if (m.vision_params && !m.vision_wide && m.quant_method[0] &&
	    (!c->dtype_arg || strcmp(c->dtype_arg, "auto") == 0) &&
	    kvs_dtype_bits(d->weight_dtype) < 16) {
		/* quantised checkpoints often keep the tower at 16 bits; this
		 * one's quantization_config does not say so: in doubt, said */
		char p[32];
		fprintf(stderr, "kvsim %s: warning: %s: the vision tower (%s parameters) counts "
			"at %s: quantization_config does not list it among the modules kept at 16 "
			"bits\n", cmd, m.name, kvs_fmt_commas(m.vision_params, p, sizeof p),
			kvs_dtype_name(d->weight_dtype));
	}
	if (m.wide_lm_head_conflict && kvs_dtype_bits(d->weight_dtype) < 16)
		fprintf(stderr, "kvsim %s: warning: %s: quantization_config says \"lm_head\": true "
			"and lists lm_head among the modules kept at 16 bits: counted at 16 "
			"bits\n", cmd, m.name);
	if (c->kv_dtype_arg && strcmp(c->kv_dtype_arg, "auto") != 0) {
		if (kvs_dtype_parse(c->kv_dtype_arg, &d->kv_dtype) != KVS_OK)
			return deploy_fail(c, cmd, KVS_EXIT_USAGE, "--kv-cache-dtype: %s", kvs_last_error());
	}
	/* (size's what-if rows use the group for their FP8 and INT4 caches
	 * whatever the cache is; a replay's cache is the one given) */
	if (strcmp(cmd, "size") != 0 && d->kv_quant_group && d->kv_dtype != KVS_DTYPE_FP8 &&
	    d->kv_dtype != KVS_DTYPE_INT8 && d->kv_dtype != KVS_DTYPE_INT4)
		return deploy_fail(c, cmd, KVS_EXIT_USAGE, "--kv-quant-group applies to fp8, int8 "
				   "and int4 caches; this cache is %s (give --kv-cache-dtype)",
				   kvs_dtype_name(d->kv_dtype));
	/* vLLM refuses a max_model_len past the model's positions unless
	 * VLLM_ALLOW_LONG_MAX_MODEL_LEN is set (vllm/config: the derived
	 * max_model_len check); kvsim sizes it, and says so */
	if (d->max_model_len && m.max_position_embeddings &&
	    d->max_model_len > m.max_position_embeddings && !allow_long_max_model_len()) {
		char a[32], b[32];
		fprintf(stderr, "kvsim %s: warning: --max-model-len %s is beyond %s's "
			"max_position_embeddings (%s): the model was not trained for positions "
			"this far, and vLLM refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is "
			"set (set it to silence this warning)\n", cmd,
			kvs_fmt_commas(d->max_model_len, a, sizeof a), m.name,
			kvs_fmt_commas(m.max_position_embeddings, b, sizeof b));
	}
	/* both given and at odds: the engine would refuse every such
	 * conversation; sized as asked, and said so here, not only in the
	 * long-context section */
	if (c->set_context && d->max_model_len && d->context_tokens > d->max_model_len) {
		char a[32], b[32];
		fprintf(stderr, "kvsim %s: warning: --context %s is beyond --max-model-len %s: "
			"the engine refuses a conversation that long; sized at %s tokens as "
			"asked (raise --max-model-len to serve it)\n", cmd,
			kvs_fmt_commas(d->context_tokens, a, sizeof a),
			kvs_fmt_commas(d->max_model_len, b, sizeof b), a);
	}
	/* an unset --context (4000) stops at the longest sequence */
	uint64_t limit = d->max_model_len ? d->max_model_len : m.max_position_embeddings;
	if (!c->set_context && limit && limit < d->context_tokens)
		d->context_tokens = limit;

	kvs_sizing s;
	st = kvs_size_compute(d, &s);
	if (st != KVS_OK)
		return deploy_fail(c, cmd, exit_for(st), "%s", kvs_last_error());
	return true;
}

void kvs_cli_deploy_help(FILE *f)
{
	fprintf(f,
		"model, GPU and deployment:\n"
		"  --model NAME|FILE|DIR        model preset (any case), a Hugging Face\n"
		"                               config.json, or a directory holding one\n"
		"  --gpu NAME|FILE.json         GPU preset or a JSON file with the preset fields\n"
		"                               (memory, hbm_gb_per_s, fp16_dense_tflops,\n"
		"                               fp8_dense_tflops, int8_dense_tops, pcie_gb_per_s,\n"
		"                               interconnect_gb_per_s; default " KVS_CLI_DEFAULT_GPU ")\n"
		"  --gpu-mem SIZE               device memory with a unit: 80GB (10^9), 79.2GiB (2^30)\n"
		"  --gpu-memory-utilization F   share of device memory to use, (0, 1] (default 0.9)\n"
		"  --tp, -tp, --tensor-parallel-size N    tensor-parallel GPUs (default 1)\n"
		"  --pp, -pp, --pipeline-parallel-size N  pipeline stages (default 1), with\n"
		"                               one batch in flight: a step passes through the\n"
		"                               stages one after another, as vLLM V1's\n"
		"                               scheduler mostly runs them (it fills its first\n"
		"                               batch in flight before any other): the lower\n"
		"                               bound on throughput\n"
		"  --pp-balanced                at pp > 1, split the running sequences evenly\n"
		"                               into up to pp micro-batches in flight (vLLM\n"
		"                               V0's virtual engines): a step lasts one\n"
		"                               micro-batch's pass, the upper bound on\n"
		"                               throughput (docs/COST-MODEL.md); the default\n"
		"                               with --engine sglang, whose scheduler caps\n"
		"                               each micro-batch at max_running_requests / pp\n"
		"  --no-pp-balanced             one batch in flight whatever the engine\n"
		"  --dp, -dp, --data-parallel-size N      data-parallel ranks of tp x pp GPUs,\n"
		"                               each with its own KV pool and requests (size\n"
		"                               and fleet, whose replicas they are; default 1)\n"
		"  --enable-expert-parallel     MoE: the routed experts spread over all dp x tp\n"
		"                               GPUs of a stage instead of each rank's tp\n"
		"  --disable-hybrid-kv-cache-manager  hold sliding-window and chunked layers'\n"
		"                               KV in full, as full-attention layers (vLLM's\n"
		"                               flag, vLLM only; by default a sliding window's\n"
		"                               blocks past the window are freed)\n"
		"  --allow-chunked-local-attn-with-hybrid-kv-cache  keep chunked attention\n"
		"                               (Llama 4) in the hybrid manager, as vLLM's\n"
		"                               VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1\n"
		"                               does (by default vLLM holds it in full)\n"
		"  --limit-mm-per-prompt L      vLLM: items of each modality one prompt may\n"
		"                               hold, '{\"image\": 2, \"video\": 0}' or\n"
		"                               image=2,video=0 (default 999 each); with no\n"
		"                               modality the tower takes, no vision encoder\n"
		"                               runs before vLLM sizes the pool\n"
		"  --skip-mm-profiling          vLLM: no vision encoder run before sizing the\n"
		"                               pool (vLLM's flag; the pool is then larger)\n"
		"  --mm-processor-kwargs JSON   vLLM: the image processor's arguments;\n"
		"                               '{\"max_pixels\": N}' caps the Qwen-VL towers'\n"
		"                               largest image, which vLLM profiles\n"
		"  --dtype T                    weights: auto, fp32, fp16, bf16, fp8, int8, int4\n"
		"                               (default auto: the config's torch_dtype or quantization)\n"
		"  --kv-cache-dtype T           cache: auto, fp16, bf16, fp8, int8, int4 (default auto)\n"
		"  --kv-quant-group N           elements per quantisation scale for fp8/int8/int4\n"
		"                               caches: adds an fp16 scale (+ fp16 zero for int4)\n"
		"                               per group (default: one per-tensor scale, 0 bytes)\n"
		"  --block-size N               tokens per KV block (default 16)\n"
		"  --context N                  tokens per conversation (default 4000, cut to\n"
		"                               max_model_len; a longer one given is sized and\n"
		"                               flagged); N as vLLM reads it: 8k = 8000,\n"
		"                               8K = 8192, 1m = 10^6, 1M = 2^20, 25.6k = 25600\n"
		"  --max-model-len N            longest sequence (default: max_position_embeddings)\n"
		"  --reserve SIZE|auto|0        working space per GPU for activations, CUDA\n"
		"                               context and workspaces (default auto: estimated)\n"
		"  --layers N, --kv-heads N, --head-dim N, --params N\n"
		"                               override the model's shape or parameter count\n"
		"  --gpu-hour-price F           dollars per GPU-hour, for cost figures\n"
		"  --engine vllm|sglang|trtllm  whose memory accounting sizes the KV pool\n"
		"                               (default vllm: V1's determine_available_memory)\n"
		"  --mem-fraction-static F      sglang: share of the device for weights + KV\n"
		"                               (default: SGLang's own by GPU size and tp,\n"
		"                               0.835 on an H100 at tp 1; docs/SIZING.md)\n"
		"  --free-gpu-memory-fraction F trtllm: share of the memory free after weights\n"
		"                               and buffers that goes to KV (default 0.9)\n"
		"  --num-gpu-blocks-override N  vllm: use N KV blocks whatever the memory\n"
		"  --kv-cache-memory-bytes SIZE vllm: KV memory per GPU, skipping the profile\n");
	fprintf(f, "\nmodel presets:");
	for (const char *const *n = kvs_model_preset_names(); *n; n++)
		fprintf(f, " %s", *n);
	fprintf(f, "\nGPU presets:  ");
	for (const char *const *n = kvs_gpu_preset_names(); *n; n++)
		fprintf(f, " %s", *n);
	fprintf(f, "\n(preset memory is the total the CUDA driver reports, as vLLM logs it:\n"
		   " a100-80gb = 79.25 GiB, not the label's 80 GB)\n");
}
