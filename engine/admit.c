// SPDX-License-Identifier: MIT
/* Who may use the slow path: the access lists' verdict on a source (its
 * rights), and for a datagram the checks the XDP program makes before it
 * parses, then the lists and the slow path's rate limit; a TCP connection's
 * admission. */
#include "engine_int.h"
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>

/* The lists' verdict on a source (addr NULL: a trusted local caller): 0
 * with its rights, or XKV_STAT_drop_acl (a lookup error refuses too). */
int slow_rights(struct xkv_slow *sl, const __u8 *addr, struct xkv_rights *rt)
{
	struct xkv_store *s = sl->s;

	rt->allow = rt->write = rt->trusted = true;
	if (!addr || (s->cfg.flags & XKV_CFG_UNGUARDED))
		return 0;
	if (xkv_rights_of(s, addr, rt) || !rt->allow)
		return XKV_STAT_drop_acl;
	return 0;
}

/* A connection asks the lists at every request, and a change of any list
 * must reach it at its next one, but three trie lookups (three bpf()
 * calls) a request cost more than the request.  Every change rewrites the
 * acl_gen token (policy.c, xkv_acl_changed) after the trie: the answer is
 * kept with the token read before asking, and asked again once the token
 * differs.  The token is read from a read-only mapping of its map, no
 * system call; without one (a map pinned by an older xdpkv) every call
 * asks. */
int slow_rights_kept(struct xkv_slow *sl, const __u8 *addr, struct xkv_rights_kept *k,
		     struct xkv_rights *rt)
{
	if (!sl->acl_tok || !addr)
		return slow_rights(sl, addr, rt);
	__u64 tok = __atomic_load_n(sl->acl_tok, __ATOMIC_ACQUIRE);
	if (k->valid && k->tok == tok) {
		*rt = k->r;
		return k->drop;
	}
	k->drop = slow_rights(sl, addr, &k->r);
	k->tok = tok;
	k->valid = true;
	*rt = k->r;
	return k->drop;
}

void slow_acl_tok_map(struct xkv_slow *sl)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	int fd = sl->s->acl_gen_fd;

	sl->acl_tok = NULL;
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &ilen) || !(info.map_flags & BPF_F_MMAPABLE))
		return;
	void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED)
		sl->acl_tok = p;
}

void slow_acl_tok_unmap(struct xkv_slow *sl)
{
	if (sl->acl_tok)
		munmap((void *)sl->acl_tok, (size_t)sysconf(_SC_PAGESIZE));
	sl->acl_tok = NULL;
}

/* The checks the XDP program makes before it parses (guards.bpf.h and xdp.bpf.h, in its
 * order), for what reaches the socket without passing them: IP options,
 * fragments, frames for another MAC, skb paths.  0 to go on, or the
 * counter of a silent drop (-1: dropped, not counted). */
int slow_admit(struct xkv_slow *sl, const struct xkv_slow_src *src, struct xkv_rights *rt)
{
	struct xkv_store *s = sl->s;
	__u32 zero = 0;

	rt->allow = rt->write = rt->trusted = true;
	if (!src || (s->cfg.flags & XKV_CFG_UNGUARDED))
		return 0;
	/* sent to this host?  (a subnet broadcast reaches the socket too) */
	struct xkv_host h;
	__u8 plen;
	if (src->has_dst && s->host_fd >= 0 && s->local_fd >= 0 &&
	    !bpf_map_lookup_elem(s->host_fd, &zero, &h) && (h.flags & XKV_HOST_CHECK_IP) &&
	    bpf_map_lookup_elem(s->local_fd, src->dst, &plen))
		return XKV_STAT_pass_not_local; /* XDP passed it on; here it ends */
	if (src->port == 0 || src->port == s->cfg.port ||
	    (src->port < 1024 && !(s->cfg.flags & XKV_CFG_LOW_PORTS)))
		return XKV_STAT_drop_port;
	int drop = slow_rights(sl, src->addr, rt);
	if (drop)
		return drop;
	/* what reached the socket past the program's limit: fragments, IP
	 * options, extension headers, VLAN tags (ratelimit.h) */
	if (!xkv_rl_ok(&sl->rl, src->addr, xkv_now_ns()))
		return XKV_STAT_drop_ratelimit;
	return 0;
}

int xkv_slow_tcp_admit(struct xkv_slow *sl, const __u8 addr[16], struct xkv_stats *delta)
{
	struct xkv_rights rt;
	int drop = slow_rights(sl, addr, &rt);

	if (drop)
		delta->v[drop]++;
	return !drop;
}
