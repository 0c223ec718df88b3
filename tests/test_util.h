/*
 * test_util.h - helpers shared by the cmocka tests: locating the source
 * tree, the shared public traces (tests skip when absent), temp files.
 */
#ifndef KVSIM_TEST_UTIL_H
#define KVSIM_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* Exit code meson (and automake) read as "skipped". */
#define KVS_TEST_SKIP 77

/* Absolute path of a file in the source tree (KVS_SOURCE_ROOT). Static
 * buffer, rotating among 4. */
const char *kvs_test_src(const char *rel);

/* Path of a shared public trace ("azure-2023/conv.csv"), or NULL when the
 * shared traces are absent (the caller skips). */
const char *kvs_test_shared_trace(const char *rel);

/* Write text to a fresh temp file; returns its path (static, rotating). */
const char *kvs_test_write_tmp(const char *name, const char *text);

/* KVS_TEST_SCALE (default 1; CI sets 0.1 under sanitizers) for sizing
 * randomised or replay-heavy tests; clamped to (0, 1]. */
double kvs_test_scale(void);

/* n scaled by kvs_test_scale(), at least lo. */
unsigned long kvs_test_scaled(unsigned long n, unsigned long lo);

/* *d: the deployment defaults of a model preset on a GPU preset; a preset
 * that does not load fails the test. */
struct kvs_deploy;
void kvs_test_deploy(struct kvs_deploy *d, const char *model, const char *gpu);

#endif
