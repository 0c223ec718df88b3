/*
 * outfile.c - output files written whole or not at all.
 *
 * Every file kvsim writes goes through a kvs_outfile: the bytes go to a
 * temporary file in the target's own directory (".NAME.kvsim-XXXXXX", so
 * the rename below stays on one file system), and only a successful
 * kvs_outfile_commit renames it over the target.  A failed run discards
 * the temporary file, and SIGINT, SIGTERM and SIGHUP remove the ones
 * still open before the process dies, so an interrupted or failed run
 * never leaves a partial file under the target's name and never clobbers
 * a file that was there.
 *
 * "-" is standard output, and a target that exists and is not a regular
 * file (a FIFO, /dev/null, /dev/full, a terminal) is written in place:
 * neither can be renamed over.  A symbolic link to a file has the file
 * replaced (beside it, in its own directory) and stays a link.
 *
 * The live temporary names sit in a fixed table read by the signal
 * handler (unlink is async-signal-safe); at most KVS_OUTFILE_MAX_OPEN
 * are open at once.
 */
#include "kvs_config.h"
#include "kvsim/common.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KVS_OUTFILE_MAX_OPEN 64

struct kvs_outfile {
	FILE *f;
	char *path;    /* the target */
	char *tmp;     /* the temporary name, NULL when written in place */
	int slot;      /* index in live[], -1 when none */
	bool own;      /* f is ours to close (not stdout) */
};

/* temporary names the signal handler removes; a slot is claimed with a
 * compare-and-swap so concurrent opens (report pages) do not collide */
static _Atomic(char *) live[KVS_OUTFILE_MAX_OPEN];
static atomic_flag handlers_set = ATOMIC_FLAG_INIT;

void kvs_outfile_unlink_all(void)
{
	for (int i = 0; i < KVS_OUTFILE_MAX_OPEN; i++) {
		char *p = atomic_load(&live[i]);
		if (p)
			unlink(p);
	}
}

static void on_signal(int sig)
{
	kvs_outfile_unlink_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* the process's umask, read once (reading it means setting it: doing so
 * at every open would race with files other threads create) */
static _Atomic(int) file_mask = -1;

static void install_handlers(void)
{
	if (atomic_flag_test_and_set(&handlers_set))
		return;
	mode_t m = umask(0);
	umask(m);
	atomic_store(&file_mask, (int)m);
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	for (size_t i = 0; i < KVS_ARRAY_LEN(sigs); i++) {
		struct sigaction old;
		/* leave a handler or an ignore set by the program alone */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
			struct sigaction sa;
			memset(&sa, 0, sizeof sa);
			sa.sa_handler = on_signal;
			sigemptyset(&sa.sa_mask);
			sigaction(sigs[i], &sa, NULL);
		}
	}
}

static int live_add(char *p)
{
	for (int i = 0; i < KVS_OUTFILE_MAX_OPEN; i++) {
		char *expect = NULL;
		if (atomic_compare_exchange_strong(&live[i], &expect, p))
			return i;
	}
	return -1;
}

static void live_remove(kvs_outfile *o)
{
	if (o->slot >= 0)
		atomic_store(&live[o->slot], NULL);
	o->slot = -1;
}

static void outfile_free(kvs_outfile *o)
{
	kvs_free(o->path);
	kvs_free(o->tmp);
	kvs_free(o);
}

kvs_status kvs_outfile_open(const char *path, kvs_outfile **out)
{
	if (!path || !*path)
		return kvs_fail(KVS_ERR_INVALID, "output path is empty");
	kvs_outfile *o = kvs_calloc(1, sizeof *o);
	if (!o || !(o->path = kvs_strdup(path))) {
		kvs_free(o);
		return kvs_fail(KVS_ERR_NOMEM, "%s: no memory for an output file", path);
	}
	o->slot = -1;
	if (strcmp(path, "-") == 0) {
		o->f = stdout;
		*out = o;
		return KVS_OK;
	}
	struct stat sb;
	bool exists = stat(path, &sb) == 0;
	if (exists && S_ISDIR(sb.st_mode)) {
		outfile_free(o);
		return kvs_fail(KVS_ERR_IO, "%s: cannot write: %s", path, strerror(EISDIR));
	}
	if (exists && !S_ISREG(sb.st_mode)) {
		/* a device or FIFO: written in place */
		o->f = fopen(path, "w");
		if (!o->f) {
			kvs_status st = kvs_fail(KVS_ERR_IO, "%s: cannot write: %s", path,
						 strerror(errno));
			outfile_free(o);
			return st;
		}
		o->own = true;
		*out = o;
		return KVS_OK;
	}
	if (exists && (sb.st_mode & 0222) == 0) {
		/* no write permission bit: read-only for everyone, the
		 * superuser too, whom access() would let through (and who
		 * would then fail on the temporary file for another reason,
		 * or replace the file) */
		outfile_free(o);
		return kvs_fail(KVS_ERR_IO, "%s: cannot write: read-only file (mode %04o)",
				path, (unsigned)(sb.st_mode & 07777));
	}
	if (exists && access(path, W_OK) != 0) {
		/* a read-only target stays read-only: rename would replace it */
		kvs_status st = kvs_fail(KVS_ERR_IO, "%s: cannot write: %s", path,
					 strerror(errno));
		outfile_free(o);
		return st;
	}
	/* a symbolic link to a file: the file is replaced, the link kept */
	struct stat lsb;
	if (exists && lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode)) {
		char *real = realpath(path, NULL);
		if (real) {
			char *dup = kvs_strdup(real);
			free(real);
			if (!dup) {
				outfile_free(o);
				return kvs_fail(KVS_ERR_NOMEM, "%s: no memory for an output file",
						path);
			}
			kvs_free(o->path);
			o->path = dup;
			path = o->path;
		}
	}
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
	const char *base = slash ? slash + 1 : path;
	size_t n = dirlen + strlen(base) + 32;
	o->tmp = kvs_malloc(n);
	if (!o->tmp) {
		outfile_free(o);
		return kvs_fail(KVS_ERR_NOMEM, "%s: no memory for an output file", path);
	}
	snprintf(o->tmp, n, "%.*s.%s.kvsim-XXXXXX", (int)dirlen, path, base);
	install_handlers();
	/* block the signals while the name is created and registered, so a
	 * signal never leaves a temporary file the handler does not know */
	sigset_t all, prev;
	sigemptyset(&all);
	sigaddset(&all, SIGINT);
	sigaddset(&all, SIGTERM);
	sigaddset(&all, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &all, &prev);
	int fd = mkstemp(o->tmp);
	int e = errno;
	if (fd >= 0)
		o->slot = live_add(o->tmp);
	pthread_sigmask(SIG_SETMASK, &prev, NULL);
	if (fd < 0) {
		/* ENOENT with the directory there: the file system takes no
		 * new file (/proc, /sys); errno alone would say the directory
		 * is missing */
		char dir[PATH_MAX];
		struct stat dsb;
		snprintf(dir, sizeof dir, "%.*s", dirlen ? (int)dirlen : 1, dirlen ? path : ".");
		bool dir_there = e == ENOENT && stat(dir, &dsb) == 0 && S_ISDIR(dsb.st_mode);
		kvs_status st = dir_there
			? kvs_fail(KVS_ERR_IO, "%s: cannot write: its directory %s takes no "
				   "new file (the temporary file beside the target could not "
				   "be created)", path, dir)
			: kvs_fail(KVS_ERR_IO, "%s: cannot write: %s", path, strerror(e));
		outfile_free(o);
		return st;
	}
	if (o->slot < 0) {
		close(fd);
		unlink(o->tmp);
		outfile_free(o);
		return kvs_fail(KVS_ERR_LIMIT, "%s: more than %d output files open at once",
				path, KVS_OUTFILE_MAX_OPEN);
	}
	/* the mode a plain fopen would give, or the replaced file's */
	int mask = atomic_load(&file_mask);
	if (mask < 0)
		mask = 022; /* another thread is installing the handlers */
	if (fchmod(fd, exists ? (sb.st_mode & 07777) : (0666 & ~(mode_t)mask)) != 0) {
		/* the file keeps mkstemp's 0600: readable by its owner still */
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		kvs_status st = kvs_fail(KVS_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
		close(fd);
		kvs_outfile_discard(o);
		return st;
	}
	o->own = true;
	*out = o;
	return KVS_OK;
}

FILE *kvs_outfile_stream(const kvs_outfile *o)
{
	return o->f;
}

const char *kvs_outfile_path(const kvs_outfile *o)
{
	return o->path;
}

bool kvs_outfile_is_stdout(const kvs_outfile *o)
{
	return o->f == stdout;
}

kvs_status kvs_outfile_commit(kvs_outfile *o)
{
	if (!o)
		return KVS_OK;
	errno = 0;
	bool bad = ferror(o->f) != 0;
	int e = errno;
	if (fflush(o->f) != 0) {
		bad = true;
		e = errno;
	}
	if (o->own) {
		if (fclose(o->f) != 0 && !bad) {
			bad = true;
			e = errno;
		}
		o->f = NULL;
	}
	if (!bad && o->tmp && rename(o->tmp, o->path) != 0) {
		bad = true;
		e = errno;
	}
	kvs_status st = KVS_OK;
	if (bad) {
		st = kvs_fail(KVS_ERR_IO, "%s: write failed%s%s", o->path, e ? ": " : "",
			      e ? strerror(e) : "");
		if (o->tmp)
			unlink(o->tmp);
	}
	live_remove(o);
	outfile_free(o);
	return st;
}

void kvs_outfile_discard(kvs_outfile *o)
{
	if (!o)
		return;
	if (o->f && o->own)
		fclose(o->f);
	else if (o->f)
		fflush(o->f);
	if (o->tmp)
		unlink(o->tmp);
	live_remove(o);
	outfile_free(o);
}

kvs_status kvs_outfile_write_all(const char *path, const void *data, size_t len)
{
	kvs_outfile *o;
	kvs_status st = kvs_outfile_open(path, &o);
	if (st != KVS_OK)
		return st;
	if (len && fwrite(data, 1, len, o->f) != len) {
		st = kvs_fail(KVS_ERR_IO, "%s: write failed: %s", path, strerror(errno));
		kvs_outfile_discard(o);
		return st;
	}
	return kvs_outfile_commit(o);
}
