/* SPDX-License-Identifier: MIT */
/* Keys and self-checking values.
 *
 * Keys follow cli/loadgen.h (the rule of `xdpkv load --generate`).  Two value
 * forms verify, so a store preloaded by either tool reads as valid:
 *
 *   generated (cli/loadgen.h):  "<key>/<seed>/" repeated, cut at V bytes
 *   ours:                       "HHHHHHHH/<version>/" then "<key>/<version>/"
 *                               repeated, cut at V bytes; HHHHHHHH is the
 *                               low 32 bits of XXH64(key, seed = version * K1 ^ V)
 *                               in lower-case hex
 *
 * A GET checks every byte: the header hash binds key, version and length,
 * and the rest must be the pattern those imply.  A generated value starts
 * with "key:", ours with a hex digit, so the two cannot be confused. */
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "lg.h"
#include "loadgen.h"

#define LG_HASH_K1 0x9e3779b97f4a7c15ULL

int lg_key(char *out, unsigned klen, uint64_t i)
{
	return xkv_gen_key(out, klen, i);
}

unsigned lg_klen(const struct lg_config *c, uint64_t i)
{
	return c->wl.kind == WL_FIXED ? c->key_size : wl_key_size(&c->wl, i);
}

int64_t lg_key_index(const char *k, size_t len, unsigned klen)
{
	int64_t i = 0;

	if (len != klen || memcmp(k, "key:", 4))
		return -1;
	for (size_t j = 4; j < len; j++) {
		if (k[j] < '0' || k[j] > '9')
			return -1;
		i = i * 10 + (k[j] - '0');
	}
	return i;
}

static uint32_t value_hash(const char *key, unsigned klen, uint64_t version, unsigned vlen)
{
	return (uint32_t)XXH64(key, klen, version * LG_HASH_K1 ^ vlen);
}

/* "<key>/<version>/" into unit; returns its length. */
static int make_unit(char *unit, size_t cap, const char *key, unsigned klen, uint64_t version)
{
	return snprintf(unit, cap, "%.*s/%llu/", (int)klen, key, (unsigned long long)version);
}

/* Does val (len bytes) repeat unit (n bytes)? */
static bool repeats(const char *val, size_t len, const char *unit, size_t n)
{
	for (size_t j = 0; j < len; j += n) {
		size_t m = len - j < n ? len - j : n;
		if (memcmp(val + j, unit, m))
			return false;
	}
	return true;
}

int lg_value_make(char *out, unsigned vlen, uint64_t key, unsigned klen, uint64_t version)
{
	char k[LG_KEY_MAX + 1], unit[LG_KEY_MAX + 48], hdr[48];
	int h, n;

	if (lg_key(k, klen, key) < 0)
		return -1;
	h = snprintf(hdr, sizeof(hdr), "%08x/%llu/", value_hash(k, klen, version, vlen),
		     (unsigned long long)version);
	if ((unsigned)h > vlen)
		return -1;
	memcpy(out, hdr, (size_t)h);
	n = make_unit(unit, sizeof(unit), k, klen, version);
	for (unsigned j = 0; j < vlen - (unsigned)h; j++)
		out[h + j] = unit[j % (unsigned)n];
	return (int)vlen;
}

/* Parse decimal digits up to '/' at val[*pos]; advances past the '/'. */
static bool parse_version(const char *val, size_t len, size_t *pos, uint64_t *v)
{
	size_t p = *pos, start = p;

	*v = 0;
	while (p < len && val[p] >= '0' && val[p] <= '9' && p - start < 20)
		*v = *v * 10 + (uint64_t)(val[p++] - '0');
	if (p == start || p >= len || val[p] != '/')
		return false;
	*pos = p + 1;
	return true;
}

static bool check_generated(const char *val, size_t len, const char *k, unsigned klen)
{
	char unit[LG_KEY_MAX + 48];
	size_t pos = klen + 1;
	uint64_t seed;
	int n;

	if (len <= klen + 1) /* too short to carry the seed: the key prefix must match */
		return !memcmp(val, k, len < klen ? len : klen) && (len <= klen || val[klen] == '/');
	if (memcmp(val, k, klen) || val[klen] != '/')
		return false;
	if (!parse_version(val, len, &pos, &seed)) {
		/* cut inside the seed: what is there must be digits */
		for (size_t j = klen + 1; j < len; j++)
			if (val[j] < '0' || val[j] > '9')
				return false;
		return true;
	}
	n = make_unit(unit, sizeof(unit), k, klen, seed);
	return repeats(val, len, unit, (size_t)n);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool check_ours(const char *val, size_t len, const char *k, unsigned klen)
{
	char unit[LG_KEY_MAX + 48];
	uint32_t want = 0;
	uint64_t version;
	size_t pos = 9;
	int n;

	if (len < 11 || val[8] != '/')
		return false;
	for (int i = 0; i < 8; i++) {
		int d = hexval(val[i]);
		if (d < 0)
			return false;
		want = want << 4 | (uint32_t)d;
	}
	if (!parse_version(val, len, &pos, &version))
		return false;
	if (value_hash(k, klen, version, (unsigned)len) != want)
		return false;
	n = make_unit(unit, sizeof(unit), k, klen, version);
	return repeats(val + pos, len - pos, unit, (size_t)n);
}

bool lg_value_check(const char *val, size_t len, uint64_t key, unsigned klen)
{
	char k[LG_KEY_MAX + 1];

	if (!len || lg_key(k, klen, key) < 0)
		return false;
	if (val[0] == 'k')
		return check_generated(val, len, k, klen);
	return check_ours(val, len, k, klen);
}
