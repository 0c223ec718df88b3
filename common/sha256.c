/*
 * sha256.c - SHA-256 (FIPS 180-4), for fingerprints of traces, plans and
 * point files of a scaled-out sweep.  Streaming: init, update any number of
 * times, final.  Big-endian message schedule and length, as the standard
 * says; no dependency beyond libc.  Cost: one compression per 64 bytes,
 * about 10-15 cycles per byte here.
 */
#include "kvs_config.h"
#include "kvsim/common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t rotr(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

/* One 64-byte block into the state (FIPS 180-4, 6.2.2). */
static void compress(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64];
	for (int t = 0; t < 16; t++)
		w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
		       (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
	for (int t = 16; t < 64; t++) {
		uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
		uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
	uint32_t e = h[4], f = h[5], g = h[6], k = h[7];
	for (int t = 0; t < 64; t++) {
		uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) +
			      ((e & f) ^ (~e & g)) + K[t] + w[t];
		uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) +
			      ((a & b) ^ (a & c) ^ (b & c));
		k = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d;
	h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

void kvs_sha256_init(kvs_sha256 *s)
{
	static const uint32_t h0[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	memcpy(s->h, h0, sizeof h0);
	s->len = 0;
	s->nbuf = 0;
}

void kvs_sha256_update(kvs_sha256 *s, const void *data, size_t n)
{
	const uint8_t *p = data;
	s->len += n;
	if (s->nbuf) {
		size_t take = 64 - s->nbuf < n ? 64 - s->nbuf : n;
		memcpy(s->buf + s->nbuf, p, take);
		s->nbuf += take;
		p += take;
		n -= take;
		if (s->nbuf < 64)
			return;
		compress(s->h, s->buf);
		s->nbuf = 0;
	}
	for (; n >= 64; p += 64, n -= 64)
		compress(s->h, p);
	memcpy(s->buf, p, n);
	s->nbuf = n;
}

void kvs_sha256_final(kvs_sha256 *s, uint8_t out[KVS_SHA256_BYTES])
{
	uint64_t bits = s->len * 8;
	/* 0x80, zeros to 56 mod 64, then the length in bits, big-endian */
	s->buf[s->nbuf++] = 0x80;
	if (s->nbuf > 56) {
		memset(s->buf + s->nbuf, 0, 64 - s->nbuf);
		compress(s->h, s->buf);
		s->nbuf = 0;
	}
	memset(s->buf + s->nbuf, 0, 56 - s->nbuf);
	for (int i = 0; i < 8; i++)
		s->buf[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
	compress(s->h, s->buf);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
	s->nbuf = 0;
}

void kvs_sha256_hex(const uint8_t digest[KVS_SHA256_BYTES], char out[KVS_SHA256_HEX])
{
	static const char hx[] = "0123456789abcdef";
	for (int i = 0; i < KVS_SHA256_BYTES; i++) {
		out[2 * i] = hx[digest[i] >> 4];
		out[2 * i + 1] = hx[digest[i] & 15];
	}
	out[2 * KVS_SHA256_BYTES] = '\0';
}

void kvs_sha256_text(const void *data, size_t n, char out[KVS_SHA256_HEX])
{
	kvs_sha256 s;
	uint8_t d[KVS_SHA256_BYTES];
	kvs_sha256_init(&s);
	kvs_sha256_update(&s, data, n);
	kvs_sha256_final(&s, d);
	kvs_sha256_hex(d, out);
}

kvs_status kvs_sha256_file(const char *path, char out[KVS_SHA256_HEX])
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return kvs_fail(KVS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
	kvs_sha256 s;
	uint8_t buf[1 << 16], d[KVS_SHA256_BYTES];
	size_t n;
	kvs_sha256_init(&s);
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		kvs_sha256_update(&s, buf, n);
	int bad = ferror(f);
	fclose(f);
	if (bad)
		return kvs_fail(KVS_ERR_IO, "%s: read error", path);
	kvs_sha256_final(&s, d);
	kvs_sha256_hex(d, out);
	return KVS_OK;
}
