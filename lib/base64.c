// SPDX-License-Identifier: MIT
/* base64 (RFC 4648, standard alphabet, padded): encoding and decoding. */
#include "base64.h"

static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int digit(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

size_t xkv_b64_encode(char *dst, const void *src, size_t n)
{
	const unsigned char *s = src;
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		size_t left = n - i;
		unsigned v = (unsigned)s[i] << 16;
		if (left > 1)
			v |= (unsigned)s[i + 1] << 8;
		if (left > 2)
			v |= s[i + 2];
		dst[o++] = abc[v >> 18 & 63];
		dst[o++] = abc[v >> 12 & 63];
		dst[o++] = left > 1 ? abc[v >> 6 & 63] : '=';
		dst[o++] = left > 2 ? abc[v & 63] : '=';
	}
	return o;
}

long xkv_b64_decode(const void *src, size_t n, void *dst, size_t cap, enum xkv_b64_rule rule)
{
	const unsigned char *s = src;
	unsigned char *d = dst;
	size_t o = 0, pad_from;
	unsigned v = 0;
	int bits = 0;

	if (rule == XKV_B64_STRICT) {
		if (n == 0 || n % 4)
			return -1;
		/* "xx==" or "xxx=": a '=' before these is a stray one */
		pad_from = n - (s[n - 1] == '=') - (s[n - 1] == '=' && s[n - 2] == '=');
	} else {
		pad_from = n > 2 ? n - 2 : 0;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		if (c == '=') {
			if (i < pad_from)
				return -1;
			continue;
		}
		int x = digit(c);
		if (x < 0)
			return -1;
		v = v << 6 | (unsigned)x;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o == cap)
				return -1;
			d[o++] = (unsigned char)(v >> bits);
		}
	}
	return (long)o;
}
