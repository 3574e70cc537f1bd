/* SPDX-License-Identifier: MIT */
/* CHECK for the small unit tests (test_lib.c, test_inproc.c): a failed
 * condition prints FAIL with its place and message and is counted; the test
 * ends with unit_done. */
#ifndef XDPKV_TESTS_UNIT_CHECK_H
#define XDPKV_TESTS_UNIT_CHECK_H

#include <stdio.h>

static int unit_fails;

#define CHECK(cond, ...)                                                 \
	do {                                                             \
		if (!(cond)) {                                           \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);      \
			printf(__VA_ARGS__);                             \
			printf("\n");                                    \
			unit_fails++;                                    \
		}                                                        \
	} while (0)

/* The exit status: 0 when every check passed. */
static inline int unit_done(const char *test)
{
	if (unit_fails) {
		printf("%s: %d checks failed\n", test, unit_fails);
		return 1;
	}
	printf("%s: all checks passed\n", test);
	return 0;
}

#endif
