/* SPDX-License-Identifier: MIT */
/* A small store in-process for the fuzz targets that need one (fuzz_stream,
 * fuzz_meta, fuzz_snapshot): the layout's BPF object loaded, not attached,
 * and its maps used, as tests/slowpath_test.c does (root: BPF maps).  One
 * store per process; emptied between inputs so that each input runs alone. */
#ifndef XKV_FUZZ_ENV_H
#define XKV_FUZZ_ENV_H

#include <bpf/libbpf.h>
#include "xdpkv.h"

struct fuzz_env {
	struct bpf_object *obj;
	struct xkv_store s;
};

/* The sizes every fuzz store has: a few items, values of 1024 bytes (20
 * digits of an incr fit, see README.md), a big map of 64 chunks (values up
 * to ~230 KiB above --value-size). */
#define FUZZ_ENTRIES 256
#define FUZZ_VAL_CAP 1024
#define FUZZ_BIG_CHUNKS 64

/* Open the store once (layout: $XKV_FUZZ_LAYOUT, default hash_map); exits
 * with a message when it cannot (not root, no BPF). */
struct fuzz_env *fuzz_env_get(void);
/* Remove every item and every big-value chunk. */
void fuzz_env_clear(struct fuzz_env *e);

/* abort() with a message: libFuzzer keeps the input as a crash. */
#define FUZZ_CHECK(cond, ...)                                                \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "check failed: %s: ", #cond);        \
			fprintf(stderr, __VA_ARGS__);                        \
			fprintf(stderr, "\n");                               \
			abort();                                             \
		}                                                            \
	} while (0)

#endif
