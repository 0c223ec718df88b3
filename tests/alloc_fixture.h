/*
 * alloc_fixture.h - helpers the allocator tests share (test_allocator.c,
 * test_contiguous.c, test_vattention.c): creation checked by the
 * validator, a sequence descriptor, an admission that must succeed with
 * nothing cached, and the six-part memory accounting checked part by part.
 * Each runs kvs_alloc_is_valid() after the operation it performs.
 */
#ifndef KVSIM_TEST_ALLOC_FIXTURE_H
#define KVSIM_TEST_ALLOC_FIXTURE_H

#include "test_util.h"
#include "kvsim/alloc.h"

static inline kvs_alloc *fx_make(const kvs_alloc_config *c)
{
	kvs_alloc *a = NULL;
	assert_int_equal(kvs_alloc_create(c, &a), KVS_OK);
	assert_non_null(a);
	assert_true(kvs_alloc_is_valid(a));
	return a;
}

static inline kvs_seq_desc fx_desc(kvs_seq_id id, uint32_t prompt, uint32_t output)
{
	kvs_seq_desc d = { .seq = id, .prompt_tokens = prompt,
			   .output_tokens = output };
	return d;
}

/* Admitted, no prefix-cache hit, no tokens stored yet. */
static inline void fx_admit_ok(kvs_alloc *a, kvs_seq_id id, uint32_t prompt,
			       uint32_t output)
{
	kvs_seq_desc d = fx_desc(id, prompt, output);
	uint32_t cached = 99;
	assert_int_equal(kvs_alloc_admit(a, &d, &cached), KVS_OK);
	assert_int_equal(cached, 0);
	assert_int_equal(kvs_alloc_len(a, id), 0);
	assert_true(kvs_alloc_is_valid(a));
}

/* Every part of kvs_alloc_account(a, next) in bytes, and the parts sum to
 * budget. */
static inline void fx_expect_parts(const kvs_alloc *a, const kvs_seq_desc *next,
				   uint64_t budget, uint64_t tok, uint64_t res,
				   uint64_t internal, uint64_t ext, uint64_t cached,
				   uint64_t free_b)
{
	kvs_mem_parts m;
	kvs_alloc_account(a, next, &m);
	assert_int_equal(m.token_states, tok);
	assert_int_equal(m.reservation, res);
	assert_int_equal(m.internal_frag, internal);
	assert_int_equal(m.external_frag, ext);
	assert_int_equal(m.cached_idle, cached);
	assert_int_equal(m.free, free_b);
	assert_int_equal(m.token_states + m.reservation + m.internal_frag +
			 m.external_frag + m.cached_idle + m.free, budget);
}

#endif
