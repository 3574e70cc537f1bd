// SPDX-License-Identifier: MIT
/* The JSON-lines item format of dump and import (docs/cli.md): text that is
 * valid UTF-8 goes out as a JSON string, other bytes as base64; one flat
 * object per line is read back. */
#include <stdlib.h>
#include <string.h>
#include "base64.h"
#include "cli.h"
#include "json.h"
#include "jsonl.h"

bool utf8_valid(const unsigned char *p, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned char c = p[i];
		size_t n;
		unsigned cp;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return false;
		if (i + n >= len)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		/* overlong forms, surrogates, beyond U+10FFFF */
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

/* The base64 text of s[0..len) as a JSON string, a chunk at a time. */
static void json_b64(FILE *f, const unsigned char *s, size_t len)
{
	char chunk[XKV_B64_LEN(3 * 256)];

	fputc('"', f);
	for (size_t i = 0; i < len; i += 3 * 256) {
		size_t n = len - i < 3 * 256 ? len - i : 3 * 256;
		fwrite(chunk, 1, xkv_b64_encode(chunk, s + i, n), f);
	}
	fputc('"', f);
}

void jsonl_bytes_field(FILE *f, const char *name, const void *s, size_t len)
{
	if (utf8_valid(s, len)) {
		fprintf(f, "\"%s\":", name);
		/* valid UTF-8: escape only what JSON must */
		xkv_json_str(f, s, len, XKV_JSON_TEXT);
	} else {
		fprintf(f, "\"%s_b64\":", name);
		json_b64(f, s, len);
	}
}

static void put_utf8(char **o, unsigned cp)
{
	unsigned char *p = (unsigned char *)*o;
	if (cp < 0x80) {
		*p++ = (unsigned char)cp;
	} else if (cp < 0x800) {
		*p++ = (unsigned char)(0xc0 | cp >> 6);
		*p++ = (unsigned char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*p++ = (unsigned char)(0xe0 | cp >> 12);
		*p++ = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		*p++ = (unsigned char)(0x80 | (cp & 0x3f));
	} else {
		*p++ = (unsigned char)(0xf0 | cp >> 18);
		*p++ = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
		*p++ = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		*p++ = (unsigned char)(0x80 | (cp & 0x3f));
	}
	*o = (char *)p;
}

static int hex4(const char *p, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		*v = *v << 4 | (unsigned)d;
	}
	return 0;
}

/* Parse the string starting at *pp (after the opening quote), decoding it in
 * place and NUL-terminating it; *pp ends after the closing quote.  The
 * decoded length, or -1. */
static long parse_string(char **pp, char **start)
{
	char *p = *pp, *o = p;
	*start = p;
	for (;;) {
		char c = *p++;
		if (!c)
			return -1;
		if (c == '"')
			break;
		if (c != '\\') {
			*o++ = c;
			continue;
		}
		unsigned cp, lo;
		switch (c = *p++) {
		case '"': case '\\': case '/': *o++ = c; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'u':
			if (hex4(p, &cp))
				return -1;
			p += 4;
			if (cp >= 0xd800 && cp <= 0xdbff) { /* a surrogate pair */
				if (p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) || lo < 0xdc00 || lo > 0xdfff)
					return -1;
				p += 6;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp <= 0xdfff) {
				return -1;
			}
			put_utf8(&o, cp);
			break;
		default:
			return -1;
		}
	}
	*o = 0; /* at most where the closing quote was */
	*pp = p;
	return (long)(o - *start);
}

static char *skip_ws(char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return p;
}

int jsonl_parse(char *line, struct jsonl_item *it, const char **why)
{
	char *p = skip_ws(line);
	bool have_key = false, have_val = false;
	memset(it, 0, sizeof(*it));
	*why = "not a JSON object";
	if (*p++ != '{')
		return -1;
	p = skip_ws(p);
	if (*p == '}')
		p++;
	else
		for (;;) {
			char *name, *s;
			if (*p++ != '"' || parse_string(&p, &name) < 0)
				return -1;
			size_t nlen = strlen(name); /* decoded in place: NUL-free names only */
			p = skip_ws(p);
			if (*p++ != ':')
				return -1;
			p = skip_ws(p);
			if (*p == '"') {
				p++;
				long n = parse_string(&p, &s);
				if (n < 0)
					return -1;
				bool b64 = nlen > 4 && !strcmp(name + nlen - 4, "_b64");
				if (b64 && (n = xkv_b64_decode(s, (size_t)n, s, (size_t)n,
							       XKV_B64_LOOSE)) < 0) {
					*why = "bad base64";
					return -1;
				}
				if (!strncmp(name, "key", 3) && (nlen == 3 || b64)) {
					it->key = s, it->klen = (size_t)n, have_key = true;
				} else if (!strncmp(name, "value", 5) && (nlen == 5 || b64)) {
					it->val = s, it->vlen = (size_t)n, have_val = true;
				}
			} else {
				char *end;
				long long v = strtoll(p, &end, 10);
				if (end == p)
					return -1;
				if (*end == '.' || *end == 'e' || *end == 'E') {
					*why = "numbers are integers";
					return -1;
				}
				p = end;
				if (!strcmp(name, "flags")) {
					if (v < 0 || v > 0xffffffffll) {
						*why = "flags out of range 0..4294967295";
						return -1;
					}
					it->flags = (unsigned)v;
				} else if (!strcmp(name, "exptime")) {
					it->exptime = v;
				} else if (!strcmp(name, "cas")) {
					if (v < 0) {
						*why = "cas out of range 0..9223372036854775807";
						return -1;
					}
					it->cas = (unsigned long long)v;
				}
			}
			p = skip_ws(p);
			if (*p == ',') {
				p = skip_ws(p + 1);
				continue;
			}
			if (*p++ != '}')
				return -1;
			break;
		}
	if (*skip_ws(p)) {
		*why = "text after the object";
		return -1;
	}
	if (!have_key || !have_val) {
		*why = "needs \"key\" (or \"key_b64\") and \"value\" (or \"value_b64\")";
		return -1;
	}
	return 0;
}
