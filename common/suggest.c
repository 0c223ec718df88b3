/*
 * suggest.c - "did you mean" for names a user types: commands, flags,
 * presets.  The optimal-string-alignment distance (Levenshtein plus the
 * swap of two adjacent characters, case-insensitive) to each candidate;
 * the closest within a bound that grows with the length of the word wins,
 * the first in list order on a tie.  O(len(a) len(b)) per candidate.
 */
#include "kvsim/common.h"

#include <assert.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>

#define SUGGEST_MAX 64   /* longer words are not compared */

static size_t osa_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	static_assert(SUGGEST_MAX < 255, "row type");
	unsigned char d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];
	for (size_t i = 0; i <= n; i++)
		d[i][0] = (unsigned char)i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = (unsigned char)j;
	for (size_t i = 1; i <= n; i++) {
		for (size_t j = 1; j <= m; j++) {
			int ca = tolower((unsigned char)a[i - 1]);
			int cb = tolower((unsigned char)b[j - 1]);
			unsigned best = d[i - 1][j - 1] + (ca != cb);
			if (d[i - 1][j] + 1u < best)
				best = d[i - 1][j] + 1u;
			if (d[i][j - 1] + 1u < best)
				best = d[i][j - 1] + 1u;
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb &&
			    d[i - 2][j - 2] + 1u < best)
				best = d[i - 2][j - 2] + 1u;
			d[i][j] = (unsigned char)best;
		}
	}
	return d[n][m];
}

const char *kvs_suggest(const char *word, const char *const *candidates, size_t count)
{
	if (!word || !*word || strlen(word) > SUGGEST_MAX)
		return NULL;
	size_t len = strlen(word);
	/* one edit for short words, two from 5 characters, three from 9 */
	size_t bound = len < 5 ? 1 : len < 9 ? 2 : 3;
	const char *best = NULL;
	size_t best_d = bound + 1;
	for (size_t i = 0; i < count && candidates[i]; i++) {
		const char *c = candidates[i];
		if (strlen(c) > SUGGEST_MAX)
			continue;
		size_t d = osa_distance(word, c);
		if (d < best_d) {
			best_d = d;
			best = c;
		}
	}
	/* a prefix of one candidate alone ("--gpu-mem" for "--gpu-memory") */
	if (!best) {
		for (size_t i = 0; i < count && candidates[i]; i++) {
			if (len >= 4 && strncasecmp(candidates[i], word, len) == 0) {
				if (best)
					return NULL;
				best = candidates[i];
			}
		}
	}
	return best;
}
