/* SPDX-License-Identifier: MIT */
/* base64 (base64.c): RFC 4648, the standard alphabet, '=' padding, as
 * memcached's meta flag b and dump's "_b64" fields use it. */
#ifndef XDPKV_LIB_BASE64_H
#define XDPKV_LIB_BASE64_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The encoded length of n bytes (padded, no NUL). */
#define XKV_B64_LEN(n) (((n) + 2) / 3 * 4)

/* Write the base64 text of src[0..n) to dst (room for XKV_B64_LEN(n)
 * characters; no NUL is added); the number written. */
size_t xkv_b64_encode(char *dst, const void *src, size_t n);

/* Decoding rules. */
enum xkv_b64_rule {
	/* RFC 4648 exactly (the meta flag b): a non-empty multiple of 4
	 * characters of the alphabet, '=' only as the last one or two */
	XKV_B64_STRICT,
	/* what `xdpkv load --import` has always read: any length (empty
	 * included), padding optional, '=' anywhere among the last two
	 * characters; a trailing partial group gives what bits it holds */
	XKV_B64_LOOSE,
};

/* Decode src[0..n) into dst (room for cap bytes; dst may be src: it is
 * written behind the reading).  The decoded length, or -1: the text breaks
 * the rule, holds a character outside the alphabet (NUL included) or
 * decodes to more than cap bytes. */
long xkv_b64_decode(const void *src, size_t n, void *dst, size_t cap, enum xkv_b64_rule rule);

#ifdef __cplusplus
}
#endif

#endif
