/* test_common.c - status strings, error messages, checked arithmetic. */
#include "test_util.h"
#include "kvsim/common.h"

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
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_memory_wrapper),
		cmocka_unit_test(test_outfile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
