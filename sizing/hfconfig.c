/*
 * hfconfig.c - a kvs_model from a Hugging Face config.json, and the
 * parameter count from the architecture.
 *
 * Field names are the ones Hugging Face transformers writes, with the older
 * GPT-style aliases (n_layer, n_head, n_embd, ...).  Multimodal configs keep
 * the language model under "text_config" (InternVL's chat configs:
 * "llm_config"): its fields win over the top level.
 * JSON null counts as absent.  A missing required field is an error that
 * names the field and the file; so is a field of the wrong type or range.
 */
#include "sizing_internal.h"
#include "common/array.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct cfg {
	const char *path;
	json_t *root;
	json_t *text;           /* "text_config" (or "llm_config") or NULL */
	const char *prefix;     /* "vision_config." in a section's messages; NULL none */
	json_t *defaults;       /* the text model's config class defaults, or NULL */
} cfg;

#define PFX(c) ((c)->prefix ? (c)->prefix : "")

/* A field the config writes: text_config's, else the top level's (NULL
 * when absent or null; *named: written at all, null included). */
static json_t *cfg_written(const cfg *c, const char *key, bool *named)
{
	json_t *t = c->text ? json_object_get(c->text, key) : NULL;
	json_t *r = json_object_get(c->root, key);
	if (named)
		*named = t || r;
	json_t *v = t && !json_is_null(t) ? t : r;
	return v && !json_is_null(v) ? v : NULL;
}

/* A field the config writes, else its config class default when the
 * config does not name it at all (null written is a value: no window,
 * say). */
static json_t *cfg_get(const cfg *c, const char *key)
{
	bool named;
	json_t *v = cfg_written(c, key, &named);
	if (!v && !named && c->defaults)
		v = json_object_get(c->defaults, key);
	return v;
}

/* First present key of a NULL-terminated alias list: any the config
 * writes, then the defaults'. */
static json_t *cfg_get_any(const cfg *c, const char *const *keys, const char **which)
{
	bool named = false;
	for (const char *const *k = keys; *k; k++) {
		bool n;
		json_t *v = cfg_written(c, *k, &n);
		if (v) {
			*which = *k;
			return v;
		}
		named |= n;
	}
	/* an alias written as null is a value too: no default then */
	for (const char *const *k = keys; *k && !named && c->defaults; k++) {
		json_t *v = json_object_get(c->defaults, *k);
		if (v) {
			*which = *k;
			return v;
		}
	}
	return NULL;
}

/* transformers fills a field a config.json leaves out with its config
 * class's default, and so does kvsim for the language models whose
 * configs multimodal checkpoints nest with fields left out (LLaVA's
 * Vicuna, Pixtral's Mistral-NeMo): LlamaConfig's and MistralConfig's
 * shapes.  A field the config writes always wins. */
static json_t *text_defaults(const char *model_type)
{
	if (!model_type)
		return NULL;
	if (strcmp(model_type, "llama") == 0)
		return json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "vocab_size", 32000,
				 "hidden_size", 4096, "intermediate_size", 11008,
				 "num_hidden_layers", 32, "num_attention_heads", 32,
				 "max_position_embeddings", 2048);
	if (strcmp(model_type, "mistral") == 0)
		return json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "vocab_size", 32000,
				 "hidden_size", 4096, "intermediate_size", 14336,
				 "num_hidden_layers", 32, "num_attention_heads", 32,
				 "num_key_value_heads", 8, "max_position_embeddings", 131072,
				 "sliding_window", 4096);
	return NULL;
}

static void show(json_t *v, char *buf, size_t cap)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	snprintf(buf, cap, "%s", s ? s : "?");
	if (strlen(buf) == cap - 1 && cap > 4)
		memcpy(buf + cap - 4, "...", 4);
	free(s);
}

/* Integer field in [min, max].  *found tells whether it was present; a
 * missing field is an error only when `required` (naming the first alias). */
static kvs_status cfg_uint(const cfg *c, const char *const *keys, bool required,
			   const char *why, uint64_t min, uint64_t max,
			   uint64_t *out, bool *found)
{
	const char *key = keys[0];
	json_t *v = cfg_get_any(c, keys, &key);
	if (found)
		*found = v != NULL;
	if (!v) {
		if (required)
			return kvs_fail(KVS_ERR_PARSE, "%s: missing field '%s%s'%s%s%s",
					c->path, PFX(c), keys[0], why ? " (" : "",
					why ? why : "", why ? ")" : "");
		return KVS_OK;
	}
	char text[64];
	if (!json_is_integer(v)) {
		/* 4096.0 is a whole number written as a real: accept it */
		double d = json_is_real(v) ? json_real_value(v) : -1.0;
		if (json_is_real(v) && d >= 0.0 && d <= 9007199254740992.0 &&
		    d == (double)(uint64_t)d) {
			uint64_t x = (uint64_t)d;
			if (x >= min && x <= max) {
				*out = x;
				return KVS_OK;
			}
		}
		show(v, text, sizeof text);
		return kvs_fail(KVS_ERR_PARSE,
				"%s: field '%s%s': expected an integer in [%llu, %llu], got %s",
				c->path, PFX(c), key, (unsigned long long)min,
				(unsigned long long)max, text);
	}
	json_int_t x = json_integer_value(v);
	if (x < 0 || (uint64_t)x < min || (uint64_t)x > max) {
		show(v, text, sizeof text);
		return kvs_fail(KVS_ERR_PARSE,
				"%s: field '%s%s': %s is out of range [%llu, %llu]",
				c->path, PFX(c), key, text, (unsigned long long)min,
				(unsigned long long)max);
	}
	*out = (uint64_t)x;
	return KVS_OK;
}

/* cfg_uint narrowed to a uint32_t field in [min, max] */
static kvs_status cfg_u32_in(const cfg *c, const char *const *keys, bool required,
			     const char *why, uint32_t min, uint32_t max, uint32_t *out,
			     bool *found)
{
	uint64_t x = 0;
	bool present = false;
	kvs_status st = cfg_uint(c, keys, required, why, min, max, &x, &present);
	if (found)
		*found = present;
	if (st == KVS_OK && present)
		*out = (uint32_t)x;
	return st;
}

static kvs_status cfg_u32(const cfg *c, const char *const *keys, bool required,
			  const char *why, uint32_t min, uint32_t *out, bool *found)
{
	return cfg_u32_in(c, keys, required, why, min, UINT32_MAX, out, found);
}

/* A per-head or latent width (head_dim, kv_lora_rank, ...): at most
 * DIM_MAX, far above any model (the largest are 512-1536), so that the
 * products of the sizing stay in range and a bad value is named here, with
 * its field, rather than as an overflow later. */
#define DIM_MAX (1u << 16)
static kvs_status cfg_dim(const cfg *c, const char *const *keys, bool required,
			  const char *why, uint32_t min, uint32_t *out, bool *found)
{
	return cfg_u32_in(c, keys, required, why, min, DIM_MAX, out, found);
}

static kvs_status cfg_bool(const cfg *c, const char *key, bool *out, bool *found)
{
	json_t *v = cfg_get(c, key);
	if (found)
		*found = v != NULL;
	if (!v)
		return KVS_OK;
	if (!json_is_boolean(v)) {
		char text[64];
		show(v, text, sizeof text);
		return kvs_fail(KVS_ERR_PARSE, "%s: field '%s%s': expected true or false, got %s",
				c->path, PFX(c), key, text);
	}
	*out = json_is_true(v);
	return KVS_OK;
}

#define KEYS(...) ((const char *const[]){ __VA_ARGS__, NULL })

static bool type_is(const char *model_type, const char *const *list)
{
	if (!model_type)
		return false;
	for (; *list; list++)
		if (strcmp(model_type, *list) == 0)
			return true;
	return false;
}

/* Llama 4's chunked attention with no sliding window given: its layers
 * that use RoPE attend within aligned chunks of attention_chunk_size
 * tokens, so each holds at most a chunk, as a window of that size holds
 * at most the window (the peak over a sequence's life; between chunk
 * starts it holds less).  The RoPE layers: no_rope_layers (1 = RoPE), else
 * all but every no_rope_layer_interval-th (4).  *n: 0 when none. */
static kvs_status parse_chunked(const cfg *c, const kvs_model *m, uint32_t *n)
{
	kvs_status st;
	*n = 0;
	json_t *nr = cfg_get(c, "no_rope_layers");
	if (nr) {
		if (!json_is_array(nr) || json_array_size(nr) != m->num_layers)
			return kvs_fail(KVS_ERR_PARSE, "%s: field 'no_rope_layers': expected an "
					"array of %u 0s and 1s (one per layer)", c->path,
					m->num_layers);
		for (size_t i = 0; i < json_array_size(nr); i++) {
			json_t *v = json_array_get(nr, i);
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    json_integer_value(v) > 1)
				return kvs_fail(KVS_ERR_PARSE, "%s: field 'no_rope_layers'[%zu]: "
						"expected 0 or 1", c->path, i);
			*n += json_integer_value(v) == 1;
		}
		return KVS_OK;
	}
	uint32_t interval = 4;
	if ((st = cfg_u32(c, KEYS("no_rope_layer_interval"), false, NULL, 1, &interval, NULL)))
		return st;
	*n = m->num_layers - m->num_layers / interval;
	return KVS_OK;
}

/* Sliding-window layers: layer_types, sliding_window_pattern, the Gemma-2
 * alternation, Qwen2's max_window_layers, Llama 4's chunked attention,
 * else all layers. */
static kvs_status parse_sliding(const cfg *c, const char *model_type, kvs_model *m)
{
	kvs_status st;
	bool use_found = false, use = true;
	if ((st = cfg_bool(c, "use_sliding_window", &use, &use_found)))
		return st;
	uint32_t window = 0, chunk = 0;
	bool wfound = false;
	if ((st = cfg_u32(c, KEYS("sliding_window", "sliding_window_size"), false,
			  NULL, 0, &window, &wfound)) ||
	    (st = cfg_u32(c, KEYS("attention_chunk_size"), false, NULL, 0, &chunk, NULL)))
		return st;

	json_t *types = cfg_get(c, "layer_types");
	uint32_t n_sliding_types = 0, n_chunked_types = 0;
	bool chunked = false;
	if (types) {
		if (!json_is_array(types) || json_array_size(types) != m->num_layers)
			return kvs_fail(KVS_ERR_PARSE,
					"%s: field 'layer_types': expected an array of %u "
					"strings (one per layer)", c->path, m->num_layers);
		for (size_t i = 0; i < json_array_size(types); i++) {
			const char *t = json_string_value(json_array_get(types, i));
			if (!t)
				return kvs_fail(KVS_ERR_PARSE,
						"%s: field 'layer_types'[%zu]: expected a string",
						c->path, i);
			if (strcmp(t, "sliding_attention") == 0)
				n_sliding_types++;
			else if (strcmp(t, "chunked_attention") == 0)
				n_chunked_types++;
			else if (strcmp(t, "full_attention") != 0)
				return kvs_fail(KVS_ERR_PARSE,
						"%s: field 'layer_types'[%zu]: unknown layer type '%s' "
						"(expected full_attention or sliding_attention)",
						c->path, i, t);
		}
		/* chunked layers hold at most a chunk: a window of it when
		 * no sliding window is given */
		if (n_chunked_types && !window && chunk)
			window = chunk;
		if (n_chunked_types && n_sliding_types && chunk && window != chunk)
			return kvs_fail(KVS_ERR_PARSE,
					"%s: field 'layer_types': both sliding_attention (window "
					"%u) and chunked_attention (chunk %u) layers, which kvsim "
					"does not size together", c->path, window, chunk);
		chunked = n_chunked_types && !n_sliding_types;
		n_sliding_types += n_chunked_types;
		if (n_sliding_types && !window)
			return kvs_fail(KVS_ERR_PARSE,
					"%s: missing field 'sliding_window' (layer_types lists "
					"%u sliding_attention or chunked_attention layers)", c->path,
					n_sliding_types);
	} else if (chunk && !window) {
		uint32_t n = 0;
		if ((st = parse_chunked(c, m, &n)))
			return st;
		m->sliding_window = n ? chunk : 0;
		m->num_sliding_layers = n;
		m->window_chunked = n > 0;
		return KVS_OK;
	}
	m->sliding_window = 0;
	m->window_chunked = false;
	m->num_sliding_layers = 0;
	if (!window || (use_found && !use))
		return KVS_OK;
	m->sliding_window = window;
	m->window_chunked = chunked;
	uint32_t pattern = 0;
	bool pfound = false;
	if ((st = cfg_u32(c, KEYS("sliding_window_pattern"), false, NULL, 1, &pattern, &pfound)))
		return st;
	uint32_t mwl = 0;
	bool mwl_found = false;
	if ((st = cfg_u32(c, KEYS("max_window_layers"), false, NULL, 0, &mwl, &mwl_found)))
		return st;
	if (types)
		m->num_sliding_layers = n_sliding_types;
	else if (pfound) /* Gemma-3: every pattern-th layer is global */
		m->num_sliding_layers = m->num_layers - m->num_layers / pattern;
	else if (type_is(model_type, KEYS("gemma2")))
		m->num_sliding_layers = (m->num_layers + 1) / 2; /* even layers */
	else if (use_found && use && mwl_found) /* Qwen2: layers >= max_window_layers */
		m->num_sliding_layers = mwl < m->num_layers ? m->num_layers - mwl : 0;
	else
		m->num_sliding_layers = m->num_layers;
	if (!m->num_sliding_layers) {
		m->sliding_window = 0;
		m->window_chunked = false;
	}
	return KVS_OK;
}

/* ---- modules a quantised checkpoint keeps at 16 bits ------------------------
 * An entry of modules_to_not_convert (transformers' AWQ, MXFP4, FP8, and
 * bitsandbytes), llm_int8_skip_modules (bitsandbytes) or ignore
 * (compressed-tensors, "re:" for a regular expression) names a module by
 * its path: "lm_head", "model.layers.*.self_attn", "model.layers.3.mlp.gate",
 * "model.layers.0.mlp.down_proj", "re:.*self_attn.*".  Its words (runs of
 * letters, digits and '_') say which part: the first word that names one,
 * and the layer: the first number before it (none: every layer).  A word
 * after the part may name a piece of it kvsim counts (self_attn.q_proj,
 * mlp.down_proj, mlp.gate); any other than weight or bias names a piece
 * it does not (mlp.experts, shared_expert.gate_proj): not read. */
enum { WIDE_UNREAD = -1, WIDE_EMBED = 0, WIDE_LM_HEAD, WIDE_LAYER };

/* The parts of a layer an entry names, as bits. */
#define KEEP_ATTN 0x1u
#define KEEP_ROUTER 0x2u
#define KEEP_SHARED 0x4u
#define KEEP_PROJ(p) (0x8u << (p))
#define KEEP_QKVO (KEEP_PROJ(KVS_PROJ_Q) | KEEP_PROJ(KVS_PROJ_K) | \
		   KEEP_PROJ(KVS_PROJ_V) | KEEP_PROJ(KVS_PROJ_O))
#define KEEP_MLP (KEEP_PROJ(KVS_PROJ_GATE) | KEEP_PROJ(KVS_PROJ_UP) | \
		  KEEP_PROJ(KVS_PROJ_DOWN))

static const char *const proj_names[KVS_PROJ_COUNT_] = {
#define PROJ(id, name) [id] = name,
	KVS_PROJ_LIST(PROJ)
#undef PROJ
};

const char *kvs_proj_name(kvs_proj p)
{
	return (unsigned)p < KVS_PROJ_COUNT_ ? proj_names[p] : "unknown";
}

/* The part word w names (WIDE_*), and for WIDE_LAYER its KEEP_* bits. */
static int wide_word(const char *w, size_t n, unsigned *bits)
{
	static const struct {
		const char *word;
		int part;
		unsigned bits;
	} words[] = {
		{ "lm_head", WIDE_LM_HEAD, 0 }, { "embed_tokens", WIDE_EMBED, 0 },
		{ "embed_in", WIDE_EMBED, 0 }, { "wte", WIDE_EMBED, 0 }, { "wpe", WIDE_EMBED, 0 },
		{ "word_embeddings", WIDE_EMBED, 0 }, { "embed_positions", WIDE_EMBED, 0 },
		{ "self_attn", WIDE_LAYER, KEEP_ATTN }, { "attn", WIDE_LAYER, KEEP_ATTN },
		{ "attention", WIDE_LAYER, KEEP_ATTN }, { "self_attention", WIDE_LAYER, KEEP_ATTN },
		{ "router", WIDE_LAYER, KEEP_ROUTER }, { "gate", WIDE_LAYER, KEEP_ROUTER },
		{ "shared_expert", WIDE_LAYER, KEEP_SHARED },
		{ "shared_experts", WIDE_LAYER, KEEP_SHARED },
		/* a dense layer's MLP (Llama 4 calls it feed_forward) */
		{ "mlp", WIDE_LAYER, KEEP_MLP }, { "feed_forward", WIDE_LAYER, KEEP_MLP },
		{ "q_proj", WIDE_LAYER, KEEP_PROJ(KVS_PROJ_Q) },
		{ "k_proj", WIDE_LAYER, KEEP_PROJ(KVS_PROJ_K) },
		{ "v_proj", WIDE_LAYER, KEEP_PROJ(KVS_PROJ_V) },
		{ "o_proj", WIDE_LAYER, KEEP_PROJ(KVS_PROJ_O) },
		{ "qkv_proj", WIDE_LAYER, KEEP_QKVO & ~KEEP_PROJ(KVS_PROJ_O) },
		{ "gate_proj", WIDE_LAYER, KEEP_PROJ(KVS_PROJ_GATE) },
		{ "up_proj", WIDE_LAYER, KEEP_PROJ(KVS_PROJ_UP) },
		{ "down_proj", WIDE_LAYER, KEEP_PROJ(KVS_PROJ_DOWN) },
		{ "gate_up_proj", WIDE_LAYER, KEEP_PROJ(KVS_PROJ_GATE) | KEEP_PROJ(KVS_PROJ_UP) },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(words); i++)
		if (strlen(words[i].word) == n && memcmp(words[i].word, w, n) == 0) {
			*bits = words[i].bits;
			return words[i].part;
		}
	return WIDE_UNREAD;
}

/* A word after the part: the piece of it that `word` names (its bits),
 * or 0 when it names none kvsim counts.  Attention narrows to its
 * projections; an MLP to its projections, its router or its shared
 * experts (Qwen-MoE's mlp.gate, mlp.shared_expert). */
static unsigned wide_piece(unsigned part, unsigned word)
{
	if (part == KEEP_ATTN && word && (word & ~KEEP_QKVO) == 0)
		return word;
	if (part == KEEP_MLP && word != KEEP_MLP &&
	    ((word && (word & ~KEEP_MLP) == 0) || word == KEEP_ROUTER || word == KEEP_SHARED))
		return word;
	return 0;
}

static bool word_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '_';
}

/* In a regular expression, the text at p is a literal dot ("\\." or
 * "[.]"); *len is its length. */
static bool re_dot(const char *p, size_t *len)
{
	if (p[0] == '\\' && p[1] == '.')
		*len = 2;
	else if (p[0] == '[' && p[1] == '.' && p[2] == ']')
		*len = 3;
	else
		return false;
	return true;
}

/* A regular expression kvsim reads by its words: none that may pick some
 * layers (a class other than "[.]", an alternation, a group, a repeat
 * other than ".*", "\\d"). */
static bool re_plain(const char *s)
{
	if (strpbrk(s, "(|{+?") || strstr(s, "\\d"))
		return false;
	for (const char *b = strchr(s, '['); b; b = strchr(b + 1, '['))
		if (strncmp(b, "[.]", 3) != 0)
			return false;
	return true;
}

/* The layer number w (n digits) of entry s: false when it may name other
 * layers than it says (past 9 digits, after a '-', in a regular
 * expression not between literal dots). */
static bool wide_layer(const char *s, const char *w, size_t n, bool re, uint32_t *layer)
{
	size_t dl;
	if (n > 9 || (w > s && w[-1] == '-'))
		return false;
	/* a regular expression's layer: between literal dots */
	if (re && !((w - s >= 2 && re_dot(w - 2, &dl) && dl == 2) ||
		    (w - s >= 3 && re_dot(w - 3, &dl) && dl == 3)))
		return false;
	if (re && !re_dot(w + n, &dl))
		return false;
	*layer = (uint32_t)strtoul(w, NULL, 10);
	return true;
}

/* A word that names a vision or audio tower ("vision_model", "visual",
 * "audio_tower", "multi_modal_projector"): its layers are not the
 * language model's. */
static bool tower_word(const char *w, size_t n)
{
	static const char *const marks[] = { "vision", "visual", "audio", "image",
					     "multi_modal", "mm_projector" };
	char word[64];
	snprintf(word, sizeof word, "%.*s", (int)(n < 63 ? n : 63), w);
	for (size_t i = 0; i < KVS_ARRAY_LEN(marks); i++)
		if (strstr(word, marks[i]))
			return true;
	return false;
}

/* The part an entry names (WIDE_*; for WIDE_LAYER its KEEP_* bits), and
 * its layer (UINT32_MAX: every).  Read as naming nothing kvsim counts
 * apart (WIDE_UNREAD): an empty name, a layer number wide_layer refuses,
 * a regular expression that re_plain refuses
 * ("re:model.layers.[0-9]+.self_attn", "(1|2)", "\\d", "layers\\.1.*" all
 * pick layers the words do not say), a piece kvsim does not count, a
 * projection or MLP of a vision or audio tower (whole attention there
 * reads as the language model's, as it always has). */
static int wide_part(const char *s, uint32_t *layer, unsigned *bits, bool *in_tower)
{
	int part = WIDE_UNREAD;
	bool tower = false;
	*in_tower = false;
	*layer = UINT32_MAX;
	*bits = 0;
	bool re = strncmp(s, "re:", 3) == 0;
	if (re && !re_plain(s += 3))
		return WIDE_UNREAD;
	/* any word naming a tower, wherever it stands */
	for (const char *p = s; *p;) {
		const char *w = p;
		while (word_char(*p))
			p++;
		*in_tower |= p > w && tower_word(w, (size_t)(p - w));
		if (!*p)
			break;
		if (p == w)
			p++;
	}
	for (const char *p = s; *p;) {
		if (!word_char(*p)) {
			p++;
			continue;
		}
		const char *w = p;
		while (word_char(*p))
			p++;
		size_t n = (size_t)(p - w);
		unsigned wb = 0;
		if (part != WIDE_UNREAD) {   /* a word after the part */
			if ((n == 6 && memcmp(w, "weight", 6) == 0) ||
			    (n == 4 && memcmp(w, "bias", 4) == 0))
				continue;
			if (part != WIDE_LAYER || wide_word(w, n, &wb) != WIDE_LAYER ||
			    !(wb = wide_piece(*bits, wb)))
				return WIDE_UNREAD;
			*bits = wb;
			continue;
		}
		if (strspn(w, "0123456789") == n) {
			if (*layer != UINT32_MAX)
				continue;   /* the first number is the layer */
			if (!wide_layer(s, w, n, re, layer))
				return WIDE_UNREAD;
			continue;
		}
		tower |= tower_word(w, n);
		part = wide_word(w, n, bits);
	}
	if (tower && (*bits & (KEEP_QKVO | KEEP_MLP)))
		return WIDE_UNREAD;
	return part;
}

/* An entry counted narrow: the first is named, the rest counted. */
static void wide_unread(kvs_model *m, uint32_t *unread, const char *what)
{
	if ((*unread)++ == 0)
		snprintf(m->wide_unread, sizeof m->wide_unread, "%s", what);
}

/* Kept routers or shared experts of a model that has none: said with the
 * entries read as nothing (kvs_model_wide_layers counts them 0). */
static void wide_missing(kvs_model *m)
{
	bool moe = kvs_model_moe_layers(m) > 0;
	const char *what = m->wide_router_layers && !moe ? "routers"
			 : m->wide_shared_layers && !m->shared_expert_intermediate_size
			 ? "shared experts" : NULL;
	if (!what)
		return;
	size_t len = strlen(m->wide_unread);
	snprintf(m->wide_unread + len, sizeof m->wide_unread - len, "%s%s (the model has none)",
		 len ? "; " : "", what);
}

/* Whether layer i holds experts by the layout alone: Llama 4's and
 * Qwen-MoE's every step-th layer, counted from 1, or all after the leading
 * dense ones. */
static bool layout_is_moe(const kvs_model *m, uint32_t i)
{
	if (!m->num_experts)
		return false;
	if (m->moe_layer_step > 1)
		return (i + 1) % m->moe_layer_step == 0;
	return i >= m->first_dense_layers;
}

/* The same, less the layers named dense (mlp_only_layers): what
 * kvs_model_moe_layers counts. */
static bool layer_is_moe(const kvs_model *m, uint32_t i)
{
	if (i < 64 * KVS_DENSE_LAYER_WORDS && (m->dense_layer_bits[i >> 6] >> (i & 63) & 1))
		return false;
	return layout_is_moe(m, i);
}

/* Of the parts `bits` of layer `layer` (UINT32_MAX: every), those the
 * model has: none in a layer past its own, no projections of MLA
 * attention (q_a_proj, kv_b_proj, ... instead), no gate in a plain MLP,
 * no dense MLP in an MoE layer (its "mlp" holds the experts).  *partly:
 * an every-layer MLP entry of a model with MoE layers, counted in its
 * dense layers only. */
static unsigned wide_have(const kvs_model *m, unsigned bits, uint32_t layer, bool *partly)
{
	*partly = false;
	if (layer != UINT32_MAX && layer >= m->num_layers)
		return 0;
	/* routers and shared experts are bounded later by the MoE layers
	 * (wide_missing says when there are none) */
	if (bits == KEEP_ROUTER || bits == KEEP_SHARED)
		return bits;
	if ((bits & KEEP_QKVO) && m->kv_lora_rank)
		return 0;
	if (m->mlp_plain && (bits & KEEP_MLP) != KEEP_MLP &&
	    (bits & KEEP_PROJ(KVS_PROJ_GATE)))
		return 0;
	if (!(bits & KEEP_MLP))
		return bits;
	if (layer != UINT32_MAX)
		return layer_is_moe(m, layer) ? 0 : bits;
	if (!kvs_model_dense_layers(m))
		return 0;
	*partly = kvs_model_moe_layers(m) > 0;
	return bits;
}

/* One layer's kept parts (KEEP_*), named by number. */
typedef struct kept_layer {
	uint32_t layer;
	unsigned bits;
} kept_layer;

static int kept_cmp(const void *a, const void *b)
{
	uint32_t x = ((const kept_layer *)a)->layer, y = ((const kept_layer *)b)->layer;
	return (x > y) - (x < y);
}

/* The kept parts into the model's counts: every-layer ones (`all`) as
 * KVS_WIDE_ALL, the named ones (k, n of them) once a layer, a
 * projection of a layer whose whole attention is kept counted in it. */
static void wide_count(kvs_model *m, unsigned all, kept_layer *k, size_t n)
{
	uint32_t *count[] = { &m->wide_attn_layers, &m->wide_router_layers,
			      &m->wide_shared_layers };
	uint32_t c[3 + KVS_PROJ_COUNT_] = { 0 };
	if (n)
		qsort(k, n, sizeof *k, kept_cmp);
	for (size_t i = 0; i < n;) {
		unsigned b = 0;
		size_t j = i;
		for (; j < n && k[j].layer == k[i].layer; j++)
			b |= k[j].bits;
		if (b & KEEP_ATTN)
			b &= ~KEEP_QKVO;
		for (unsigned bit = 0; bit < KVS_ARRAY_LEN(c); bit++)
			c[bit] += (b >> bit) & 1;
		i = j;
	}
	for (unsigned bit = 0; bit < KVS_ARRAY_LEN(c); bit++) {
		uint32_t v = (all >> bit) & 1 ? KVS_WIDE_ALL : c[bit];
		if (bit < 3)
			*count[bit] = v;
		else
			m->wide_proj_layers[bit - 3] = v;
	}
	if (all & KEEP_ATTN)   /* none apart: counted as attention */
		for (kvs_proj p = KVS_PROJ_Q; p <= KVS_PROJ_O; p++)
			m->wide_proj_layers[p] = 0;
}

/* The lists read so far: every-layer parts, named layers' (n of cap),
 * entries read as nothing. */
typedef struct wide_acc {
	unsigned all;
	kept_layer *k;
	size_t n, cap;
	uint32_t unread;
	bool lm_head_quantised;   /* quantization_config's "lm_head": true */
} wide_acc;

/* One entry s of quantization_config's lists into a. */
static kvs_status wide_entry(const cfg *c, const char *s, kvs_model *m, wide_acc *a)
{
	char what[80];
	snprintf(what, sizeof what, *s ? "'%.40s'" : "an empty name", s);
	uint32_t layer;
	unsigned bits;
	bool partly, tower;
	int part = wide_part(s, &layer, &bits, &tower);
	/* a part of a tower kvsim counts: the whole tower kept at 16 bits
	 * (checkpoints keep it whole: "vision_tower", "re:.*vision_tower.*") */
	if (tower && m->vision_params) {
		m->vision_wide = true;
		return KVS_OK;
	}
	if (part == WIDE_LM_HEAD) {
		m->quant_lm_head = false;
		m->wide_lm_head_conflict |= a->lm_head_quantised;
	}
	if (part == WIDE_UNREAD)
		wide_unread(m, &a->unread, what);
	if (part != WIDE_LAYER)
		return KVS_OK;
	if (!(bits = wide_have(m, bits, layer, &partly))) {
		wide_unread(m, &a->unread, what);
		return KVS_OK;
	}
	if (partly) {
		size_t len = strlen(what);
		snprintf(what + len, sizeof what - len, " in MoE layers");
		wide_unread(m, &a->unread, what);
	}
	if (layer == UINT32_MAX) {
		a->all |= bits;
		return KVS_OK;
	}
	if (!KVS_ARRAY_RESERVE(a->k, a->cap, a->n + 1, 16))
		return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", c->path);
	a->k[a->n++] = (kept_layer){ layer, bits };
	return KVS_OK;
}

/* The modules quantization_config q keeps unquantised (kvs_model.wide_*):
 * read once the model's shape is, to know its layers. */
static kvs_status parse_wide(const cfg *c, kvs_model *m)
{
	static const char *const lists[] = { "modules_to_not_convert",
					     "llm_int8_skip_modules", "ignore" };
	json_t *q = cfg_get(c, "quantization_config");
	if (!json_is_object(q))
		return KVS_OK;
	wide_acc a = { .lm_head_quantised = m->quant_lm_head };
	kvs_status st = KVS_OK;
	for (size_t li = 0; li < KVS_ARRAY_LEN(lists) && st == KVS_OK; li++) {
		json_t *list = json_object_get(q, lists[li]);
		if (!list || json_is_null(list))
			continue;
		if (!json_is_array(list)) {
			st = kvs_fail(KVS_ERR_PARSE, "%s: field 'quantization_config.%s': "
				      "expected a list of module names", c->path, lists[li]);
			break;
		}
		for (size_t i = 0; i < json_array_size(list) && st == KVS_OK; i++) {
			const char *s = json_string_value(json_array_get(list, i));
			if (!s)
				st = kvs_fail(KVS_ERR_PARSE, "%s: field 'quantization_config.%s"
					      "[%zu]': expected a module name (a string)",
					      c->path, lists[li], i);
			else
				st = wide_entry(c, s, m, &a);
		}
	}
	if (st == KVS_OK)
		wide_count(m, a.all, a.k, a.n);
	kvs_free(a.k);
	if (a.unread > 1) {
		size_t len = strlen(m->wide_unread);
		snprintf(m->wide_unread + len, sizeof m->wide_unread - len,
			 " and %u more", a.unread - 1);
	}
	return st;
}

/* Weight storage from quantization_config, if any. */
static kvs_status parse_quant(const cfg *c, kvs_model *m)
{
	json_t *q = cfg_get(c, "quantization_config");
	m->weight_dtype = KVS_DTYPE_FP32; /* "same as dtype" */
	if (!q)
		return KVS_OK;
	if (!json_is_object(q))
		return kvs_fail(KVS_ERR_PARSE, "%s: field 'quantization_config': expected an object",
				c->path);
	const char *method = json_string_value(json_object_get(q, "quant_method"));
	if (method)
		snprintf(m->quant_method, sizeof m->quant_method, "%s", method);
	/* GPTQ and AWQ write bits (older AWQ exports w_bit) */
	const char *bkey = json_object_get(q, "bits") ? "bits" : "w_bit";
	json_t *bits = json_object_get(q, bkey);
	if (bits && !(json_is_number(bits) && json_number_value(bits) >= 1 &&
		      json_number_value(bits) <= 32))
		return kvs_fail(KVS_ERR_PARSE, "%s: field 'quantization_config.%s': expected "
				"a number from 1 to 32", c->path, bkey);
	/* a fractional width (EXL2's 4.65 bits on average) is no storage kvsim
	 * reads: unread, as an unknown method is */
	double bv = bits ? json_number_value(bits) : 0;
	json_int_t nb = bv == floor(bv) ? (json_int_t)bv : -1;
	bool bnb4 = json_is_true(json_object_get(q, "load_in_4bit"));
	bool bnb8 = json_is_true(json_object_get(q, "load_in_8bit"));
	if (method && (strcmp(method, "fp8") == 0 || strcmp(method, "fbgemm_fp8") == 0))
		m->weight_dtype = KVS_DTYPE_FP8;
	else if (nb == 8 || (method && strcmp(method, "bitsandbytes") == 0 && bnb8))
		m->weight_dtype = KVS_DTYPE_INT8;
	else if (nb == 4 || (method && strcmp(method, "mxfp4") == 0) ||
		 (method && strcmp(method, "bitsandbytes") == 0 && bnb4))
		m->weight_dtype = KVS_DTYPE_INT4;
	else if (nb == 16 || nb == 32)
		;   /* unquantised storage: the model's dtype */
	else if (nb)
		snprintf(m->quant_unread, sizeof m->quant_unread, "quant_method '%.24s', "
			 "%s %g", method ? method : "?", bkey, bv);
	else
		snprintf(m->quant_unread, sizeof m->quant_unread, "quant_method '%.40s'",
			 method ? method : "?");
	/* GPTQ/AWQ write "lm_head": true when the output layer is quantised
	 * too; otherwise it (and the embeddings) stay at 16 bits */
	json_t *lm = json_object_get(q, "lm_head");
	if (lm && !json_is_boolean(lm))
		return kvs_fail(KVS_ERR_PARSE, "%s: field 'quantization_config.lm_head': "
				"expected true or false", c->path);
	m->quant_lm_head = lm && json_is_true(lm);
	return KVS_OK;
}

/* The attention shape: layers, heads, hidden, kv heads, MLA, head_dim. */
static kvs_status parse_shape(const cfg *c, kvs_model *m)
{
	kvs_status st;
	bool found;
	if ((st = cfg_u32(c, KEYS("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
			  true, NULL, 1, &m->num_layers, NULL)) ||
	    (st = cfg_u32(c, KEYS("num_attention_heads", "n_head", "num_heads"),
			  true, NULL, 1, &m->num_heads, NULL)) ||
	    (st = cfg_u32(c, KEYS("hidden_size", "n_embd", "d_model"),
			  true, NULL, 1, &m->hidden_size, NULL)))
		return st;

	/* kv heads: num_key_value_heads, Falcon's multi_query, else MHA */
	m->num_kv_heads = m->num_heads;
	if ((st = cfg_u32(c, KEYS("num_key_value_heads", "num_kv_heads", "n_head_kv"),
			  false, NULL, 1, &m->num_kv_heads, &found)))
		return st;
	if (!found) {
		bool mq = false;
		if ((st = cfg_bool(c, "multi_query", &mq, NULL)))
			return st;
		if (mq)
			m->num_kv_heads = 1;
	}
	if (m->num_kv_heads > m->num_heads || m->num_heads % m->num_kv_heads != 0) {
		return kvs_fail(KVS_ERR_PARSE,
			        "%s: field 'num_key_value_heads': %u does not divide "
			        "num_attention_heads %u", c->path, m->num_kv_heads, m->num_heads);
	}

	/* MLA */
	if ((st = cfg_dim(c, KEYS("kv_lora_rank"), false, NULL, 0, &m->kv_lora_rank, NULL)))
		return st;
	if (m->kv_lora_rank) {
		if ((st = cfg_dim(c, KEYS("qk_rope_head_dim"), true,
				  "needed with kv_lora_rank", 1, &m->qk_rope_head_dim, NULL)) ||
		    (st = cfg_dim(c, KEYS("qk_nope_head_dim"), true,
				  "needed with kv_lora_rank", 0, &m->qk_nope_head_dim, NULL)) ||
		    (st = cfg_dim(c, KEYS("v_head_dim"), true,
				  "needed with kv_lora_rank", 1, &m->v_head_dim, NULL)) ||
		    (st = cfg_u32(c, KEYS("q_lora_rank"), false, NULL, 0, &m->q_lora_rank, NULL)))
			return st;
	}

	if ((st = cfg_dim(c, KEYS("head_dim"), false, NULL, 1, &m->head_dim, &found)))
		return st;
	if (!found) {
		if (m->kv_lora_rank) {
			m->head_dim = m->qk_nope_head_dim + m->qk_rope_head_dim;
		} else if (m->hidden_size % m->num_heads != 0) {
			return kvs_fail(KVS_ERR_PARSE,
				        "%s: missing field 'head_dim' (hidden_size %u is not a "
				        "multiple of num_attention_heads %u)",
				        c->path, m->hidden_size, m->num_heads);
		} else {
			m->head_dim = m->hidden_size / m->num_heads;
		}
	}

	if ((st = cfg_u32(c, KEYS("max_position_embeddings", "n_positions",
				   "max_sequence_length", "seq_length", "max_seq_len"),
			  false, NULL, 1, &m->max_position_embeddings, NULL)))
		return st;

	return KVS_OK;
}

/* Positions, activation dtype and weight storage. */
static kvs_status parse_dtype(const cfg *c, kvs_model *m)
{
	kvs_status st;
	m->dtype = KVS_DTYPE_FP16;
	json_t *jd = cfg_get(c, "torch_dtype");
	const char *dkey = "torch_dtype";
	if (!jd) {
		jd = cfg_get(c, "dtype");
		dkey = "dtype";
	}
	if (jd) {
		if (!json_is_string(jd) ||
		    kvs_dtype_parse(json_string_value(jd), &m->dtype) != KVS_OK) {
			char t[64];
			show(jd, t, sizeof t);
			return kvs_fail(KVS_ERR_PARSE,
				        "%s: field '%s': unknown data type %s (expected "
				        "float16, bfloat16 or float32)", c->path, dkey, t);
		}
	}
	if ((st = parse_quant(c, m)))
		return st;

	return KVS_OK;
}

/* Qwen2-VL's and Qwen2.5-VL's text models (top level or text_config):
 * Qwen2's, q, k and v biases and untied embeddings. */
#define QWEN2_VL_TYPES "qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text"
/* Qwen3-VL's and Qwen3-VL-MoE's: Qwen3's and Qwen3-MoE's, q and k norms,
 * untied unless the config ties them (its 2B and 4B do) */
#define QWEN3_VL_TYPES "qwen3_vl", "qwen3_vl_text", "qwen3_vl_moe", "qwen3_vl_moe_text"

/* Architecture flags by family, then explicit fields; the windows and
 * the logit soft cap. */
static kvs_status parse_arch(const cfg *c, const char *model_type, kvs_model *m)
{
	kvs_status st;
	bool opt = type_is(model_type, KEYS("opt"));
	m->tie_word_embeddings = !type_is(model_type,
		KEYS("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3",
		     "qwen3_moe", "deepseek_v2", "deepseek_v3", "phi3", "internlm2",
		     QWEN2_VL_TYPES, QWEN3_VL_TYPES));
	if (opt) {
		bool bias = true;
		if ((st = cfg_bool(c, "enable_bias", &bias, NULL)))
			return st;
		m->mlp_plain = true;
		m->qkv_bias = m->o_bias = m->mlp_bias = bias;
		m->norm_bias = true;
		if (m->max_position_embeddings > UINT32_MAX - 2)
			return kvs_fail(KVS_ERR_PARSE, "%s: field 'max_position_embeddings': "
					"%u positions and OPT's offset of 2 exceed 32 bits",
					c->path, m->max_position_embeddings);
		m->learned_positions = m->max_position_embeddings + 2; /* OPT's offset */
	}
	if (type_is(model_type, KEYS("qwen2", "qwen2_moe", QWEN2_VL_TYPES)))
		m->qkv_bias = true;
	if (type_is(model_type, KEYS("internlm2"))) {
		/* InternLM2's packed wqkv and its wo share one flag, `bias`
		 * (InternLM2Config's default true; its published configs
		 * write false) */
		bool bias = true;
		if ((st = cfg_bool(c, "bias", &bias, NULL)))
			return st;
		m->qkv_bias = m->o_bias = bias;
	}
	if (type_is(model_type, KEYS("gemma2", "gemma3", "gemma3_text")))
		m->norms_per_layer = 4;
	if (type_is(model_type, KEYS("qwen3", "qwen3_moe", "gemma3", "gemma3_text",
				     QWEN3_VL_TYPES)))
		m->qk_norm = true;
	bool ab = false, found = false;
	if ((st = cfg_bool(c, "attention_bias", &ab, &found)))
		return st;
	if (found && !opt)
		m->qkv_bias = m->o_bias = ab;
	if ((st = cfg_bool(c, "mlp_bias", &m->mlp_bias, NULL)) ||
	    (st = cfg_bool(c, "tie_word_embeddings", &m->tie_word_embeddings, NULL)))
		return st;

	if ((st = parse_sliding(c, model_type, m)))
		return st;
	json_t *cap = cfg_get(c, "final_logit_softcapping");
	if (cap && !json_is_number(cap))
		return kvs_fail(KVS_ERR_PARSE, "%s: field 'final_logit_softcapping': expected "
				"a number", c->path);
	m->logit_softcap = cap && json_number_value(cap) > 0;
	return KVS_OK;
}

/* A list of integers (`what`: "layer indexes", say) at field pfx key: its
 * length into *n, or the error naming the field when it is not a list, or
 * the first entry that is not an integer. */
static kvs_status int_list(const char *path, const char *pfx, const char *key,
			   const char *what, json_t *v, size_t *n)
{
	if (!json_is_array(v))
		return kvs_fail(KVS_ERR_PARSE, "%s: field '%s%s': expected a list of %s",
				path, pfx, key, what);
	size_t k;
	json_t *e;
	json_array_foreach(v, k, e)
		if (!json_is_integer(e))
			return kvs_fail(KVS_ERR_PARSE, "%s: field '%s%s'[%zu]: expected an integer",
					path, pfx, key, k);
	*n = json_array_size(v);
	return KVS_OK;
}

/* Mixture of experts. */
static kvs_status parse_moe(const cfg *c, const char *model_type, kvs_model *m)
{
	kvs_status st;
	if ((st = cfg_u32(c, KEYS("num_local_experts", "n_routed_experts", "num_experts"),
			  false, NULL, 0, &m->num_experts, NULL)))
		return st;
	if (m->num_experts > 1) {
		uint32_t n_shared = 0, shared_inter = 0;
		if ((st = cfg_u32(c, KEYS("num_experts_per_tok", "moe_topk", "top_k"), true,
				  "needed with the expert count", 1, &m->num_experts_per_tok, NULL)) ||
		    (st = cfg_u32(c, KEYS("n_shared_experts"), false, NULL, 0, &n_shared, NULL)) ||
		    (st = cfg_u32(c, KEYS("shared_expert_intermediate_size"), false, NULL, 0,
				  &shared_inter, NULL)) ||
		    (st = cfg_u32(c, KEYS("first_k_dense_replace"), false, NULL, 0,
				  &m->first_dense_layers, NULL)))
			return st;
		if (m->num_experts_per_tok > m->num_experts) {
			return kvs_fail(KVS_ERR_PARSE,
				        "%s: field 'num_experts_per_tok': %u is more than the "
				        "%u experts", c->path, m->num_experts_per_tok, m->num_experts);
		}
		if (m->first_dense_layers > m->num_layers)
			m->first_dense_layers = m->num_layers;
		/* Llama 4: MoE every step-th layer, one shared expert as wide
		 * as a routed one, dense layers of intermediate_size_mlp; Qwen2-
		 * and Qwen3-MoE's decoder_sparse_step the same layout (layer i
		 * has experts when i + 1 is a multiple), their dense layers of
		 * intermediate_size */
		if ((st = cfg_u32(c, KEYS("interleave_moe_layer_step", "decoder_sparse_step"),
				  false, NULL, 1, &m->moe_layer_step, NULL)) ||
		    (st = cfg_u32(c, KEYS("intermediate_size_mlp"), false, NULL, 1,
				  &m->dense_intermediate_size, NULL)))
			return st;
		if (m->moe_layer_step > 1 && m->first_dense_layers)
			return kvs_fail(KVS_ERR_PARSE, "%s: fields 'interleave_moe_layer_step' and "
					"'first_k_dense_replace' together: kvsim reads one layout of "
					"dense layers", c->path);
		if ((st = cfg_u32(c, KEYS("moe_intermediate_size"), false, NULL, 1,
				  &m->moe_intermediate_size, NULL)))
			return st;
		/* Qwen2- and Qwen3-MoE's dense layers by index (an index past
		 * the layers, or negative, names none, as in transformers) */
		json_t *mo = cfg_get(c, "mlp_only_layers");
		if (mo) {
			size_t k, n;
			json_t *e;
			if ((st = int_list(c->path, "", "mlp_only_layers", "layer indexes", mo, &n)))
				return st;
			json_array_foreach(mo, k, e) {
				json_int_t i = json_integer_value(e);
				if (i < 0 || i >= (json_int_t)m->num_layers)
					continue;
				if (i >= 64 * KVS_DENSE_LAYER_WORDS)
					return kvs_fail(KVS_ERR_PARSE, "%s: field "
							"'mlp_only_layers'[%zu]: kvsim reads dense "
							"layers below %d", c->path, k,
							64 * KVS_DENSE_LAYER_WORDS);
				m->dense_layer_bits[i >> 6] |= 1ull << (i & 63);
			}
		}
		if (n_shared) {
			uint32_t per = m->moe_intermediate_size;
			if (!per) /* shared experts as wide as the dense MLP */
				(void)cfg_u32(c, KEYS("intermediate_size"), false, NULL, 0,
					      &per, NULL);
			uint64_t tot = (uint64_t)n_shared * per;
			if (tot > UINT32_MAX) {
				return kvs_fail(KVS_ERR_PARSE,
					        "%s: field 'n_shared_experts': %u shared experts "
					        "of width %u are too wide", c->path, n_shared, per);
			}
			shared_inter = (uint32_t)tot;
		}
		if (!n_shared && !shared_inter && type_is(model_type, KEYS("llama4", "llama4_text")))
			(void)cfg_u32(c, KEYS("intermediate_size"), false, NULL, 0, &shared_inter,
				      NULL);
		m->shared_expert_intermediate_size = shared_inter;
	} else {
		m->num_experts = 0;
	}

	return KVS_OK;
}

/* ---- vision and audio towers ------------------------------------------------
 * A multimodal checkpoint holds an encoder beside its language model
 * ("vision_config", "audio_config") and a projector from the encoder's
 * width to the text model's.  Counted from their shapes: a SigLIP tower
 * (model_type siglip_vision_model: Gemma 3, PaliGemma) with Gemma 3's or
 * PaliGemma's projector, Llama 4's tower (llama4_vision_model) with its
 * own, CLIP's and Pixtral's towers (clip_vision_model, pixtral) with
 * LLaVA's or Mistral 3's projector, Qwen2-VL's, Qwen2.5-VL's and
 * Qwen3-VL's towers (qwen2_vl, qwen2_5_vl, qwen3_vl, qwen3_vl_moe) with
 * their patch mergers, and InternViT (intern_vit_6b, internvl_vision)
 * with InternVL's mlp1; any other tower
 * or projector is left out of the weights and named in vision_unread
 * (the CLI warns), never dropped silently. */

/* A tower kvsim does not count, or a projector: said, the first one. */
static void vision_unread(kvs_model *m, const char *what, const char *type)
{
	if (!m->vision_unread[0])
		snprintf(m->vision_unread, sizeof m->vision_unread, "%s of model_type '%.40s'",
			 what, type);
}

/* ---- parameter estimate ---------------------------------------------------
 * Saturating arithmetic: any overflow makes the result UINT64_MAX. */
typedef struct acc {
	uint64_t v;
	bool ovf;
} acc;

static void add(acc *a, uint64_t x)
{
	a->ovf |= kvs_add_overflow(a->v, x, &a->v);
}

static uint64_t mul(acc *a, uint64_t x, uint64_t y)
{
	uint64_t r;
	a->ovf |= kvs_mul_overflow(x, y, &r);
	return r;
}

static void addmul(acc *a, uint64_t x, uint64_t y)
{
	add(a, mul(a, x, y));
}


/* A tower's count into *out, or the overflow error naming the file. */
static kvs_status tower_count(const cfg *sub, const acc *t, uint64_t *out)
{
	if (t->ovf)
		return kvs_fail(KVS_ERR_OVERFLOW, "%s: the vision tower's parameter count does "
				"not fit in 64 bits", sub->path);
	*out = t->v;
	return KVS_OK;
}

/* The shape a ViT-style tower's config gives: width, MLP width, layers,
 * image and patch sides, channels. */
typedef struct vit_shape {
	uint32_t h, in, layers, image, patch, ch;
} vit_shape;

/* The fields of *v read under `sub` over the defaults *v holds; a patch
 * larger than the image is an error naming the field. */
/* The width, MLP width, layers and channels of a ViT-style tower under
 * `sub`, over the defaults they hold (read alike by every such tower). */
static kvs_status vit_widths(const cfg *sub, uint32_t *h, uint32_t *in, uint32_t *layers,
			     uint32_t *ch)
{
	kvs_status st;
	if ((st = cfg_u32_in(sub, KEYS("hidden_size"), false, NULL, 1, 1u << 20, h, NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("intermediate_size"), false, NULL, 1, 1u << 20, in,
			     NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("num_hidden_layers"), false, NULL, 0, 1u << 16, layers,
			     NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("num_channels"), false, NULL, 1, 1024, ch, NULL)))
		return st;
	return KVS_OK;
}

static kvs_status vit_read(const cfg *sub, vit_shape *v)
{
	kvs_status st;
	if ((st = vit_widths(sub, &v->h, &v->in, &v->layers, &v->ch)) ||
	    (st = cfg_u32_in(sub, KEYS("image_size"), false, NULL, 1, 1u << 20, &v->image,
			     NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("patch_size"), false, NULL, 1, 1u << 20, &v->patch,
			     NULL)))
		return st;
	if (v->patch > v->image)
		return kvs_fail(KVS_ERR_PARSE, "%s: field '%spatch_size': %u is larger than "
				"image_size %u", sub->path, PFX(sub), v->patch, v->image);
	return KVS_OK;
}

/* An encoder layer of such a tower: two LayerNorms (weight and bias), q,
 * k, v, o projections of hidden x hidden with biases, an fc1/fc2 MLP with
 * biases (hidden and MLP width at most 2^20: no overflow). */
static uint64_t vit_layer(const vit_shape *v)
{
	uint64_t H = v->h, I = v->in;
	return 4 * (H * H + H) + 2 * H * I + I + H + 4 * H;
}

/* What SGLang reads of a tower whose profile run kvsim does not model:
 * its config's num_hidden_layers and hidden_size. */
static void vit_attrs(kvs_vision_profile *vp, uint32_t layers, uint32_t hidden)
{
	*vp = (kvs_vision_profile){ .attr_layers = layers, .attr_hidden = hidden };
}

/* A ViT-style tower's image (or one tile or chunk of it) at image_size:
 * (image / patch)^2 patches, and the class token when `cls`; its widths
 * and MLP kind, and what SGLang reads.  The item's tokens are the model's
 * (item_tokens). */
static void vit_profile(const vit_shape *v, bool cls, bool gated, kvs_vision_profile *vp)
{
	uint64_t side = v->image / v->patch;
	*vp = (kvs_vision_profile){ .width = v->h, .mlp_width = v->in, .mlp_gated = gated,
				    .item_patches = side * side + (cls ? 1 : 0),
				    .item_pixels = (uint64_t)v->ch * v->patch * v->patch,
				    .attr_layers = v->layers, .attr_hidden = v->h };
}

/* A patch convolution without bias: ch x frames x patch^2 inputs into
 * width w (CLIP's, Pixtral's, Qwen2-VL's, Qwen2.5-VL's, and Qwen3-VL's
 * before its bias). */
static void patch_conv(acc *t, uint64_t ch, uint64_t frames, uint64_t patch, uint64_t w)
{
	addmul(t, ch * frames * patch * patch, w);
}

/* A SigLIP vision tower (transformers' SiglipVisionModel), its config's
 * fields read under `sub` with SiglipVisionConfig's defaults, the ones a
 * config.json leaves out: a patch convolution with bias, learned
 * positions, one per patch ((image_size / patch_size)^2), layers of
 * LayerNorm (weight and bias) before attention and MLP, q, k, v, o
 * projections of hidden x hidden with biases, an fc1/fc2 MLP with biases;
 * a final LayerNorm; and, unless vision_use_head is false, the
 * attention-pooling head (a probe, an attention with packed q/k/v, a
 * LayerNorm and an MLP).  *hidden: the tower's width, for the projector. */
static kvs_status siglip_params(const cfg *sub, uint64_t *out, uint32_t *hidden,
			 kvs_vision_profile *vp)
{
	kvs_status st;
	vit_shape v = { 768, 3072, 12, 224, 16, 3 };
	bool head = true;
	if ((st = vit_read(sub, &v)) || (st = cfg_bool(sub, "vision_use_head", &head, NULL)))
		return st;
	uint64_t side = v.image / v.patch, H = v.h, I = v.in;
	acc t = { 0, false };
	addmul(&t, (uint64_t)v.ch * v.patch * v.patch + 1, H);   /* patch conv and its bias */
	addmul(&t, side * side, H);                              /* positions */
	addmul(&t, v.layers, vit_layer(&v));
	add(&t, 2 * H);                                    /* post LayerNorm */
	if (head)   /* probe, q/k/v and out projections, LayerNorm, MLP */
		add(&t, H + 4 * (H * H + H) + 2 * H + 2 * H * I + I + H);
	vit_profile(&v, false, false, vp);   /* no class token */
	*hidden = v.h;
	return tower_count(sub, &t, out);
}

/* A CLIP-style encoder on the shape *v: a patch projection of (channels x
 * patch^2) x hidden without bias, a class embedding, learned positions for
 * every patch and the class token, LayerNorms (weight and bias) before
 * and after the encoder, and v->layers ViT layers. */
static void clip_encoder(acc *t, const vit_shape *v)
{
	uint64_t side = v->image / v->patch, H = v->h;
	patch_conv(t, v->ch, 1, v->patch, H);
	add(t, H);                                             /* class embedding */
	addmul(t, side * side + 1, H);                         /* positions */
	add(t, 4 * H);                                         /* pre and post LayerNorms */
	addmul(t, v->layers, vit_layer(v));
}

/* A CLIP vision tower (transformers' CLIPVisionModel: LLaVA's), its
 * config's fields read under `sub` with CLIPVisionConfig's defaults: the
 * encoder above (its pre-LayerNorm "pre_layrnorm", the post-LayerNorm
 * kept in the checkpoint even where a model reads an earlier layer's
 * features).  *hidden: the tower's width, for the projector. */
static kvs_status clip_params(const cfg *sub, uint64_t *out, uint32_t *hidden,
			 kvs_vision_profile *vp)
{
	kvs_status st;
	vit_shape v = { 768, 3072, 12, 224, 32, 3 };
	if ((st = vit_read(sub, &v)))
		return st;
	acc t = { 0, false };
	clip_encoder(&t, &v);
	vit_profile(&v, true, false, vp);    /* with the class token */
	*hidden = v.h;
	return tower_count(sub, &t, out);
}

/* InternViT's shape, in either config format: widths, layers, channels,
 * image and patch sides (height, width), and its optional parts. */
typedef struct intern_shape {
	uint32_t h, in, layers, ch, ih, iw, ph, pw;
	bool qkv_bias, qk_norm, layer_norm, mask_token, positions, final_norm;
} intern_shape;

/* norm_type: "rms_norm" or "layer_norm" (*layer_norm: which), else the
 * error naming the field */
static kvs_status intern_norm(const cfg *sub, bool *layer_norm)
{
	json_t *nt = cfg_get(sub, "norm_type");
	if (!nt)
		return KVS_OK;
	const char *s = json_string_value(nt);
	if (!s || (strcmp(s, "rms_norm") != 0 && strcmp(s, "layer_norm") != 0)) {
		char text[64];
		show(nt, text, sizeof text);
		return kvs_fail(KVS_ERR_PARSE, "%s: field '%snorm_type': expected \"rms_norm\" "
				"or \"layer_norm\", got %s", sub->path, PFX(sub), text);
	}
	*layer_norm = strcmp(s, "layer_norm") == 0;
	return KVS_OK;
}

/* A side pair: an integer (both) or a list of two (height, width), each
 * in [1, 2^20]; absent, *a and *b stay. */
static kvs_status side_pair(const cfg *sub, const char *key, uint32_t *a, uint32_t *b)
{
	json_t *v = cfg_get(sub, key);
	if (!v)
		return KVS_OK;
	if (!json_is_array(v)) {
		kvs_status st = cfg_u32_in(sub, KEYS(key), false, NULL, 1, 1u << 20, a, NULL);
		*b = *a;
		return st;
	}
	json_t *x = json_array_get(v, 0), *y = json_array_get(v, 1);
	if (json_array_size(v) != 2 || !json_is_integer(x) || !json_is_integer(y) ||
	    json_integer_value(x) < 1 || json_integer_value(x) > 1 << 20 ||
	    json_integer_value(y) < 1 || json_integer_value(y) > 1 << 20) {
		char text[64];
		show(v, text, sizeof text);
		return kvs_fail(KVS_ERR_PARSE, "%s: field '%s%s': expected an integer or two "
				"in [1, 1048576], got %s", sub->path, PFX(sub), key, text);
	}
	*a = (uint32_t)json_integer_value(x);
	*b = (uint32_t)json_integer_value(y);
	return KVS_OK;
}

/* InternViT's weights: a patch convolution with a bias, a class embedding,
 * an optional mask token, learned positions for every patch and the class
 * token (unless left out); layers of two norms (LayerNorm: weight and
 * bias; RMSNorm: a weight), q/k/v (biases when qkv_bias), RMSNorms over q
 * and k across the heads when qk_norm, an output projection and an fc1/fc2
 * MLP with biases, and two layer-scale vectors; an optional LayerNorm
 * after the last layer. */
static kvs_status intern_count(const cfg *sub, const intern_shape *s, uint64_t *out,
			       uint32_t *hidden)
{
	if (s->ph > s->ih || s->pw > s->iw)
		return kvs_fail(KVS_ERR_PARSE, "%s: field '%spatch_size': larger than "
				"image_size", sub->path, PFX(sub));
	uint64_t H = s->h, I = s->in, np = (uint64_t)(s->ih / s->ph) * (s->iw / s->pw);
	acc t = { 0, false };
	addmul(&t, (uint64_t)s->ch * s->ph * s->pw + 1, H);    /* patch conv and its bias */
	add(&t, s->mask_token ? 2 * H : H);                    /* class (and mask) token */
	if (s->positions)
		addmul(&t, np + 1, H);
	/* q/k/v, output, MLP, the two norms, the two layer scales (widths
	 * below 2^21: no overflow) */
	uint64_t layer = 3 * H * H + (s->qkv_bias ? 3 * H : 0) + (s->qk_norm ? 2 * H : 0) +
			 H * H + H + 2 * H * I + I + H + (s->layer_norm ? 4 * H : 2 * H) + 2 * H;
	addmul(&t, s->layers, layer);
	if (s->final_norm)
		add(&t, 2 * H);
	*hidden = s->h;
	return tower_count(sub, &t, out);
}

/* InternViT under InternVL's chat config (OpenGVLab's InternVisionModel,
 * vision model_type intern_vit_6b for all its sizes), its fields read
 * under `sub` with InternVisionConfig's defaults: InternViT-6B at 224
 * pixels, RMSNorms, q/k norms, no q/k/v biases; no mask token, no norm
 * after the last layer. */
static kvs_status internvit_params(const cfg *sub, uint64_t *out, uint32_t *hidden,
			 kvs_vision_profile *vp)
{
	kvs_status st;
	vit_shape v = { 3200, 12800, 48, 224, 14, 3 };
	intern_shape s = { .qk_norm = true, .positions = true };
	if ((st = vit_read(sub, &v)) || (st = cfg_bool(sub, "qkv_bias", &s.qkv_bias, NULL)) ||
	    (st = cfg_bool(sub, "qk_normalization", &s.qk_norm, NULL)) ||
	    (st = intern_norm(sub, &s.layer_norm)))
		return st;
	s.h = v.h, s.in = v.in, s.layers = v.layers, s.ch = v.ch;
	s.ih = s.iw = v.image, s.ph = s.pw = v.patch;
	vit_profile(&v, true, false, vp);    /* one tile (item_tokens: the tiles) */
	return intern_count(sub, &s, out, hidden);
}

/* The same tower in transformers' own format (InternVLVisionModel, vision
 * model_type internvl_vision, the "-hf" checkpoints), with
 * InternVLVisionConfig's defaults: InternViT-300M at 448 pixels
 * (LayerNorms, no q/k/v biases, no q/k norms); attention_bias (or
 * qkv_bias), use_qk_norm (or qk_normalization), image and patch sides as
 * an integer or a pair, a mask token when use_mask_token, positions
 * unless use_absolute_position_embeddings is false, a LayerNorm after the
 * last layer when use_mean_pooling is false. */
static kvs_status internvl_vision_params(const cfg *sub, uint64_t *out, uint32_t *hidden,
			 kvs_vision_profile *vp)
{
	kvs_status st;
	intern_shape s = { 1024, 4096, 24, 3, 448, 448, 14, 14, .layer_norm = true,
			   .positions = true };
	bool pool = true, qb = false, qn = false, qb_found, qn_found;
	if ((st = vit_widths(sub, &s.h, &s.in, &s.layers, &s.ch)) ||
	    (st = side_pair(sub, "image_size", &s.ih, &s.iw)) ||
	    (st = side_pair(sub, "patch_size", &s.ph, &s.pw)) ||
	    (st = cfg_bool(sub, "attention_bias", &s.qkv_bias, &qb_found)) ||
	    (st = cfg_bool(sub, "qkv_bias", &qb, NULL)) ||
	    (st = cfg_bool(sub, "use_qk_norm", &s.qk_norm, &qn_found)) ||
	    (st = cfg_bool(sub, "qk_normalization", &qn, NULL)) ||
	    (st = cfg_bool(sub, "use_mask_token", &s.mask_token, NULL)) ||
	    (st = cfg_bool(sub, "use_absolute_position_embeddings", &s.positions, NULL)) ||
	    (st = cfg_bool(sub, "use_mean_pooling", &pool, NULL)) ||
	    (st = intern_norm(sub, &s.layer_norm)))
		return st;
	if (!qb_found)
		s.qkv_bias = qb;
	if (!qn_found)
		s.qk_norm = qn;
	s.final_norm = !pool;
	vit_attrs(vp, s.layers, s.h);   /* its profile run is not modelled */
	return intern_count(sub, &s, out, hidden);
}

/* Pixtral's vision tower (transformers' PixtralVisionModel: Pixtral-12B
 * under LLaVA), its config's fields read under `sub` with
 * PixtralVisionConfig's defaults: a patch convolution without bias, an
 * RMSNorm before the encoder, layers of two RMSNorms, q, k, v and o
 * projections of hidden x hidden and a gated MLP (gate, up, down), none
 * with biases; its 2-D rotary positions have no weights. */
static kvs_status pixtral_params(const cfg *sub, uint64_t *out, uint32_t *hidden,
			 kvs_vision_profile *vp)
{
	kvs_status st;
	vit_shape v = { 1024, 4096, 24, 1024, 16, 3 };
	if ((st = vit_read(sub, &v)))
		return st;
	vit_profile(&v, false, true, vp);    /* no class token; gated MLP */
	uint64_t H = v.h, I = v.in;
	acc t = { 0, false };
	patch_conv(&t, v.ch, 1, v.patch, H);
	add(&t, H);                                          /* ln_pre */
	addmul(&t, v.layers, 2 * H + 4 * H * H + 3 * H * I);
	*hidden = v.h;
	return tower_count(sub, &t, out);
}

/* Llama 4's vision tower (transformers' Llama4VisionModel), its config's
 * fields read under `sub` with Llama4VisionConfig's defaults: the CLIP
 * encoder above, then the pixel-shuffle adapter, an MLP without biases
 * of intermediate_size x projector_input_dim and projector_output_dim^2
 * (the shapes the model builds).  *out_dim: vision_output_dim, the
 * projector's input. */
static kvs_status llama4_vision_params(const cfg *sub, uint64_t *out, uint32_t *out_dim,
			kvs_vision_profile *vp)
{
	kvs_status st;
	vit_shape v = { 768, 5632, 34, 448, 14, 3 };
	uint32_t pin = 4096, pout = 4096, vout = 7680;
	if ((st = vit_read(sub, &v)) ||
	    (st = cfg_u32_in(sub, KEYS("projector_input_dim"), false, NULL, 1, 1u << 20, &pin,
			     NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("projector_output_dim"), false, NULL, 1, 1u << 20, &pout,
			     NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("vision_output_dim"), false, NULL, 1, 1u << 20, &vout,
			     NULL)))
		return st;
	acc t = { 0, false };
	clip_encoder(&t, &v);
	addmul(&t, v.in, pin);                               /* adapter fc1 */
	addmul(&t, pout, pout);                              /* adapter fc2 */
	vit_profile(&v, true, false, vp);    /* one chunk (item_tokens: the chunks) */
	*out_dim = vout;
	return tower_count(sub, &t, out);
}

/* The fields the Qwen2-VL, Qwen2.5-VL and Qwen3-VL towers share: layers
 * ("depth"), channels, patch side and frames per patch, the merge side. */
typedef struct qvl_shape {
	uint32_t depth, ch, patch, tps, merge;
	uint32_t attr_layers;   /* num_hidden_layers when written (the config
				 * classes have none: 24, SGLang's default) */
} qvl_shape;

static kvs_status qvl_read(const cfg *sub, qvl_shape *q)
{
	kvs_status st;
	if ((st = cfg_u32_in(sub, KEYS("depth"), false, NULL, 0, 1u << 16, &q->depth, NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("in_chans", "in_channels"), false, NULL, 1, 1024, &q->ch,
			     NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("patch_size"), false, NULL, 1, 1u << 10, &q->patch,
			     NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("temporal_patch_size"), false, NULL, 1, 1u << 10, &q->tps,
			     NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("spatial_merge_size"), false, NULL, 1, 1u << 6, &q->merge,
			     NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("num_hidden_layers"), false, NULL, 0, 1u << 16,
			     &q->attr_layers, NULL)))
		return st;
	return KVS_OK;
}

/* The Qwen-VL towers' largest image as vLLM profiles it: the image
 * processors' default pixel cap (Qwen2-VL's and Qwen2.5-VL's max_pixels
 * 12,845,056 = 16,384 x 28^2; Qwen3-VL's longest_edge 16,777,216 =
 * 16,384 x 32^2) in patches of patch^2 pixels, each of ch x tps x
 * patch^2 values, merge^2 patches a token: 65,536 patches and 16,384
 * tokens at the released shapes.  The vision start and end tokens are
 * outside the item. */
#define QVL2_MAX_PIXELS 12845056u
#define QVL3_MAX_PIXELS 16777216u

static void qvl_profile(const qvl_shape *q, uint64_t max_pixels, uint32_t width, uint32_t mlp,
			bool gated, uint32_t attr_hidden, kvs_vision_profile *vp)
{
	uint64_t patches;
	uint32_t tokens;
	kvs_vision_item_from_pixels(max_pixels, q->patch, q->merge, &patches, &tokens);
	*vp = (kvs_vision_profile){ .width = width, .mlp_width = mlp, .mlp_gated = gated,
				    .item_patches = patches,
				    .item_pixels = (uint64_t)q->ch * q->tps * q->patch * q->patch,
				    .item_tokens = tokens, .item_embeds = tokens,
				    .takes_video = true,
				    .patch_side = q->patch, .merge_side = q->merge,
				    .attr_layers = q->attr_layers, .attr_hidden = attr_hidden };
}

/* The patch merger they end with (transformers' PatchMerger,
 * Qwen2_5_VLPatchMerger, Qwen3VLVisionPatchMerger): a norm (its weights
 * given: over the tower's width w, or over the merged width for Qwen3-VL's
 * deepstack mergers), then an MLP with biases from the merge^2 patches'
 * features, w merge^2 wide, to itself and to the text model's width
 * `out`. */
static void qvl_merger(acc *t, uint64_t norm, uint64_t w, uint32_t merge, uint64_t out)
{
	uint64_t M = w * merge * merge;
	add(t, norm);
	addmul(t, M, M + 1);
	addmul(t, M, out);
	add(t, out);
}

/* Qwen2-VL's vision tower with its merger (transformers'
 * Qwen2VisionTransformerPretrainedModel), fields under `sub` with
 * Qwen2VLVisionConfig's defaults: a patch convolution over
 * temporal_patch_size frames without bias, embed_dim wide; blocks of two
 * LayerNorms (weight and bias), a packed q/k/v and an output projection
 * with biases, an fc1/fc2 MLP of embed_dim x mlp_ratio with biases (a
 * ViT layer); the merger with a LayerNorm, into hidden_size (the text
 * model's width; the tower's own is embed_dim). */
static kvs_status qwen2vl_vision_params(const cfg *sub, uint64_t *out, uint32_t *hidden,
			 kvs_vision_profile *vp)
{
	kvs_status st;
	qvl_shape q = { 32, 3, 14, 2, 2, 24 };
	uint32_t E = 1280, D = 3584;
	double ratio = 4;
	if ((st = qvl_read(sub, &q)) ||
	    (st = cfg_u32_in(sub, KEYS("embed_dim"), false, NULL, 1, 1u << 20, &E, NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("hidden_size"), false, NULL, 1, 1u << 20, &D, NULL)))
		return st;
	json_t *r = cfg_get(sub, "mlp_ratio");
	if (r) {
		ratio = json_is_number(r) ? json_number_value(r) : -1;
		if (!(ratio > 0 && ratio <= 64))
			return kvs_fail(KVS_ERR_PARSE, "%s: field '%smlp_ratio': expected a "
					"number in (0, 64]", sub->path, PFX(sub));
	}
	/* transformers truncates the MLP width to an integer */
	vit_shape v = { .h = E, .in = (uint32_t)((double)E * ratio) };
	if (v.in == 0)
		return kvs_fail(KVS_ERR_PARSE, "%s: field '%smlp_ratio': embed_dim x "
				"mlp_ratio is below 1", sub->path, PFX(sub));
	acc t = { 0, false };
	patch_conv(&t, q.ch, q.tps, q.patch, E);
	addmul(&t, q.depth, vit_layer(&v));
	qvl_merger(&t, 2 * (uint64_t)E, E, q.merge, D);
	qvl_profile(&q, QVL2_MAX_PIXELS, E, v.in, false, D, vp);
	*hidden = D;
	return tower_count(sub, &t, out);
}

/* Qwen2.5-VL's vision tower with its merger (transformers'
 * Qwen2_5_VisionTransformerPretrainedModel), fields under `sub` with
 * Qwen2_5_VLVisionConfig's defaults: the patch convolution as Qwen2-VL's,
 * hidden_size wide; blocks of two RMSNorms (weight only), a packed q/k/v
 * and an output projection with biases, a gated MLP (gate, up and down of
 * intermediate_size) with biases; the merger with an RMSNorm, into
 * out_hidden_size.  Its windowed attention has no weights of its own. */
static kvs_status qwen25vl_vision_params(const cfg *sub, uint64_t *out, uint32_t *hidden,
			 kvs_vision_profile *vp)
{
	kvs_status st;
	qvl_shape q = { 32, 3, 14, 2, 2, 24 };
	uint32_t H = 3584, I = 3420, D = 3584;
	if ((st = qvl_read(sub, &q)) ||
	    (st = cfg_u32_in(sub, KEYS("hidden_size"), false, NULL, 1, 1u << 20, &H, NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("intermediate_size"), false, NULL, 1, 1u << 20, &I,
			     NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("out_hidden_size"), false, NULL, 1, 1u << 20, &D, NULL)))
		return st;
	uint64_t h = H, i = I;
	acc t = { 0, false };
	patch_conv(&t, q.ch, q.tps, q.patch, h);
	/* norms, q/k/v and output, gate and up, down (widths < 2^21) */
	addmul(&t, q.depth, 2 * h + 4 * (h * h + h) + 2 * (h * i + i) + i * h + h);
	qvl_merger(&t, h, h, q.merge, D);
	qvl_profile(&q, QVL2_MAX_PIXELS, H, I, true, H, vp);
	*hidden = D;
	return tower_count(sub, &t, out);
}

/* Qwen3-VL's vision tower with its mergers (transformers'
 * Qwen3VLVisionModel; Qwen3-VL-MoE's is the same), fields under `sub` with
 * Qwen3VLVisionConfig's defaults: the patch convolution over
 * temporal_patch_size frames with a bias, hidden_size wide; learned
 * positions (num_position_embeddings); depth ViT layers of
 * intermediate_size (two LayerNorms, a packed q/k/v, an output projection
 * and an fc1/fc2 MLP, all with biases); the merger with a LayerNorm over
 * the tower's width, and one more merger per deepstack_visual_indexes
 * entry (features taken after those blocks), its LayerNorm over the
 * merged width; each into out_hidden_size.  Its 2-D rotary positions
 * have no weights. */
static kvs_status qwen3vl_vision_params(const cfg *sub, uint64_t *out, uint32_t *hidden,
			 kvs_vision_profile *vp)
{
	kvs_status st;
	qvl_shape q = { 27, 3, 16, 2, 2, 24 };
	vit_shape v = { .h = 1152, .in = 4304 };
	uint32_t D = 3584, npos = 2304;
	uint64_t ndeep = 3;
	if ((st = qvl_read(sub, &q)) ||
	    (st = cfg_u32_in(sub, KEYS("hidden_size"), false, NULL, 1, 1u << 20, &v.h, NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("intermediate_size"), false, NULL, 1, 1u << 20, &v.in,
			     NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("out_hidden_size"), false, NULL, 1, 1u << 20, &D, NULL)) ||
	    (st = cfg_u32_in(sub, KEYS("num_position_embeddings"), false, NULL, 0, 1u << 24,
			     &npos, NULL)))
		return st;
	/* one merger per entry, whatever block it names (transformers
	 * builds them all; an index past depth is never read) */
	json_t *ds = cfg_get(sub, "deepstack_visual_indexes");
	if (ds) {
		size_t len;
		if ((st = int_list(sub->path, PFX(sub), "deepstack_visual_indexes",
				   "block indexes", ds, &len)))
			return st;
		ndeep = len;
	}
	uint64_t H = v.h, M = H * q.merge * q.merge;
	acc t = { 0, false };
	patch_conv(&t, q.ch, q.tps, q.patch, H);
	add(&t, H);                                          /* its bias */
	addmul(&t, npos, H);                                 /* positions */
	addmul(&t, q.depth, vit_layer(&v));
	qvl_merger(&t, 2 * H, H, q.merge, D);
	acc d = { 0, false };                                /* one deepstack merger */
	qvl_merger(&d, 2 * M, H, q.merge, D);
	t.ovf |= d.ovf;
	addmul(&t, ndeep, d.v);
	qvl_profile(&q, QVL3_MAX_PIXELS, v.h, v.in, false, v.h, vp);
	*hidden = D;
	return tower_count(sub, &t, out);
}

/* A ratio field in (1/64, 1] (InternVL's downsample_ratio, Llama 4's
 * pixel_shuffle_ratio) into *x; *x unchanged when absent or null. */
static kvs_status ratio_field(const char *path, const char *name, json_t *r, double *x)
{
	if (!r || json_is_null(r))
		return KVS_OK;
	double v = json_is_number(r) ? json_number_value(r) : 0;
	if (!(v > 1.0 / 64 && v <= 1)) {
		char text[64];
		show(r, text, sizeof text);
		return kvs_fail(KVS_ERR_PARSE, "%s: field '%s': expected a number in (1/64, 1], "
				"got %s", path, name, text);
	}
	*x = v;
	return KVS_OK;
}

/* What a projector reads beside the tower's width: LLaVA's (and LLaVA-NeXT's
 * and Mistral 3's) layers of features side by side (vision_feature_layer,
 * one index or a list), biases (multimodal_projector_bias, default true,
 * false for Mistral 3), Mistral 3's spatial_merge_size (2), InternVL's
 * downsample_ratio (0.5: its pixel shuffle puts int(1 / ratio)^2 patches'
 * features side by side, in merge), PaliGemma's projection_dim
 * (vision_config's, else the top level's; the text width when absent).
 * Read only for the model types that have them. */
typedef struct proj_in {
	uint64_t layers, merge, out;
	bool bias;
} proj_in;

static kvs_status projector_fields(const cfg *c, const cfg *sub, const char *top_type,
				   const kvs_model *m, proj_in *p)
{
	kvs_status st;
	*p = (proj_in){ 1, 2, m->hidden_size, !type_is(top_type, KEYS("mistral3")) };
	if (type_is(top_type, KEYS("paligemma"))) {
		uint32_t out = m->hidden_size;
		bool found = false;
		if ((st = cfg_u32_in(sub, KEYS("projection_dim"), false, NULL, 1, 1u << 20, &out,
				     &found)))
			return st;
		if (!found) {
			cfg top = { .path = c->path, .root = c->root };
			if ((st = cfg_u32_in(&top, KEYS("projection_dim"), false, NULL, 1, 1u << 20,
					     &out, NULL)))
				return st;
		}
		p->out = out;
		return KVS_OK;
	}
	if (type_is(top_type, KEYS("internvl_chat", "internvl"))) {
		double x = 0;
		if ((st = ratio_field(c->path, "downsample_ratio",
				      json_object_get(c->root, "downsample_ratio"), &x)))
			return st;
		if (x > 0)
			p->merge = (uint64_t)(1.0 / x);
		return KVS_OK;
	}
	if (!type_is(top_type, KEYS("llava", "llava_next", "mistral3")))
		return KVS_OK;
	json_t *f = json_object_get(c->root, "vision_feature_layer");
	if (f && !json_is_null(f)) {
		if (json_is_array(f) && json_array_size(f) > 0) {
			size_t len;
			if ((st = int_list(c->path, "", "vision_feature_layer", "layer indexes", f,
					   &len)))
				return st;
			p->layers = len;
		} else if (!json_is_integer(f)) {
			return kvs_fail(KVS_ERR_PARSE, "%s: field 'vision_feature_layer': "
					"expected an integer or a non-empty list of integers",
					c->path);
		}
	}
	json_t *b = json_object_get(c->root, "multimodal_projector_bias");
	if (b && !json_is_null(b)) {
		if (!json_is_boolean(b))
			return kvs_fail(KVS_ERR_PARSE, "%s: field 'multimodal_projector_bias': "
					"expected true or false", c->path);
		p->bias = json_is_true(b);
	}
	json_t *sm = json_object_get(c->root, "spatial_merge_size");
	if (type_is(top_type, KEYS("mistral3")) && sm && !json_is_null(sm)) {
		if (!json_is_integer(sm) || json_integer_value(sm) < 1 ||
		    json_integer_value(sm) > 64)
			return kvs_fail(KVS_ERR_PARSE, "%s: field 'spatial_merge_size': "
					"expected an integer in [1, 64]", c->path);
		p->merge = (uint64_t)json_integer_value(sm);
	}
	return KVS_OK;
}

/* The projector from a tower whose output is vh wide into the text model:
 * Gemma 3's after a SigLIP tower (Gemma3MultiModalProjector: an RMSNorm
 * over the tower's width and a vh x hidden matrix without bias; its
 * average pooling has no weights), Llama 4's after its own tower
 * (Llama4MultiModalProjector: vision_output_dim x hidden without bias),
 * PaliGemma's after a SigLIP tower (PaliGemmaMultiModalProjector: vh x
 * hidden with bias), LLaVA's, LLaVA-NeXT's and Mistral 3's after any
 * (LlavaMultiModalProjector, from feature_layers layers' features, biases
 * when proj_bias; Mistral3MultiModalProjector adds a norm and a patch
 * merger of merge x merge patches), InternVL's after InternViT
 * (InternVLChatModel's mlp1: a LayerNorm over merge^2 patches' features
 * side by side, a linear layer into the text model and one within it,
 * with biases).  false: a pairing kvsim does not count. */
static bool projector_params(const char *top_type, const char *tower_type, uint64_t vh,
			     const proj_in *p, const kvs_model *m, uint64_t *out)
{
	if (type_is(top_type, KEYS("gemma3")) && type_is(tower_type, KEYS("siglip_vision_model"))) {
		*out = vh * m->hidden_size + vh;
		return true;
	}
	if (type_is(top_type, KEYS("llama4")) && type_is(tower_type, KEYS("llama4_vision_model"))) {
		*out = vh * m->hidden_size;
		return true;
	}
	if (type_is(top_type, KEYS("paligemma")) && type_is(tower_type, KEYS("siglip_vision_model"))) {
		/* one linear layer with bias into projection_dim (the text
		 * model's width in every published checkpoint) */
		*out = vh * p->out + p->out;
		return true;
	}
	if (type_is(top_type, KEYS("internvl_chat", "internvl")) &&
	    type_is(tower_type, KEYS("intern_vit_6b", "internvl_vision"))) {
		/* saturating: the text width may be up to 2^32 (the
		 * caller refuses a sum past 64 bits) */
		acc t = { 0, false };
		uint64_t in = vh * p->merge * p->merge, h = m->hidden_size;
		addmul(&t, 2, in);
		addmul(&t, in, h);
		addmul(&t, h, h);
		add(&t, 2 * h);
		*out = t.ovf ? UINT64_MAX : t.v;
		return true;
	}
	if (type_is(top_type, KEYS("llava", "llava_next", "mistral3"))) {
		/* linear_1 from the tower's features (one layer's, or the
		 * layers' of a vision_feature_layer list side by side) into
		 * the text model, linear_2 within it, with biases when
		 * proj_bias; LLaVA-NeXT adds its image_newline, a vector of
		 * the text width; Mistral 3 an RMSNorm over the tower's width
		 * and its patch merger, merge^2 patches' features into one
		 * (no bias) */
		acc t = { 0, false };
		uint64_t h = m->hidden_size, in = mul(&t, vh, p->layers);
		addmul(&t, in, h);
		addmul(&t, h, h);
		add(&t, (p->bias ? 2 * h : 0) + (type_is(top_type, KEYS("llava_next")) ? h : 0));
		if (type_is(top_type, KEYS("mistral3")))
			addmul(&t, vh, 1 + p->merge * p->merge * vh);
		*out = t.ovf ? UINT64_MAX : t.v;
		return true;
	}
	return false;
}

/* The towers kvsim counts, by model_type: the count of one from its
 * config section (*hidden: its output width, for a projector), and
 * whether it holds its own projector (the Qwen-VL towers' patch mergers:
 * the model has no other). */
static const struct {
	const char *type;
	kvs_status (*count)(const cfg *sub, uint64_t *out, uint32_t *hidden,
			    kvs_vision_profile *vp);
	bool own_projector;
} tower_kinds[] = {
	{ "siglip_vision_model", siglip_params, false },
	{ "clip_vision_model", clip_params, false },
	{ "pixtral", pixtral_params, false },
	{ "intern_vit_6b", internvit_params, false },
	{ "internvl_vision", internvl_vision_params, false },
	{ "llama4_vision_model", llama4_vision_params, false },
	{ "qwen2_vl", qwen2vl_vision_params, true },
	{ "qwen2_5_vl", qwen25vl_vision_params, true },
	/* transformers 5 names the tower's own config qwen3_vl_vision */
	{ "qwen3_vl", qwen3vl_vision_params, true },
	{ "qwen3_vl_vision", qwen3vl_vision_params, true },
	{ "qwen3_vl_moe", qwen3vl_vision_params, true },
	{ "qwen3_vl_moe_vision", qwen3vl_vision_params, true },
};

/* x, or UINT32_MAX when it does not fit */
static uint32_t sat_u32(uint64_t x)
{
	return x < UINT32_MAX ? (uint32_t)x : UINT32_MAX;
}

/* The prompt tokens of a tower's largest item where the model, not the
 * tower, decides them (the tower's count gave its patches):
 * - Gemma 3 pools SigLIP's patches into mm_tokens_per_image embeddings
 *   (default 256), written as "\n\n", <start_of_image>, the image tokens,
 *   <end_of_image>, "\n\n": four tokens more (vLLM's encoder budget counts
 *   them: 8,192 / 260 = 31 images in a logged profile run);
 * - LLaVA's CLIP tower: one token a patch, the class token's too under
 *   vision_feature_select_strategy "full" (default "default": without);
 * - Pixtral's tower under LLaVA: one token a patch, and a break or end
 *   token after each row (64 x 65 = 4,160 at 1,024 pixels in 16-pixel
 *   patches); under Mistral 3 the same over merge x merge patches;
 * - InternViT under InternVL's chat model: max_dynamic_patch tiles of the
 *   image (one without dynamic_image_size) and, with use_thumbnail, one
 *   more, each tile's patches over merge^2 (downsample_ratio), between
 *   <img> and </img>;
 * - Llama 4's tower: 16 chunks and a global one (below).
 * A pairing not listed is left unmodelled (item_tokens 0). */
static kvs_status item_tokens(const cfg *c, const char *top_type, const char *tower_type,
			      const proj_in *pin, kvs_vision_profile *vp)
{
	kvs_status st;
	if (vp->item_tokens)   /* the tower's own (the Qwen-VL towers) */
		return KVS_OK;
	if (type_is(tower_type, KEYS("siglip_vision_model")) && type_is(top_type, KEYS("gemma3"))) {
		uint32_t n = 256;
		if ((st = cfg_u32_in(c, KEYS("mm_tokens_per_image"), false, NULL, 1, 1u << 20, &n,
				     NULL)))
			return st;
		vp->item_embeds = n;
		vp->item_tokens = n + 4;
		return KVS_OK;
	}
	if (type_is(tower_type, KEYS("clip_vision_model")) && type_is(top_type, KEYS("llava"))) {
		json_t *sel = json_object_get(c->root, "vision_feature_select_strategy");
		if (sel && !json_is_null(sel) && !json_is_string(sel))
			return kvs_fail(KVS_ERR_PARSE, "%s: field 'vision_feature_select_strategy': "
					"expected a string", c->path);
		bool full = sel && json_is_string(sel) && strcmp(json_string_value(sel), "full") == 0;
		uint64_t n = vp->item_patches - (full ? 0 : 1);   /* patches with the class token */
		vp->item_tokens = vp->item_embeds = sat_u32(n);
		return KVS_OK;
	}
	if (type_is(tower_type, KEYS("pixtral")) && type_is(top_type, KEYS("llava", "mistral3"))) {
		uint64_t side = (uint64_t)llround(sqrt((double)vp->item_patches));
		uint64_t merge = type_is(top_type, KEYS("mistral3")) && pin->merge ? pin->merge : 1;
		uint64_t rows = (side + merge - 1) / merge;   /* vLLM rounds up */
		vp->item_embeds = sat_u32(rows * rows);
		vp->item_tokens = sat_u32(rows * (rows + 1));
		return KVS_OK;
	}
	if (type_is(tower_type, KEYS("intern_vit_6b")) && type_is(top_type, KEYS("internvl_chat"))) {
		/* InternVLChatConfig's defaults: no dynamic tiling (one
		 * tile), 6 tiles when on, no thumbnail */
		uint32_t tiles = 6;
		bool dynamic = false, thumb = false;
		if ((st = cfg_bool(c, "dynamic_image_size", &dynamic, NULL)) ||
		    (st = cfg_u32_in(c, KEYS("max_dynamic_patch"), false, NULL, 1, 1024, &tiles,
				     NULL)) ||
		    (st = cfg_bool(c, "use_thumbnail", &thumb, NULL)))
			return st;
		if (!dynamic)
			tiles = 1;
		uint64_t n = tiles + (thumb && tiles != 1 ? 1 : 0);
		/* a Qwen2 language model takes videos too (vLLM's InternVL) */
		json_t *llm = json_object_get(c->root, "llm_config");
		json_t *lt = json_is_object(llm) ? json_object_get(llm, "model_type") : NULL;
		vp->takes_video = json_is_string(lt) && strcmp(json_string_value(lt), "qwen2") == 0;
		uint64_t per_tile = vp->item_patches - 1;   /* a tile's patches, class token apart */
		uint64_t mm = pin->merge ? pin->merge * pin->merge : 1;
		vp->item_patches *= n;
		vp->item_embeds = sat_u32(n * (per_tile / mm));
		vp->item_tokens = sat_u32((uint64_t)vp->item_embeds + 2);
		return KVS_OK;
	}
	if (type_is(tower_type, KEYS("llama4_vision_model")) && type_is(top_type, KEYS("llama4"))) {
		/* the processor's max_patches (16) chunks stacked 16:1, as
		 * vLLM's largest image, and the global chunk; each chunk's
		 * patches over 1 / pixel_shuffle_ratio^2 (0.5: 4); written
		 * as <|image_start|>, per row the chunk's tokens and a row
		 * separator, <|image|>, the global chunk's, <|image_end|> */
		json_t *vc = json_object_get(c->root, "vision_config");
		double ratio = 0.5;
		if ((st = ratio_field(c->path, "vision_config.pixel_shuffle_ratio",
				      json_is_object(vc) ? json_object_get(vc, "pixel_shuffle_ratio")
							 : NULL, &ratio)))
			return st;
		uint64_t ds = (uint64_t)llround(1.0 / (ratio * ratio));
		uint64_t chunk = (vp->item_patches - 1) / ds, rows = 16;
		vp->item_patches *= rows + 1;
		vp->item_embeds = sat_u32((rows + 1) * chunk);
		vp->item_tokens = sat_u32(1 + rows * (chunk + 1) + 1 + chunk + 1);
		return KVS_OK;
	}
	vp->item_tokens = 0;
	return KVS_OK;
}

/* A tower config's integer as transformers' getattr would give it for a
 * config class kvsim does not read: the value written, or dflt (a value
 * of another type is left to the model's own reader). */
static uint32_t attr_or(const cfg *sub, const char *key, uint32_t dflt)
{
	json_t *x = cfg_get(sub, key);
	if (!json_is_integer(x) || json_integer_value(x) < 0 ||
	    json_integer_value(x) > (json_int_t)(1u << 20))
		return dflt;
	return (uint32_t)json_integer_value(x);
}

/* The towers of a multimodal config into m->vision_params (and
 * m->vision_unread), read once the text model's shape is. */
static kvs_status parse_vision(const cfg *c, kvs_model *m)
{
	static const struct {
		const char *key, *what;
	} towers[] = { { "vision_config", "vision tower" }, { "audio_config", "audio tower" } };
	const char *top_type = json_string_value(json_object_get(c->root, "model_type"));
	kvs_status st;
	for (size_t i = 0; i < KVS_ARRAY_LEN(towers); i++) {
		json_t *v = json_object_get(c->root, towers[i].key);
		if (!v || json_is_null(v))
			continue;
		if (!json_is_object(v))
			return kvs_fail(KVS_ERR_PARSE, "%s: field '%s': expected an object",
					c->path, towers[i].key);
		char prefix[32];
		snprintf(prefix, sizeof prefix, "%s.", towers[i].key);
		cfg sub = { .path = c->path, .root = v, .text = NULL, .prefix = prefix };
		json_t *jt = json_object_get(v, "model_type");
		if (jt && !json_is_null(jt) && !json_is_string(jt))
			return kvs_fail(KVS_ERR_PARSE, "%s: field '%smodel_type': expected a "
					"string", c->path, prefix);
		const char *type = json_string_value(jt);
		/* Qwen2-VL's, Qwen2.5-VL's and Qwen3-VL's towers: their configs
		 * name the model at the top level (the tower's own model_type,
		 * when written, is the same, or Qwen3-VL's with "_vision") */
		if (i == 0 && !type && type_is(top_type, KEYS("qwen2_vl", "qwen2_5_vl", "qwen3_vl",
							      "qwen3_vl_moe")))
			type = top_type;
		size_t k = 0;
		while (k < KVS_ARRAY_LEN(tower_kinds) && !type_is(type, KEYS(tower_kinds[k].type)))
			k++;
		if (i == 0)   /* SGLang scales its default fraction for any */
			m->vision_profile = (kvs_vision_profile){
				.has_tower = true, .attr_layers = attr_or(&sub, "num_hidden_layers", 24),
				.attr_hidden = attr_or(&sub, "hidden_size", 1024) };
		if (i != 0 || k == KVS_ARRAY_LEN(tower_kinds)) {
			vision_unread(m, towers[i].what, type ? type : "(none given)");
			continue;
		}
		uint64_t tower = 0, proj = 0;
		uint32_t vh = 0;
		kvs_vision_profile vp = { 0 };
		if ((st = tower_kinds[k].count(&sub, &tower, &vh, &vp)))
			return st;
		proj_in pin = { 1, 1, 0, false };
		if (!tower_kinds[k].own_projector) {
			if ((st = projector_fields(c, &sub, top_type, m, &pin)))
				return st;
			if (!projector_params(top_type, type, vh, &pin, m, &proj))
				vision_unread(m, "projector", top_type ? top_type : "(none given)");
		}
		if ((st = item_tokens(c, top_type, type, &pin, &vp)))
			return st;
		vp.has_tower = true;
		m->vision_profile = vp;
		if (tower > UINT64_MAX - proj)
			return kvs_fail(KVS_ERR_OVERFLOW, "%s: the vision tower's parameter "
					"count does not fit in 64 bits", c->path);
		m->vision_params = tower + proj;
	}
	return KVS_OK;
}

/* Parameter count: published (kvsim_num_parameters), or estimated from
 * the shapes. */
static kvs_status parse_params(const cfg *c, kvs_model *m)
{
	kvs_status st;
	uint64_t params = 0, active = 0;
	bool pfound = false, afound = false;
	if ((st = cfg_uint(c, KEYS("kvsim_num_parameters"), false, NULL, 1, UINT64_MAX,
			   &params, &pfound)) ||
	    (st = cfg_uint(c, KEYS("kvsim_num_active_parameters"), false, NULL, 1, UINT64_MAX,
			   &active, &afound)))
		return st;
	const char *why = pfound ? NULL : "needed to count the parameters; or give kvsim_num_parameters";
	bool ifound = false;
	if ((st = cfg_u32(c, KEYS("intermediate_size", "ffn_dim", "n_inner"), false,
			  NULL, 1, &m->intermediate_size, &ifound)) ||
	    (st = cfg_u32(c, KEYS("vocab_size"), !pfound, why, 1, &m->vocab_size, NULL)))
		return st;
	if (!ifound && !pfound && !(m->num_experts && m->moe_intermediate_size &&
				    m->first_dense_layers == 0)) {
		return kvs_fail(KVS_ERR_PARSE, "%s: missing field 'intermediate_size' (%s)",
			        c->path, why);
	}
	if (m->num_experts && !m->moe_intermediate_size)
		m->moe_intermediate_size = m->intermediate_size;
	if (pfound) {
		/* the config's own count holds the tower: its share, at most all */
		m->num_params = params;
		if (m->vision_params > params)
			m->vision_params = params;
		m->num_active_params = afound ? active : params - m->vision_params;
		m->params_from_config = true;
	} else {
		m->num_params = kvs_model_estimate_params(m);
		m->num_active_params = kvs_model_estimate_active_params(m);
		if (m->num_params == UINT64_MAX) {
			return kvs_fail(KVS_ERR_OVERFLOW,
				        "%s: the parameter count does not fit in 64 bits", c->path);
		}
	}
	return KVS_OK;
}

/* Largest config.json read (bytes): real ones are a few KiB. */
#define CONFIG_MAX_BYTES (16u << 20)

kvs_status kvs_model_from_json_file(const char *path, kvs_model *out)
{
	if (!path || !*path)
		return kvs_fail(KVS_ERR_INVALID, "empty config path");
	struct stat sb;
	if (stat(path, &sb) != 0)
		return kvs_fail(KVS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
	if (S_ISDIR(sb.st_mode))
		return kvs_fail(KVS_ERR_IO, "%s: is a directory, expected a config.json file",
				path);
	FILE *f = fopen(path, "rb");
	if (!f)
		return kvs_fail(KVS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
	/* read whole (a FIFO too), up to CONFIG_MAX_BYTES */
	size_t cap = 0, len = 0;
	char *buf = NULL;
	kvs_status st = KVS_OK;
	while (st == KVS_OK) {
		if (len == cap) {
			if (cap >= CONFIG_MAX_BYTES) {
				st = kvs_fail(KVS_ERR_PARSE, "%s: larger than %u MiB: not a "
					      "config.json", path, CONFIG_MAX_BYTES >> 20);
				break;
			}
			if (!KVS_ARRAY_RESERVE(buf, cap, len + 1, 64 * 1024)) {
				st = kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", path);
				break;
			}
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0) {
			if (ferror(f))
				st = kvs_fail(KVS_ERR_IO, "%s: read error: %s", path,
					      strerror(errno));
			break;
		}
	}
	fclose(f);
	if (st == KVS_OK)
		st = kvs_model_from_json_text(path, buf, len, out);
	kvs_free(buf);
	return st;
}

/* The text model type InternVLChatConfig builds from llm_config's first
 * architecture (InternLM2's when it names none); the wrapper's own type
 * (counted Llama-like) for one kvsim has no family for. */
static const char *internvl_llm_type(const cfg *c)
{
	static const struct {
		const char *arch, *type;
	} archs[] = {
		{ "InternLM2ForCausalLM", "internlm2" }, { "Qwen2ForCausalLM", "qwen2" },
		{ "LlamaForCausalLM", "llama" }, { "Phi3ForCausalLM", "phi3" },
		{ "Qwen3ForCausalLM", "qwen3" }, { "Qwen3MoeForCausalLM", "qwen3_moe" },
	};
	json_t *a = c->text ? json_object_get(c->text, "architectures") : NULL;
	const char *arch = json_string_value(json_array_get(a, 0));
	if (!arch)
		return "internlm2";
	for (size_t i = 0; i < KVS_ARRAY_LEN(archs); i++)
		if (strcmp(arch, archs[i].arch) == 0)
			return archs[i].type;
	return "internvl_chat";
}

kvs_status kvs_model_from_json_text(const char *path, const char *data, size_t len,
				    kvs_model *out)
{
	const unsigned char *u = (const unsigned char *)data;
	if (len >= 2 && ((u[0] == 0xff && u[1] == 0xfe) || (u[0] == 0xfe && u[1] == 0xff)))
		return kvs_fail(KVS_ERR_PARSE, "%s: the file is UTF-16 text (byte-order mark "
				"%02X %02X); a config.json is UTF-8: convert it (iconv -f "
				"UTF-16 -t UTF-8)", path, u[0], u[1]);
	/* a UTF-8 byte-order mark (some editors write one) is skipped */
	if (len >= 3 && u[0] == 0xef && u[1] == 0xbb && u[2] == 0xbf) {
		data += 3;
		len -= 3;
	}
	json_error_t jerr;
	json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return kvs_fail(KVS_ERR_PARSE, "%s:%d:%d: %s", path, jerr.line, jerr.column,
				jerr.text);
	kvs_status st = KVS_OK;
	kvs_model m;
	memset(&m, 0, sizeof m);
	cfg c = { .path = path, .root = root, .text = NULL };
	if (!json_is_object(root)) {
		st = kvs_fail(KVS_ERR_PARSE, "%s: expected a JSON object (a config.json)", path);
		goto done;
	}
	/* InternVL's chat configs (internvl_chat) name it llm_config; one
	 * that is not an object is refused, naming it */
	const char *tkey = "text_config";
	json_t *text = json_object_get(root, tkey);
	if (!text || json_is_null(text))
		text = json_object_get(root, tkey = "llm_config");
	if (text && !json_is_null(text) && !json_is_object(text)) {
		st = kvs_fail(KVS_ERR_PARSE, "%s: field '%s': expected an object", path, tkey);
		goto done;
	}
	if (json_is_object(text))
		c.text = text;
	const char *model_type = json_string_value(cfg_get(&c, "model_type"));
	/* the checkpoint's own name: the top level's (a nested section's
	 * names the language model it was trained from) */
	const char *name = json_string_value(json_object_get(root, "_name_or_path"));
	/* a text_config without its model_type (or none at all) is the
	 * wrapper's default language model, as transformers builds it:
	 * LlavaConfig's and LlavaNextConfig's Llama, Mistral3Config's Mistral,
	 * InternVLConfig's Qwen2; InternVL's chat configs name theirs by
	 * llm_config's architectures (InternLM2 when none) */
	if (type_is(model_type, KEYS("llava", "llava_next")))
		model_type = "llama";
	else if (type_is(model_type, KEYS("mistral3")))
		model_type = "mistral";
	else if (type_is(model_type, KEYS("internvl")))
		model_type = "qwen2";
	else if (type_is(model_type, KEYS("internvl_chat")))
		model_type = internvl_llm_type(&c);
	c.defaults = text_defaults(model_type);
	snprintf(m.name, sizeof m.name, "%s", name && *name ? name : path);

	/* the config's sections, in order: each names the file and field it
	 * refuses */
	if ((st = parse_shape(&c, &m)) || (st = parse_dtype(&c, &m)) ||
	    (st = parse_arch(&c, model_type, &m)) || (st = parse_moe(&c, model_type, &m)) ||
	    (st = parse_vision(&c, &m)) || (st = parse_params(&c, &m)) ||
	    (st = parse_wide(&c, &m)))
		goto done;
	if (m.num_active_params > m.num_params)
		m.num_active_params = m.num_params;
	wide_missing(&m);
	*out = m;
done:
	json_decref(c.defaults);
	json_decref(root);
	return st;
}

/* ---- parameter estimate (the helpers are above) ------------------------ */
static uint64_t mlp_params(const kvs_model *m, acc *a, uint64_t inter)
{
	uint64_t h = m->hidden_size;
	acc r = { 0, false };
	if (!inter)
		return 0;
	addmul(&r, m->mlp_plain ? 2 * h : 3 * h, inter);
	if (m->mlp_bias)
		add(&r, (m->mlp_plain ? inter : 2 * inter) + h);
	a->ovf |= r.ovf;
	return r.v;
}

static void estimate(const kvs_model *m, uint64_t *total, uint64_t *active,
		     kvs_param_parts *parts)
{
	if (parts)
		*parts = (kvs_param_parts){ 0, 0, 0, 0, 0 };
	acc t = { 0, false };
	uint64_t h = m->hidden_size, heads = m->num_heads, hd = m->head_dim;
	uint64_t kv = m->num_kv_heads ? m->num_kv_heads : heads;
	uint64_t norm = h * (m->norm_bias ? 2 : 1);

	/* embeddings, LM head, learned positions, final norm */
	uint64_t embed = mul(&t, m->vocab_size, h);
	add(&t, embed);
	if (!m->tie_word_embeddings)
		add(&t, embed);
	addmul(&t, m->learned_positions, h);
	add(&t, norm);

	/* one layer's attention and norms */
	acc l = { 0, false };
	if (m->kv_lora_rank) {
		uint64_t qk = (uint64_t)m->qk_nope_head_dim + m->qk_rope_head_dim;
		if (m->q_lora_rank) {   /* q_a, its norm, q_b */
			addmul(&l, h, m->q_lora_rank);
			add(&l, m->q_lora_rank);
			addmul(&l, m->q_lora_rank, mul(&l, heads, qk));
		} else {
			addmul(&l, h, mul(&l, heads, qk));
		}
		/* kv_a (latent + rope key), its norm, kv_b, o */
		addmul(&l, h, (uint64_t)m->kv_lora_rank + m->qk_rope_head_dim);
		add(&l, m->kv_lora_rank);
		addmul(&l, m->kv_lora_rank,
		       mul(&l, heads, (uint64_t)m->qk_nope_head_dim + m->v_head_dim));
		addmul(&l, heads * m->v_head_dim, h);
	} else {
		addmul(&l, h, heads * hd);       /* q */
		addmul(&l, 2 * h, kv * hd);      /* k, v (kv, hd < 2^32) */
		addmul(&l, heads * hd, h);       /* o */
		if (m->qkv_bias) {
			add(&l, heads * hd);
			addmul(&l, 2, kv * hd);
		}
		if (m->o_bias)
			add(&l, h);
	}
	if (m->qk_norm)
		add(&l, 2 * hd);
	if (parts)
		parts->attn = l.ovf ? UINT64_MAX : l.v;
	addmul(&l, m->norms_per_layer ? m->norms_per_layer : 2, norm);
	uint64_t attn = l.v;
	t.ovf |= l.ovf;

	uint64_t layers = m->num_layers;
	uint64_t moe_layers = kvs_model_moe_layers(m);
	uint64_t dense_layers = layers - moe_layers;
	acc d = { attn, false };
	add(&d, mlp_params(m, &d, m->dense_intermediate_size ? m->dense_intermediate_size
							    : m->intermediate_size));
	t.ovf |= d.ovf;
	addmul(&t, dense_layers, d.v);
	acc a = t;
	if (moe_layers) {
		acc c = { attn, false };     /* attention, shared experts, router */
		uint64_t shared = mlp_params(m, &c, m->shared_expert_intermediate_size);
		add(&c, shared);
		addmul(&c, h, m->num_experts);
		if (parts) {
			parts->shared = shared;
			parts->router = mul(&c, h, m->num_experts);
		}
		uint64_t expert = mlp_params(m, &c, m->moe_intermediate_size);
		acc all = c, act = c;
		addmul(&all, m->num_experts, expert);
		addmul(&act, m->num_experts_per_tok, expert);
		t.ovf |= all.ovf;
		a.ovf |= act.ovf;
		addmul(&t, moe_layers, all.v);
		addmul(&a, moe_layers, act.v);
		if (parts)
			parts->experts = mul(&t, moe_layers, mul(&t, m->num_experts, expert));
	}
	/* the vision tower: in the total, never touched per token */
	uint64_t text = t.v;
	add(&t, m->vision_params);
	*total = t.ovf ? UINT64_MAX : t.v;
	*active = (a.ovf || t.ovf) ? UINT64_MAX : (moe_layers ? a.v : text);
	if (parts)
		parts->total = *total;
}

uint64_t kvs_model_estimate_params(const kvs_model *m)
{
	uint64_t t, a;
	estimate(m, &t, &a, NULL);
	return t;
}

uint64_t kvs_model_estimate_active_params(const kvs_model *m)
{
	uint64_t t, a;
	estimate(m, &t, &a, NULL);
	return a;
}

void kvs_model_param_parts(const kvs_model *m, kvs_param_parts *out)
{
	uint64_t t, a;
	estimate(m, &t, &a, out);
}

void kvs_model_wide_layers(const kvs_model *m, uint32_t *attn, uint32_t *router,
			   uint32_t *shared)
{
	uint32_t moe = kvs_model_moe_layers(m);
	*attn = m->wide_attn_layers < m->num_layers ? m->wide_attn_layers : m->num_layers;
	*router = m->wide_router_layers < moe ? m->wide_router_layers : moe;
	/* shared experts of width 0 are none (mlp_params counts 0 for them) */
	*shared = !m->shared_expert_intermediate_size ? 0
		  : m->wide_shared_layers < moe ? m->wide_shared_layers : moe;
}

uint64_t kvs_model_wide_params(const kvs_model *m)
{
	kvs_param_parts pp;
	kvs_model_param_parts(m, &pp);
	uint32_t na, nr, ns;
	kvs_model_wide_layers(m, &na, &nr, &ns);
	acc w = { 0, false };
	uint64_t emb = mul(&w, m->vocab_size, m->hidden_size);
	add(&w, m->tie_word_embeddings || m->quant_lm_head ? emb : 2 * emb);
	addmul(&w, na, pp.attn);
	addmul(&w, nr, pp.router);
	addmul(&w, ns, pp.shared);
	uint32_t np[KVS_PROJ_COUNT_];
	kvs_model_wide_projs(m, np);
	for (kvs_proj p = 0; p < KVS_PROJ_COUNT_; p++)
		addmul(&w, np[p], kvs_model_proj_params(m, p));
	/* a parameter count below these (a config's own num_parameters) has
	 * them all at the narrow width, as one without them; the vision
	 * tower is apart (vision_wide) */
	uint64_t text = m->num_params > m->vision_params ? m->num_params - m->vision_params : 0;
	return w.ovf || w.v >= text ? 0 : w.v;
}

uint32_t kvs_model_window_layers(const kvs_model *m)
{
	return m->sliding_window && m->num_sliding_layers <= m->num_layers
		? m->num_sliding_layers : 0;
}

uint32_t kvs_model_moe_layers(const kvs_model *m)
{
	if (!m->num_experts)
		return 0;
	uint32_t n = m->moe_layer_step > 1 ? m->num_layers / m->moe_layer_step
		   : m->first_dense_layers < m->num_layers ? m->num_layers - m->first_dense_layers
		   : 0;
	/* less the layers named dense that the layout gives experts */
	for (uint32_t w = 0; w < KVS_DENSE_LAYER_WORDS; w++)
		for (uint64_t b = m->dense_layer_bits[w]; b; b &= b - 1) {
			uint32_t i = 64 * w + (uint32_t)__builtin_ctzll(b);
			n -= i < m->num_layers && layout_is_moe(m, i);
		}
	return n;
}

uint32_t kvs_model_dense_layers(const kvs_model *m)
{
	return m->num_layers - kvs_model_moe_layers(m);
}

void kvs_model_wide_projs(const kvs_model *m, uint32_t out[KVS_PROJ_COUNT_])
{
	uint32_t na, nr, ns;
	kvs_model_wide_layers(m, &na, &nr, &ns);
	uint32_t dense = kvs_model_dense_layers(m);
	for (kvs_proj p = 0; p < KVS_PROJ_COUNT_; p++) {
		/* q, k, v, o in the layers whose attention is not kept whole:
		 * every layer's are the rest, named ones exclude them already */
		uint32_t n = m->wide_proj_layers[p];
		uint32_t max = p <= KVS_PROJ_O ? m->num_layers - na : dense;
		out[p] = n < max ? n : max;
	}
}

uint64_t kvs_model_proj_params(const kvs_model *m, kvs_proj p)
{
	acc a = { 0, false };
	uint64_t h = m->hidden_size, q = (uint64_t)m->num_heads * m->head_dim;
	uint64_t kv = (uint64_t)(m->num_kv_heads ? m->num_kv_heads : m->num_heads) * m->head_dim;
	uint64_t inter = m->dense_intermediate_size ? m->dense_intermediate_size
						     : m->intermediate_size;
	if (p <= KVS_PROJ_O && m->kv_lora_rank)
		return 0;   /* MLA's projections have other shapes */
	switch (p) {
	case KVS_PROJ_Q:
	case KVS_PROJ_O:
		addmul(&a, h, q);
		add(&a, p == KVS_PROJ_Q ? (m->qkv_bias ? q : 0) : (m->o_bias ? h : 0));
		break;
	case KVS_PROJ_K:
	case KVS_PROJ_V:
		addmul(&a, h, kv);
		add(&a, m->qkv_bias ? kv : 0);
		break;
	case KVS_PROJ_GATE:
	case KVS_PROJ_UP:
		if (p == KVS_PROJ_GATE && m->mlp_plain)
			return 0;
		addmul(&a, h, inter);
		add(&a, m->mlp_bias ? inter : 0);
		break;
	case KVS_PROJ_DOWN:
		addmul(&a, inter, h);
		add(&a, m->mlp_bias ? h : 0);
		break;
	default:
		return 0;
	}
	return a.ovf ? UINT64_MAX : a.v;
}
