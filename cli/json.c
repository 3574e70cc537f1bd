// SPDX-License-Identifier: MIT
/* JSON string output for --json. */
#include "cli.h"

/* Write s as a JSON string.  Bytes >= 0x80 are written as \u00XX: values
 * are bytes, and this keeps the output valid JSON whatever they hold. */
void json_str(FILE *f, const void *s, size_t len)
{
	const unsigned char *p = s;

	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = p[i];
		switch (c) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (c < 0x20 || c >= 0x7f)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
}
