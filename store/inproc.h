/* SPDX-License-Identifier: MIT */
/* A layout loaded in this process (inproc.c): what tests, benchmarks and
 * fuzzers run against, through BPF_PROG_TEST_RUN and the accessors, with
 * nothing attached or pinned. */
#ifndef XDPKV_STORE_INPROC_H
#define XDPKV_STORE_INPROC_H

#include "xdpkv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cfg: from xkv_config_defaults, with the caller's changes.  Finish it, open
 * layout L's BPF object with it (L NULL: cfg->layout's), load it and, when s
 * is not NULL, make the store s over it (xkv_store_from_object with L).
 * When L is another layout than cfg->layout (the benchmarks' null store,
 * configured as hash_map), cfg->layout takes L's name once finished.
 * 0 with *obj set, or a negative errno with *obj NULL, nothing left open and
 * err saying which step failed: "config: ", "open: ", "load: " or "store: "
 * and why. */
int xkv_inproc_load(struct xkv_config *cfg, const struct xkv_layout *L, struct bpf_object **obj,
		    struct xkv_store *s, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
