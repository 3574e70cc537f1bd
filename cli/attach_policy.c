// SPDX-License-Identifier: MIT
/* attach: the access lists and limits a new or re-attached store starts with,
 * and the lines that report them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "attach.h"

struct acl_keys {
	struct xkv_acl_key *k;
	int n, cap;
	bool keep;
};

static int collect_user(const struct xkv_acl_key *k, __u32 origin, void *arg)
{
	struct acl_keys *a = arg;
	if (!(origin & XKV_ACL_USER))
		return 0;
	if (a->keep) {
		a->n++;
		return 0;
	}
	if (a->n == a->cap) {
		int cap = a->cap ? 2 * a->cap : 64;
		void *k2 = realloc(a->k, (size_t)cap * sizeof(*k));
		if (!k2)
			return -ENOMEM;
		a->k = k2;
		a->cap = cap;
	}
	a->k[a->n++] = *k;
	return 0;
}

/* The entries an earlier attach or 'xdpkv acl add' made (XKV_ACL_USER; the
 * AUTO ones follow the interface): counted, or removed when !keep.  How many,
 * or -errno. */
static int acl_user_entries(const struct xkv_store *s, bool keep)
{
	int total = 0, e = 0;
	for (int l = 0; l < XKV_ACL__N && !e; l++) {
		struct acl_keys a = { .keep = keep };
		e = xkv_acl_walk(s, l, collect_user, &a);
		for (int i = 0; e >= 0 && i < (keep ? 0 : a.n); i++)
			e = xkv_acl_del(s, l, &a.k[i], XKV_ACL_USER);
		free(a.k);
		total += a.n;
		e = e < 0 ? e : 0;
	}
	return e ? e : total;
}

/* Fill the lists and the host's view.  Until this has run the program
 * refuses everything (its lists are empty): it fails closed.  A re-attach
 * finds the lists of before: kept (their count in *kept) or, with
 * --reset-acl, emptied first. */
int attach_policy(struct xkv_store *s, const struct attach_opts *o, bool reused, int *kept,
			 char *err, size_t errlen)
{
	const struct xo_cidrs *lists[XKV_ACL__N] = { &o->allow, &o->write_allow, &o->trust };
	__u16 flags = XKV_HOST_CHECK_MAC | XKV_HOST_CHECK_IP | XKV_HOST_AUTO_TRUST;
	int e, changes;

	*kept = 0;
	if (reused && (e = *kept = acl_user_entries(s, !o->reset_acl)) < 0) {
		snprintf(err, errlen, "cannot read the access lists of before: %s", strerror(-e));
		return e;
	}
	if (o->reset_acl)
		*kept = 0;
	if (!o->allow.n)
		flags |= XKV_HOST_AUTO_ALLOW;
	if (!o->write_allow.n && !o->allow.n)
		flags |= XKV_HOST_AUTO_WRITE;
	for (int l = 0; l < XKV_ACL__N; l++) {
		/* --write-allow defaults to what --allow says */
		const struct xo_cidrs *c = l == XKV_ACL_WRITE && !lists[l]->n ? &o->allow : lists[l];
		for (int i = 0; i < c->n; i++)
			if ((e = xkv_acl_add(s, l, &c->k[i], XKV_ACL_USER))) {
				snprintf(err, errlen, "cannot add to the %s list: %s", xkv_acl_list_names[l],
					 strerror(-e));
				return e;
			}
	}
	return xkv_host_sync(s, o->ifc.name, flags, &changes, err, errlen);
}

void print_policy(const struct xkv_store *s, const struct attach_opts *o)
{
	char buf[64];
	for (int l = 0; l < XKV_ACL__N; l++) {
		printf("%s: ", l == XKV_ACL_ALLOW ? "access: allow" : xkv_acl_list_names[l]);
		int n = 0;
		acl_print_list(s, l, stdout, &n);
		printf("%s", n ? "" : "nobody");
		printf(l == XKV_ACL_TRUST ? "\n" : "; ");
	}
	if (s->cfg.flags & XKV_CFG_STRICT)
		printf("replies: at most %ux the request's bytes for every source (--strict)", s->cfg.max_amp);
	else
		printf("replies: at most %ux the request's bytes for untrusted sources", s->cfg.max_amp);
	if (s->cfg.rate_limit)
		printf("; rate limit %u req/s per /24 or /64, burst %u\n", s->cfg.rate_limit,
		       s->cfg.rate_burst);
	else
		printf("; no rate limit\n");
	if (s->cfg.flags & XKV_CFG_CSUM_PARTIAL)
		printf("checksums: %s is a veth: partial UDP checksums from its peer are accepted\n",
		       o->ifc.name);
	for (int i = 0; i < o->allow.n; i++)
		if (o->allow.k[i].prefixlen == 0)
			xinfo("xdpkv: warning: --allow %s: every source that reaches %s may send requests "
			      "(xdpkv answers before the firewall)", xkv_cidr_format(&o->allow.k[i], buf, sizeof(buf)),
			      o->ifc.name);
}
