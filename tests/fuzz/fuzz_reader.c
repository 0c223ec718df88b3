/*
 * fuzz_reader.c - libFuzzer harness for the trace readers, built once per
 * format by run.sh with -DFUZZ_FORMAT=KVS_TRACE_... (KVS_TRACE_AUTO
 * exercises detection).  The first input byte picks reader options, the
 * rest is the file.  Checks: no crash, no sanitizer report, the counters
 * add up, and every yielded request is well formed.
 */
#include "trace_internal.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef FUZZ_FORMAT
#define FUZZ_FORMAT KVS_TRACE_AUTO
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t ctl = data[0];
	data++;
	size--;
	FILE *f = fmemopen((void *)data, size, "rb");
	if (!f)
		return 0;
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.format = FUZZ_FORMAT;
	o.skip_bad_lines = ctl & 1;
	o.sort_window = (ctl >> 1) & 3;
	o.block_size = (ctl & 8) ? 16 : 0;
	o.max_model_len = (ctl & 16) ? 1000 : 0;
	o.overlong = (ctl & 32) ? KVS_OVERLONG_TRUNCATE : KVS_OVERLONG_REJECT;
	o.limit = (ctl & 64) ? 5 : 0;
	o.skip_failed = !(ctl & 128);
	kvs_trace *t;
	if (kvs_trace_open_stream(f, "fuzz", &o, &t) == KVS_OK) {
		kvs_request r;
		kvs_status st;
		uint64_t n = 0;
		while ((st = kvs_trace_next(t, &r)) == KVS_OK) {
			kvs_require(r.index == n);
			kvs_require(r.prompt_tokens >= 1);
			kvs_require(r.num_samples >= 1);
			kvs_require(r.arrival_s >= 0);
			kvs_require(r.hash_block_tokens == 0 || r.hash_block_tokens >= 1);
			kvs_require(r.hash_block_tokens == 0 ||
				    (uint64_t)r.num_hash_ids * r.hash_block_tokens <= r.prompt_tokens);
			kvs_require(!o.max_model_len || o.overlong != KVS_OVERLONG_TRUNCATE ||
				    (uint64_t)r.prompt_tokens + r.output_tokens <= o.max_model_len);
			for (uint32_t i = 0; i < r.num_hash_ids; i++)
				(void)r.hash_ids[i];
			n++;
		}
		const kvs_trace_stats *s = kvs_trace_get_stats(t);
		kvs_require(kvs_trace_stats_balanced(s));
		kvs_require(s->requests == n);
		kvs_require(st == KVS_END || kvs_last_error()[0] != '\0');
		kvs_trace_close(t);
	}
	fclose(f);
	return 0;
}
