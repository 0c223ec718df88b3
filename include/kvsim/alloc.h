/*
 * kvsim/alloc.h - one KV-memory allocator interface, many policies.
 *
 * The simulator, the sweep and the tests drive every policy through the
 * functions below.  What they need to know about a policy (does a fork copy
 * memory, does it depend on the block size, does it read prefix hashes, is
 * it a bound rather than a deployable scheme, which decode kernel reads its
 * KV) they ask the policy registry for as traits (kvs_policy_info below);
 * no module outside allocator/ compares policy identities:
 *
 *   paged       fixed-size blocks from a pool (vLLM PagedAttention), with
 *               prefix caching, copy-on-write fork and swap to host;
 *   max         contiguous region of max_model_len tokens per request;
 *   pow2        contiguous region of prompt + next power of two >= output;
 *   oracle      contiguous region of exactly prompt + output;
 *   vattention  virtually contiguous, backed on demand by physical pages of
 *               page_bytes, separately for each K and V tensor of each layer.
 *
 * Vocabulary.  A sequence is registered by kvs_alloc_admit() and has a
 * length `len`: tokens whose KV is stored.  kvs_alloc_grow() adds tokens
 * (a prefill chunk or decoded tokens).  The simulator knows each request's
 * true final length (prompt + output); the accounting uses it to split held
 * memory into reservation (slots below the final length not yet written) and
 * internal fragmentation (slots at or past the final length: never used).
 *
 * Memory accounting (kvs_alloc_account): six parts, in bytes, that sum to
 * budget_bytes exactly at every instant:
 *   token_states   KV stored for tokens already processed (len)
 *   reservation    held for tokens the sequence will still produce
 *   internal_frag  held but never to be used (over-reservation, tails of
 *                  last blocks or pages, budget not divisible into blocks)
 *   external_frag  free, but in holes too small for the next waiting request
 *   cached_idle    prefix-cache blocks no sequence holds (evictable)
 *   free           the rest
 * docs/MEMORY-ACCOUNTING.md gives the exact definitions per policy.
 *
 * Errors.  Misuse (unknown or duplicate sequence, double release, growing
 * past max_model_len) returns an error status and leaves the state as it
 * was.  Lack of memory is the normal result KVS_ERR_NOSPACE, on which the
 * caller preempts or waits.  Statuses: KVS_ERR_STATE for an unknown
 * sequence (including a second release), a duplicate admit or fork target,
 * and an operation on a swapped-out sequence that needs it resident;
 * KVS_ERR_LIMIT for a length past max_model_len, or an admit that can
 * never fit (verdict NEVER); KVS_ERR_INVALID for a malformed description;
 * KVS_ERR_UNSUPPORTED for an operation the policy does not offer (swap,
 * block tables outside paged).  Growing by 0 tokens is a no-op.
 *
 * Cost.  Sequence lookup is O(1) (hash map).  grow within a block/page/
 * region is a few adds; kvs_alloc_account is O(1) for paged and vattention
 * (running totals; O(sequences) while forked sequences share a partly
 * filled block) and O(holes) for the contiguous policies (external
 * fragmentation depends on the waiting request).
 */
#ifndef KVSIM_ALLOC_H
#define KVSIM_ALLOC_H

#include "kvsim/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A physical block is an integer id, never a pointer. */
typedef uint32_t kvs_block_id;
#define KVS_BLOCK_NONE UINT32_MAX

typedef uint64_t kvs_seq_id;

/* A policy is an index into the policy registry (allocator/registry.c).
 * The built-in policies have fixed ids; kvs_policy_register() appends
 * more, up to KVS_POLICY_CAP in all. */
typedef enum kvs_policy {
	KVS_POLICY_PAGED = 0,
	KVS_POLICY_MAX,
	KVS_POLICY_POW2,
	KVS_POLICY_ORACLE,
	KVS_POLICY_VATTENTION,
	KVS_POLICY_COUNT_            /* built-in policies */
} kvs_policy;

#define KVS_POLICY_CAP 16        /* registered policies at most */

/* Traits: what the rest of kvsim may ask about a policy. */
enum {
	/* a fork copies the prompt's KV into memory of the child's own,
	 * reserved with the parent's at admission (else blocks are shared
	 * copy-on-write) */
	KVS_TRAIT_FORKS_BY_COPY = 1u << 0,
	/* allocation and decode kernel depend on the block size: a sweep
	 * runs it at every block size and recommends one */
	KVS_TRAIT_BLOCK_GRANULAR = 1u << 1,
	/* reads the prompt's prefix hashes (prefix caching) */
	KVS_TRAIT_PREFIX_HASHES = 1u << 2,
	/* knows what a real engine cannot (each output length): a bound to
	 * compare against, never recommended */
	KVS_TRAIT_BOUND = 1u << 3,
	/* the reference the compare ratios are taken against */
	KVS_TRAIT_BASELINE = 1u << 4,
	/* one contiguous region per sequence in a shared arena, placed by
	 * first fit, best fit or buddy (--placement, --best-fit) */
	KVS_TRAIT_PLACEMENT = 1u << 5,
};

/* Which decode-attention kernel reads a policy's KV. */
typedef enum kvs_policy_kernel {
	KVS_KERNEL_READ_CONTIGUOUS = 0, /* one contiguous region per sequence */
	KVS_KERNEL_READ_PAGED,          /* through a block table, block_size tokens a block */
} kvs_policy_kernel;

struct kvs_alloc_methods;               /* allocator/alloc_internal.h */

/* One registry row. */
typedef struct kvs_policy_info {
	const char *name;               /* "paged": JSON keys, CSV, flags */
	const char *aliases;            /* other accepted spellings, comma-separated, or NULL */
	const char *help;               /* one line for --help */
	unsigned traits;                /* KVS_TRAIT_* */
	kvs_policy_kernel kernel;
	uint32_t color;                 /* 0xRRGGBB in report figures */
	const struct kvs_alloc_methods *methods;
} kvs_policy_info;

/* Number of registered policies; ids run from 0 to this - 1. */
size_t kvs_policy_count(void);
/* The row of policy p, or NULL when p is not registered.  O(1). */
const kvs_policy_info *kvs_policy_get(kvs_policy p);
/* Whether p has every trait in `traits` (false when p is unknown). */
bool kvs_policy_has(kvs_policy p, unsigned traits);
/* Append a row (copied by pointer: it must outlive the process's use of
 * kvsim).  KVS_ERR_INVALID for a missing name or methods, a name or alias
 * already taken; KVS_ERR_LIMIT past KVS_POLICY_CAP.  Not thread-safe:
 * register before starting simulations. */
kvs_status kvs_policy_register(const kvs_policy_info *info, kvs_policy *out);

const char *kvs_policy_name(kvs_policy p);                 /* "paged", ... */
/* A name or alias, case-insensitive. */
kvs_status kvs_policy_parse(const char *text, kvs_policy *out);
/* A comma-separated list into out[0..*n) (at most cap): an unknown name or
 * one given twice is KVS_ERR_INVALID naming it and the known policies;
 * an empty list too.  out is untouched on failure. */
kvs_status kvs_policy_parse_list(const char *text, kvs_policy *out, size_t cap,
				 size_t *n);
/* The registered names joined by sep ("paged, max, ..."), or with " or "
 * before the last when last_or is set; returns the length it needed
 * (snprintf-like). */
size_t kvs_policy_names(char *buf, size_t size, const char *sep, bool last_or);
/* The first registered policy with the BASELINE trait among ps[0..n), or
 * -1 when none is. */
int kvs_policy_baseline_index(const kvs_policy *ps, size_t n);

/* ---- KV offload tiers (paged with prefix caching; allocator/offload.c) -----
 * Prefix-cache blocks evicted from the device go to a host tier, and those
 * the host tier evicts to a disk tier when there is one (LMCache's local CPU
 * and disk backends, Dynamo's KV block manager).  A later admission whose
 * device prefix hit ends continues matching its block hashes in the tiers;
 * the blocks it finds are allocated on the device and loaded back at the
 * tier's bandwidth.  Sizes and bandwidths are per rank, as swap_bytes. */
typedef enum kvs_offload_kind {
	KVS_OFFLOAD_HOST = 0,
	KVS_OFFLOAD_DISK,
	KVS_OFFLOAD_KINDS_
} kvs_offload_kind;

typedef struct kvs_offload_config {
	struct {
		uint64_t bytes;        /* capacity per rank; 0 = no such tier */
		double bytes_per_s;    /* load bandwidth per rank (> 0 when bytes > 0) */
	} tier[KVS_OFFLOAD_KINDS_];
} kvs_offload_config;

typedef struct kvs_offload_tier_stats {
	uint64_t capacity_blocks, capacity_bytes;
	double bytes_per_s;           /* load bandwidth */
	uint64_t resident_blocks;     /* hashes held now */
	uint64_t hit_blocks;          /* prefix blocks loaded back from the tier */
	uint64_t load_bytes;          /* hit_blocks x block bytes */
	double load_s;                /* load_bytes / bandwidth */
	uint64_t store_blocks, store_bytes; /* blocks written into the tier */
	uint64_t evicted_blocks;      /* left for room: to the next tier, or dropped */
	uint64_t promoted_blocks;     /* left because stored again in a higher tier */
} kvs_offload_tier_stats;         /* store = resident + evicted + promoted */

typedef struct kvs_offload_stats {
	kvs_offload_tier_stats tier[KVS_OFFLOAD_KINDS_];   /* by kind */
} kvs_offload_stats;

/* "host", "disk" */
const char *kvs_offload_kind_name(kvs_offload_kind k);

typedef struct kvs_alloc_config {
	kvs_policy policy;
	uint64_t budget_bytes;        /* KV memory of one rank */
	uint64_t kv_bytes_per_token;  /* per rank */
	uint32_t block_size;          /* tokens per block (paged; 16) */
	uint32_t max_model_len;       /* tokens; no sequence grows past it */
	double watermark;             /* share of blocks kept free at admission (0.01) */
	bool enable_prefix_caching;   /* paged only */
	uint64_t swap_bytes;          /* host swap space in bytes (0 = none) */
	bool best_fit;                /* contiguous placement: best instead of first fit */
	uint64_t page_bytes;          /* vattention physical page (2 MiB; 64 KiB..2 MiB) */
	uint32_t num_kv_tensors;      /* vattention: 2 x layers on this rank */
	bool buddy;                   /* contiguous placement: binary buddy (regions
				       * rounded up to 2^k tokens, aligned to their
				       * size), as the PagedAttention paper's Orca
				       * baselines; overrides best_fit */
	kvs_offload_config offload;   /* paged with prefix caching; zero = none */
	/* Windowed layers (sliding-window or chunked attention) beside the
	 * full-attention ones that kv_bytes_per_token counts, as vLLM's
	 * hybrid allocator keeps them: each sequence also holds, from
	 * admission to release, what its windowed layers hold at most over
	 * its life, in the policy's unit, window_num / window_den of that
	 * unit per unit of the full layers (the windowed layer groups over
	 * the full ones): paged, the blocks a window of window_tokens
	 * straddles (window_chunked: an aligned chunk), at most the blocks of
	 * its final length; contiguous, min(region, window_tokens) tokens;
	 * vattention, the page groups of min(final length, window_tokens)
	 * tokens.  They count as token states.  0 = no windowed layers. */
	uint32_t window_tokens;
	uint32_t window_num, window_den;
	bool window_chunked;
} kvs_alloc_config;

/* Defaults: paged, block 16, watermark 0.01, no prefix caching, no swap,
 * first fit, 2 MiB pages, 64 tensors.  budget, bytes per token and
 * max_model_len must still be set. */
void kvs_alloc_config_defaults(kvs_alloc_config *cfg);

/* What the allocator needs to know about a sequence. */
typedef struct kvs_seq_desc {
	kvs_seq_id seq;
	uint32_t prompt_tokens;       /* tokens to prefill (for a recomputed
	                               * sequence: prompt + tokens generated so far) */
	uint32_t output_tokens;       /* tokens still to generate (true length) */
	const uint64_t *block_hashes; /* chained hashes of the prompt's full blocks
	                               * at this block size, or NULL */
	uint32_t num_block_hashes;
} kvs_seq_desc;

typedef enum kvs_admit_verdict {
	KVS_ADMIT_NOW = 0,   /* fits now */
	KVS_ADMIT_LATER,     /* fits once memory is freed */
	KVS_ADMIT_NEVER,     /* can never fit: reject */
} kvs_admit_verdict;

typedef enum kvs_admit_reason {
	KVS_REASON_NONE = 0,
	KVS_REASON_NO_FREE_BLOCKS,     /* LATER: not enough free blocks/pages */
	KVS_REASON_WATERMARK,          /* LATER: would dip below the watermark */
	KVS_REASON_NO_HOLE,            /* LATER: enough free bytes, no hole big enough */
	KVS_REASON_NO_FREE_BYTES,      /* LATER: not enough free bytes */
	KVS_REASON_EXCEEDS_MAX_LEN,    /* NEVER: prompt + output > max_model_len */
	KVS_REASON_EXCEEDS_BUDGET,     /* NEVER: larger than the whole KV budget */
	KVS_REASON_COUNT_
} kvs_admit_reason;

/* Stable snake_case name ("exceeds_max_model_len") and a sentence. */
const char *kvs_admit_reason_name(kvs_admit_reason r);
const char *kvs_admit_reason_text(kvs_admit_reason r);

typedef struct kvs_block_copy {
	kvs_block_id src;
	kvs_block_id dst;
} kvs_block_copy;

typedef struct kvs_mem_parts {          /* bytes; the six sum to budget_bytes */
	uint64_t token_states;
	uint64_t reservation;
	uint64_t internal_frag;
	uint64_t external_frag;
	uint64_t cached_idle;
	uint64_t free;
} kvs_mem_parts;

typedef struct kvs_alloc_stats {
	uint64_t prefix_hit_blocks, prefix_miss_blocks;
	uint64_t prefix_hit_tokens, prefix_miss_tokens;
	uint64_t evictions;             /* cached blocks whose hash was dropped */
	uint64_t cow_copies;
	uint64_t swap_out_blocks, swap_in_blocks;
	uint64_t metadata_bytes;        /* allocator bookkeeping (block tables, ...) */
	uint64_t block_metadata_bytes;  /* of which per-block pool bookkeeping
	                                 * (block array, prefix index, host pool) */
	uint64_t copy_bytes;            /* device bytes copied: copy-on-write
	                                 * blocks, contiguous/vattention forks */
	uint64_t swap_out_bytes, swap_in_bytes; /* host<->device traffic */
	/* paged prefix index work by the mutating calls (admission lookups,
	 * registrations of full blocks, evictions): operations, and index
	 * slots examined by them (1 per operation when nothing collides).
	 * Deterministic; probes / ops stays near 1.5-2.5 at the index's load
	 * of at most 1/2 whatever the hash keys (raw trace ids included). */
	uint64_t prefix_index_ops, prefix_index_probes;
} kvs_alloc_stats;

typedef struct kvs_alloc kvs_alloc;

kvs_status kvs_alloc_create(const kvs_alloc_config *cfg, kvs_alloc **out);
void kvs_alloc_destroy(kvs_alloc *a);
const kvs_alloc_config *kvs_alloc_get_config(const kvs_alloc *a);

/* Would `d` fit now, later, or never?  *why (may be NULL) says why not. */
kvs_admit_verdict kvs_alloc_can_admit(const kvs_alloc *a,
				      const kvs_seq_desc *d,
				      kvs_admit_reason *why);

/* Register d->seq and take its memory per policy: paged allocates the
 * prompt's blocks (reusing cached prefix blocks), contiguous policies reserve
 * their region, vattention maps the prompt's pages.  *cached_tokens (may be
 * NULL) receives the prompt tokens found in the prefix cache, which count as
 * already stored (len starts there).  KVS_ERR_NOSPACE if it does not fit. */
kvs_status kvs_alloc_admit(kvs_alloc *a, const kvs_seq_desc *d,
			   uint32_t *cached_tokens);

/* n more tokens of seq are now stored.  May allocate (paged, vattention);
 * KVS_ERR_NOSPACE leaves everything unchanged.  If the last block is shared,
 * copy-on-write happens and the copies are returned through *copies / *ncopies
 * (both may be NULL; the array stays valid until the next call). */
kvs_status kvs_alloc_grow(kvs_alloc *a, kvs_seq_id seq, uint32_t n,
			  const kvs_block_copy **copies, size_t *ncopies);

/* Tokens seq can still grow by without new memory (simulator fast path:
 * the next allocation happens after this many more tokens). */
uint32_t kvs_alloc_room(const kvs_alloc *a, kvs_seq_id seq);

/* Current length (stored tokens) of seq, 0 if unknown. */
uint32_t kvs_alloc_len(const kvs_alloc *a, kvs_seq_id seq);

/* Release everything seq holds (finished, or preempted by recompute). */
kvs_status kvs_alloc_release(kvs_alloc *a, kvs_seq_id seq);

/* child shares parent's memory (parallel sampling, beam search); needs the
 * child's own output length for accounting.  Paged: refcounts, no copy.
 * Contiguous policies reserve a new region and report the copy. */
kvs_status kvs_alloc_fork(kvs_alloc *a, kvs_seq_id parent, kvs_seq_id child,
			  uint32_t child_output_tokens);

/* Swap seq's blocks to the host pool and back; the mappings to copy are
 * returned (device->host for swap_out, host->device for swap_in).
 * KVS_ERR_NOSPACE when the other side has no room. */
kvs_status kvs_alloc_swap_out(kvs_alloc *a, kvs_seq_id seq,
			      const kvs_block_copy **copies, size_t *ncopies);
kvs_status kvs_alloc_swap_in(kvs_alloc *a, kvs_seq_id seq,
			     const kvs_block_copy **copies, size_t *ncopies);
bool kvs_alloc_can_swap_in(const kvs_alloc *a, kvs_seq_id seq);

/* Device blocks swapping seq in takes (its blocks and its windowed layers'
 * ones); 0 unless seq is swapped out (paged). */
uint64_t kvs_alloc_swap_in_blocks(const kvs_alloc *a, kvs_seq_id seq);
/* Bytes of windowed-layer KV a sequence of len tokens holds (the windowed
 * groups' share of min(len, window_tokens) tokens): what a swap or a fork
 * moves beside its full-attention KV.  0 without windows.  O(1). */
uint64_t kvs_alloc_window_bytes(const kvs_alloc *a, uint32_t len);

/* Split the budget into the six parts now.  `next` (may be NULL) is the
 * request at the head of the waiting queue: free memory in holes too small
 * for it counts as external fragmentation. */
void kvs_alloc_account(const kvs_alloc *a, const kvs_seq_desc *next,
		       kvs_mem_parts *out);

void kvs_alloc_get_stats(const kvs_alloc *a, kvs_alloc_stats *out);

/* Sequences registered now (resident + swapped out). */
uint32_t kvs_alloc_num_seqs(const kvs_alloc *a);

/* True while seq's KV sits in the host swap pool. */
bool kvs_alloc_is_swapped(const kvs_alloc *a, kvs_seq_id seq);

/* Full consistency check (expensive; tests call it after each operation). */
bool kvs_alloc_is_valid(const kvs_alloc *a);

/* ---- paged-only views (KVS_ERR_UNSUPPORTED for other policies) ---------- */

/* Block table of seq: *ids[i] is the physical block of logical block i. */
kvs_status kvs_alloc_block_table(const kvs_alloc *a, kvs_seq_id seq,
				 const kvs_block_id **ids, uint32_t *n);
/* Entries seq's block table holds before its buffer grows (the allocator
 * metadata counts them); 0 for an unknown sequence.  A released sequence's
 * buffer is kept for the next one admitted, so a table may hold more
 * entries than its own lengths ever needed.  Other policies: 0.  O(1). */
uint32_t kvs_alloc_table_capacity(const kvs_alloc *a, kvs_seq_id seq);
/* Slot of token position pos: block_id * block_size + offset. */
kvs_status kvs_alloc_slot(const kvs_alloc *a, kvs_seq_id seq, uint32_t pos,
			  uint64_t *slot);
/* Blocks in the pool, blocks free now (including cached-idle ones).
 * vattention answers in page groups (one physical page per K/V tensor, the
 * unit it maps); max / pow2 / oracle answer 0. */
uint64_t kvs_alloc_num_blocks(const kvs_alloc *a);
uint64_t kvs_alloc_free_blocks(const kvs_alloc *a);
/* Raw access to the block pool, as vLLM's get_new_blocks / free_blocks:
 * take n fresh blocks outside any sequence (they count as owned and hold no
 * tokens: internal fragmentation until given back; cached-idle blocks are
 * evicted if the free ones run out) and give them back.  For scratch blocks
 * of kernel tests, and for benchmarks of the pool itself.  take: NOSPACE if
 * fewer than n are free; give: KVS_ERR_STATE (and no change) if an id was
 * not taken or appears twice.  Cost: O(n), a stack pop / push per block. */
kvs_status kvs_alloc_blocks_take(kvs_alloc *a, uint32_t n, kvs_block_id *ids);
kvs_status kvs_alloc_blocks_give(kvs_alloc *a, uint32_t n,
				 const kvs_block_id *ids);
/* kvs_alloc_blocks_give(a, m, ids) then kvs_alloc_grow(a, seq, n) with no
 * copies expected, in one step: when the grow needs exactly m new blocks
 * (and nothing is shared), the m taken blocks go straight into seq's
 * table, last one first, as the give and the grow would place them, with
 * no trip through the free stack.  Errors as those two calls (a refused
 * give changes nothing).  Cost: O(m). */
kvs_status kvs_alloc_grow_taken(kvs_alloc *a, kvs_seq_id seq, uint32_t n,
				uint32_t m, const kvs_block_id *ids);

/* ---- block pool fast path ------------------------------------------------
 * The paged allocator's device block pool, for callers that take and give
 * single blocks at a high rate (an engine's own block manager, kernel
 * scratch, benchmarks).  kvs_block_pool_take1 / give1 mean exactly what
 * kvs_alloc_blocks_take / give mean for n = 1, but they are inline: a pop
 * or push on the free-id stack, with one unlikely branch to a non-inlined
 * slow path (eviction of the least recently released cached-idle block when
 * the free stack is empty, the exhausted pool, a block that was not taken).
 *
 * A block that belongs to the pool (free, or taken through it) carries the
 * pool tag and its last position on the free stack in its state word; it
 * is free exactly when that position is below the stack top and holds its
 * id (the sparse-set membership test).  So a take is one store (the top),
 * and a give, which must tell a taken block from a free one (given twice)
 * or one a sequence holds, three (state word, stack slot, top), or only
 * the top when the block goes back to the position it was taken from and
 * that slot still holds it (nothing pushed since): then the next take reads
 * a slot no pending store writes.  A pair costs about 1.4 ns on an AMD
 * EPYC, against about 7 ns for malloc(64) + free through jemalloc.
 *
 * The struct body is visible only so that these two inline; it belongs to
 * the allocator: never read or write its fields.  The pool lives as long
 * as its allocator; blocks taken through it and through
 * kvs_alloc_blocks_take are the same kind and may be given back either
 * way. */
typedef struct kvs_block_pool {
	kvs_block_id *free_ids_;  /* [nblocks + 1] free-id stack, top at nfree_ - 1 */
	uint32_t *state_;         /* [nblocks + 1] state word per block */
	uint32_t nfree_;          /* blocks on the free stack */
	uint32_t nblocks_;        /* blocks in the pool */
} kvs_block_pool;

/* State word of a block that belongs to the pool: this tag | position. */
#define KVS_BLOCK_POOL_TAG_ (1u << 31)

/* The pool of a paged allocator; NULL (with KVS_ERR_UNSUPPORTED recorded)
 * for other policies.  The first call costs O(free blocks): from then on
 * the allocator keeps every free block's state word exact for the inline
 * calls below (until then, without prefix caching, a release leaves them
 * to be written when the blocks are taken again). */
kvs_block_pool *kvs_alloc_block_pool(kvs_alloc *a);

/* Slow paths of the two below; call those instead. */
kvs_block_id kvs_block_pool_take_slow(kvs_block_pool *pool);
kvs_status kvs_block_pool_give_fail(kvs_block_pool *pool, kvs_block_id id);

/* One fresh block, owned by the caller until given back (it counts as
 * internal fragmentation meanwhile), or KVS_BLOCK_NONE when no block is
 * free or cached-idle (exhaustion is a normal result; a message is
 * recorded).  O(1). */
static inline kvs_block_id kvs_block_pool_take1(kvs_block_pool *pool)
{
	uint32_t top = pool->nfree_;
	if (KVS_UNLIKELY(top == 0))
		return kvs_block_pool_take_slow(pool);
	kvs_block_id id = pool->free_ids_[top - 1];
	pool->nfree_ = top - 1;  /* its state word keeps position top - 1 */
	if (id == KVS_BLOCK_NONE)  /* never on the stack: the caller's test */
		__builtin_unreachable();  /* of the result folds away here */
	return id;
}

/* Give back a block taken by kvs_block_pool_take1 or kvs_alloc_blocks_take.
 * KVS_ERR_STATE, and no change, if id was not taken (out of range, free
 * already, or held by a sequence).  O(1). */
static inline kvs_status kvs_block_pool_give1(kvs_block_pool *pool,
					      kvs_block_id id)
{
	/* every field read before the first store, which could otherwise
	 * alias them without strict aliasing */
	kvs_block_id *ids = pool->free_ids_;
	uint32_t *state = pool->state_;
	uint32_t top = pool->nfree_;
	/* Given back to the position it was taken from, which still holds
	 * it: only the top moves.  Slot nblocks_ holds id nblocks_, whose
	 * spare state word never names a position, so a top at nblocks_
	 * fails the second test and no bad id is read past its arrays. */
	if (ids[top] == id && state[id] == (KVS_BLOCK_POOL_TAG_ | top)) {
		pool->nfree_ = top + 1;
		return KVS_OK;
	}
	uint32_t n = pool->nblocks_;
	if (KVS_UNLIKELY(id >= n))
		return kvs_block_pool_give_fail(pool, id);
	uint32_t pos = state[id] ^ KVS_BLOCK_POOL_TAG_;  /* >= 2^31 if not the pool's */
	if (KVS_UNLIKELY(pos >= n || (pos < top && ids[pos] == id)))
		return kvs_block_pool_give_fail(pool, id);
	state[id] = KVS_BLOCK_POOL_TAG_ | top;
	ids[top] = id;
	pool->nfree_ = top + 1;
	return KVS_OK;
}

/* The offload tiers' figures (all zero without tiers).  O(1). */
void kvs_alloc_offload_stats(const kvs_alloc *a, kvs_offload_stats *out);
/* Load time (seconds) of the tier hits admitted since the last call, and
 * reset it: the simulator charges it to the step that schedules those
 * prefills.  0 without tiers.  O(1). */
double kvs_alloc_offload_take_load_s(kvs_alloc *a);

/* Longest cached prefix of the given chained hashes, in blocks; no side
 * effects on the LRU or the counters. */
uint32_t kvs_alloc_prefix_lookup(const kvs_alloc *a, const uint64_t *hashes,
				 uint32_t n);

/* ---- prefix hashes --------------------------------------------------------
 * Chained block hashes as vLLM's prefix cache uses them: a block's hash
 * covers its parent's hash and its own content, so equal hashes mean equal
 * prefixes.  parent is 0 for the first block. */
uint64_t kvs_hash_block_tokens(uint64_t parent, const uint32_t *tokens,
			       uint32_t n);
uint64_t kvs_hash_block_id(uint64_t parent, uint64_t id, uint32_t sub);

#ifdef __cplusplus
}
#endif
#endif /* KVSIM_ALLOC_H */
