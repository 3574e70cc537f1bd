/* SPDX-License-Identifier: MIT */
/* Internal to store/: the maps a store holds open (maps.c). */
#pragma once
#include <stddef.h>
#include <bpf/libbpf.h>
#include "xdpkv.h"

/* Name in the object, name of its pin, field of struct xkv_store. */
struct xkv_map_desc {
	const char *map, *pin;
	size_t off;
};
extern const struct xkv_map_desc xkv_maps[];
extern const size_t xkv_nmaps;
#define XKV_NMAPS xkv_nmaps
#define MAP_FD(s, i) ((int *)((char *)(s) + xkv_maps[i].off))

/* Map i of xkv_maps in obj (the null store's .bss stands in for "store"). */
struct bpf_map *xkv_map_find(struct bpf_object *obj, size_t i);
/* The pinned cfg as this xdpkv knows it (fields it does not know dropped,
 * fields another version lacks read as 0). */
int xkv_cfg_read(int cfg_fd, struct xkv_config *cfg);
