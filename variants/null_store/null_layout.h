/* SPDX-License-Identifier: MIT */
/* The null store (variants/null_store/null_store.bpf.c) as a layout the loader can open:
 * the benchmarks' floor.  It is not in the registry's list (xkv_layouts):
 * only the benchmarks load it, directly or by name through
 * xkv_layout_find_any ('xdpkv --variant null attach', bench/capacity.sh). */
#ifndef XKV_NULL_LAYOUT_H
#define XKV_NULL_LAYOUT_H

#include "xdpkv.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const struct xkv_layout xkv_layout_null;

/* Write the one item every lookup returns (live: wtime_ns 1, no expiry)
 * into the loaded object's .bss and read it back.  0 or -errno with a
 * message in err. */
int xkv_null_fill(struct bpf_object *obj, __u32 flags, const void *data, __u32 len,
		  char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
