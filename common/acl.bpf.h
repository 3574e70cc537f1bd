/* SPDX-License-Identifier: MIT */
/* The access lists (policy.h, docs/security.md) as both programs ask them:
 * is the request's source (sc->addr.src16) in a trie, and in the allow list
 * (cached per CPU).  Expects prelude.bpf.h (the tries, acl_gen) before it. */
#ifndef XDPKV_ACL_BPF_H
#define XDPKV_ACL_BPF_H

/* The checks are on unless userspace loaded with XKV_CFG_UNGUARDED. */
#define XKV_GUARDED (!(cfg.flags & XKV_CFG_UNGUARDED))

/* Is the request's source in the trie `list`? */
static __always_inline int acl_has(struct xkv_scratch *sc, void *list)
{
	sc->acl.prefixlen = 128;
	__builtin_memcpy(sc->acl.addr, sc->addr.src16, 16);
	return bpf_map_lookup_elem(list, &sc->acl) != NULL;
}

/* Is the request's source in the allow list?  The trie lookup is ~45 ns
 * (docs/results.md); a run of requests from one source (the common case on
 * a CPU) asks it once per ACL change: the answer for the last source is
 * kept per CPU under the acl_gen token, which every change of a trie
 * replaces (read before the lookup, so a change racing with it leaves a
 * stale token, never a stale answer). */
static __always_inline int acl_allowed(struct xkv_scratch *sc)
{
	__u32 zero = 0;
	__u64 *tok = bpf_map_lookup_elem(&acl_gen, &zero);
	__u64 t = tok ? *tok : 0;
	const __u64 *s = (const __u64 *)sc->addr.src16;
	if (sc->acl_last.valid && sc->acl_last.token == t && sc->acl_last.src[0] == s[0] &&
	    sc->acl_last.src[1] == s[1])
		return sc->acl_last.allowed;
	barrier();
	int ok = acl_has(sc, &acl_allow);
	sc->acl_last.src[0] = s[0];
	sc->acl_last.src[1] = s[1];
	sc->acl_last.token = t;
	sc->acl_last.allowed = ok;
	sc->acl_last.valid = 1;
	return ok;
}

#endif
