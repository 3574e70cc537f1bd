/* SPDX-License-Identifier: MIT */
/* JSON output: the one string writer (json.c). */
#ifndef XDPKV_LIB_JSON_H
#define XDPKV_LIB_JSON_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What xkv_json_str escapes besides '"', '\\' and the control bytes below
 * 0x20 (always \u00XX unless XKV_JSON_SHORT names a shorter form). */
#define XKV_JSON_SHORT 0x1u /* \n, \r, \t as such */
#define XKV_JSON_DEL   0x2u /* 0x7f as \u007f */
#define XKV_JSON_HIGH  0x4u /* bytes >= 0x80 as \u00XX: the bytes are not text */
/* bytes of any kind (the CLI's --json): plain ASCII out, valid JSON whatever they hold */
#define XKV_JSON_BYTES (XKV_JSON_SHORT | XKV_JSON_DEL | XKV_JSON_HIGH)
/* names the machine gives (CPU model, kernel release): only what JSON must, all as \u00XX */
#define XKV_JSON_MINIMAL 0u
/* text known to be valid UTF-8 (dump's JSON lines): escape only what JSON must */
#define XKV_JSON_TEXT  (XKV_JSON_SHORT | XKV_JSON_DEL)

/* Write s[0..len) to f as a quoted JSON string, escaping as `how` says. */
void xkv_json_str(FILE *f, const void *s, size_t len, unsigned how);

static inline void xkv_json_cstr(FILE *f, const char *s, unsigned how)
{
	xkv_json_str(f, s, strlen(s), how);
}

#ifdef __cplusplus
}
#endif

#endif
