/* test_common.c - status strings, error messages, checked arithmetic. */
#include "test_util.h"
#include "kvsim/common.h"
#include "common/array.h"
#include "common/heap.h"
#include "common/mix.h"
#include "common/num.h"
#include "common/table.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(kvs_strerror(KVS_OK), "ok");
	assert_string_equal(kvs_strerror((kvs_status)999), "unknown status");
	for (int s = 0; s < KVS_STATUS_COUNT_; s++)
		assert_true(strlen(kvs_strerror((kvs_status)s)) > 0);
}

static void test_fail_records_message(void **state)
{
	(void)state;
	kvs_clear_error();
	assert_string_equal(kvs_last_error(), "");
	kvs_status st = kvs_fail(KVS_ERR_PARSE, "%s:%d: %s", "x.csv", 12, "bad");
	assert_int_equal(st, KVS_ERR_PARSE);
	assert_string_equal(kvs_last_error(), "x.csv:12: bad");
}

/* Numbers in text: decimal notation only, the whole of it, finite */
static void test_decimal(void **state)
{
	(void)state;
	double v;
	const char *end;
	assert_true(kvs_parse_decimal("0.25", &v) && v == 0.25);
	assert_true(kvs_parse_decimal("-3e2", &v) && v == -300);
	assert_true(kvs_parse_decimal("+.5", &v) && v == 0.5);
	static const char *bad[] = { "", "abc", "0x10", "0x1p3", "inf", "-inf", "nan",
				     " 1", "1 ", "1e999", "1e-400", "1.5x", "." };
	for (size_t i = 0; i < KVS_ARRAY_LEN(bad); i++) {
		v = 42;
		if (kvs_parse_decimal(bad[i], &v))
			fail_msg("'%s' read as %g", bad[i], v);
		assert_true(v == 42);   /* untouched */
	}
	assert_false(kvs_parse_decimal(NULL, &v));
	/* a prefix and where it ends: a unit may follow; hex is refused, not
	 * read as its leading 0 */
	assert_true(kvs_strtod_decimal("2.5GB/s", &v, &end) && v == 2.5);
	assert_string_equal(end, "GB/s");
	assert_true(kvs_strtod_decimal("1e3ms", &v, &end) && v == 1e3);
	assert_string_equal(end, "ms");
	assert_false(kvs_strtod_decimal("0x10GB", &v, &end));
	assert_false(kvs_strtod_decimal("infGB", &v, &end));
}

static void test_overflow(void **state)
{
	(void)state;
	uint64_t r;
	assert_false(kvs_mul_overflow(1u << 20, 1u << 20, &r));
	assert_int_equal(r, 1ull << 40);
	assert_true(kvs_mul_overflow(UINT64_MAX / 2 + 1, 2, &r));
	assert_true(kvs_add_overflow(UINT64_MAX, 1, &r));
	assert_int_equal(kvs_div_ceil(17, 16), 2);
	assert_int_equal(kvs_div_ceil(16, 16), 1);
	assert_int_equal(kvs_div_ceil(0, 16), 0);
}

static void test_memory_wrapper(void **state)
{
	(void)state;
	char *p = kvs_strdup("kvsim");
	assert_non_null(p);
	assert_string_equal(p, "kvsim");
	kvs_free(p);
	assert_null(kvs_reallocarray(NULL, SIZE_MAX, 2));
	assert_true(strcmp(kvs_mem_allocator(), "jemalloc") == 0 ||
		    strcmp(kvs_mem_allocator(), "libc") == 0);
	assert_true(kvs_mem_peak_rss() > 0);
}

/* ---- common/ containers against simple reference models ---------------------- */

static uint64_t rng_state = 12345;
static uint64_t rnd(void)
{
	return kvs_mix64(rng_state += KVS_GOLDEN64);
}

typedef struct hent {
	uint32_t key, seq;
} hent;
static inline bool hent_less(const hent *a, const hent *b)
{
	return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}
KVS_HEAP_DEFINE(th, hent, hent_less)

/* Random pushes, pops and removals; every pop is the minimum of a plain
 * array holding the same entries, and the heap stays ordered. */
static void test_heap_random(void **state)
{
	(void)state;
	hent *h = NULL, *ref = NULL;
	size_t cap = 0, rcap = 0, n = 0, nref = 0;
	uint32_t seq = 0;
	for (int op = 0; op < 20000; op++) {
		uint64_t r = rnd();
		if (n == 0 || r % 3 != 0) {
			hent e = { (uint32_t)(r >> 32) % 50, seq++ };
			assert_true(KVS_ARRAY_RESERVE(h, cap, n + 1, 4));
			assert_true(KVS_ARRAY_RESERVE(ref, rcap, nref + 1, 4));
			th_push(h, &n, e);
			ref[nref++] = e;
		} else {
			hent got;
			if (r % 2) {
				got = th_pop(h, &n);
				size_t m = 0;
				for (size_t i = 1; i < nref; i++)
					if (hent_less(&ref[i], &ref[m]))
						m = i;
				assert_int_equal(got.key, ref[m].key);
				assert_int_equal(got.seq, ref[m].seq);
				ref[m] = ref[--nref];
			} else {
				size_t i = (size_t)(r >> 40) % n;
				got = th_remove_at(h, &n, i);
				size_t m = 0;
				while (ref[m].seq != got.seq)
					m++;
				ref[m] = ref[--nref];
			}
		}
		assert_int_equal(n, nref);
		assert_true(th_is_valid(h, n));
	}
	/* a broken order is named */
	if (n >= 2) {
		h[n - 1].key = 0;
		h[0].key = 99;
		assert_false(th_is_valid(h, n));
		assert_non_null(strstr(kvs_last_error(), "invariant broken: !hent_less("));
	}
	free(h);
	free(ref);
}

#define T_EMPTY(c, e) (*(e) == 0)
#define T_KEY(c, e) (*(e))
#define T_CLEAR(c, e) (*(e) = 0)
KVS_TABLE_DEFINE(tt, uint64_t, const void *, T_EMPTY, T_KEY, T_CLEAR, kvs_table_mixed)
KVS_TABLE_DEFINE(tf, uint64_t, const void *, T_EMPTY, T_KEY, T_CLEAR, kvs_table_fibonacci)

/* Inserts and deletions (backward shift) against a membership bitmap, for
 * both home functions and a capacity that is not a power of two. */
static void test_table_random(void **state)
{
	(void)state;
	enum { KEYS = 300 };
	for (int fib = 0; fib < 2; fib++) {
		uint64_t cap = fib ? 1024 : 1000;
		uint64_t *t = calloc(cap, sizeof *t);
		bool in[KEYS + 1] = { false };
		unsigned n = 0;
		for (int op = 0; op < 50000; op++) {
			uint64_t k = rnd() % KEYS + 1, probes = 0;
			uint64_t i = fib ? tf_probe(NULL, t, cap, k, &probes)
					 : tt_probe(NULL, t, cap, k, &probes);
			assert_true(probes >= 1 && probes <= cap);
			assert_int_equal(t[i] == k, in[k]);
			if (t[i] == k) {
				if (fib)
					tf_vacate(NULL, t, cap, i);
				else
					tt_vacate(NULL, t, cap, i);
				in[k] = false;
				n--;
			} else if (2 * (n + 1) <= cap) {
				assert_int_equal(t[i], 0);
				t[i] = k;
				in[k] = true;
				n++;
			}
		}
		unsigned seen = 0;
		for (uint64_t i = 0; i < cap; i++) {
			if (!t[i])
				continue;
			seen++;
			uint64_t probes = 0;
			uint64_t j = fib ? tf_probe(NULL, t, cap, t[i], &probes)
					 : tt_probe(NULL, t, cap, t[i], &probes);
			assert_int_equal(j, i);   /* reachable from its home */
		}
		assert_int_equal(seen, n);
		free(t);
	}
}

/* Growth doubles from the minimum, keeps contents, and fails cleanly (arr
 * and cap untouched) on overflow of cap's type and on allocation failure. */
static void test_array_reserve(void **state)
{
	(void)state;
	uint32_t *a = NULL;
	uint8_t cap8 = 0;
	assert_true(KVS_ARRAY_RESERVE(a, cap8, 5, 4));
	assert_int_equal(cap8, 8);
	for (int i = 0; i < 8; i++)
		a[i] = (uint32_t)i * 7;
	assert_true(KVS_ARRAY_RESERVE(a, cap8, 200, 4));
	assert_int_equal(cap8, 255);          /* clamped to the type */
	assert_int_equal(a[7], 49);
	uint32_t *keep = a;
	size_t need = 256;
	assert_false(KVS_ARRAY_RESERVE(a, cap8, need, 4));
	assert_ptr_equal(a, keep);
	assert_int_equal(cap8, 255);
	size_t cap = 255;
	kvs_mem_fail_nth(1, false);
	bool ok = KVS_ARRAY_RESERVE(a, cap, 256, 4);
	kvs_mem_fail_nth(0, false);
	assert_false(ok);
	assert_ptr_equal(a, keep);
	assert_int_equal(cap, 255);
	assert_true(KVS_ARRAY_RESERVE(a, cap, 256, 4));
	assert_int_equal(cap, 510);
	assert_int_equal(a[7], 49);
	kvs_free(a);
}

/* The nth allocation fails, once or from then on, and is counted. */
static void test_fail_nth(void **state)
{
	(void)state;
	kvs_mem_fail_nth(2, false);
	void *p1 = kvs_malloc(8), *p2 = kvs_malloc(8), *p3 = kvs_calloc(2, 8);
	assert_non_null(p1);
	assert_null(p2);
	assert_non_null(p3);
	assert_true(kvs_mem_fail_fired());
	assert_int_equal(kvs_mem_alloc_count(), 3);
	kvs_mem_fail_nth(1, true);
	assert_null(kvs_strdup("x"));
	assert_null(kvs_realloc(NULL, 4));
	kvs_mem_fail_nth(0, false);
	assert_false(kvs_mem_fail_fired());
	void *p4 = kvs_malloc(8);
	assert_non_null(p4);
	kvs_free(p1);
	kvs_free(p3);
	kvs_free(p4);
}

/* files in dir whose name starts with prefix */
static int count_files(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

static char *slurp(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* kvs_outfile: nothing at the target until commit; discard keeps the old
 * file; no temporary file survives either; bad targets fail at open */
static void test_outfile(void **state)
{
	(void)state;
	char dir[] = "/tmp/kvs-outfile-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/out.txt", dir);

	kvs_outfile *o;
	assert_int_equal(kvs_outfile_open(path, &o), KVS_OK);
	fputs("first\n", kvs_outfile_stream(o));
	assert_null(slurp(path)); /* not there before the commit */
	assert_int_equal(count_files(dir, ".out.txt.kvsim-"), 1);
	assert_int_equal(kvs_outfile_commit(o), KVS_OK);
	assert_string_equal(slurp(path), "first\n");
	assert_int_equal(count_files(dir, ".out.txt.kvsim-"), 0);

	/* a discarded run leaves the existing file as it was */
	assert_int_equal(kvs_outfile_open(path, &o), KVS_OK);
	fputs("partial", kvs_outfile_stream(o));
	kvs_outfile_discard(o);
	assert_string_equal(slurp(path), "first\n");
	assert_int_equal(count_files(dir, ".out.txt.kvsim-"), 0);

	/* the mode of a replaced file is kept */
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(kvs_outfile_write_all(path, "second\n", 7), KVS_OK);
	assert_string_equal(slurp(path), "second\n");
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0640);

	/* a directory, a missing directory: fail at open, naming the path */
	assert_int_equal(kvs_outfile_open(dir, &o), KVS_ERR_IO);
	assert_non_null(strstr(kvs_last_error(), "Is a directory"));
	char missing[300];
	snprintf(missing, sizeof missing, "%s/no/such.txt", dir);
	assert_int_equal(kvs_outfile_open(missing, &o), KVS_ERR_IO);
	assert_non_null(strstr(kvs_last_error(), missing));

	/* a file without any write bit stays as it is, whoever asks (the
	 * superuser included), and the message says why */
	char ro[300];
	snprintf(ro, sizeof ro, "%s/ro.txt", dir);
	assert_int_equal(kvs_outfile_write_all(ro, "keep\n", 5), KVS_OK);
	assert_int_equal(chmod(ro, 0444), 0);
	assert_int_equal(kvs_outfile_open(ro, &o), KVS_ERR_IO);
	assert_non_null(strstr(kvs_last_error(), "cannot write: read-only file (mode 0444)"));
	assert_string_equal(slurp(ro), "keep\n");
	assert_int_equal(chmod(ro, 0644), 0);
	unlink(ro);

	/* a device is written in place; /dev/full fails at commit */
	assert_int_equal(kvs_outfile_write_all("/dev/null", "x", 1), KVS_OK);
	assert_int_equal(kvs_outfile_open("/dev/full", &o), KVS_OK);
	fputs("x", kvs_outfile_stream(o));
	assert_int_equal(kvs_outfile_commit(o), KVS_ERR_IO);
	assert_non_null(strstr(kvs_last_error(), "/dev/full: write failed"));

	/* a link to a file: the file is replaced, the link stays a link */
	char link[300];
	snprintf(link, sizeof link, "%s/link.txt", dir);
	assert_int_equal(symlink("out.txt", link), 0);
	assert_int_equal(kvs_outfile_write_all(link, "third\n", 6), KVS_OK);
	struct stat lsb;
	assert_int_equal(lstat(link, &lsb), 0);
	assert_true(S_ISLNK(lsb.st_mode));
	assert_string_equal(slurp(path), "third\n");
	assert_int_equal(count_files(dir, "."), 2); /* "." and ".." only */

	unlink(link);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_fail_records_message),
		cmocka_unit_test(test_decimal),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_memory_wrapper),
		cmocka_unit_test(test_heap_random),
		cmocka_unit_test(test_table_random),
		cmocka_unit_test(test_array_reserve),
		cmocka_unit_test(test_fail_nth),
		cmocka_unit_test(test_outfile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
