/* SPDX-License-Identifier: MIT */
/* Drive xkv_slow_stream (engine/stream.c, the TCP server's entry) as
 * server/serve_tcp.c does, one connection, and check what it promises
 * (stream_drive.c).  Shared by fuzz_stream and fuzz_meta. */
#ifndef XKV_FUZZ_STREAM_DRIVE_H
#define XKV_FUZZ_STREAM_DRIVE_H

#include <stddef.h>
#include <linux/types.h>
#include "fuzz_env.h"

/* How the bytes arrive: chunk sizes cycle through sched[0..nsched) (each
 * byte picks a size, stream_drive.c), and out_small bounds the replies a
 * call may queue to 64 bytes instead of serve_tcp's 256 KiB. */
struct sd_plan {
	const __u8 *sched;
	size_t nsched;
	int out_small;
};

/* Feed text[0..len) to a fresh slow path over e's store, chunk by chunk,
 * keeping the unconsumed rest and the connection state as serve_tcp.c does,
 * until it is all delivered and nothing more runs, or the connection ends.
 * Aborts (a crash for libFuzzer) when an invariant breaks.  Returns the
 * number of reply bytes. */
size_t sd_run(struct fuzz_env *e, const __u8 *text, size_t len, const struct sd_plan *plan);

#endif
