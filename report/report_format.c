/*
 * report_format.c - colours and number formatting shared by the figures and
 * the HTML page, so a policy or a memory part looks the same everywhere.
 *
 * Policy colours are the Okabe-Ito palette (distinguishable with the common
 * colour-vision deficiencies, all saturated); memory parts use a separate,
 * muted palette that shares no hue with them: the used part charcoal, the
 * wasted parts sand, brown and blue-grey, cached-idle pale sage and free
 * memory light grey, so "blue" on a page always means a policy.
 */
#include "kvs_config.h"
#include "report_internal.h"
#include "kvsim/alloc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static rp_rgb hex(unsigned v)
{
	return (rp_rgb){ ((v >> 16) & 0xff) / 255.0, ((v >> 8) & 0xff) / 255.0,
			 (v & 0xff) / 255.0 };
}

rp_rgb rp_part_color(int part)
{
	static const unsigned c[RP_NPARTS] = {
		0x4d4d4d, /* token states: charcoal, the used part reads darkest */
		0xc8b88a, /* reservation: sand */
		0x9c6644, /* internal fragmentation: brown */
		0x8a8fa8, /* external fragmentation: blue-grey */
		0xa3c4bc, /* cached-idle: pale sage */
		0xe4e4e4, /* free: light grey */
	};
	return hex(c[part >= 0 && part < RP_NPARTS ? part : RP_NPARTS - 1]);
}

/* Registered policies first, in registry order, in their registry colour;
 * a name the registry does not know (a report from elsewhere) after them. */
int rp_policy_rank(const char *policy)
{
	kvs_policy p;
	if (kvs_policy_parse(policy, &p) == KVS_OK &&
	    strcmp(kvs_policy_name(p), policy) == 0)
		return (int)p;
	return (int)kvs_policy_count();
}

bool rp_policy_is(const char *policy, unsigned traits)
{
	int r = rp_policy_rank(policy);
	return r < (int)kvs_policy_count() && kvs_policy_has((kvs_policy)r, traits);
}

rp_rgb rp_policy_color(const char *policy)
{
	static const unsigned extra[] = { 0x56b4e9, 0x000000, 0x999933, 0x882255,
					  0x44aa99, 0x6a3d9a };
	int r = rp_policy_rank(policy);
	if (r < (int)kvs_policy_count())
		return hex(kvs_policy_get((kvs_policy)r)->color);
	uint32_t h = 2166136261u; /* FNV-1a: stable across runs and builds */
	for (const unsigned char *p = (const unsigned char *)policy; *p; p++)
		h = (h ^ *p) * 16777619u;
	return hex(extra[h % KVS_ARRAY_LEN(extra)]);
}

void rp_rgb_hex(rp_rgb c, char buf[8])
{
	snprintf(buf, 8, "#%02x%02x%02x", (unsigned)lround(c.r * 255),
		 (unsigned)lround(c.g * 255), (unsigned)lround(c.b * 255));
}

void rp_fmt_num(char *buf, size_t size, double v, int sig)
{
	if (!isfinite(v)) {
		snprintf(buf, size, "-");
		return;
	}
	double a = fabs(v);
	if (a >= 1e6) {
		snprintf(buf, size, "%.3g M", v / 1e6);
		return;
	}
	if (a >= 1e4 || v == floor(v)) {
		rp_fmt_count(buf, size, v);
		return;
	}
	/* fixed notation with `sig` significant digits, trailing zeros kept */
	int mag = a > 0 ? (int)floor(log10(a)) : 0;
	int dec = sig - 1 - mag;
	if (dec < 0)
		dec = 0;
	if (dec > 6)
		dec = 6;
	snprintf(buf, size, "%.*f", dec, v);
}

void rp_fmt_count(char *buf, size_t size, double v)
{
	if (!isfinite(v)) {
		snprintf(buf, size, "-");
		return;
	}
	char tmp[64];
	snprintf(tmp, sizeof tmp, "%.0f", fabs(v));
	size_t n = strlen(tmp), o = 0;
	char out[96];
	if (v < 0 && lround(v) != 0)
		out[o++] = '-';
	for (size_t i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = tmp[i];
	}
	out[o] = '\0';
	snprintf(buf, size, "%s", out);
}

void rp_fmt_seconds(char *buf, size_t size, double s)
{
	if (!isfinite(s)) {
		snprintf(buf, size, "-");
		return;
	}
	double a = fabs(s);
	if (a == 0)
		snprintf(buf, size, "0 s");
	else if (a < 1e-3)
		snprintf(buf, size, "%.3g µs", s * 1e6);
	else if (a < 1)
		snprintf(buf, size, "%.3g ms", s * 1e3);
	else if (a < 600)
		snprintf(buf, size, "%.3g s", s);
	else if (a < 7200)
		snprintf(buf, size, "%.3g min", s / 60);
	else
		snprintf(buf, size, "%.3g h", s / 3600);
}

void rp_fmt_bytes(char *buf, size_t size, double v)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	if (!isfinite(v)) {
		snprintf(buf, size, "-");
		return;
	}
	int u = 0;
	double x = v;
	while (fabs(x) >= 1024 && u < 5) {
		x /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%.0f B", x);
	else
		snprintf(buf, size, "%.3g %s", x, unit[u]);
}
