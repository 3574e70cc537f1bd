// SPDX-License-Identifier: MIT
/* The maps a store holds open (the table loader.c and pins.c walk), each
 * found in an object, and the pinned config read back. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "maps.h"

/* The maps a store holds open: name in the object, name of its pin, field.
 * The first three every object has; the policy maps only real layouts. */
const struct xkv_map_desc xkv_maps[] = {
	{ "store", "store", offsetof(struct xkv_store, store_fd) },
	{ "stats", "stats", offsetof(struct xkv_store, stats_fd) },
	{ ".rodata.cfg", "cfg", offsetof(struct xkv_store, cfg_fd) },
	{ "acl_allow", "acl_allow", offsetof(struct xkv_store, acl_fd[XKV_ACL_ALLOW]) },
	{ "acl_write", "acl_write", offsetof(struct xkv_store, acl_fd[XKV_ACL_WRITE]) },
	{ "acl_trust", "acl_trust", offsetof(struct xkv_store, acl_fd[XKV_ACL_TRUST]) },
	{ "acl_gen", "acl_gen", offsetof(struct xkv_store, acl_gen_fd) },
	{ "host", "host", offsetof(struct xkv_store, host_fd) },
	{ "local_addrs", "local_addrs", offsetof(struct xkv_store, local_fd) },
	{ "ratelimit", "ratelimit", offsetof(struct xkv_store, rl_fd) },
	{ "tcp_peers", "tcp_peers", offsetof(struct xkv_store, tcp_fd) },
	/* the TCP fast path (common/tcp.bpf.h) */
	{ "tcp_socks", "tcp_socks", offsetof(struct xkv_store, tcp_socks_fd) },
	{ "tcp_slots", "tcp_slots", offsetof(struct xkv_store, tcp_slots_fd) },
	{ "tcp_conns", "tcp_conns", offsetof(struct xkv_store, tcp_conns_fd) },
	{ "tcp_paid", "tcp_paid", offsetof(struct xkv_store, tcp_paid_fd) },
	/* TCP answered in XDP (common/tcpx.h) */
	{ "tcpx_flows", "tcpx_flows", offsetof(struct xkv_store, tcpx_flows_fd) },
	{ "tcpx_progs", "tcpx_progs", offsetof(struct xkv_store, tcpx_progs_fd) },
	/* values above --value-size (entry.h, bigval.c) */
	{ "big", "big", offsetof(struct xkv_store, big_fd) },
};
const size_t xkv_nmaps = sizeof(xkv_maps) / sizeof(xkv_maps[0]);

/* Map i of xkv_maps in obj.  The null store has no "store" map: its one
 * item lives in .bss, which then stands in for it (pinned as "store", read
 * by its accessor in variants/null_store/null_layout.c). */
struct bpf_map *xkv_map_find(struct bpf_object *obj, size_t i)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, xkv_maps[i].map);
	if (!m && xkv_maps[i].off == offsetof(struct xkv_store, store_fd))
		m = bpf_object__find_map_by_name(obj, ".bss");
	return m;
}

/* The pinned cfg as this xdpkv knows it.  Another version's cfg may be
 * shorter (fields added since read as 0: hash_seed) or longer (fields this
 * one does not know are dropped); the kernel copies value_size bytes, so read
 * into a buffer of that size. */
int xkv_cfg_read(int cfg_fd, struct xkv_config *cfg)
{
	struct bpf_map_info info = {};
	__u32 zero = 0, ilen = sizeof(info);
	if (bpf_obj_get_info_by_fd(cfg_fd, &info, &ilen))
		return -errno;
	if (info.value_size < offsetof(struct xkv_config, hash_seed))
		return -EPROTO;
	__u8 *buf = calloc(1, info.value_size > sizeof(*cfg) ? info.value_size : sizeof(*cfg));
	if (!buf)
		return -ENOMEM;
	int e = bpf_map_lookup_elem(cfg_fd, &zero, buf) ? -errno : 0;
	memcpy(cfg, buf, sizeof(*cfg));
	free(buf);
	return e;
}
