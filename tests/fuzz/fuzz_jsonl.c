// SPDX-License-Identifier: MIT
/* fuzz_jsonl: the JSON-lines importer (cli/jsonl.c: jsonl_parse, what
 * `xdpkv load --import` reads) and its writer (jsonl_bytes_field, what
 * `xdpkv dump` writes).
 *   - every line of the input is parsed from an exact-size copy (ASan sees
 *     a read past its NUL); a parsed item's key and value lie inside the
 *     line and are no longer than it;
 *   - a parsed item written back out and parsed again gives the same item;
 *   - the input itself, split in two, as a key and a value: written and
 *     read back, the same bytes (UTF-8 text or base64). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jsonl.h"

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "fuzz_jsonl: check failed: %s: ", #cond); \
			fprintf(stderr, __VA_ARGS__);                       \
			fprintf(stderr, "\n");                              \
			abort();                                            \
		}                                                           \
	} while (0)

/* Write an item as dump does, parse it back, compare. */
static void round_trip(const void *key, size_t klen, const void *val, size_t vlen, unsigned flags,
		       long long exptime, unsigned long long cas)
{
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	CHECK(f, "open_memstream");
	fputc('{', f);
	jsonl_bytes_field(f, "key", key, klen);
	fputc(',', f);
	jsonl_bytes_field(f, "value", val, vlen);
	fprintf(f, ",\"flags\":%u,\"exptime\":%lld", flags, exptime);
	if (cas)
		fprintf(f, ",\"cas\":%llu", cas);
	fputc('}', f);
	fclose(f);

	struct jsonl_item it;
	const char *why = NULL;
	CHECK(memchr(text, '\n', tlen) == NULL, "a written line holds a newline: %s", text);
	int rc = jsonl_parse(text, &it, &why);
	CHECK(rc == 0, "written line not read back (%s): %s", why, text);
	CHECK(it.klen == klen && !memcmp(it.key, key, klen), "key differs after a round trip");
	CHECK(it.vlen == vlen && !memcmp(it.val, val, vlen), "value differs after a round trip");
	CHECK(it.flags == flags && it.exptime == exptime && it.cas == cas, "numbers differ");
	free(text);
}

static void one_line(const uint8_t *p, size_t n)
{
	char *line = malloc(n + 1);
	struct jsonl_item it;
	const char *why = NULL;

	CHECK(line, "out of memory");
	memcpy(line, p, n);
	line[n] = 0;
	if (jsonl_parse(line, &it, &why) == 0) {
		CHECK(it.key && it.val, "no key or value");
		CHECK(it.key >= line && it.key + it.klen <= line + n, "key outside the line");
		CHECK(it.val >= line && it.val + it.vlen <= line + n, "value outside the line");
		/* copies: round_trip parses text of its own */
		void *k = malloc(it.klen + 1), *v = malloc(it.vlen + 1);
		CHECK(k && v, "out of memory");
		memcpy(k, it.key, it.klen);
		memcpy(v, it.val, it.vlen);
		/* a cas of 0 reads as none; dump writes what it has */
		round_trip(k, it.klen, v, it.vlen, it.flags, it.exptime, it.cas);
		free(k);
		free(v);
	} else {
		CHECK(why && *why, "refused without a reason");
	}
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t start = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i == size || data[i] == '\n') {
			one_line(data + start, i - start);
			start = i + 1;
		}
	}
	/* the raw bytes as a key and a value */
	size_t half = size / 2;
	round_trip(data, half, data + half, size - half, (unsigned)size, -(long long)size, size);
	return 0;
}
