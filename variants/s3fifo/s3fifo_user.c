// SPDX-License-Identifier: MIT
/* s3fifo: userspace side, set_assoc's bucketed accessor
 * (set_assoc/bucket_user.h) with S3-FIFO in each bucket (s3fifo.h). */
#include "s3fifo/s3fifo.h"
#include "set_assoc/bucket_user.h"
#include "s3fifo.skel.h"

XKV_LAYOUT_ELF(s3fifo)

const struct xkv_layout xkv_layout_s3fifo = {
	.name = "s3fifo",
	.summary = "set_assoc's 8-way (4 for large values) buckets, keyed hash, S3-FIFO per bucket "
		   "(1 small way, the rest main, 8 ghost tags)",
	.loses = "items evicted by S3-FIFO when their bucket is full (counted exactly)",
	XKV_SA_LAYOUT_OPS,
};
