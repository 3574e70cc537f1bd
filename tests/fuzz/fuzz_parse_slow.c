// SPDX-License-Identifier: MIT
/* fuzz_parse, the slow path's build of the parser: the sizes of
 * engine/engine_int.h (a 65536-byte span, 4096 tokens). */
#include <stddef.h>
#include <stdint.h>
#define XKV_PARSE_SPAN 65536
#define XKV_PARSE_TOKENS 4096
#include "parse_check.h"

void fuzz_parse_slow(const uint8_t *data, size_t size);

void fuzz_parse_slow(const uint8_t *data, size_t size)
{
	pc_run(data, size);
}
