/*
 * sweep_internal.h - private pieces shared by the sweep's files: the
 * workload summary the kernel model reads, and the result object.
 */
#ifndef KVSIM_SWEEP_INTERNAL_H
#define KVSIM_SWEEP_INTERNAL_H

#include "kvsim/sweep.h"
#include "kvsim/model.h"

/* What the kernel model needs of a request set, computed once per sweep. */
typedef struct kvs_sweep_workload {
	const kvs_request_set *set;
	double decode_steps;        /* sequence-steps of decode in the trace */
	double context_sum;         /* tokens read over those steps */
	double mean_context;        /* context_sum / decode_steps */
	uint32_t hash_block_tokens; /* granularity of the hash ids (0: none) */
	bool prompts_only;          /* no request decodes: prompts stand in */
} kvs_sweep_workload;

void kvs_sweep_workload_init(kvs_sweep_workload *w, const kvs_request_set *set);
kvs_status kvs_sweep_kernel_ws(const kvs_sweep_config *c, const kvs_sweep_workload *w,
			       kvs_policy policy, uint32_t b, kvs_sweep_kernel *out);
/* Fold the relative kernel cost into sc's step-time model: its KV-read
 * factor is multiplied by rel (when c->kernel_feeds_step_time). */
kvs_status kvs_sweep_apply_kernel(const kvs_sweep_config *c, double rel,
				  kvs_sim_config *sc);

struct kvs_sweep_result {
	kvs_sweep_config cfg;
	kvs_sweep_row *rows;             /* npolicies x nblock_sizes, policy-major */
	size_t nrows;
	kvs_sweep_capacity *caps;        /* same order, when searched */
	size_t ncaps;
	kvs_sweep_recommendation rec[KVS_OBJ_COUNT_];
	uint64_t simulations;
	double mean_context;
	double base_rate;                /* trace's mean rate at cfg.time_scale */
	uint32_t hash_block_tokens;
};

kvs_status kvs_sweep_recommend(kvs_sweep_result *r);

#endif
