// SPDX-License-Identifier: MIT
/* sieve: userspace side, set_assoc's bucketed accessor
 * (set_assoc/bucket_user.h) with SIEVE in each bucket (sieve.h). */
#include "sieve/sieve.h"
#include "set_assoc/bucket_user.h"
#include "sieve.skel.h"

XKV_LAYOUT_ELF(sieve)

const struct xkv_layout xkv_layout_sieve = {
	.name = "sieve",
	.summary = "set_assoc's 8-way (4 for large values) buckets, keyed hash, SIEVE per bucket",
	.loses = "items evicted by SIEVE when their bucket is full (counted exactly)",
	XKV_SA_LAYOUT_OPS,
};
