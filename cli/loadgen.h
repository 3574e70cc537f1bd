/* SPDX-License-Identifier: MIT */
/* The items of 'xdpkv load IFACE --generate N': rebuilt from the index
 * alone, so benchmarks and tests can ask for any of them and check the
 * value.  This is a contract (docs/cli.md "load"):
 *
 *   key i (0 <= i < N), K bytes:  "key:" then i in decimal, zero-padded to
 *                                 K - 4 digits        e.g. K=16, i=42: key:000000000042
 *   value, V bytes:               "<key>/<seed>/" repeated, cut at V bytes
 *                                 e.g. seed 0: key:000000000042/0/key:000000000042/0/ke...
 *   flags 0, exptime 0 (never expires).
 */
#ifndef XDPKV_LOADGEN_H
#define XDPKV_LOADGEN_H

#include <stdio.h>
#include <string.h>

/* Digits of i in decimal. */
static inline unsigned xkv_gen_digits(unsigned long long i)
{
	unsigned d = 1;
	while (i >= 10) {
		i /= 10;
		d++;
	}
	return d;
}

/* Write key i of klen bytes to out (klen + 1 bytes, NUL-terminated).
 * Returns klen, or -1 if i needs more than klen - 4 digits. */
static inline int xkv_gen_key(char *out, unsigned klen, unsigned long long i)
{
	if (klen < 5 || xkv_gen_digits(i) > klen - 4)
		return -1;
	snprintf(out, klen + 1, "key:%0*llu", (int)(klen - 4), i);
	return (int)klen;
}

/* Write the vlen-byte value of key (klen bytes) under seed to out (no NUL). */
static inline void xkv_gen_value(char *out, unsigned vlen, const char *key, unsigned klen,
				 unsigned long long seed)
{
	char unit[300];
	int n = snprintf(unit, sizeof(unit), "%.*s/%llu/", (int)klen, key, seed);
	for (unsigned j = 0; j < vlen; j++)
		out[j] = unit[j % (unsigned)n];
}

#endif
