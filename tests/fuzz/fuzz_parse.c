// SPDX-License-Identifier: MIT
/* fuzz_parse: the request parser (common/parse.h) built as the XDP program
 * builds it (a 2048-byte span, 24 tokens) and, in fuzz_parse_slow.c, as the
 * slow path builds it (65536, 4096).  The checks: parse_check.h. */
#include <stddef.h>
#include <stdint.h>
#include "parse_check.h"

void fuzz_parse_slow(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pc_run(data, size);
	fuzz_parse_slow(data, size);
	return 0;
}
