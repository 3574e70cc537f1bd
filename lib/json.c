// SPDX-License-Identifier: MIT
/* JSON output: writing bytes as one quoted JSON string (json.h says which
 * bytes each caller escapes). */
#include "json.h"

void xkv_json_str(FILE *f, const void *s, size_t len, unsigned how)
{
	const unsigned char *p = s;

	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = p[i];
		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc(c, f);
		} else if ((how & XKV_JSON_SHORT) && (c == '\n' || c == '\r' || c == '\t')) {
			fputs(c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t", f);
		} else if (c < 0x20 || (c == 0x7f && (how & XKV_JSON_DEL)) ||
			   (c >= 0x80 && (how & XKV_JSON_HIGH))) {
			fprintf(f, "\\u%04x", c);
		} else {
			fputc(c, f);
		}
	}
	fputc('"', f);
}
