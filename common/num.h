/*
 * common/num.h - numbers in text, as the library reads them (private).
 *
 * Every number a user types or a file holds is decimal: strtod alone would
 * also take hex floats ("0x10"), "inf", "nan" and leading blanks, and a
 * value such as 0x10 read as 16 is a silent misreading.  One rule, here,
 * for every reader that is not a trace line (those have their own, in
 * traces/parse.c).
 */
#ifndef KVS_COMMON_NUM_H
#define KVS_COMMON_NUM_H

#include <stdbool.h>

/* The decimal number at the start of s ([+-]digits[.digits][e[+-]digits]):
 * *out, and *end just past it.  False, with *out and *end untouched, when
 * s does not start with one, when it is written in another notation (hex,
 * inf, nan, a leading blank) or when it overflows or underflows a double. */
bool kvs_strtod_decimal(const char *s, double *out, const char **end);

/* The whole of s is one decimal number (as above), nothing after it. */
bool kvs_parse_decimal(const char *s, double *out);

#endif
