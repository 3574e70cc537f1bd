// SPDX-License-Identifier: MIT
/* The layouts xdpkv knows.  A new layout: copy a folder, add one line here
 * (and its name to XKV_LAYOUTS in variants/CMakeLists.txt). */
#include <string.h>
#include "xdpkv.h"

extern const struct xkv_layout xkv_layout_hash_map, xkv_layout_array_fnv,
	xkv_layout_lru, xkv_layout_percpu;

const struct xkv_layout *const xkv_layouts[] = {
	&xkv_layout_hash_map,
	&xkv_layout_array_fnv,
	&xkv_layout_lru,
	&xkv_layout_percpu,
	NULL,
};

const struct xkv_layout *xkv_layout_find(const char *name)
{
	for (int i = 0; xkv_layouts[i]; i++)
		if (!strcmp(xkv_layouts[i]->name, name))
			return xkv_layouts[i];
	return NULL;
}
