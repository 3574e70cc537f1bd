// SPDX-License-Identifier: MIT
/* The layouts xdpkv knows.  A new layout: copy a folder, add one line here
 * (and its name to XKV_LAYOUTS in variants/CMakeLists.txt). */
#include <string.h>
#include "xdpkv.h"

extern const struct xkv_layout xkv_layout_hash_map, xkv_layout_array_fnv,
	xkv_layout_lru, xkv_layout_percpu, xkv_layout_lru_percpu, xkv_layout_set_assoc,
	xkv_layout_sieve, xkv_layout_s3fifo, xkv_layout_null;
#ifdef XKV_HAVE_ARENA /* built with clang >= 18 only (variants/CMakeLists.txt) */
extern const struct xkv_layout xkv_layout_arena;
#endif

const struct xkv_layout *const xkv_layouts[] = {
	&xkv_layout_hash_map,
	&xkv_layout_array_fnv,
	&xkv_layout_lru,
	&xkv_layout_percpu,
	&xkv_layout_lru_percpu,
	&xkv_layout_set_assoc,
	&xkv_layout_sieve,
	&xkv_layout_s3fifo,
#ifdef XKV_HAVE_ARENA
	&xkv_layout_arena,
#endif
	NULL,
};

/* Benchmark floors: attachable by name (xdpkv --variant null attach), so that
 * a capacity run can measure the handler without a map on the same path, but
 * not layouts: nothing iterates them. */
static const struct xkv_layout *const xkv_bench_layouts[] = {
	&xkv_layout_null, /* variants/null_store/null_layout.c */
	NULL,
};

static const struct xkv_layout *find_in(const struct xkv_layout *const *list, const char *name)
{
	for (int i = 0; list[i]; i++)
		if (!strcmp(list[i]->name, name))
			return list[i];
	return NULL;
}

const struct xkv_layout *xkv_layout_find(const char *name)
{
	return find_in(xkv_layouts, name);
}

const struct xkv_layout *xkv_layout_find_any(const char *name)
{
	const struct xkv_layout *L = find_in(xkv_layouts, name);
	return L ? L : find_in(xkv_bench_layouts, name);
}
