/*
 * report_outdir.c - a report's output directory, replaced as a whole.
 *
 * A report is several files (index.html and the figures it links), so
 * writing each one whole (kvs_outfile) is not enough: a run stopped between
 * two of them would leave new figures beside the old page.  The report is
 * built in a staging directory beside its target instead,
 *
 *     PARENT/.NAME.kvsim-XXXXXX/   the new report, drawn file by file
 *     PARENT/NAME/                 the previous report, untouched meanwhile
 *
 * and swapped in when complete by one renameat2(RENAME_EXCHANGE) (a plain
 * rename when NAME does not exist yet); the previous report, now under the
 * staging name, is then removed.  A reader of PARENT/NAME sees the old
 * report or the new one, whole, never a mix.
 *
 * Since the whole directory is replaced, it may hold nothing but a report:
 * a target that exists must be empty or a previous report (an index.html
 * that kvsim wrote, SVG and PNG files, temporary files of an interrupted
 * run).  Anything else is refused, naming the entry, before anything is
 * drawn, and checked again just before the swap.  Removing a previous
 * report removes only such entries, so nothing else is ever deleted.
 *
 * Staging directories are locked (flock) by the process that builds them.
 * One whose process died (SIGKILL, a second Ctrl-C in a program that does
 * not call kvs_report_unlink_staging) is left unlocked, and the next report
 * into the same directory removes it.  kvs_report_unlink_staging removes
 * those of the running process from a signal handler: their paths sit in a
 * fixed table, as the temporary names of common/outfile.c do.
 *
 * Fallback: where the directory itself cannot be renamed (its parent is not
 * writable, it is a mount point, or the file system refuses, as overlayfs
 * may for a directory of a lower layer), the report is staged inside it and
 * its files are moved into place one by one, figures first and index.html
 * last, then figures the new page does not link are removed.  Each file is
 * still whole, but a reader may for a moment see new figures beside the old
 * page.  A file system without RENAME_EXCHANGE gets two renames with
 * signals blocked between them: the directory is briefly absent, never
 * mixed.
 */
#include "kvs_config.h"
#include "report_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/mix.h"

#define STAGING_MAX_LIVE 16
/* ".kvsim-" and the six random characters that end a staging name, and the
 * temporary name of a kvs_outfile */
#define TAG ".kvsim-"
#define TAG_LEN 7
#define RAND_LEN 6
/* index.html says who wrote it in its first lines (after the style sheet):
 * "<p class=\"muted\">kvsim VERSION &middot; ..." since the first report */
#define PAGE_MARK "<p class=\"muted\">kvsim "
#define PAGE_MARK_WITHIN (256 * 1024)

/* staging directories of this process, removed by kvs_report_unlink_staging */
static _Atomic(char *) live[STAGING_MAX_LIVE];

/* ---- names ----------------------------------------------------------------- */

/* ".X.kvsim-XXXXXX": a staging directory or a kvs_outfile temporary file.
 * Plain byte tests: called from the signal handler too. */
static bool is_debris(const char *name)
{
	size_t n = strlen(name);
	if (n < 1 + TAG_LEN + RAND_LEN || name[0] != '.')
		return false;
	const char *t = name + n - TAG_LEN - RAND_LEN;
	if (memcmp(t, TAG, TAG_LEN) != 0)
		return false;
	for (const char *c = t + TAG_LEN; *c; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9')))
			return false;
	}
	return true;
}

static bool is_figure(const char *name)
{
	size_t n = strlen(name);
	return n > 4 && name[0] != '.' &&
	       (memcmp(name + n - 4, ".svg", 4) == 0 || memcmp(name + n - 4, ".png", 4) == 0);
}

static bool is_page(const char *name)
{
	return strcmp(name, "index.html") == 0;
}

/* A file a report directory may hold (and that removing one removes). */
static bool is_report_file(const char *name)
{
	return is_page(name) || is_figure(name) || is_debris(name);
}

/* ".BASE.kvsim-" followed by six characters: a staging directory of the
 * target named BASE */
static bool is_staging_of(const char *name, const char *base)
{
	size_t b = strlen(base);
	return is_debris(name) && strlen(name) == 1 + b + TAG_LEN + RAND_LEN &&
	       memcmp(name + 1, base, b) == 0;
}

/* ---- removal --------------------------------------------------------------- */

static char *path_join(const char *dir, const char *name);
static void remove_report_dir(const char *dir, int depth);

/* The staging directory dir/name removed as remove_report_dir does, unless
 * a process holds it (a report in progress, of this process or another);
 * false when out of memory. */
static bool remove_unheld(const char *dir, const char *name, int depth)
{
	char *p = path_join(dir, name);
	if (!p)
		return false;
	int sfd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd >= 0 && flock(sfd, LOCK_EX | LOCK_NB) == 0)
		remove_report_dir(p, depth);
	if (sfd >= 0)
		close(sfd);
	kvs_free(p);
	return true;
}

/*
 * Remove the report files in dir, then dir itself when that left it empty.
 * A staging directory found inside (the fallback's, from a run that died)
 * goes the same way when no process holds it.  Anything else stays, and so
 * does dir.
 */
static void remove_report_dir(const char *dir, int depth)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	DIR *d = fdopendir(dup(fd));
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			struct stat sb;
			if (!is_report_file(e->d_name) ||
			    fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
				continue;
			if (!S_ISDIR(sb.st_mode)) {
				unlinkat(fd, e->d_name, 0);
			} else if (is_debris(e->d_name) && depth == 0) {
				remove_unheld(dir, e->d_name, depth + 1);
			}
		}
		closedir(d);
	}
	close(fd);
	rmdir(dir);
}

/* Remove the staging directories of BASE in dir that no process holds:
 * left by a run that died. */
static void remove_stale(const char *dir, const char *base)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	int fd = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		struct stat sb;
		if (!is_staging_of(e->d_name, base) ||
		    fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(sb.st_mode))
			continue;
		if (!remove_unheld(dir, e->d_name, 0))
			break;
	}
	closedir(d);
}

/*
 * From a signal handler: unlink the report files of dir and remove it.
 * Only async-signal-safe calls (open, getdents64, unlinkat, lseek, rmdir);
 * entries are read again from the start until a pass removes none, as
 * removing them while reading may skip some.
 */
static void remove_signal_safe(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	_Alignas(struct dirent64) char buf[4096];
	for (int pass = 0; pass < 8; pass++) {
		bool removed = false;
		ssize_t n;
		lseek(fd, 0, SEEK_SET);
		while ((n = getdents64(fd, buf, sizeof buf)) > 0) {
			for (ssize_t off = 0; off < n;) {
				struct dirent64 *e = (struct dirent64 *)(void *)(buf + off);
				off += e->d_reclen;
				if (e->d_type != DT_DIR && is_report_file(e->d_name) &&
				    unlinkat(fd, e->d_name, 0) == 0)
					removed = true;
			}
		}
		if (!removed)
			break;
	}
	close(fd);
	rmdir(dir);
}

void kvs_report_unlink_staging(void)
{
	for (int i = 0; i < STAGING_MAX_LIVE; i++) {
		char *p = atomic_load(&live[i]);
		if (p)
			remove_signal_safe(p);
	}
}

/* ---- the checks ---------------------------------------------------------------- */

static char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = kvs_malloc(n);
	if (p)
		snprintf(p, n, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", name);
	return p;
}

/* index.html in dir (an open descriptor) was written by kvsim */
static bool page_is_kvsim(int dfd)
{
	int fd = openat(dfd, "index.html", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	char *buf = kvs_malloc(PAGE_MARK_WITHIN + 1);
	size_t len = 0;
	ssize_t r;
	while (buf && len < PAGE_MARK_WITHIN &&
	       (r = read(fd, buf + len, PAGE_MARK_WITHIN - len)) > 0)
		len += (size_t)r;
	close(fd);
	bool ok = false;
	if (buf) {
		buf[len] = '\0';
		ok = strncmp(buf, "<!DOCTYPE html>", 15) == 0 &&
		     memmem(buf, len, PAGE_MARK, strlen(PAGE_MARK)) != NULL;
	}
	kvs_free(buf);
	return ok;
}

/*
 * The directory `shown` (opened as dir) is empty or holds a previous
 * report, so that replacing it loses nothing else.  Reads every entry:
 * O(entries), plus the head of index.html.
 */
static kvs_status check_previous(const char *shown, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return kvs_fail(KVS_ERR_IO, "%s: cannot read the directory: %s", shown,
				strerror(errno));
	int fd = dirfd(d);
	const char *figure = NULL;
	char figname[256] = "";
	bool page = false;
	kvs_status st = KVS_OK;
	struct dirent *e;
	errno = 0;
	while (st == KVS_OK && (e = readdir(d)) != NULL) {
		const char *n = e->d_name;
		struct stat sb;
		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || is_debris(n))
			continue;
		if (fstatat(fd, n, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno == ENOENT)
				continue;   /* removed meanwhile */
			st = kvs_fail(KVS_ERR_IO, "%s/%s: %s", shown, n, strerror(errno));
		} else if (!S_ISREG(sb.st_mode) || (!is_page(n) && !is_figure(n))) {
			st = kvs_fail(KVS_ERR_IO,
				      "%s: not a previous kvsim report: it holds '%s'%s, which a "
				      "report does not write; the report replaces the directory "
				      "as a whole, so give a new or empty directory (or remove "
				      "'%s')", shown, n,
				      S_ISDIR(sb.st_mode) ? " (a directory)" :
				      S_ISLNK(sb.st_mode) ? " (a symbolic link)" : "", n);
		} else if (is_page(n)) {
			page = true;
			if (!page_is_kvsim(fd))
				st = kvs_fail(KVS_ERR_IO,
					      "%s: not a previous kvsim report: its index.html was "
					      "not written by kvsim; the report replaces the "
					      "directory as a whole, so give a new or empty "
					      "directory", shown);
		} else if (!figure) {
			snprintf(figname, sizeof figname, "%s", n);
			figure = figname;
		}
		errno = 0;
	}
	if (st == KVS_OK && errno != 0)
		st = kvs_fail(KVS_ERR_IO, "%s: cannot read the directory: %s", shown,
			      strerror(errno));
	closedir(d);
	if (st == KVS_OK && figure && !page)
		st = kvs_fail(KVS_ERR_IO,
			      "%s: not a previous kvsim report: it holds '%s' but no index.html; "
			      "the report replaces the directory as a whole, so give a new or "
			      "empty directory (or remove its files)", shown, figure);
	return st;
}

/* mkdir -p */
static kvs_status make_dirs(const char *shown, const char *dir)
{
	size_t n = strlen(dir);
	char *path = kvs_strdup(dir);
	if (!path)
		return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", shown);
	for (size_t i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		char c = path[i];
		path[i] = '\0';
		if (mkdir(path, 0777) != 0 && errno != EEXIST) {
			kvs_status st = kvs_fail(KVS_ERR_IO, "%s: cannot create directory: %s",
						 path, strerror(errno));
			kvs_free(path);
			return st;
		}
		path[i] = c;
	}
	kvs_free(path);
	struct stat sb;
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return kvs_fail(KVS_ERR_IO, "%s: not a directory", dir);
	return KVS_OK;
}

/* ---- staging ------------------------------------------------------------------- */

/* six characters for a new name: no need to be secret, only unlikely to
 * collide with another process's (mkdir's EEXIST catches the rest) */
static void random_suffix(char out[RAND_LEN + 1])
{
	static const char chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	static _Atomic(uint64_t) counter;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t x = kvs_mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
			       ((uint64_t)getpid() << 40) ^
			       atomic_fetch_add(&counter, KVS_GOLDEN64));
	for (int i = 0; i < RAND_LEN; i++) {
		out[i] = chars[x % (sizeof chars - 1)];
		x /= sizeof chars - 1;
	}
	out[RAND_LEN] = '\0';
}

/* A name "DIR/.BASE.kvsim-XXXXXX" that did not exist when drawn. */
static char *fresh_name(const char *dir, const char *base)
{
	char suffix[RAND_LEN + 1];
	random_suffix(suffix);
	size_t n = strlen(dir) + strlen(base) + TAG_LEN + RAND_LEN + 3;
	char *p = kvs_malloc(n);
	if (p)
		snprintf(p, n, "%s%s.%s" TAG "%s", dir, strcmp(dir, "/") ? "/" : "", base,
			 suffix);
	return p;
}

/*
 * Create and lock a staging directory in dir; 0 or an errno.  Its mode is
 * what mkdir gives a new directory.  A staging directory is only removed by
 * another process while unlocked, which it is between mkdir and flock: the
 * directory is looked up again once locked, and made afresh if gone.
 */
static int staging_create(const char *dir, const char *base, char **path, int *lock_fd)
{
	for (int tries = 0; tries < 100; tries++) {
		char *p = fresh_name(dir, base);
		if (!p)
			return ENOMEM;
		if (mkdir(p, 0777) != 0) {
			int e = errno;
			kvs_free(p);
			if (e == EEXIST)
				continue;
			return e;
		}
		int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat a, b;
		if (fd >= 0 && flock(fd, LOCK_EX) == 0 && fstat(fd, &a) == 0 &&
		    lstat(p, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
			*path = p;
			*lock_fd = fd;
			return 0;
		}
		if (fd >= 0)
			close(fd);
		kvs_free(p);
	}
	return EEXIST;
}

static void live_add(rp_outdir *od)
{
	for (int i = 0; i < STAGING_MAX_LIVE; i++) {
		char *expect = NULL;
		if (atomic_compare_exchange_strong(&live[i], &expect, od->staging)) {
			od->slot = i;
			return;
		}
	}
	od->slot = -1;   /* more reports at once: a second signal leaves this one
			  * to the next run */
}

static void live_remove(rp_outdir *od)
{
	if (od->slot >= 0)
		atomic_store(&live[od->slot], NULL);
	od->slot = -1;
}

kvs_status rp_outdir_open(const char *outdir, rp_outdir *od)
{
	memset(od, 0, sizeof *od);
	od->lock_fd = -1;
	od->slot = -1;
	size_t n = outdir ? strlen(outdir) : 0;
	if (n == 0)
		return kvs_fail(KVS_ERR_INVALID, "report: empty output directory");
	/* the directory as named, less trailing slashes: for messages */
	if (!(od->shown = kvs_strdup(outdir)))
		return kvs_fail(KVS_ERR_NOMEM, "report: out of memory");
	while (n > 1 && od->shown[n - 1] == '/')
		od->shown[--n] = '\0';

	kvs_status st = KVS_OK;
	char *parent = NULL, *base = NULL;
	struct stat lsb, sb;
	if (lstat(od->shown, &lsb) == 0) {
		if (stat(od->shown, &sb) != 0) {
			st = kvs_fail(KVS_ERR_IO, "%s: a symbolic link to nothing: %s",
				      od->shown, strerror(errno));
			goto out;
		}
		if (!S_ISDIR(sb.st_mode)) {
			st = kvs_fail(KVS_ERR_IO, "%s: not a directory", od->shown);
			goto out;
		}
		/* a symbolic link to a directory: the directory is replaced
		 * (beside it) and the link kept */
		char *real = realpath(od->shown, NULL);
		if (!real) {
			st = kvs_fail(KVS_ERR_IO, "%s: %s", od->shown, strerror(errno));
			goto out;
		}
		od->target = kvs_strdup(real);
		free(real);
		od->existed = true;
	} else if (errno == ENOENT || errno == ENOTDIR) {
		/* created in its parent (itself created when missing) */
		const char *slash = strrchr(od->shown, '/');
		char *given_parent = slash ? kvs_strdup(od->shown) : kvs_strdup(".");
		if (!given_parent) {
			st = kvs_fail(KVS_ERR_NOMEM, "report: out of memory");
			goto out;
		}
		if (slash)
			given_parent[slash == od->shown ? 1 : slash - od->shown] = '\0';
		st = make_dirs(od->shown, given_parent);
		char *real = st == KVS_OK ? realpath(given_parent, NULL) : NULL;
		if (st == KVS_OK && !real)
			st = kvs_fail(KVS_ERR_IO, "%s: %s", given_parent, strerror(errno));
		kvs_free(given_parent);
		if (st != KVS_OK)
			goto out;
		od->target = path_join(real, slash ? slash + 1 : od->shown);
		free(real);
	} else {
		st = kvs_fail(KVS_ERR_IO, "%s: %s", od->shown, strerror(errno));
		goto out;
	}
	if (!od->target) {
		st = kvs_fail(KVS_ERR_NOMEM, "report: out of memory");
		goto out;
	}
	if (strcmp(od->target, "/") == 0) {
		st = kvs_fail(KVS_ERR_INVALID, "%s: a report cannot replace the root directory",
			      od->shown);
		goto out;
	}
	/* target is absolute, symbolic links resolved: PARENT/BASE */
	const char *slash = strrchr(od->target, '/');
	parent = kvs_strdup(od->target);
	base = kvs_strdup(slash + 1);
	if (!parent || !base) {
		st = kvs_fail(KVS_ERR_NOMEM, "report: out of memory");
		goto out;
	}
	parent[slash == od->target ? 1 : slash - od->target] = '\0';

	if (od->existed) {
		if ((st = check_previous(od->shown, od->target)) != KVS_OK)
			goto out;
		/* a mount point cannot be renamed: the fallback */
		struct stat psb;
		if (stat(parent, &psb) == 0 && psb.st_dev != sb.st_dev)
			od->in_place = true;
		od->mode = sb.st_mode & 07777;
		remove_stale(od->target, base);
	}
	remove_stale(parent, base);
	int e = 0;
	if (!od->in_place) {
		e = staging_create(parent, base, &od->staging, &od->lock_fd);
		/* a parent the report may not write in: the fallback */
		if (e && od->existed && (e == EACCES || e == EPERM || e == EROFS))
			od->in_place = true;
	}
	if (od->in_place)
		e = staging_create(od->target, base, &od->staging, &od->lock_fd);
	if (e) {
		st = e == ENOMEM ? kvs_fail(KVS_ERR_NOMEM, "report: out of memory")
				 : kvs_fail(KVS_ERR_IO, "%s: cannot create directory: %s",
					    od->shown, strerror(e));
		goto out;
	}
	/* the previous report's mode, kept (a new one has mkdir's) */
	if (od->existed && !od->in_place)
		(void)chmod(od->staging, od->mode);
	live_add(od);
	od->parent = parent;
	od->base = base;
	return KVS_OK;
out:
	kvs_free(parent);
	kvs_free(base);
	rp_outdir_discard(od);
	return st;
}

const char *rp_outdir_staging(const rp_outdir *od)
{
	return od->staging;
}

/* ---- the swap ------------------------------------------------------------------- */

static void signals_block(sigset_t *prev)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &s, prev);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The fallback: the staged files moved into the target one by one,
 * figures first and index.html last, then the figures it does not link
 * removed.  O(files log files). */
static kvs_status move_files(rp_outdir *od)
{
	DIR *d = opendir(od->staging);
	if (!d)
		return kvs_fail(KVS_ERR_IO, "%s: cannot read: %s", od->staging, strerror(errno));
	char **names = NULL;
	size_t n = 0;
	kvs_status st = KVS_OK;
	struct dirent *e;
	while (st == KVS_OK && (e = readdir(d)) != NULL) {
		if (!is_page(e->d_name) && !is_figure(e->d_name))
			continue;
		char **nn = kvs_reallocarray(names, n + 1, sizeof *names);
		if (!nn || !(nn[n] = kvs_strdup(e->d_name))) {
			names = nn ? nn : names;
			st = kvs_fail(KVS_ERR_NOMEM, "report: out of memory");
			break;
		}
		names = nn;
		n++;
	}
	closedir(d);
	int from = -1, to = -1;
	if (st == KVS_OK) {
		from = open(od->staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		to = open(od->target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (from < 0 || to < 0)
			st = kvs_fail(KVS_ERR_IO, "%s: cannot open: %s", od->shown,
				      strerror(errno));
	}
	if (st == KVS_OK) {
		qsort(names, n, sizeof *names, cmp_str);
		sigset_t prev;
		signals_block(&prev);
		for (int page = 0; page < 2 && st == KVS_OK; page++) {
			for (size_t i = 0; i < n && st == KVS_OK; i++) {
				if (is_page(names[i]) != page)
					continue;
				if (renameat(from, names[i], to, names[i]) != 0)
					st = kvs_fail(KVS_ERR_IO, "%s/%s: cannot write: %s",
						      od->shown, names[i], strerror(errno));
			}
		}
		/* figures of the previous report that the new page does not link */
		DIR *t = st == KVS_OK ? fdopendir(dup(to)) : NULL;
		while (t && (e = readdir(t)) != NULL) {
			const char *key = e->d_name;
			if (is_figure(key) && !bsearch(&key, names, n, sizeof *names, cmp_str))
				unlinkat(to, key, 0);
		}
		if (t)
			closedir(t);
		pthread_sigmask(SIG_SETMASK, &prev, NULL);
	}
	if (from >= 0)
		close(from);
	if (to >= 0)
		close(to);
	for (size_t i = 0; i < n; i++)
		kvs_free(names[i]);
	kvs_free(names);
	return st;
}

/* No RENAME_EXCHANGE on this file system: the previous report moved aside,
 * the new one renamed in, with the signals blocked between the two. */
static int swap_in_two(rp_outdir *od, char **aside)
{
	for (int tries = 0; tries < 100; tries++) {
		if (!(*aside = fresh_name(od->parent, od->base)))
			return ENOMEM;
		sigset_t prev;
		signals_block(&prev);
		int e = 0;
		if (rename(od->target, *aside) != 0) {
			e = errno;
		} else if (rename(od->staging, od->target) != 0) {
			e = errno;
			(void)rename(*aside, od->target);
		}
		pthread_sigmask(SIG_SETMASK, &prev, NULL);
		if (e == 0)
			return 0;
		kvs_free(*aside);
		*aside = NULL;
		/* the name drawn was taken: rename replaced nothing, draw again */
		if (e != EEXIST && e != ENOTEMPTY)
			return e;
	}
	return EEXIST;
}

kvs_status rp_outdir_commit(rp_outdir *od)
{
	kvs_status st = KVS_OK;
	char *old = NULL;     /* the previous report, once out of the way */
	bool moved = false;   /* the fallback ran: the staging directory is left */
	if (od->in_place) {
		if ((st = check_previous(od->shown, od->target)) == KVS_OK)
			st = move_files(od);
		moved = true;
	}
	for (int round = 0; !od->in_place && round < 2; round++) {
		struct stat sb;
		if (lstat(od->target, &sb) != 0) {
			if (errno == ENOENT && rename(od->staging, od->target) == 0)
				break;
			/* made meanwhile: swapped as an existing one */
			if ((errno == EEXIST || errno == ENOTEMPTY) && round == 0)
				continue;
			st = kvs_fail(KVS_ERR_IO, "%s: cannot create: %s", od->shown,
				      strerror(errno));
			break;
		}
		/* checked again: the directory may have changed while the
		 * report was drawn */
		if (!S_ISDIR(sb.st_mode)) {
			st = kvs_fail(KVS_ERR_IO, "%s: not a directory", od->shown);
			break;
		}
		if ((st = check_previous(od->shown, od->target)) != KVS_OK)
			break;
		if (renameat2(AT_FDCWD, od->staging, AT_FDCWD, od->target,
			      RENAME_EXCHANGE) == 0) {
			old = kvs_strdup(od->staging);
			break;
		}
		int e = errno;
		if (e == EINVAL || e == ENOSYS || e == EOPNOTSUPP)
			e = swap_in_two(od, &old);
		if (e == EXDEV || e == EBUSY || e == EPERM || e == EACCES) {
			/* the directory itself cannot be renamed here */
			st = move_files(od);
			moved = true;
		} else if (e) {
			st = kvs_fail(KVS_ERR_IO, "%s: cannot replace: %s", od->shown,
				      strerror(e));
		}
		break;
	}
	if (st == KVS_OK) {
		if (old)
			remove_report_dir(old, 0);
		if (moved)
			remove_report_dir(od->staging, 0);
		kvs_free(old);
		/* nothing of this report is left to remove on a signal */
		live_remove(od);
		kvs_free(od->staging);
		od->staging = NULL;
	}
	rp_outdir_discard(od);
	return st;
}

void rp_outdir_discard(rp_outdir *od)
{
	if (od->staging)
		remove_report_dir(od->staging, 0);
	live_remove(od);
	if (od->lock_fd >= 0)
		close(od->lock_fd);
	kvs_free(od->staging);
	kvs_free(od->target);
	kvs_free(od->parent);
	kvs_free(od->base);
	kvs_free(od->shown);
	memset(od, 0, sizeof *od);
	od->lock_fd = -1;
	od->slot = -1;
}

kvs_status rp_outdir_restate(const rp_outdir *od, kvs_status st)
{
	/* an error of a file in the staging directory names the target */
	const char *msg = kvs_last_error();
	const char *at = od->staging ? strstr(msg, od->staging) : NULL;
	if (!at)
		return st;
	size_t pre = (size_t)(at - msg), sl = strlen(od->staging);
	char *copy = kvs_strdup(msg);
	if (!copy)
		return st;
	copy[pre] = '\0';
	st = kvs_fail(st, "%s%s%s", copy, od->shown, copy + pre + sl);
	kvs_free(copy);
	return st;
}

kvs_status kvs_report_dir_check(const char *outdir)
{
	if (!outdir || !*outdir)
		return kvs_fail(KVS_ERR_INVALID, "report: empty output directory");
	struct stat sb;
	if (stat(outdir, &sb) != 0)
		return KVS_OK;   /* missing: created (its parents' faults come then) */
	if (!S_ISDIR(sb.st_mode))
		return kvs_fail(KVS_ERR_IO, "%s: not a directory", outdir);
	return check_previous(outdir, outdir);
}
