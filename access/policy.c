// SPDX-License-Identifier: MIT
/* The access policy from userspace: parsing CIDRs, editing the three LPM
 * tries, the rights of a source (for the slow path), and keeping the host
 * map, local_addrs and the connected-subnet entries in step with the
 * interface.  The XDP side is in prelude.bpf.h, acl.bpf.h and guards.bpf.h; the rules in
 * docs/security.md. */
#include <errno.h>
#include <sys/random.h>
#include <ifaddrs.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include "xdpkv.h"

const char *const xkv_acl_list_names[XKV_ACL__N] = { "allow", "write", "trust" };

int xkv_acl_list_find(const char *name)
{
	for (int i = 0; i < XKV_ACL__N; i++)
		if (!strcmp(name, xkv_acl_list_names[i]))
			return i;
	if (!strcmp(name, "write-allow"))
		return XKV_ACL_WRITE;
	return -1;
}

/* Zero the bits past prefixlen. */
static void key_mask(struct xkv_acl_key *k)
{
	for (__u32 i = 0; i < 16; i++) {
		__u32 lo = i * 8;
		if (lo >= k->prefixlen)
			k->addr[i] = 0;
		else if (k->prefixlen - lo < 8)
			k->addr[i] &= (__u8)(0xff00 >> (k->prefixlen - lo));
	}
}

int xkv_cidr_parse(const char *s, struct xkv_acl_key *k, char *err, size_t errlen)
{
	char buf[INET6_ADDRSTRLEN + 8];
	struct in6_addr a6;
	struct in_addr a4;

	memset(k, 0, sizeof(*k));
	if (!s || !*s)
		return xkv_errf(err, errlen, -EINVAL, "empty address");
	if (!strcmp(s, "any") || !strcmp(s, "all"))
		return 0;
	if (strlen(s) >= sizeof(buf))
		return xkv_errf(err, errlen, -EINVAL, "'%s' is not an address or CIDR", s);
	strcpy(buf, s);
	char *slash = strchr(buf, '/');
	long plen = -1;
	if (slash) {
		char *end;
		*slash = 0;
		plen = strtol(slash + 1, &end, 10);
		if (!slash[1] || *end || plen < 0)
			return xkv_errf(err, errlen, -EINVAL, "'%s': bad prefix length", s);
	}
	if (inet_pton(AF_INET, buf, &a4) == 1) {
		if (plen > 32)
			return xkv_errf(err, errlen, -EINVAL, "'%s': an IPv4 prefix is at most /32", s);
		xkv_addr_from_v4(k->addr, &a4);
		k->prefixlen = 96 + (__u32)(plen < 0 ? 32 : plen);
	} else if (inet_pton(AF_INET6, buf, &a6) == 1) {
		if (plen > 128)
			return xkv_errf(err, errlen, -EINVAL, "'%s': an IPv6 prefix is at most /128", s);
		memcpy(k->addr, &a6, 16);
		k->prefixlen = (__u32)(plen < 0 ? 128 : plen);
	} else {
		return xkv_errf(err, errlen, -EINVAL,
			     "'%s' is not an address or CIDR (e.g. 10.0.0.0/8, fd00::/8, 192.0.2.7, any)", s);
	}
	key_mask(k);
	return 0;
}

const char *xkv_cidr_format(const struct xkv_acl_key *k, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (k->prefixlen == 0)
		snprintf(buf, len, "any");
	else if (k->prefixlen >= 96 && xkv_addr_is_v4(k->addr))
		snprintf(buf, len, "%s/%u", inet_ntop(AF_INET, k->addr + 12, a, sizeof(a)),
			 k->prefixlen - 96);
	else
		snprintf(buf, len, "%s/%u", inet_ntop(AF_INET6, k->addr, a, sizeof(a)), k->prefixlen);
	return buf;
}

static int acl_fd(const struct xkv_store *s, int list)
{
	if (list < 0 || list >= XKV_ACL__N)
		return -EINVAL;
	return s->acl_fd[list] >= 0 ? s->acl_fd[list] : -ENOENT;
}

/* An LPM trie's lookup is longest-prefix: find the exact entry by walking. */
struct exact {
	const struct xkv_acl_key *want;
	__u32 origin;
	int found;
};

static int exact_cb(const struct xkv_acl_key *k, __u32 origin, void *arg)
{
	struct exact *x = arg;
	if (k->prefixlen == x->want->prefixlen && !memcmp(k->addr, x->want->addr, 16)) {
		x->origin = origin;
		x->found = 1;
		return 1;
	}
	return 0;
}

int xkv_acl_walk(const struct xkv_store *s, int list,
		 int (*cb)(const struct xkv_acl_key *k, __u32 origin, void *arg), void *arg)
{
	int fd = acl_fd(s, list), n = 0;
	struct xkv_acl_key cur, next;
	__u32 v;

	if (fd < 0)
		return fd;
	/* collect first: a callback may change the trie */
	struct xkv_acl_key *keys = calloc(XKV_ACL_MAX_ENTRIES, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	int have = 0;
	while (n < XKV_ACL_MAX_ENTRIES && !bpf_map_get_next_key(fd, have ? &cur : NULL, &next)) {
		keys[n++] = next;
		cur = next;
		have = 1;
	}
	int visited = 0;
	for (int i = 0; i < n; i++) {
		if (bpf_map_lookup_elem(fd, &keys[i], &v))
			continue;
		/* an LPM lookup returns the longest entry no longer than the
		 * key's own prefix: for a key of the trie, that entry itself */
		visited++;
		if (cb(&keys[i], v, arg))
			break;
	}
	free(keys);
	return visited;
}

int xkv_acl_changed(const struct xkv_store *s)
{
	__u32 zero = 0;
	__u64 t = 0;

	if (s->acl_gen_fd < 0)
		return 0; /* an object without the cache */
	while (!t)
		if (getrandom(&t, sizeof(t), 0) != (ssize_t)sizeof(t))
			return -errno;
	return bpf_map_update_elem(s->acl_gen_fd, &zero, &t, BPF_ANY) ? -errno : 0;
}

int xkv_acl_add(const struct xkv_store *s, int list, const struct xkv_acl_key *k, __u32 origin)
{
	int fd = acl_fd(s, list);
	struct exact x = { .want = k };
	struct xkv_acl_key key = *k;

	if (fd < 0)
		return fd;
	key_mask(&key);
	x.want = &key;
	int e = xkv_acl_walk(s, list, exact_cb, &x);
	if (e < 0)
		return e;
	__u32 v = (x.found ? x.origin : 0) | origin;
	if (bpf_map_update_elem(fd, &key, &v, BPF_ANY))
		return -errno;
	return xkv_acl_changed(s);
}

int xkv_acl_del(const struct xkv_store *s, int list, const struct xkv_acl_key *k, __u32 origin)
{
	int fd = acl_fd(s, list);
	struct xkv_acl_key key = *k;
	struct exact x = { .want = &key };

	if (fd < 0)
		return fd;
	key_mask(&key);
	int e = xkv_acl_walk(s, list, exact_cb, &x);
	if (e < 0)
		return e;
	if (!x.found || !(x.origin & origin))
		return -ENOENT;
	__u32 v = x.origin & ~origin;
	if (v ? bpf_map_update_elem(fd, &key, &v, BPF_ANY) : bpf_map_delete_elem(fd, &key))
		return -errno;
	return xkv_acl_changed(s);
}

int xkv_acl_match(const struct xkv_store *s, int list, const __u8 addr[16])
{
	int fd = acl_fd(s, list);
	struct xkv_acl_key k = { .prefixlen = 128 };
	__u32 v;

	if (fd < 0)
		return fd;
	memcpy(k.addr, addr, 16);
	if (!bpf_map_lookup_elem(fd, &k, &v))
		return 1;
	return errno == ENOENT ? 0 : -errno;
}

int xkv_addr_from_sockaddr(const void *sa, __u8 out[16], __u16 *port)
{
	const struct sockaddr *s = sa;
	if (s->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = sa;
		xkv_addr_from_v4(out, &s4->sin_addr);
		if (port)
			*port = ntohs(s4->sin_port);
		return 0;
	}
	if (s->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = sa;
		memcpy(out, &s6->sin6_addr, 16); /* a mapped IPv4 address is already our form */
		if (port)
			*port = ntohs(s6->sin6_port);
		return 0;
	}
	return -EAFNOSUPPORT;
}

int xkv_rights_of(const struct xkv_store *s, const __u8 addr[16], struct xkv_rights *r)
{
	int e;

	if ((s->cfg.flags & XKV_CFG_UNGUARDED) || s->acl_fd[XKV_ACL_ALLOW] < 0) {
		r->allow = r->write = r->trusted = true;
		return 0;
	}
	r->allow = r->write = r->trusted = false;
	if ((e = xkv_acl_match(s, XKV_ACL_ALLOW, addr)) < 0)
		return e;
	if (!(r->allow = e))
		return 0;
	if ((e = xkv_acl_match(s, XKV_ACL_WRITE, addr)) < 0)
		return e;
	r->write = e;
	if (s->cfg.flags & XKV_CFG_STRICT)
		return 0;
	if ((e = xkv_acl_match(s, XKV_ACL_TRUST, addr)) < 0)
		return e;
	r->trusted = e; /* an open TCP connection is no trust for UDP (guards.bpf.h, src_trusted) */
	return 0;
}

int xkv_host_flags(const struct xkv_store *s, __u16 set, __u16 clear)
{
	struct xkv_host h;
	__u32 zero = 0;

	if (s->host_fd < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(s->host_fd, &zero, &h))
		return -errno;
	if (set || clear) {
		h.flags = (__u16)((h.flags & ~clear) | set);
		if (bpf_map_update_elem(s->host_fd, &zero, &h, BPF_ANY))
			return -errno;
	}
	return h.flags;
}

int xkv_writes_pause(const struct xkv_store *s, int on)
{
	int e = xkv_host_flags(s, on ? XKV_HOST_PAUSE_WRITES : 0, on ? 0 : XKV_HOST_PAUSE_WRITES);
	return e < 0 ? e : 0;
}

int xkv_writes_paused(const struct xkv_store *s)
{
	if (s->host_fd < 0)
		return 0;
	int f = xkv_host_flags(s, 0, 0);
	return f < 0 ? f : !!(f & XKV_HOST_PAUSE_WRITES);
}

static pthread_mutex_t tcp_peers_lock = PTHREAD_MUTEX_INITIALIZER;

int xkv_tcp_peer(const struct xkv_store *s, const __u8 addr[16], int delta)
{
	__u32 n = 0;
	int e = 0;

	if (s->tcp_fd < 0)
		return -ENOENT;
	pthread_mutex_lock(&tcp_peers_lock);
	if (bpf_map_lookup_elem(s->tcp_fd, addr, &n))
		n = 0;
	n = delta > 0 ? n + 1 : n ? n - 1 : 0;
	if (n ? bpf_map_update_elem(s->tcp_fd, addr, &n, BPF_ANY) :
		(bpf_map_delete_elem(s->tcp_fd, addr) && errno != ENOENT))
		e = -errno;
	pthread_mutex_unlock(&tcp_peers_lock);
	return e;
}

int xkv_tcp_peers_clear(const struct xkv_store *s)
{
	__u8 k[16];

	if (s->tcp_fd < 0)
		return -ENOENT;
	pthread_mutex_lock(&tcp_peers_lock);
	while (!bpf_map_get_next_key(s->tcp_fd, NULL, k))
		if (bpf_map_delete_elem(s->tcp_fd, k))
			break;
	pthread_mutex_unlock(&tcp_peers_lock);
	return 0;
}

/* ---- keeping the host's view in step with the interface ---- */

struct host_view {
	__u8 mac[6];
	int have_mac;
	int n;
	struct xkv_acl_key addr[XKV_LOCAL_ADDRS_MAX]; /* prefixlen: the subnet's */
};

static int host_view(const char *ifname, struct host_view *v, char *err, size_t errlen)
{
	struct ifaddrs *ifs, *i;

	memset(v, 0, sizeof(*v));
	if (getifaddrs(&ifs))
		return xkv_errf(err, errlen, -errno, "cannot list the addresses of %s: %s", ifname,
			     strerror(errno));
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, ifname))
			continue;
		int fam = i->ifa_addr->sa_family;
		if (fam == AF_PACKET) {
			const struct sockaddr_ll *ll = (const void *)i->ifa_addr;
			if (ll->sll_halen == 6) {
				memcpy(v->mac, ll->sll_addr, 6);
				v->have_mac = 1;
			}
			continue;
		}
		if ((fam != AF_INET && fam != AF_INET6) || v->n >= XKV_LOCAL_ADDRS_MAX)
			continue;
		struct xkv_acl_key *k = &v->addr[v->n];
		__u8 mask[16] = {};
		xkv_addr_from_sockaddr(i->ifa_addr, k->addr, NULL);
		if (i->ifa_netmask)
			xkv_addr_from_sockaddr(i->ifa_netmask, mask, NULL);
		__u32 bits = 0;
		for (int b = fam == AF_INET ? 12 : 0; b < 16; b++)
			bits += (__u32)__builtin_popcount(mask[b]);
		k->prefixlen = (fam == AF_INET ? 96 : 0) + bits;
		v->n++;
	}
	freeifaddrs(ifs);
	return 0;
}

struct auto_sync {
	const struct xkv_store *s;
	int list;
	const struct host_view *v;
	int changes;
};

/* An AUTO entry whose subnet is gone loses its AUTO bit. */
static int auto_prune_cb(const struct xkv_acl_key *k, __u32 origin, void *arg)
{
	struct auto_sync *a = arg;
	if (!(origin & XKV_ACL_AUTO))
		return 0;
	for (int i = 0; i < a->v->n; i++) {
		struct xkv_acl_key net = a->v->addr[i];
		key_mask(&net);
		if (net.prefixlen == k->prefixlen && !memcmp(net.addr, k->addr, 16))
			return 0;
	}
	if (!xkv_acl_del(a->s, a->list, k, XKV_ACL_AUTO))
		a->changes++;
	return 0;
}

static int auto_sync_list(const struct xkv_store *s, int list, const struct host_view *v, int *changes)
{
	struct auto_sync a = { .s = s, .list = list, .v = v };
	int e = xkv_acl_walk(s, list, auto_prune_cb, &a);
	if (e < 0)
		return e;
	for (int i = 0; i < v->n; i++) {
		struct xkv_acl_key net = v->addr[i];
		struct exact x = { .want = &net };
		key_mask(&net);
		if ((e = xkv_acl_walk(s, list, exact_cb, &x)) < 0)
			return e;
		if (x.found && (x.origin & XKV_ACL_AUTO))
			continue;
		if ((e = xkv_acl_add(s, list, &net, XKV_ACL_AUTO)))
			return e;
		a.changes++;
	}
	*changes += a.changes;
	return 0;
}

void xkv_host_set_inline(struct xkv_host *h, const __u8 (*addrs)[16], int n)
{
	memset(h->addr, 0, sizeof(h->addr));
	h->n_inline = 0;
	h->flags &= (__u16)~XKV_HOST_ADDRS_INLINE;
	if (n < 0 || n > XKV_HOST_INLINE)
		return;
	for (int i = 0; i < n; i++)
		memcpy(h->addr[i], addrs[i], 16);
	h->n_inline = (__u32)n;
	h->flags |= XKV_HOST_ADDRS_INLINE;
}

int xkv_host_sync(const struct xkv_store *s, const char *ifname, __u16 flags_set, int *changes,
		  char *err, size_t errlen)
{
	struct host_view *v = malloc(sizeof(*v));
	struct xkv_host h = {};
	__u32 zero = 0;
	int e, n = 0;

	if (changes)
		*changes = 0;
	if (!v)
		return -ENOMEM;
	if (s->host_fd < 0 || s->local_fd < 0) {
		e = xkv_errf(err, errlen, -ENOENT, "this store has no host map");
		goto out;
	}
	if ((e = host_view(ifname, v, err, errlen)))
		goto out;
	if (bpf_map_lookup_elem(s->host_fd, &zero, &h)) {
		e = xkv_errf(err, errlen, -errno, "cannot read the host map: %s", strerror(errno));
		goto out;
	}
	struct xkv_host orig = h;
	h.flags |= flags_set;
	if (v->have_mac && memcmp(h.mac, v->mac, 6)) {
		memcpy(h.mac, v->mac, 6);
		n++;
	}
	/* local_addrs: drop what is gone, add what is new */
	__u8 cur[16], next[16];
	int have = 0;
	__u8 gone[XKV_LOCAL_ADDRS_MAX][16];
	int ngone = 0;
	while (!bpf_map_get_next_key(s->local_fd, have ? cur : NULL, next)) {
		int keep = 0;
		for (int i = 0; i < v->n && !keep; i++)
			keep = !memcmp(v->addr[i].addr, next, 16);
		if (!keep && ngone < XKV_LOCAL_ADDRS_MAX)
			memcpy(gone[ngone++], next, 16);
		memcpy(cur, next, 16);
		have = 1;
	}
	for (int i = 0; i < ngone; i++)
		if (!bpf_map_delete_elem(s->local_fd, gone[i]))
			n++;
	for (int i = 0; i < v->n; i++) {
		__u8 plen = (__u8)v->addr[i].prefixlen, old;
		if (!bpf_map_lookup_elem(s->local_fd, v->addr[i].addr, &old) && old == plen)
			continue;
		if (bpf_map_update_elem(s->local_fd, v->addr[i].addr, &plen, BPF_ANY)) {
			e = xkv_errf(err, errlen, -errno, "cannot update local_addrs: %s", strerror(errno));
			goto out;
		}
		n++;
	}
	/* the inline copy, when the addresses fit (it changes with local_addrs) */
	__u8 (*inl)[16] = calloc(v->n ? (size_t)v->n : 1, 16);
	if (!inl) {
		e = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < v->n; i++)
		memcpy(inl[i], v->addr[i].addr, 16);
	xkv_host_set_inline(&h, (const __u8 (*)[16])inl, v->n);
	free(inl);
	static const __u16 auto_flag[XKV_ACL__N] = { XKV_HOST_AUTO_ALLOW, XKV_HOST_AUTO_WRITE,
						     XKV_HOST_AUTO_TRUST };
	for (int l = 0; l < XKV_ACL__N; l++) {
		if (!(h.flags & auto_flag[l]) || s->acl_fd[l] < 0)
			continue;
		if ((e = auto_sync_list(s, l, v, &n))) {
			xkv_errf(err, errlen, e, "cannot update the %s list: %s", xkv_acl_list_names[l],
			      strerror(-e));
			goto out;
		}
	}
	if (n || flags_set)
		h.gen++;
	/* written only when something changed, and with the pause and migrate
	 * bits as they are now: snapshot and migrate set them meanwhile */
	struct xkv_host now_h;
	if (!bpf_map_lookup_elem(s->host_fd, &zero, &now_h))
		h.flags = (__u16)((h.flags & ~XKV_HOST_KEEP) | (now_h.flags & XKV_HOST_KEEP));
	orig.flags = (__u16)((orig.flags & ~XKV_HOST_KEEP) | (h.flags & XKV_HOST_KEEP));
	if (memcmp(&orig, &h, sizeof(h)) && bpf_map_update_elem(s->host_fd, &zero, &h, BPF_ANY)) {
		e = xkv_errf(err, errlen, -errno, "cannot write the host map: %s", strerror(errno));
		goto out;
	}
	if (changes)
		*changes = n;
	e = 0;
out:
	free(v);
	return e;
}

int xkv_policy_open_all(const struct xkv_store *s)
{
	struct xkv_acl_key any = {};
	struct xkv_host h = {};
	__u32 zero = 0;
	int e;

	for (int l = 0; l < XKV_ACL__N; l++)
		if (s->acl_fd[l] >= 0 && (e = xkv_acl_add(s, l, &any, XKV_ACL_USER)))
			return e;
	if (s->host_fd >= 0 && bpf_map_update_elem(s->host_fd, &zero, &h, BPF_ANY))
		return -errno;
	return 0;
}

int xkv_object_open_policy(struct bpf_object *obj)
{
	struct xkv_store s;
	static const char *const names[XKV_ACL__N] = { "acl_allow", "acl_write", "acl_trust" };

	memset(&s, 0, sizeof(s));
	for (int l = 0; l < XKV_ACL__N; l++) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, names[l]);
		s.acl_fd[l] = m ? bpf_map__fd(m) : -1;
	}
	struct bpf_map *h = bpf_object__find_map_by_name(obj, "host");
	s.host_fd = h ? bpf_map__fd(h) : -1;
	struct bpf_map *g = bpf_object__find_map_by_name(obj, "acl_gen");
	s.acl_gen_fd = g ? bpf_map__fd(g) : -1;
	return xkv_policy_open_all(&s);
}
