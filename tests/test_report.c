/*
 * test_report.c - the report module: every file a report promises exists
 * and is valid (SVG well-formed XML, PNG read back by cairo at the asked
 * size, HTML referencing only files that exist), the figures carry the data
 * (the colours of the memory parts that are non-zero appear in the memory
 * plot, those that are zero everywhere do not), the accounting line is
 * printed and checked, optional keys only drop figures, and bad input fails
 * with the file and the key path or line and column, writing nothing.
 */
#include "kvs_config.h"
#include "test_util.h"

#include "kvsim/report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#if KVS_HAVE_CAIRO
#include <cairo.h>
#endif
#include "report/report_config.h"  /* KVS_REPORT_HAVE_CHARTJS */

/* ---- helpers -------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	if (b) {
		b[n] = '\0';
		if (len)
			*len = (size_t)n;
	}
	return b;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char *make_tmpdir(void)
{
	const char *t = getenv("TMPDIR");
	char tmpl[4096];
	snprintf(tmpl, sizeof tmpl, "%s/kvsim-report-XXXXXX", t ? t : "/tmp");
	char *d = mkdtemp(tmpl);
	assert_non_null(d);
	return strdup(d);
}

static bool file_exists(const char *dir, const char *name, size_t *size)
{
	char p[8800];
	struct stat sb;
	snprintf(p, sizeof p, "%s/%s", dir, name);
	if (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode))
		return false;
	if (size)
		*size = (size_t)sb.st_size;
	return true;
}

/* Minimal XML well-formedness: one root element, balanced and properly
 * nested tags, quoted attributes, closed comments/PIs/CDATA.  Enough to
 * catch a truncated or mangled SVG; the shell test also parses every SVG
 * with a real XML parser. */
static bool xml_ok(const char *s, char *why, size_t whylen)
{
	char stack[256][64];
	int depth = 0, roots = 0;
	const char *p = s;
	while (*p) {
		if (*p != '<') {
			if (depth == 0 && !(*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) {
				snprintf(why, whylen, "text outside the root at offset %td", p - s);
				return false;
			}
			p++;
			continue;
		}
		const char *end;
		if (strncmp(p, "<?", 2) == 0) {
			if (!(end = strstr(p, "?>")))
				goto unterminated;
			p = end + 2;
		} else if (strncmp(p, "<!--", 4) == 0) {
			if (!(end = strstr(p, "-->")))
				goto unterminated;
			p = end + 3;
		} else if (strncmp(p, "<![CDATA[", 9) == 0) {
			if (!(end = strstr(p, "]]>")))
				goto unterminated;
			p = end + 3;
		} else if (strncmp(p, "<!", 2) == 0) {
			if (!(end = strchr(p, '>')))
				goto unterminated;
			p = end + 1;
		} else if (p[1] == '/') {
			size_t n = strcspn(p + 2, " \t\r\n>");
			if (depth == 0 || n >= 64 || strncmp(stack[depth - 1], p + 2, n) != 0 ||
			    stack[depth - 1][n] != '\0') {
				snprintf(why, whylen, "mismatched closing tag at offset %td", p - s);
				return false;
			}
			depth--;
			if (!(end = strchr(p, '>')))
				goto unterminated;
			p = end + 1;
		} else {
			size_t n = strcspn(p + 1, " \t\r\n/>");
			if (n == 0 || n >= 64 || depth >= 256) {
				snprintf(why, whylen, "bad tag name at offset %td", p - s);
				return false;
			}
			if (depth == 0 && ++roots > 1) {
				snprintf(why, whylen, "second root element at offset %td", p - s);
				return false;
			}
			char name[64];
			memcpy(name, p + 1, n);
			name[n] = '\0';
			p += 1 + n;
			/* attributes: name="value" or name='value' */
			for (;;) {
				while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
					p++;
				if (*p == '>' || (p[0] == '/' && p[1] == '>'))
					break;
				size_t an = strcspn(p, " \t\r\n=/>");
				if (an == 0 || p[an] != '=' || (p[an + 1] != '"' && p[an + 1] != '\'')) {
					snprintf(why, whylen, "bad attribute in <%s> at offset %td",
						 name, p - s);
					return false;
				}
				char q = p[an + 1];
				if (!(end = strchr(p + an + 2, q)))
					goto unterminated;
				p = end + 1;
			}
			if (*p == '/') {
				p += 2;
			} else {
				strcpy(stack[depth++], name);
				p++;
			}
		}
	}
	if (depth != 0 || roots != 1) {
		snprintf(why, whylen, "%d unclosed elements, %d roots", depth, roots);
		return false;
	}
	return true;
unterminated:
	snprintf(why, whylen, "unterminated markup at offset %td", p - s);
	return false;
}

static void check_svg(const char *dir, const char *name)
{
	char p[4096], why[128] = "";
	snprintf(p, sizeof p, "%s/%s", dir, name);
	size_t len = 0;
	char *s = slurp(p, &len);
	assert_non_null(s);
	assert_true(len > 1000);
	assert_non_null(strstr(s, "<svg"));
	if (!xml_ok(s, why, sizeof why))
		fail_msg("%s: not well-formed XML: %s", name, why);
	free(s);
}

#if KVS_HAVE_CAIRO
static cairo_surface_t *load_png(const char *dir, const char *name)
{
	char p[4096];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	size_t len = 0;
	unsigned char *s = (unsigned char *)slurp(p, &len);
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	assert_non_null(s);
	assert_true(len > 8);
	assert_memory_equal(s, sig, 8);
	free(s);
	cairo_surface_t *img = cairo_image_surface_create_from_png(p);
	assert_int_equal(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
	return img;
}

/* pixels of exactly colour 0xRRGGBB */
static size_t count_color(cairo_surface_t *img, unsigned rgb)
{
	cairo_surface_flush(img);
	int w = cairo_image_surface_get_width(img), h = cairo_image_surface_get_height(img);
	int stride = cairo_image_surface_get_stride(img);
	const unsigned char *d = cairo_image_surface_get_data(img);
	size_t n = 0;
	for (int y = 0; y < h; y++) {
		const uint32_t *row = (const uint32_t *)(d + (size_t)y * (size_t)stride);
		for (int x = 0; x < w; x++)
			n += (row[x] & 0xffffff) == rgb;
	}
	return n;
}
#endif

static void check_png(const char *dir, const char *name, int w, int h)
{
#if KVS_HAVE_CAIRO
	cairo_surface_t *img = load_png(dir, name);
	assert_int_equal(cairo_image_surface_get_width(img), w);
	assert_int_equal(cairo_image_surface_get_height(img), h);
	/* not blank: some dark ink (text, axes) on the white background */
	assert_true(count_color(img, 0xffffff) < (size_t)w * (size_t)h);
	cairo_surface_destroy(img);
#else
	(void)dir, (void)name, (void)w, (void)h;
#endif
}

/* Every src= and href= in index.html that is not a fragment names a file
 * in dir; returns how many <img> there are. */
static int check_html_refs(const char *dir)
{
	char p[4096];
	snprintf(p, sizeof p, "%s/index.html", dir);
	char *html = slurp(p, NULL);
	assert_non_null(html);
	assert_non_null(strstr(html, "<!DOCTYPE html>"));
	assert_non_null(strstr(html, "</html>"));
	static const char *const attrs[] = { "src=\"", "href=\"" };
	for (size_t a = 0; a < 2; a++) {
		for (const char *q = strstr(html, attrs[a]); q; q = strstr(q + 1, attrs[a])) {
			const char *v = q + strlen(attrs[a]);
			size_t n = strcspn(v, "\"");
			char ref[512];
			assert_true(n > 0 && n < sizeof ref);
			memcpy(ref, v, n);
			ref[n] = '\0';
			if (ref[0] == '#')
				continue;
			/* self-contained: nothing from the network, no absolute paths */
			assert_null(strstr(ref, "://"));
			assert_true(ref[0] != '/');
			size_t size = 0;
			if (!file_exists(dir, ref, &size))
				fail_msg("index.html references %s, which is not in %s", ref, dir);
			assert_true(size > 0);
		}
	}
	int imgs = 0;
	for (const char *q = strstr(html, "<img "); q; q = strstr(q + 1, "<img "))
		imgs++;
	free(html);
	return imgs;
}

static char *read_html(const char *dir)
{
	char p[4096];
	snprintf(p, sizeof p, "%s/index.html", dir);
	char *html = slurp(p, NULL);
	assert_non_null(html);
	return html;
}

static void check_figure(const char *dir, const char *base)
{
	char n[256];
	snprintf(n, sizeof n, "%s.svg", base);
	check_svg(dir, n);
	snprintf(n, sizeof n, "%s.png", base);
	check_png(dir, n, 1600, 900);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_compare_fixture(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	const char *in[] = { kvs_test_src("tests/data/compare.json") };
	assert_int_equal(kvs_report_write_files(in, 1, dir, NULL), KVS_OK);
	static const char *const figs[] = { "memory", "requests", "cdf-queue-delay",
					    "cdf-ttft", "cdf-tpot" };
	for (size_t i = 0; i < KVS_ARRAY_LEN(figs); i++)
		check_figure(dir, figs[i]);
	/* one file: no <img>, each static figure linked from its chart (a
	 * build without the chart library shows the images instead) */
	assert_int_equal(check_html_refs(dir), KVS_REPORT_HAVE_CHARTJS ? 0 : 5);

	char *html = read_html(dir);
	for (size_t i = 0; i < KVS_ARRAY_LEN(figs); i++) {
		char h[96];
		snprintf(h, sizeof h, "href=\"%s.png\"", figs[i]);
		if (!strstr(html, h))
			fail_msg("index.html does not link %s.png", figs[i]);
	}
	/* the accounting line of each policy, with thousands separators */
	assert_non_null(strstr(html, "arrived 1,200 = completed 1,188 + rejected 0 + unfinished 12"));
	assert_non_null(strstr(html, "arrived 1,200 = completed 1,061 + rejected 3 + unfinished 136"));
	assert_non_null(strstr(html, "prompt_exceeds_max_model_len 3"));
	assert_null(strstr(html, "does not balance"));
	/* table cells: memory split, latency percentiles with units, ratios */
	assert_non_null(strstr(html, "<td>68.4 %</td>"));
	assert_non_null(strstr(html, "<td>620 ms</td>"));
	assert_non_null(strstr(html, "<td>4.94×</td>"));
	/* display order: paged first, whatever the key order in the JSON */
	const char *pg = strstr(html, "<b>paged</b>"), *mx = strstr(html, "<b>max</b>");
	assert_non_null(pg);
	assert_non_null(mx);
	assert_true(pg < mx);
	free(html);

#if KVS_HAVE_CAIRO
	/* the memory plot shows each part that is non-zero in some policy:
	 * token states (all), reservation (max, oracle), internal (paged),
	 * external (max, oracle), cached-idle (paged), free (all) */
	cairo_surface_t *img = load_png(dir, "memory.png");
	static const unsigned part_rgb[6] = { 0x4d4d4d, 0xc8b88a, 0x9c6644,
					      0x8a8fa8, 0xa3c4bc, 0xe4e4e4 };
	for (int k = 0; k < 6; k++)
		if (count_color(img, part_rgb[k]) < 500)
			fail_msg("memory.png: part %d colour %06x barely present", k, part_rgb[k]);
	/* token states dominate paged: the charcoal covers more than the sand */
	assert_true(count_color(img, part_rgb[0]) > count_color(img, part_rgb[1]) / 2);
	cairo_surface_destroy(img);
	/* each policy's colour appears in the request plot */
	img = load_png(dir, "requests.png");
	assert_true(count_color(img, 0x0072b2) > 200); /* paged */
	assert_true(count_color(img, 0xd55e00) > 200); /* max */
	assert_true(count_color(img, 0x009e73) > 200); /* oracle */
	assert_int_equal(count_color(img, 0xcc79a7), 0); /* vattention: not in the run */
	cairo_surface_destroy(img);
#endif
	rm_rf(dir);
	free(dir);
}

static void test_sweep_and_multi(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	const char *in[] = { kvs_test_src("tests/data/compare.json"),
			     kvs_test_src("tests/data/sweep.json"),
			     kvs_test_src("tests/data/replay-min.json") };
	assert_int_equal(kvs_report_write_files(in, 3, dir, NULL), KVS_OK);
	static const char *const figs[] = {
		"run1-memory", "run1-requests", "run1-cdf-queue-delay", "run1-cdf-ttft",
		"run1-cdf-tpot", "run2-sweep-fragmentation", "run2-sweep-throughput",
		"run2-sweep-latency", "run2-capacity",
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(figs); i++)
		check_figure(dir, figs[i]);
	/* the minimal replay has no timeseries and no cdf: no figures */
	assert_false(file_exists(dir, "run3-memory.png", NULL));
	assert_false(file_exists(dir, "memory.png", NULL));
	assert_int_equal(check_html_refs(dir), KVS_REPORT_HAVE_CHARTJS ? 0 : 9);
	char *html = read_html(dir);
	assert_non_null(strstr(html, "Overview"));
	assert_non_null(strstr(html, "Recommendations"));
	assert_non_null(strstr(html, "Capacity search"));
	assert_non_null(strstr(html, "arrived 10 = completed 9 + rejected 0 + unfinished 1"));
	assert_non_null(strstr(html, "No figures"));
	/* the sweep table's KV waste and kernel cost (paged, block 8: 1 +
	 * 1/8 + 8/2300 = 1.1285 in the fixture; waste 0.35 + 0.3) */
	assert_non_null(strstr(html, "<th>KV waste</th>"));
	assert_non_null(strstr(html, "<th>kernel vs contiguous</th>"));
	assert_non_null(strstr(html, "<td>1.129×</td>"));
	assert_non_null(strstr(html, "<td>0.65 %</td>"));
	free(html);
#if KVS_HAVE_CAIRO
	{
		/* the trade-off figure: three panels (fragmentation, prefix hits,
		 * kernel), paged drawn in each; vattention (kernel 1 everywhere)
		 * only in the first two, its kernel panel a dashed guide */
		cairo_surface_t *t = load_png(dir, "run2-sweep-fragmentation.png");
		assert_true(count_color(t, 0x0072b2) > 3000);
		assert_true(count_color(t, 0xcc79a7) > 1000);
		cairo_surface_destroy(t);
	}
	/* capacity bars in the colour of each policy, max included */
	cairo_surface_t *img = load_png(dir, "run2-capacity.png");
	assert_true(count_color(img, 0x0072b2) > 2000);
	assert_true(count_color(img, 0xd55e00) > 500);
	assert_true(count_color(img, 0xcc79a7) > 2000);
	cairo_surface_destroy(img);
#endif
	rm_rf(dir);
	free(dir);
}

static const char MIN_OK[] =
	"{\"command\":\"replay\",\"policies\":{\"paged\":{"
	"\"accounting\":{\"arrived\":3,\"completed\":2,\"rejected\":1,\"unfinished\":0},"
	"\"memory_pct\":{\"token_states\":50,\"reservation\":0,\"internal_fragmentation\":0,"
	"\"external_fragmentation\":0,\"cached_idle\":0,\"free\":50}%s}}}";

/* MIN_OK with extra keys spliced into the paged policy */
static char *with_extra(const char *extra)
{
	size_t n = sizeof MIN_OK + strlen(extra) + 1;
	char *s = malloc(n);
	snprintf(s, n, MIN_OK, extra);
	return s;
}

/* Expect a parse error whose message contains every needle; nothing written. */
static void expect_error(const char *text, kvs_status want, const char *needle1,
			 const char *needle2)
{
	char *dir = make_tmpdir();
	char out[4200];
	snprintf(out, sizeof out, "%s/out", dir);
	const char *texts[] = { text };
	const char *labels[] = { "bad.json" };
	kvs_clear_error();
	kvs_status st = kvs_report_write(texts, labels, 1, out, NULL);
	if (st != want)
		fail_msg("status %d (%s), want %d; message: %s", st, kvs_strerror(st), want,
			 kvs_last_error());
	const char *msg = kvs_last_error();
	if (!strstr(msg, "bad.json") || (needle1 && !strstr(msg, needle1)) ||
	    (needle2 && !strstr(msg, needle2)))
		fail_msg("message '%s' lacks '%s' / '%s'", msg, needle1 ? needle1 : "",
			 needle2 ? needle2 : "");
	struct stat sb;
	assert_int_not_equal(stat(out, &sb), 0); /* nothing written */
	rm_rf(dir);
	free(dir);
}

static void test_bad_input(void **state)
{
	(void)state;
	/* malformed JSON: jansson's line and column */
	expect_error("{\n  \"command\": \"replay\",\n  \"policies\": {,}\n}", KVS_ERR_PARSE,
		     "line 3, column", NULL);
	expect_error("[1, 2]", KVS_ERR_PARSE, "top", NULL);
	expect_error("{\"command\":\"size\"}", KVS_ERR_PARSE, "size", "has no report");
	expect_error("{\"model\":{}}", KVS_ERR_PARSE, "not a kvsim run report", NULL);
	expect_error("{\"command\":\"compare\"}", KVS_ERR_PARSE, "policies",
		     "missing required key");
	expect_error("{\"command\":\"compare\",\"policies\":{}}", KVS_ERR_PARSE,
		     "no policy", NULL);
	/* missing and mistyped required keys, named by path */
	expect_error("{\"command\":\"replay\",\"policies\":{\"paged\":{\"accounting\":"
		     "{\"completed\":1,\"rejected\":0,\"unfinished\":0}}}}",
		     KVS_ERR_PARSE, "policies.paged.accounting.arrived", "missing");
	expect_error("{\"command\":\"replay\",\"policies\":{\"paged\":{\"accounting\":"
		     "{\"arrived\":1,\"completed\":\"1\",\"rejected\":0,\"unfinished\":0}}}}",
		     KVS_ERR_PARSE, "policies.paged.accounting.completed", "integer count");
	expect_error("{\"command\":\"replay\",\"policies\":{\"paged\":{\"accounting\":"
		     "{\"arrived\":1,\"completed\":-1,\"rejected\":0,\"unfinished\":0}}}}",
		     KVS_ERR_PARSE, "accounting.completed", "negative");
	expect_error("{\"command\":\"replay\",\"policies\":{\"paged\":{\"accounting\":"
		     "{\"arrived\":1,\"completed\":1,\"rejected\":0,\"unfinished\":0},"
		     "\"memory_pct\":{\"token_states\":50}}}}",
		     KVS_ERR_PARSE, "policies.paged.memory_pct.reservation", "missing");
	/* optional blocks, when present, must be well formed */
	char *s = with_extra(",\"ttft_s\":{\"p99\":\"fast\"}");
	expect_error(s, KVS_ERR_PARSE, "policies.paged.ttft_s.p99", "expected a number");
	free(s);
	/* a figure no run writes: negative */
	s = with_extra(",\"concurrency\":{\"mean\":-0.5}");
	expect_error(s, KVS_ERR_PARSE, "policies.paged.concurrency.mean", "-0.5 is negative");
	free(s);
	/* a percentage or share past the whole, parts that do not share the
	 * pool */
	s = with_extra(",\"prefix_hit_rate\":{\"tokens\":1.5}");
	expect_error(s, KVS_ERR_PARSE, "policies.paged.prefix_hit_rate.tokens",
		     "1.5 is above 1 (a share of the whole)");
	free(s);
	s = with_extra(",\"memory_peak_pct\":{\"free\":100.00001}");
	expect_error(s, KVS_ERR_PARSE, "policies.paged.memory_peak_pct.free",
		     "100.00001 is above 100 (a percentage of the whole)");
	free(s);
	/* a sample's share of the pool, and its counts */
	s = with_extra(",\"timeseries\":{\"t_s\":[0,1],\"token_states_pct\":[1,150],"
		       "\"reservation_pct\":[0,0],\"internal_fragmentation_pct\":[0,0],"
		       "\"external_fragmentation_pct\":[0,0],\"cached_idle_pct\":[0,0],"
		       "\"free_pct\":[99,0]}");
	expect_error(s, KVS_ERR_PARSE, "policies.paged.timeseries.token_states_pct[1]",
		     "150 is not a percentage of the pool");
	free(s);
	s = with_extra(",\"timeseries\":{\"t_s\":[0,1],\"token_states_pct\":[1,2],"
		       "\"reservation_pct\":[0,0],\"internal_fragmentation_pct\":[0,0],"
		       "\"external_fragmentation_pct\":[0,0],\"cached_idle_pct\":[0,0],"
		       "\"free_pct\":[99,98],\"waiting\":[0,-3]}");
	expect_error(s, KVS_ERR_PARSE, "policies.paged.timeseries.waiting[1]", "-3 is negative");
	free(s);
	s = with_extra(",\"timeseries\":{\"t_s\":[0,1,2],\"token_states_pct\":[1,2,3],"
		       "\"reservation_pct\":[0,0,0],\"internal_fragmentation_pct\":[0,0,0],"
		       "\"external_fragmentation_pct\":[0,0,0],\"cached_idle_pct\":[0,0,0],"
		       "\"free_pct\":[99,98,97],\"running\":[1,2]}");
	expect_error(s, KVS_ERR_PARSE, "policies.paged.timeseries.running", "has 2 values");
	free(s);
	s = with_extra(",\"timeseries\":{\"t_s\":[0,2,1],\"token_states_pct\":[1,2,3],"
		       "\"reservation_pct\":[0,0,0],\"internal_fragmentation_pct\":[0,0,0],"
		       "\"external_fragmentation_pct\":[0,0,0],\"cached_idle_pct\":[0,0,0],"
		       "\"free_pct\":[99,98,97]}");
	expect_error(s, KVS_ERR_PARSE, "timeseries.t_s[2]", "backwards");
	free(s);
	s = with_extra(",\"timeseries\":{\"t_s\":[0,1],\"token_states_pct\":[1,2]}");
	expect_error(s, KVS_ERR_PARSE, "timeseries.reservation_pct", "missing");
	free(s);
	s = with_extra(",\"cdf\":{\"q\":[0,0.5,1],\"ttft_s\":[0.1,null,0.3]}");
	expect_error(s, KVS_ERR_PARSE, "policies.paged.cdf.ttft_s[1]", "expected a number");
	free(s);
	s = with_extra(",\"cdf\":{\"q\":[0,1.5],\"ttft_s\":[0.1,0.2]}");
	expect_error(s, KVS_ERR_PARSE, "cdf.q[1]", NULL);
	free(s);
	/* sweep */
	expect_error("{\"command\":\"sweep\",\"rows\":[{\"policy\":\"paged\"}]}",
		     KVS_ERR_PARSE, "rows[0].block_size", "missing");
	expect_error("{\"command\":\"sweep\",\"rows\":[{\"policy\":\"paged\",\"block_size\":0}]}",
		     KVS_ERR_PARSE, "rows[0].block_size", ">= 1");
	expect_error("{\"command\":\"sweep\",\"rows\":[]}", KVS_ERR_PARSE, "no rows", NULL);
	expect_error("{\"command\":\"sweep\",\"rows\":[{\"policy\":\"paged\",\"block_size\":16}],"
		     "\"capacity\":[{\"policy\":\"paged\"}]}",
		     KVS_ERR_PARSE, "capacity[0].max_rate", "missing");
	/* duplicate keys are rejected, not silently resolved */
	expect_error("{\"command\":\"replay\",\"command\":\"sweep\"}", KVS_ERR_PARSE,
		     "duplicate", NULL);
}

static void test_bad_args_and_files(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	const char *texts[] = { "{}" };
	assert_int_equal(kvs_report_write(texts, NULL, 0, dir, NULL), KVS_ERR_INVALID);
	assert_int_equal(kvs_report_write(NULL, NULL, 1, dir, NULL), KVS_ERR_INVALID);
	assert_int_equal(kvs_report_write(texts, NULL, 1, NULL, NULL), KVS_ERR_INVALID);
	kvs_report_opts o;
	kvs_report_opts_defaults(&o);
	o.png_width = 10;
	char *ok = with_extra("");
	const char *oks[] = { ok };
	assert_int_equal(kvs_report_write(oks, NULL, 1, dir, &o), KVS_ERR_INVALID);
	/* an unlabelled run is named "run 1" in messages */
	assert_int_equal(kvs_report_write(texts, NULL, 1, dir, NULL), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "run 1"));

	const char *missing[] = { "/nonexistent/run.json" };
	assert_int_equal(kvs_report_write_files(missing, 1, dir, NULL), KVS_ERR_IO);
	assert_non_null(strstr(kvs_last_error(), "/nonexistent/run.json"));

	/* an output path under a regular file cannot be created */
	char file[4200], sub[4300];
	snprintf(file, sizeof file, "%s/plain", dir);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(sub, sizeof sub, "%s/out", file);
#if KVS_HAVE_CAIRO
	assert_int_equal(kvs_report_write(oks, NULL, 1, sub, NULL), KVS_ERR_IO);
	assert_non_null(strstr(kvs_last_error(), "plain"));
	/* nested output directories are created */
	snprintf(sub, sizeof sub, "%s/a/b/c", dir);
	assert_int_equal(kvs_report_write(oks, NULL, 1, sub, NULL), KVS_OK);
	assert_true(file_exists(sub, "index.html", NULL));
#endif
	free(ok);
	rm_rf(dir);
	free(dir);
}

/* A report that does not balance is flagged in the page, not hidden. */
static void note_warning(void *ctx, const char *msg)
{
	size_t len = strlen(ctx);   /* each warning on a line of its own */
	snprintf(ctx + len, 1024 - len, "%s\n", msg);
}

static void test_accounting_mismatch(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	const char *t[] = {
		"{\"command\":\"replay\",\"policies\":{\"paged\":{"
		"\"accounting\":{\"arrived\":10,\"completed\":5,\"rejected\":1,\"unfinished\":1},"
		"\"memory_pct\":{\"token_states\":50,\"reservation\":0,\"internal_fragmentation\":0,"
		"\"external_fragmentation\":0,\"cached_idle\":0,\"free\":40}}}}"
	};
	kvs_report_opts o;
	kvs_report_opts_defaults(&o);
	char said[1024] = "";
	o.warn = note_warning;
	o.warn_ctx = said;
	assert_int_equal(kvs_report_write(t, NULL, 1, dir, &o), KVS_OK);
	/* said to the caller too, not only drawn */
	assert_non_null(strstr(said, "run 1: policies.paged.accounting: arrived 10 is not "
				    "completed 5 + rejected 1 + unfinished 1"));
	char *html = read_html(dir);
	assert_non_null(strstr(html, "does not balance"));
	/* the six parts sum to 90, flagged and said too */
	assert_non_null(strstr(html, "should sum to 100"));
	assert_non_null(strstr(said, "policies.paged.memory_pct: the six parts sum to 90.00 %"));
	free(html);
	rm_rf(dir);
	free(dir);
}

/* An interrupted run says so where its answer and its section start; a
 * finished one does not; "interrupted" must be a boolean. */
static void test_interrupted_run(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	static const char body[] =
		"\"policies\":{\"paged\":{"
		"\"accounting\":{\"arrived\":10,\"completed\":5,\"rejected\":1,\"unfinished\":4},"
		"\"memory_pct\":{\"token_states\":50,\"reservation\":0,\"internal_fragmentation\":0,"
		"\"external_fragmentation\":0,\"cached_idle\":0,\"free\":50}}}}";
	char intr[1024], fin[1024], badv[1024];
	snprintf(intr, sizeof intr, "{\"command\":\"replay\",\"interrupted\":true,%s", body);
	snprintf(fin, sizeof fin, "{\"command\":\"replay\",%s", body);
	snprintf(badv, sizeof badv, "{\"command\":\"replay\",\"interrupted\":\"yes\",%s", body);
	const char *t[] = { intr };
	assert_int_equal(kvs_report_write(t, NULL, 1, dir, NULL), KVS_OK);
	char *html = read_html(dir);
	const char *a = strstr(html, "Interrupted: this run was stopped");
	assert_non_null(a);
	/* twice: in the answer and in the run's section */
	assert_non_null(strstr(a + 1, "Interrupted: this run was stopped"));
	free(html);
	const char *u[] = { fin };
	assert_int_equal(kvs_report_write(u, NULL, 1, dir, NULL), KVS_OK);
	html = read_html(dir);
	assert_null(strstr(html, "Interrupted"));
	free(html);
	const char *v[] = { badv };
	assert_int_equal(kvs_report_write(v, NULL, 1, dir, NULL), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "interrupted: expected true or false"));
	/* a sweep names the combinations done */
	const char *sw[] = { "{\"command\":\"sweep\",\"interrupted\":true,\"points_done\":3,"
			     "\"points_total\":13,\"rows\":[{\"policy\":\"paged\","
			     "\"block_size\":16}]}" };
	assert_int_equal(kvs_report_write(sw, NULL, 1, dir, NULL), KVS_OK);
	html = read_html(dir);
	assert_non_null(strstr(html, "3 of 13 simulated combinations were done"));
	free(html);
	/* interrupted before any combination finished: said so */
	expect_error("{\"command\":\"sweep\",\"interrupted\":true,\"points_done\":0,"
		     "\"points_total\":13,\"rows\":[]}", KVS_ERR_PARSE,
		     "interrupted before any combination finished", NULL);
	rm_rf(dir);
	free(dir);
}

struct prog {
	size_t calls, last_done, total;
	bool monotone, finished;
};

static void on_progress(void *ctx, size_t done, size_t total, const char *what)
{
	struct prog *p = ctx;
	assert_non_null(what);
	if (p->calls && done < p->last_done)
		p->monotone = false;
	p->calls++;
	p->last_done = done;
	p->total = total;
	if (done == total)
		p->finished = true;
}

/* A long run: the figures stay small (curves reduced before drawing), the
 * optional running/waiting series and cdf are absent, progress is reported. */
static void test_long_timeseries(void **state)
{
	(void)state;
	const double scale = getenv("KVS_TEST_SCALE") ? atof(getenv("KVS_TEST_SCALE")) : 1;
	size_t n = (size_t)(200000 * (scale > 0 && scale <= 1 ? scale : 1));
	if (n < 5000)
		n = 5000;
	static const char *const keys[] = { "token_states_pct", "reservation_pct",
					    "internal_fragmentation_pct",
					    "external_fragmentation_pct", "cached_idle_pct",
					    "free_pct" };
	size_t cap = n * 7 * 12 + 4096, len = 0;
	char *s = malloc(cap);
	assert_non_null(s);
	len += (size_t)snprintf(s + len, cap - len,
		"{\"command\":\"replay\",\"policies\":{\"paged\":{"
		"\"accounting\":{\"arrived\":3,\"completed\":3,\"rejected\":0,\"unfinished\":0},"
		"\"memory_pct\":{\"token_states\":50,\"reservation\":0,\"internal_fragmentation\":5,"
		"\"external_fragmentation\":0,\"cached_idle\":5,\"free\":40},"
		"\"timeseries\":{\"t_s\":[");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s%zu", i ? "," : "", i);
	len += (size_t)snprintf(s + len, cap - len, "]");
	for (int k = 0; k < 6; k++) {
		len += (size_t)snprintf(s + len, cap - len, ",\"%s\":[", keys[k]);
		for (size_t i = 0; i < n; i++) {
			/* a spike every 1000 samples in the token states */
			int v = k == 0 ? (i % 1000 == 0 ? 80 : 50) : k == 5 ? (i % 1000 == 0 ? 10 : 40)
				: k == 2 || k == 4 ? 5 : 0;
			len += (size_t)snprintf(s + len, cap - len, "%s%d", i ? "," : "", v);
		}
		len += (size_t)snprintf(s + len, cap - len, "]");
	}
	len += (size_t)snprintf(s + len, cap - len, "}}}}");
	assert_true(len < cap);

	char *dir = make_tmpdir();
	const char *t[] = { s };
	struct prog p = { .monotone = true };
	kvs_report_opts o;
	kvs_report_opts_defaults(&o);
	o.png_width = 800;
	o.png_height = 450;
	o.progress = on_progress;
	o.progress_ctx = &p;
	assert_int_equal(kvs_report_write(t, NULL, 1, dir, &o), KVS_OK);
	size_t svg = 0;
	assert_true(file_exists(dir, "memory.svg", &svg));
	assert_true(svg < 1500 * 1000); /* bounded whatever n is */
	check_svg(dir, "memory.svg");
	check_png(dir, "memory.png", 800, 450);
	assert_false(file_exists(dir, "requests.png", NULL));
	assert_false(file_exists(dir, "cdf-ttft.png", NULL));
	assert_int_equal(check_html_refs(dir), KVS_REPORT_HAVE_CHARTJS ? 0 : 1);
	/* the page's curves are reduced too: its size does not grow with n */
	size_t page = 0;
	assert_true(file_exists(dir, "index.html", &page));
	assert_true(page < (KVS_REPORT_HAVE_CHARTJS ? 200000 : 0) + 150000);
	/* parse + one figure + page */
	assert_true(p.calls >= 3);
	assert_true(p.monotone);
	assert_true(p.finished);
	assert_int_equal(p.total, 3);
	free(s);
	rm_rf(dir);
	free(dir);
}

/* ---- the interactive page --------------------------------------------------- */

/* the JSON spec of the chart whose figure has id `id`, up to its </script>
 * (a copy, freed by the caller); NULL when absent */
static char *spec_of(const char *html, const char *id)
{
	char key[160];
	snprintf(key, sizeof key, "id=\"%s\"><script type=\"application/json\" class=\"kvs-chart\">",
		 id);
	const char *a = strstr(html, key);
	if (!a)
		return NULL;
	a += strlen(key);
	const char *b = strstr(a, "</script>");
	assert_non_null(b);
	char *out = malloc((size_t)(b - a) + 1);
	memcpy(out, a, (size_t)(b - a));
	out[b - a] = '\0';
	return out;
}

/* Every chart spec is well-formed (brackets balance outside strings, the
 * text ends where the object closes) and has at least one series with
 * data.  Returns the number of specs. */
static int check_specs(const char *html)
{
	static const char tag[] = "class=\"kvs-chart\">";
	int n = 0;
	for (const char *q = strstr(html, tag); q; q = strstr(q + 1, tag)) {
		const char *p = q + strlen(tag), *end = strstr(p, "</script>");
		assert_non_null(end);
		int depth = 0;
		bool str = false, closed = false;
		for (const char *c = p; c < end; c++) {
			assert_false(closed);  /* nothing after the top object */
			if (str) {
				if (*c == '\\')
					c++;
				else if (*c == '"')
					str = false;
				continue;
			}
			if (*c == '"')
				str = true;
			else if (*c == '{' || *c == '[')
				depth++;
			else if (*c == '}' || *c == ']')
				closed = --depth == 0;
			assert_true(depth >= 0);
		}
		assert_true(closed);
		const char *d = strstr(p, "\"data\":[");
		assert_true(d && d < end);
		assert_true(d[8] != ']');
		n++;
	}
	return n;
}

static size_t count_str(const char *h, const char *needle)
{
	size_t n = 0;
	for (const char *q = strstr(h, needle); q; q = strstr(q + 1, needle))
		n++;
	return n;
}

static void test_interactive_page(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	const char *in[] = { kvs_test_src("tests/data/compare.json"),
			     kvs_test_src("tests/data/sweep.json") };
	kvs_report_opts o;
	kvs_report_opts_defaults(&o);
	o.static_figures = true;
	assert_int_equal(kvs_report_write_files(in, 2, dir, &o), KVS_OK);
	/* --static: each of the 5 + 4 figures is also shown as an image */
	assert_int_equal(check_html_refs(dir), 9);
	char *html = read_html(dir);
	size_t size = strlen(html);
	assert_true(size < 2 * 1000 * 1000);
	/* compare: 3 memory panels, running, waiting, 3 CDFs; sweep: capacity,
	 * throughput (it varies in the fixture), p99 TTFT, TPOT and queueing
	 * delay, internal fragmentation, KV waste, kernel cost */
	assert_int_equal(check_specs(html), 8 + 8);
#if KVS_REPORT_HAVE_CHARTJS
	assert_non_null(strstr(html, "Chart.js v"));
	assert_non_null(strstr(html, "Permission is hereby granted"));  /* its licence */
#endif
	/* the headline states the answer: 58.3 / 11.8 = 4.94 conversations */
	assert_non_null(strstr(html, "holds <b>4.9×</b> the conversations of"));
	assert_true(strstr(html, "The answer") < strstr(html, "Accounting"));
	/* queueing delay spans 0.9 s (paged) to 96 s (max), oracle's median is
	 * 0.4 s: log x; the TTFT and TPOT CDFs carry the goodput SLOs */
	char *sp = spec_of(html, "run1-cdf-queue-delay");
	assert_non_null(sp);
	assert_non_null(strstr(sp, "\"fmt\":\"sec\",\"log\":true"));
	free(sp);
	sp = spec_of(html, "run1-cdf-ttft");
	assert_non_null(sp);
	assert_non_null(strstr(sp, "\"name\":\"SLO 2 s\""));
	free(sp);
	sp = spec_of(html, "run1-cdf-tpot");
	assert_non_null(sp);
	assert_non_null(strstr(sp, "\"name\":\"SLO 100 ms\""));
	free(sp);
	/* waiting: max's queue flattens the others on a linear axis, so log y */
	sp = spec_of(html, "run1-waiting");
	assert_non_null(sp);
	assert_non_null(strstr(sp, "\"fmt\":\"count\",\"log\":true"));
	free(sp);
	/* capacity: max has one rate at both block sizes, drawn once and dashed;
	 * paged and vattention a dot per block size */
	sp = spec_of(html, "run2-capacity");
	assert_non_null(sp);
	assert_non_null(strstr(sp, "\"name\":\"max (same at every block size)\",\"color\":\"#d55e00\",\"dash\":true"));
	assert_non_null(strstr(sp, "\"name\":\"paged\",\"color\":\"#0072b2\",\"points\":true"));
	assert_non_null(strstr(sp, "\"cat\":[\"16\",\"32\"]"));
	free(sp);
	/* the sweep latency chart draws the TTFT SLO of the capacity search */
	sp = spec_of(html, "run2-sweep-ttft_p99_s");
	if (!sp)
		sp = spec_of(html, "run2-sweep-ttft-p99-s");
	assert_non_null(sp);
	assert_non_null(strstr(sp, "SLO 2 s"));
	free(sp);
	/* the capacity table shows max once, "any" block size */
	assert_int_equal(count_str(html, ">any</td>"), 1);
	free(html);
	rm_rf(dir);

	/* a contiguous policy in a sweep table: one row; tiny percentages read
	 * "<0.01 %" */
	static const char SWEEP[] =
		"{\"command\":\"sweep\",\"rows\":["
		"{\"policy\":\"paged\",\"block_size\":1,\"internal_fragmentation_pct\":0.0001},"
		"{\"policy\":\"paged\",\"block_size\":16,\"internal_fragmentation_pct\":0.5},"
		"{\"policy\":\"max\",\"block_size\":1,\"internal_fragmentation_pct\":80.8},"
		"{\"policy\":\"max\",\"block_size\":16,\"internal_fragmentation_pct\":80.8}]}";
	const char *t[] = { SWEEP };
	assert_int_equal(kvs_report_write(t, NULL, 1, dir, NULL), KVS_OK);
	html = read_html(dir);
	assert_int_equal(count_str(html, "<td>&lt;0.01 %</td>"), 1);
	assert_int_equal(count_str(html, "<td>80.8 %</td>"), 1);
	assert_int_equal(count_str(html, ">any</td>"), 1);
	sp = spec_of(html, "sweep-internal_fragmentation_pct");
	if (!sp)
		sp = spec_of(html, "sweep-internal-fragmentation-pct");
	assert_non_null(sp);
	/* 0.0001 % to 80.8 %: log y; max one dashed line named once */
	assert_non_null(strstr(sp, "\"fmt\":\"pct\",\"log\":true"));
	assert_non_null(strstr(sp, "\"name\":\"max (any block size)\""));
	free(sp);
	free(html);
	rm_rf(dir);

	/* names cannot close the <script> that holds a spec */
	static const char EVIL[] =
		"{\"command\":\"replay\",\"policies\":{\"a</script><b>x\":{"
		"\"accounting\":{\"arrived\":1,\"completed\":1,\"rejected\":0,\"unfinished\":0},"
		"\"memory_pct\":{\"token_states\":50,\"reservation\":0,\"internal_fragmentation\":0,"
		"\"external_fragmentation\":0,\"cached_idle\":0,\"free\":50},"
		"\"cdf\":{\"q\":[0,0.5,1],\"ttft_s\":[0.1,0.2,0.4]}}}}";
	t[0] = EVIL;
	assert_int_equal(kvs_report_write(t, NULL, 1, dir, NULL), KVS_OK);
	html = read_html(dir);
	assert_null(strstr(html, "a</script>"));
	assert_non_null(strstr(html, "a\\u003c/script\\u003e\\u003cb\\u003ex"));
	assert_int_equal(check_specs(html), 1);
	free(html);
	rm_rf(dir);
	free(dir);
}

/* sweep --rates: a "curve" instead of "rows" is a request-rate curve: the
 * rate-curve figure, its two charts (a point note per offered rate), the
 * table with a repeated contiguous row left out ("any" once per rate), and
 * the answer: within the SLOs when the engine has one, else the knee */
#define CURVE_ROW(rate, pol, bs, rps, otps, ttft, meets, rep) \
	"{\"rate\":" #rate ",\"policy\":\"" pol "\",\"block_size\":" #bs \
	",\"requests_per_s\":" #rps ",\"output_tokens_per_s\":" #otps \
	",\"ttft_p99_s\":" #ttft ",\"tpot_p99_s\":0.05,\"meets_slo\":" #meets \
	",\"repeated\":" #rep "}"
#define CURVE_ROWS \
	"\"curve\":[" \
	CURVE_ROW(1, "paged", 8, 0.995, 260, 0.5, true, false) "," \
	CURVE_ROW(1, "paged", 16, 0.995, 261, 0.5, true, false) "," \
	CURVE_ROW(1, "max", 8, 0.995, 262, 0.9, true, false) "," \
	CURVE_ROW(1, "max", 16, 0.995, 262, 0.9, true, true) "," \
	CURVE_ROW(2, "paged", 8, 1.99, 520, 0.9, true, false) "," \
	CURVE_ROW(2, "paged", 16, 1.99, 521, 0.9, true, false) "," \
	CURVE_ROW(2, "max", 8, 1.50, 400, 50, false, false) "," \
	CURVE_ROW(2, "max", 16, 1.50, 400, 50, false, true) "," \
	CURVE_ROW(4, "paged", 8, 3.50, 900, 30, false, false) "," \
	CURVE_ROW(4, "paged", 16, 3.50, 901, 30, false, false) "," \
	CURVE_ROW(4, "max", 8, 1.50, 400, 90, false, false) "," \
	CURVE_ROW(4, "max", 16, 1.50, 400, 90, false, true) "]"

static void test_rate_curve(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	static const char SLO[] = "{\"command\":\"sweep\",\"rates\":[1,2,4],\"base_rate\":1,"
				  "\"engine\":{\"slo_ttft_s\":2,\"slo_tpot_s\":null}," CURVE_ROWS "}";
	const char *t[] = { SLO };
	assert_int_equal(kvs_report_write(t, NULL, 1, dir, NULL), KVS_OK);
	check_figure(dir, "rate-curve");
	char *html = read_html(dir);
	assert_non_null(strstr(html, "<h3>Request-rate curve</h3>"));
	/* 3 rates x (paged at 8 and 16, max once) */
	const char *tb = strstr(html, "<h3>Request-rate curve</h3>");
	const char *te = strstr(tb, "</table>");
	size_t rows = 0, any = 0;
	for (const char *q = tb; (q = strstr(q, "<tr><td>")) && q < te; q++)
		rows++;
	for (const char *q = tb; (q = strstr(q, ">any</td>")) && q < te; q++)
		any++;
	assert_int_equal(rows, 9);
	assert_int_equal(any, 3);
	assert_non_null(strstr(html, "sustains within the SLOs"));
	assert_non_null(strstr(html, "<b>paged</b> (block size 16): <b>2 req/s</b>"));
	assert_non_null(strstr(html, "<b>max</b> (block size 16): <b>1 req/s</b>"));
	char *sp = spec_of(html, "rate-curve-ttft");
	assert_non_null(sp);
	assert_non_null(strstr(sp, "\"name\":\"paged/16\""));
	assert_non_null(strstr(sp, "\"offered 4 req/s\""));
	free(sp);
	assert_non_null(sp = spec_of(html, "rate-curve-tpot"));
	free(sp);
	free(html);
	rm_rf(dir);

	/* no SLO: meets_slo says nothing; the knee is the last rate served
	 * within 5 % (paged 1.99 of 2 yes, 3.5 of 4 no; max already not at 2) */
	static const char KNEE[] = "{\"command\":\"sweep\",\"engine\":{\"slo_ttft_s\":null},"
				   CURVE_ROWS "}";
	t[0] = KNEE;
	assert_int_equal(kvs_report_write(t, NULL, 1, dir, NULL), KVS_OK);
	html = read_html(dir);
	assert_non_null(strstr(html, "the knee"));
	assert_non_null(strstr(html, "<b>paged</b> (block size 16): <b>2 req/s</b>"));
	assert_non_null(strstr(html, "<b>max</b> (block size 16): <b>1 req/s</b>"));
	assert_null(strstr(html, "<th>SLOs</th>"));
	free(html);
	rm_rf(dir);

	/* rows in no rate order: the curve's points, the chart's notes and
	 * the knee still go by ascending rate (paged: 1.99 of 2 kept, 3.5 of
	 * 4 not, whatever comes first in the file) */
	static const char SHUF[] = "{\"command\":\"sweep\",\"engine\":{\"slo_ttft_s\":null},"
		"\"curve\":["
		CURVE_ROW(4, "paged", 16, 3.50, 901, 30, false, false) ","
		CURVE_ROW(1, "paged", 16, 0.995, 261, 0.5, true, false) ","
		CURVE_ROW(2, "paged", 16, 1.99, 521, 0.9, true, false) "]}";
	t[0] = SHUF;
	assert_int_equal(kvs_report_write(t, NULL, 1, dir, NULL), KVS_OK);
	html = read_html(dir);
	assert_non_null(strstr(html, "<b>paged</b> (block size 16): <b>2 req/s</b>"));
	if (KVS_REPORT_HAVE_CHARTJS) {
		assert_non_null(sp = spec_of(html, "rate-curve-ttft"));
		const char *n1 = strstr(sp, "\"offered 1 req/s\""),
			   *n2 = strstr(sp, "\"offered 2 req/s\""),
			   *n4 = strstr(sp, "\"offered 4 req/s\"");
		assert_true(n1 && n2 && n4 && n1 < n2 && n2 < n4);
		free(sp);
	}
	free(html);
	rm_rf(dir);
	free(dir);

	expect_error("{\"command\":\"sweep\",\"curve\":[{\"policy\":\"paged\",\"block_size\":16}]}",
		     KVS_ERR_PARSE, "curve[0].rate", "missing required key");
	expect_error("{\"command\":\"sweep\",\"curve\":[{\"policy\":\"paged\",\"block_size\":16,"
		     "\"rate\":0}]}", KVS_ERR_PARSE, "curve[0].rate", "> 0");
	expect_error("{\"command\":\"sweep\",\"curve\":[{\"policy\":\"paged\",\"block_size\":16,"
		     "\"rate\":1,\"repeated\":1}]}", KVS_ERR_PARSE, "curve[0].repeated", NULL);
	expect_error("{\"command\":\"sweep\",\"curve\":[]}", KVS_ERR_PARSE, "curve", "no rows");
}

/* fleet runs: a `replicas` array gives one row per replica and a dot chart
 * per numeric field; a malformed one is an error naming it */
static void test_replicas(void **state)
{
	(void)state;
	static const char FLEET[] =
		"{\"command\":\"replay\",\"policies\":{\"paged\":{"
		"\"accounting\":{\"arrived\":3,\"completed\":3,\"rejected\":0,\"unfinished\":0},"
		"\"memory_pct\":{\"token_states\":50,\"reservation\":0,\"internal_fragmentation\":0,"
		"\"external_fragmentation\":0,\"cached_idle\":0,\"free\":50}}},"
		"\"replicas\":[{\"id\":0,\"kv_use_pct\":40,\"requests\":1000,\"zone\":\"a\"},"
		"{\"name\":\"r<1>\",\"kv_use_pct\":61.5,\"requests\":1200,\"router_hit_rate\":0.5}]}";
	char *dir = make_tmpdir();
	const char *t[] = { FLEET };
	assert_int_equal(kvs_report_write(t, NULL, 1, dir, NULL), KVS_OK);
	char *html = read_html(dir);
	assert_non_null(strstr(html, "<h3>Replicas</h3>"));
	assert_non_null(strstr(html, "<th>kv_use_pct</th><th>requests</th><th>router_hit_rate</th>"));
	assert_non_null(strstr(html, "<tr><td>0</td><td>40</td><td>1,000</td><td>-</td></tr>"));
	assert_non_null(strstr(html, "<tr><td>r&#60;1&#62;</td><td>61.5</td><td>1,200</td><td>0.500</td></tr>"));
	assert_null(strstr(html, "zone"));  /* not a number: not a column */
	char *sp = spec_of(html, "replica-kv-use-pct");
	assert_non_null(sp);
	assert_non_null(strstr(sp, "\"data\":[\"0\",40,\"r\\u003c1\\u003e\",61.5]"));
	free(sp);
	assert_int_equal(check_specs(html), 3);
	free(html);
	rm_rf(dir);
	free(dir);
	expect_error("{\"command\":\"replay\",\"policies\":{\"paged\":{"
		     "\"accounting\":{\"arrived\":0,\"completed\":0,\"rejected\":0,\"unfinished\":0},"
		     "\"memory_pct\":{\"token_states\":0,\"reservation\":0,\"internal_fragmentation\":0,"
		     "\"external_fragmentation\":0,\"cached_idle\":0,\"free\":100}}},\"replicas\":3}",
		     KVS_ERR_PARSE, "replicas", "expected an array");
	expect_error("{\"command\":\"replay\",\"policies\":{\"paged\":{"
		     "\"accounting\":{\"arrived\":0,\"completed\":0,\"rejected\":0,\"unfinished\":0},"
		     "\"memory_pct\":{\"token_states\":0,\"reservation\":0,\"internal_fragmentation\":0,"
		     "\"external_fragmentation\":0,\"cached_idle\":0,\"free\":100}}},\"replicas\":[1]}",
		     KVS_ERR_PARSE, "replicas[0]", "expected an object");
}

/* ---- the output directory, replaced as a whole ------------------------------ */

/* The sorted names in dir, "a b c" (at most size bytes). */
static void list_dir(const char *dir, char *out, size_t size)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	assert_true(n >= 0);
	size_t len = 0;
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, ".."))
			len += (size_t)snprintf(out + len, len < size ? size - len : 0, "%s%s",
						len ? " " : "", names[i]->d_name);
		free(names[i]);
	}
	free(names);
	assert_true(len < size);
}

/* The names of dir's staging directories and temporary files (".X.kvsim-"). */
static size_t count_debris(const char *dir)
{
	char all[8192];
	list_dir(dir, all, sizeof all);
	size_t n = 0;
	for (const char *p = all; (p = strstr(p, ".kvsim-")) != NULL; p++)
		n++;
	return n;
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char p[4200];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

struct stopper {
	volatile sig_atomic_t flag;
	size_t stop_at;        /* the step at which the flag is raised */
	const char *parent;    /* for unlink_staging: where the staging is */
	bool unlink_staging;   /* also remove it there, as a second Ctrl-C would */
	size_t staged_seen;    /* report files seen in the staging directory */
};

/* Raises the flag at step stop_at, as a signal handler would; with
 * unlink_staging, also calls kvs_report_unlink_staging and checks that it
 * removed the staging directory and what was drawn in it. */
static void stop_progress(void *ctx, size_t done, size_t total, const char *what)
{
	(void)total;
	(void)what;
	struct stopper *s = ctx;
	if (done != s->stop_at)
		return;
	s->flag = SIGINT;
	if (!s->unlink_staging)
		return;
	DIR *d = opendir(s->parent);
	assert_non_null(d);
	struct dirent *e;
	char staging[4400] = "";
	while ((e = readdir(d)) != NULL)
		if (strstr(e->d_name, ".kvsim-"))
			snprintf(staging, sizeof staging, "%s/%s", s->parent, e->d_name);
	closedir(d);
	assert_true(staging[0]);
	char list[8192];
	list_dir(staging, list, sizeof list);
	s->staged_seen = strlen(list) ? 1 : 0;
	for (const char *p = list; (p = strchr(p, ' ')) != NULL; p++)
		s->staged_seen++;
	kvs_report_unlink_staging();
	struct stat sb;
	assert_int_equal(stat(staging, &sb), -1);
}

/* A report replaces its directory whole: stale figures of the previous
 * report go, an interrupted report leaves the previous one as it was and
 * nothing beside it, a directory holding anything else is refused. */
static void test_outdir_whole(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	char out[1024], before[8192], after[8192];
	snprintf(out, sizeof out, "%s/out", dir);
	char *cmp = slurp(kvs_test_src("tests/data/compare.json"), NULL);
	char *min = slurp(kvs_test_src("tests/data/replay-min.json"), NULL);
	assert_non_null(cmp);
	assert_non_null(min);
	const char *tc[] = { cmp }, *tm[] = { min };

	/* a new directory, then a report with no figure over one with five:
	 * only index.html is left, and nothing beside the directory */
	assert_int_equal(kvs_report_write(tc, NULL, 1, out, NULL), KVS_OK);
	assert_true(file_exists(out, "memory.svg", NULL));
	assert_int_equal(kvs_report_write(tm, NULL, 1, out, NULL), KVS_OK);
	list_dir(out, after, sizeof after);
	assert_string_equal(after, "index.html");
	assert_int_equal(count_debris(dir), 0);
	char *page = read_html(out);

	/* interrupted before the first figure, after the first, and just
	 * before the page: KVS_END, the previous report untouched, no
	 * staging directory left; the progress never reaches "done" */
	kvs_report_opts o;
	kvs_report_opts_defaults(&o);
	o.png_width = 640;
	o.png_height = 360;
	static const size_t stops[] = { 0, 1, 2, 6 };   /* 1 input, 5 figures */
	for (size_t i = 0; i < KVS_ARRAY_LEN(stops); i++) {
		struct stopper sp = { .stop_at = stops[i] };
		o.progress = stop_progress;
		o.progress_ctx = &sp;
		o.interrupt = &sp.flag;
		assert_int_equal(kvs_report_write(tc, NULL, 1, out, &o), KVS_END);
		assert_non_null(strstr(kvs_last_error(), "interrupted"));
		list_dir(out, after, sizeof after);
		assert_string_equal(after, "index.html");
		char *now = read_html(out);
		assert_string_equal(now, page);
		free(now);
		assert_int_equal(count_debris(dir), 0);
	}
	/* a second Ctrl-C: kvs_report_unlink_staging removes the staging
	 * directory with the figures already drawn in it */
	struct stopper sp = { .stop_at = 3, .parent = dir, .unlink_staging = true };
	o.progress_ctx = &sp;
	o.interrupt = &sp.flag;
	assert_int_equal(kvs_report_write(tc, NULL, 1, out, &o), KVS_END);
	assert_true(sp.staged_seen >= 4);   /* two figures, SVG and PNG */
	list_dir(out, after, sizeof after);
	assert_string_equal(after, "index.html");
	assert_int_equal(count_debris(dir), 0);

	/* not a previous report: refused before drawing, naming the entry;
	 * the directory as it was.  kvs_report_dir_check says the same. */
	struct {
		const char *make;     /* what is added */
		const char *needle;   /* in the message */
	} bad[] = {
		{ "notes.txt", "it holds 'notes.txt'" },
		{ "sub/", "it holds 'sub' (a directory)" },
		{ "index.html", "its index.html was not written by kvsim" },
		{ "-memory.svg", "it holds 'memory.svg' but no index.html" },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(bad); i++) {
		char d[1100];
		snprintf(d, sizeof d, "%s/bad%zu", dir, i);
		assert_int_equal(kvs_report_write(tm, NULL, 1, d, NULL), KVS_OK);
		const char *m = bad[i].make;
		char p[4400];
		if (m[strlen(m) - 1] == '/') {
			snprintf(p, sizeof p, "%s/%.*s", d, (int)strlen(m) - 1, m);
			assert_int_equal(mkdir(p, 0777), 0);
		} else if (m[0] == '-') {
			snprintf(p, sizeof p, "%s/index.html", d);
			assert_int_equal(unlink(p), 0);
			put_file(d, m + 1, "<svg/>");
		} else {
			put_file(d, m, "not a report\n");
		}
		list_dir(d, before, sizeof before);
		assert_int_equal(kvs_report_dir_check(d), KVS_ERR_IO);
		assert_non_null(strstr(kvs_last_error(), bad[i].needle));
		assert_int_equal(kvs_report_write(tc, NULL, 1, d, NULL), KVS_ERR_IO);
		assert_non_null(strstr(kvs_last_error(), bad[i].needle));
		assert_non_null(strstr(kvs_last_error(), d));
		list_dir(d, after, sizeof after);
		assert_string_equal(before, after);
	}
	assert_int_equal(count_debris(dir), 0);
	assert_int_equal(kvs_report_dir_check(out), KVS_OK);

	/* staging left by a run that died: removed by the next report into
	 * the same directory, unless a process still holds it (flock) */
	char stale[1100], held[1100];
	snprintf(stale, sizeof stale, "%s/.out.kvsim-Ab3dE9", dir);
	snprintf(held, sizeof held, "%s/.out.kvsim-Zz9Yx8", dir);
	assert_int_equal(mkdir(stale, 0777), 0);
	assert_int_equal(mkdir(held, 0777), 0);
	put_file(stale, "memory.svg", "<svg/>");
	put_file(stale, ".memory.png.kvsim-q1W2e3", "partial");
	put_file(held, "memory.svg", "<svg/>");
	int hfd = open(held, O_RDONLY | O_DIRECTORY);
	assert_true(hfd >= 0);
	assert_int_equal(flock(hfd, LOCK_EX), 0);
	assert_int_equal(kvs_report_write(tm, NULL, 1, out, NULL), KVS_OK);
	struct stat sb;
	assert_int_equal(stat(stale, &sb), -1);
	assert_int_equal(stat(held, &sb), 0);
	close(hfd);
	assert_int_equal(kvs_report_write(tm, NULL, 1, out, NULL), KVS_OK);
	assert_int_equal(stat(held, &sb), -1);
	assert_int_equal(count_debris(dir), 0);

	/* the directory keeps its mode; an empty one is taken; a symbolic
	 * link to a report has the report replaced and stays a link */
	assert_int_equal(chmod(out, 0750), 0);
	assert_int_equal(kvs_report_write(tc, NULL, 1, out, NULL), KVS_OK);
	assert_int_equal(stat(out, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0750);
	char empty[1100], link[1100];
	snprintf(empty, sizeof empty, "%s/empty", dir);
	assert_int_equal(mkdir(empty, 0777), 0);
	assert_int_equal(kvs_report_write(tm, NULL, 1, empty, NULL), KVS_OK);
	assert_true(file_exists(empty, "index.html", NULL));
	snprintf(link, sizeof link, "%s/link", dir);
	assert_int_equal(symlink("out", link), 0);
	assert_int_equal(kvs_report_write(tm, NULL, 1, link, NULL), KVS_OK);
	assert_int_equal(lstat(link, &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	list_dir(out, after, sizeof after);
	assert_string_equal(after, "index.html");
	assert_int_equal(count_debris(dir), 0);

	free(page);
	free(cmp);
	free(min);
	rm_rf(dir);
	free(dir);
}

int main(void)
{
#if !KVS_HAVE_CAIRO
	fprintf(stderr, "test_report: built without cairo, skipping\n");
	return KVS_TEST_SKIP;
#endif
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compare_fixture),
		cmocka_unit_test(test_sweep_and_multi),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_bad_args_and_files),
		cmocka_unit_test(test_accounting_mismatch),
		cmocka_unit_test(test_interrupted_run),
		cmocka_unit_test(test_long_timeseries),
		cmocka_unit_test(test_interactive_page),
		cmocka_unit_test(test_replicas),
		cmocka_unit_test(test_rate_curve),
		cmocka_unit_test(test_outdir_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
