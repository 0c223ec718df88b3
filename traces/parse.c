/*
 * parse.c - strict field parsers for trace readers.
 *
 * Numbers are parsed by hand rather than with strtoul/strtod so that every
 * way a field can be wrong has its own reason ("negative value", "too
 * large", "expected an integer"), and so that timestamps are exact:
 * Azure's "2023-11-16 18:15:46.6805900" is 1.7e18 ns since 1970, which a
 * double cannot hold to the 100 ns the file states, so times travel as
 * int64 nanoseconds and only differences become doubles.
 */
#include "trace_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void trim(const char **s, size_t *len)
{
	while (*len > 0 && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
		(*len)--;
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

const char *kvs_parse_field_u64(const char *s, size_t len, uint64_t max,
				uint64_t *out)
{
	trim(&s, &len);
	if (len == 0)
		return "empty (expected an integer)";
	size_t i = 0;
	if (s[0] == '+')
		i++;
	else if (s[0] == '-')
		return len > 1 && is_digit(s[1]) ? "negative value" : "expected an integer";
	if (i == len || !is_digit(s[i]))
		return "expected an integer";
	uint64_t v = 0;
	bool big = false;
	for (; i < len && is_digit(s[i]); i++) {
		if (kvs_mul_overflow(v, 10, &v) || kvs_add_overflow(v, (uint64_t)(s[i] - '0'), &v))
			big = true;
	}
	/* "123.0" (pandas writes integer columns as floats) is accepted;
	 * "123.5" is not */
	if (i < len && s[i] == '.') {
		i++;
		for (; i < len && s[i] == '0'; i++)
			;
		if (i < len && is_digit(s[i]))
			return "expected an integer, not a fraction";
	}
	if (i != len)
		return "expected an integer";
	if (big || v > max)
		return "too large";
	*out = v;
	return NULL;
}

const char *kvs_parse_field_i64(const char *s, size_t len, int64_t min,
				int64_t max, int64_t *out)
{
	trim(&s, &len);
	bool neg = false;
	if (len > 0 && (s[0] == '-' || s[0] == '+')) {
		neg = s[0] == '-';
		s++;
		len--;
	}
	if (len == 0 || !is_digit(s[0]))
		return "expected an integer";
	uint64_t v;
	const char *why = kvs_parse_field_u64(s, len, UINT64_MAX, &v);
	if (why)
		return why;
	if (neg) {
		/* -v >= min  <=>  v <= -min, computed without overflow */
		uint64_t lim = min < 0 ? (uint64_t)(-(min + 1)) + 1 : 0;
		if (v > lim)
			return "too small";
		*out = v == 0 ? 0 : -(int64_t)(v - 1) - 1;
	} else {
		if (max < 0 || v > (uint64_t)max)
			return "too large";
		*out = (int64_t)v;
	}
	return NULL;
}

/* Decimal with optional fraction and exponent, non-negative, scaled by
 * 10^scale_exp ns per unit (9 for seconds, 6 for milliseconds). */
static const char *parse_decimal_ns(const char *s, size_t len, int scale_exp,
				    int64_t *ns)
{
	trim(&s, &len);
	if (len == 0)
		return "empty (expected a number)";
	size_t i = 0;
	if (s[0] == '+')
		i++;
	else if (s[0] == '-')
		return len > 1 && (is_digit(s[1]) || s[1] == '.') ? "negative value"
								 : "expected a number";
	size_t int_start = i;
	uint64_t ip = 0;
	bool big = false;
	for (; i < len && is_digit(s[i]); i++)
		if (kvs_mul_overflow(ip, 10, &ip) || kvs_add_overflow(ip, (uint64_t)(s[i] - '0'), &ip))
			big = true;
	size_t int_digits = i - int_start;
	uint64_t frac = 0; /* in units of 10^-scale_exp */
	int frac_digits = 0;
	size_t frac_total = 0;
	if (i < len && s[i] == '.') {
		i++;
		for (; i < len && is_digit(s[i]); i++, frac_total++) {
			if (frac_digits < scale_exp) {
				frac = frac * 10 + (uint64_t)(s[i] - '0');
				frac_digits++;
			}
		}
	}
	if (int_digits == 0 && frac_total == 0)
		return "expected a number";
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		/* exponent form (pandas writes 1.2e-05): go through a double,
		 * rounded to the nanosecond */
		char tmp[64];
		if (len >= sizeof tmp)
			return "expected a number";
		memcpy(tmp, s, len);
		tmp[len] = '\0';
		errno = 0;
		char *end;
		double v = strtod(tmp, &end);
		if (*end != '\0')
			return "expected a number";
		/* ERANGE is overflow (HUGE_VAL) or underflow (a tiny number,
		 * which is 0 ns once rounded) */
		if (!isfinite(v) || (errno == ERANGE && fabs(v) >= 1.0))
			return "too large";
		double x = v * pow(10.0, scale_exp);
		if (x >= 9.2e18)
			return "too large";
		*ns = (int64_t)llround(x);
		return NULL;
	}
	if (i != len)
		return "expected a number";
	for (; frac_digits < scale_exp; frac_digits++)
		frac *= 10;
	uint64_t unit = 1;
	for (int k = 0; k < scale_exp; k++)
		unit *= 10;
	uint64_t v;
	if (big || kvs_mul_overflow(ip, unit, &v) || kvs_add_overflow(v, frac, &v) ||
	    v > (uint64_t)INT64_MAX)
		return "too large";
	*ns = (int64_t)v;
	return NULL;
}

const char *kvs_parse_field_seconds_ns(const char *s, size_t len, int64_t *ns)
{
	return parse_decimal_ns(s, len, 9, ns);
}

const char *kvs_parse_field_ms_ns(const char *s, size_t len, int64_t *ns)
{
	return parse_decimal_ns(s, len, 6, ns);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static bool digits(const char *s, size_t n, unsigned *out)
{
	unsigned v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*out = v;
	return true;
}

const char *kvs_parse_field_datetime_ns(const char *s, size_t len, int64_t *ns)
{
	trim(&s, &len);
	/* YYYY-MM-DD hh:mm:ss */
	unsigned y, mo, d, h, mi, se;
	if (len < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
	    s[13] != ':' || s[16] != ':' || !digits(s, 4, &y) || !digits(s + 5, 2, &mo) ||
	    !digits(s + 8, 2, &d) || !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) ||
	    !digits(s + 17, 2, &se))
		return "expected a time YYYY-MM-DD hh:mm:ss[.fffffff]";
	static const unsigned mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 ||
	    d > mdays[mo - 1] + (mo == 2 && leap) || h > 23 || mi > 59 || se > 60)
		return "date or time out of range";
	size_t i = 19;
	uint64_t frac = 0;
	int fd = 0;
	if (i < len && s[i] == '.') {
		i++;
		if (i == len || !is_digit(s[i]))
			return "expected fractional seconds after '.'";
		for (; i < len && is_digit(s[i]); i++)
			if (fd < 9) {
				frac = frac * 10 + (uint64_t)(s[i] - '0');
				fd++;
			}
	}
	if (i < len && s[i] == 'Z')
		i++;
	if (i != len)
		return "unexpected text after the time";
	for (; fd < 9; fd++)
		frac *= 10;
	int64_t days = days_from_civil((int64_t)y, mo, d);
	int64_t secs = days * 86400 + (int64_t)h * 3600 + (int64_t)mi * 60 + (int64_t)se;
	if (secs > INT64_MAX / 1000000000 - 1)
		return "too large";
	*ns = secs * 1000000000 + (int64_t)frac;
	return NULL;
}

const char *kvs_trace_quote(const char *s, size_t len)
{
	static _Thread_local char bufs[4][96];
	static _Thread_local int next;
	char *b = bufs[next];
	next = (next + 1) % 4;
	size_t o = 0;
	b[o++] = '"';
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (o > 80) {
			memcpy(b + o, "...", 3);
			o += 3;
			break;
		}
		if (c == '"' || c == '\\') {
			b[o++] = '\\';
			b[o++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			o += (size_t)snprintf(b + o, 8, "\\x%02x", c);
		} else {
			b[o++] = (char)c;
		}
	}
	b[o++] = '"';
	b[o] = '\0';
	return b;
}
