/* SPDX-License-Identifier: MIT */
/* A layout this kernel cannot hold (its store map refused: arena where BPF
 * arenas are missing or not permitted) is skipped, never failed nor passed
 * in silence: one "SKIP LAYOUT: reason" line, which tests/run.sh counts.  A
 * test of that layout alone exits 77 (ctest: skipped, tests/CMakeLists.txt). */
#ifndef XDPKV_TESTS_LAYOUT_SKIP_H
#define XDPKV_TESTS_LAYOUT_SKIP_H

#include <stdio.h>
#include "xdpkv.h"

#define XKV_TEST_SKIPPED 77

static inline int layout_unavailable(const char *name)
{
	const struct xkv_layout *L = xkv_layout_find_any(name);
	char why[200];

	if (!L || xkv_layout_probe(L, why, sizeof(why)) != 0)
		return 0;
	printf("SKIP %s: not available on this kernel: %s\n", name, why);
	fflush(stdout);
	return 1;
}

#endif
