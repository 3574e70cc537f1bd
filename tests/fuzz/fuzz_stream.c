// SPDX-License-Identifier: MIT
/* fuzz_stream: the TCP stream engine, xkv_slow_stream (engine/stream.c),
 * over a real store in-process (fuzz_env.c), driven and checked as
 * stream_drive.c says.
 *
 * Input: 4 schedule bytes (the chunk sizes the bytes arrive in, cycled;
 * stream_drive.c: chunk_of; bit 0 of the first one set: a 64-byte reply
 * bound per call), then the stream text, where \x01 H L C stands for the
 * byte C repeated H*256+L+1 times (large values and over-long lines from a
 * small input; at most 256 KiB in all). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "stream_drive.h"

#define EXPAND_MAX (256 * 1024)

static size_t expand(const uint8_t *p, size_t n, uint8_t *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o < EXPAND_MAX; i++) {
		if (p[i] == 1 && i + 3 < n) {
			size_t rep = ((size_t)p[i + 1] << 8 | p[i + 2]) + 1;
			if (rep > EXPAND_MAX - o)
				rep = EXPAND_MAX - o;
			memset(out + o, p[i + 3], rep);
			o += rep;
			i += 3;
		} else {
			out[o++] = p[i];
		}
	}
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *text;
	struct fuzz_env *e = fuzz_env_get();

	if (size < 4)
		return 0;
	if (!text && !(text = malloc(EXPAND_MAX)))
		abort();
	struct sd_plan plan = { .sched = data, .nsched = 4, .out_small = data[0] & 1 };
	size_t n = expand(data + 4, size - 4, text);
	sd_run(e, text, n, &plan);
	fuzz_env_clear(e);
	return 0;
}
