// SPDX-License-Identifier: MIT
/* JSON string output for --json: the CLI's rule over lib/json.c. */
#include "cli.h"
#include "json.h"

/* Write s as a JSON string.  Bytes >= 0x80 are written as \u00XX: values
 * are bytes, and this keeps the output valid JSON whatever they hold. */
void json_str(FILE *f, const void *s, size_t len)
{
	xkv_json_str(f, s, len, XKV_JSON_BYTES);
}
