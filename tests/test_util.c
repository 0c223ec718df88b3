/* test_util.c - see test_util.h */
#include "test_util.h"
#include "kvsim/kvsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char bufs[4][4096];
static int next_buf;

static char *buf(void)
{
	char *b = bufs[next_buf];
	next_buf = (next_buf + 1) % 4;
	return b;
}

const char *kvs_test_src(const char *rel)
{
	const char *root = getenv("KVS_SOURCE_ROOT");
	char *b = buf();
	snprintf(b, 4096, "%s/%s", root ? root : ".", rel);
	return b;
}

const char *kvs_test_shared_trace(const char *rel)
{
	const char *root = getenv("KVS_SHARED_TRACES");
	const char *src = getenv("KVS_SOURCE_ROOT");
	char *b = buf();
	if (root)
		snprintf(b, 4096, "%s/%s", root, rel);
	else
		snprintf(b, 4096, "%s/../shared/traces/%s", src ? src : ".", rel);
	return access(b, R_OK) == 0 ? b : NULL;
}

const char *kvs_test_write_tmp(const char *name, const char *text)
{
	char *b = buf();
	const char *dir = getenv("TMPDIR");
	snprintf(b, 4096, "%s/kvsim-test-%d-%s", dir ? dir : "/tmp", (int)getpid(), name);
	FILE *f = fopen(b, "wb");
	if (!f)
		return NULL;
	fputs(text, f);
	fclose(f);
	return b;
}

double kvs_test_scale(void)
{
	const char *s = getenv("KVS_TEST_SCALE");
	double v = s ? atof(s) : 1.0;
	if (!(v > 0.0) || v > 1.0)
		v = 1.0;
	return v;
}

unsigned long kvs_test_scaled(unsigned long n, unsigned long lo)
{
	unsigned long v = (unsigned long)((double)n * kvs_test_scale());
	return v < lo ? lo : v;
}

void kvs_test_deploy(kvs_deploy *d, const char *model, const char *gpu)
{
	kvs_model m;
	kvs_gpu g;
	if (kvs_model_load(model, &m) != KVS_OK || kvs_gpu_preset(gpu, &g) != KVS_OK)
		fail_msg("presets %s on %s: %s", model, gpu, kvs_last_error());
	kvs_deploy_defaults(d, &m, &g);
}
