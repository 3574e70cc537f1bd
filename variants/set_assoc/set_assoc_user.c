// SPDX-License-Identifier: MIT
/* set_assoc: userspace side, the bucketed accessor (bucket_user.h) with
 * CLOCK in each bucket (clock.h). */
#include "set_assoc/clock.h"
#include "set_assoc/bucket_user.h"
#include "set_assoc.skel.h"

XKV_LAYOUT_ELF(set_assoc)

const struct xkv_layout xkv_layout_set_assoc = {
	.name = "set_assoc",
	.summary = "BPF_MAP_TYPE_ARRAY of 8-way (4 for large values) buckets, keyed hash, CLOCK per bucket",
	.loses = "items evicted by CLOCK when their bucket is full (counted exactly)",
	XKV_SA_LAYOUT_OPS,
};
