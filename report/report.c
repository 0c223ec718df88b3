/*
 * report.c - the public entry points of the report module (kvsim/report.h):
 * parse every input first (nothing is written when one is bad), create the
 * output directory, draw each figure to SVG and PNG, then write index.html.
 */
#include "kvs_config.h"
#include "report_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

void kvs_report_opts_defaults(kvs_report_opts *o)
{
	memset(o, 0, sizeof *o);
	o->png_width = 1600;
	o->png_height = 900;
}

/* mkdir -p */
static kvs_status make_dir(const char *dir)
{
	char path[4096];
	size_t n = strlen(dir);
	if (n == 0)
		return kvs_fail(KVS_ERR_INVALID, "report: empty output directory");
	if (n >= sizeof path)
		return kvs_fail(KVS_ERR_INVALID, "%s: output path too long", dir);
	memcpy(path, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		char c = path[i];
		path[i] = '\0';
		if (mkdir(path, 0777) != 0 && errno != EEXIST)
			return kvs_fail(KVS_ERR_IO, "%s: cannot create directory: %s", path,
					strerror(errno));
		path[i] = c;
	}
	struct stat sb;
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return kvs_fail(KVS_ERR_IO, "%s: not a directory", dir);
	return KVS_OK;
}

static void progress(const kvs_report_opts *o, size_t done, size_t total,
		     const char *what)
{
	if (o->progress)
		o->progress(o->progress_ctx, done, total, what);
}

kvs_status kvs_report_write(const char *const *json_texts,
			    const char *const *labels, size_t n,
			    const char *outdir, const kvs_report_opts *opts)
{
	kvs_report_opts o;
	if (opts)
		o = *opts;
	else
		kvs_report_opts_defaults(&o);
	if (!json_texts || n == 0 || !outdir)
		return kvs_fail(KVS_ERR_INVALID, "report: no input runs or no output directory");
	if (o.png_width < 320 || o.png_height < 180 || o.png_width > 8192 ||
	    o.png_height > 8192)
		return kvs_fail(KVS_ERR_INVALID,
				"report: figure size %ux%u out of range [320x180, 8192x8192]",
				o.png_width, o.png_height);

	rp_run *runs = kvs_calloc(n, sizeof *runs);
	rp_fig *figs = NULL;
	size_t nfigs = 0;
	kvs_status st = KVS_OK;
	if (!runs)
		return kvs_fail(KVS_ERR_NOMEM, "report: out of memory");
	for (size_t i = 0; i < n && st == KVS_OK; i++) {
		char lab[32];
		const char *label = labels && labels[i] ? labels[i] : NULL;
		if (!label) {
			snprintf(lab, sizeof lab, "run %zu", i + 1);
			label = lab;
		}
		if (!json_texts[i]) {
			st = kvs_fail(KVS_ERR_INVALID, "%s: no JSON text", label);
			break;
		}
		progress(&o, i, n + 1, label);
		st = rp_run_parse(json_texts[i], strlen(json_texts[i]), label, &runs[i]);
		if (n > 1)
			snprintf(runs[i].prefix, sizeof runs[i].prefix, "run%zu-", i + 1);
	}
	for (size_t i = 0; i < n && st == KVS_OK; i++)
		st = rp_figures_plan(&runs[i], &figs, &nfigs);
#if !KVS_HAVE_CAIRO
	if (st == KVS_OK)
		st = kvs_fail(KVS_ERR_UNSUPPORTED,
			      "report: kvsim was built without cairo; install libcairo2-dev and reconfigure");
#endif
	if (st == KVS_OK)
		st = make_dir(outdir);
	size_t total = n + nfigs + 1;
#if KVS_HAVE_CAIRO
	for (size_t i = 0; i < nfigs && st == KVS_OK; i++) {
		char what[96];
		snprintf(what, sizeof what, "%s.svg/png", figs[i].name);
		progress(&o, n + i, total, what);
		st = rp_figure_render(&figs[i], outdir, o.png_width, o.png_height);
	}
#endif
	if (st == KVS_OK) {
		char path[4096];
		int len = snprintf(path, sizeof path, "%s/index.html", outdir);
		progress(&o, total - 1, total, "index.html");
		if (len < 0 || (size_t)len >= sizeof path)
			st = kvs_fail(KVS_ERR_INVALID, "%s: output path too long", outdir);
		else
			st = rp_html_write(path, o.title ? o.title : "kvsim report", runs, n,
					   figs, nfigs, o.png_width, o.png_height);
		if (st == KVS_OK)
			progress(&o, total, total, "done");
	}
	for (size_t i = 0; i < n; i++)
		rp_run_free(&runs[i]);
	kvs_free(runs);
	kvs_free(figs);
	return st;
}

static kvs_status read_file(const char *path, char **out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return kvs_fail(KVS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
	size_t cap = 1 << 16, len = 0;
	char *buf = kvs_malloc(cap);
	for (;;) {
		if (!buf) {
			fclose(f);
			return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", path);
		}
		len += fread(buf + len, 1, cap - 1 - len, f);
		if (len < cap - 1)
			break;
		char *nb = cap > SIZE_MAX / 2 ? NULL : kvs_realloc(buf, cap * 2);
		if (!nb)
			kvs_free(buf);
		buf = nb;
		cap *= 2;
	}
	bool err = ferror(f) != 0;
	fclose(f);
	if (err) {
		kvs_free(buf);
		return kvs_fail(KVS_ERR_IO, "%s: read error", path);
	}
	buf[len] = '\0';
	if (strlen(buf) != len) {
		kvs_free(buf);
		return kvs_fail(KVS_ERR_PARSE, "%s: contains a NUL byte: not JSON text", path);
	}
	*out = buf;
	return KVS_OK;
}

kvs_status kvs_report_write_files(const char *const *paths, size_t n,
				  const char *outdir,
				  const kvs_report_opts *opts)
{
	if (!paths || n == 0)
		return kvs_fail(KVS_ERR_INVALID, "report: no input files");
	char **texts = kvs_calloc(n, sizeof *texts);
	if (!texts)
		return kvs_fail(KVS_ERR_NOMEM, "report: out of memory");
	kvs_status st = KVS_OK;
	for (size_t i = 0; i < n && st == KVS_OK; i++)
		st = read_file(paths[i], &texts[i]);
	if (st == KVS_OK)
		st = kvs_report_write((const char *const *)texts, paths, n, outdir, opts);
	for (size_t i = 0; i < n; i++)
		kvs_free(texts[i]);
	kvs_free(texts);
	return st;
}
