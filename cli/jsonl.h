/* SPDX-License-Identifier: MIT */
/* The JSON-lines item format of dump and import (cli/jsonl.c, docs/cli.md). */
#ifndef XDPKV_CLI_JSONL_H
#define XDPKV_CLI_JSONL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

bool utf8_valid(const unsigned char *p, size_t len);
/* "NAME":"text" when the bytes are valid UTF-8, else "NAME_b64":"base64" */
void jsonl_bytes_field(FILE *f, const char *name, const void *s, size_t len);

/* One line: {"key"|"key_b64", "value"|"value_b64", "flags", "exptime",
 * "cas"}; other fields are ignored.  key/val point into line (decoded in
 * place).  0, or -1 with the reason in *why. */
struct jsonl_item {
	char *key, *val;
	size_t klen, vlen;
	unsigned flags;
	long long exptime;
	unsigned long long cas;   /* 0: none given */
};
int jsonl_parse(char *line, struct jsonl_item *it, const char **why);

#endif
