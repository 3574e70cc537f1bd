// SPDX-License-Identifier: MIT
/* acl: show and change, at run time, who may read, write and get unlimited
 * replies (the three LPM tries the XDP program checks), and resync the
 * host's addresses.  The rules: docs/security.md. */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "cli.h"

struct acl_opts {
	struct xo_iface ifc;
	const char *action, *list, *cidr;
	bool json;
};

static const struct xo acl_table[] = {
	{ "IFACE", 0, XO_IFACE, offsetof(struct acl_opts, ifc), NULL,
	  "interface whose lists to show or change", .flags = XO_POS | XO_REQ | XO_IF_ANY },
	{ "ACTION", 0, XO_STR, offsetof(struct acl_opts, action), NULL,
	  "list (default), add, del or sync", .flags = XO_POS },
	{ "LIST", 0, XO_STR, offsetof(struct acl_opts, list), NULL,
	  "allow, write or trust", .flags = XO_POS },
	{ "CIDR", 0, XO_STR, offsetof(struct acl_opts, cidr), NULL,
	  "address or prefix (10.0.0.0/8, fd00::/8, 192.0.2.7, any), or 'connected' for the "
	  "interface's connected subnets", .flags = XO_POS },
	{ "json", 'j', XO_BOOL, offsetof(struct acl_opts, json), NULL, "machine-readable list" },
	XO_END,
};

static const __u16 auto_flag[XKV_ACL__N] = { XKV_HOST_AUTO_ALLOW, XKV_HOST_AUTO_WRITE,
					     XKV_HOST_AUTO_TRUST };

struct print_ctx {
	FILE *f;
	int n;
	bool json;
};

static int print_cb(const struct xkv_acl_key *k, __u32 origin, void *arg)
{
	struct print_ctx *p = arg;
	char buf[64];

	xkv_cidr_format(k, buf, sizeof(buf));
	if (p->json) {
		fprintf(p->f, "%s{\"cidr\":\"%s\",\"user\":%s,\"connected\":%s}", p->n ? "," : "", buf,
			origin & XKV_ACL_USER ? "true" : "false", origin & XKV_ACL_AUTO ? "true" : "false");
	} else {
		fprintf(p->f, "%s%s%s", p->n ? ", " : "", buf,
			origin & XKV_ACL_AUTO ? (origin & XKV_ACL_USER ? " (connected, given)" : " (connected)")
					      : "");
	}
	p->n++;
	return 0;
}

int acl_print_list(const struct xkv_store *s, int list, FILE *f, int *n)
{
	struct print_ctx p = { .f = f };
	int e = xkv_acl_walk(s, list, print_cb, &p);
	*n = p.n;
	return e < 0 ? e : 0;
}

static int read_host(const struct xkv_store *s, struct xkv_host *h)
{
	__u32 zero = 0;
	memset(h, 0, sizeof(*h));
	return bpf_map_lookup_elem(s->host_fd, &zero, h) ? -errno : 0;
}

static void print_local(const struct xkv_store *s, FILE *f, bool json)
{
	__u8 cur[16], next[16], plen;
	char a[INET6_ADDRSTRLEN];
	int have = 0, n = 0;

	while (!bpf_map_get_next_key(s->local_fd, have ? cur : NULL, next)) {
		memcpy(cur, next, 16);
		have = 1;
		if (bpf_map_lookup_elem(s->local_fd, next, &plen))
			continue;
		if (xkv_addr_is_v4(next))
			inet_ntop(AF_INET, next + 12, a, sizeof(a));
		else
			inet_ntop(AF_INET6, next, a, sizeof(a));
		fprintf(f, json ? "%s\"%s\"" : "%s%s", n++ ? (json ? "," : ", ") : "", a);
	}
	if (!n && !json)
		fprintf(f, "none");
}

static int acl_show(const struct xkv_store *s, const char *ifname, bool json)
{
	struct xkv_host h;
	int e = read_host(s, &h);
	if (e)
		return sys_fail("acl", "reading the host map", e);
	if (json) {
		printf("{\"interface\":");
		json_cstr(stdout, ifname);
		for (int l = 0; l < XKV_ACL__N; l++) {
			struct print_ctx p = { .f = stdout, .json = true };
			printf(",\"%s\":{\"connected_subnets\":%s,\"entries\":[", xkv_acl_list_names[l],
			       h.flags & auto_flag[l] ? "true" : "false");
			xkv_acl_walk(s, l, print_cb, &p);
			printf("]}");
		}
		printf(",\"host\":{\"mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\",\"check_mac\":%s,"
		       "\"check_ip\":%s,\"local_addrs\":[",
		       h.mac[0], h.mac[1], h.mac[2], h.mac[3], h.mac[4], h.mac[5],
		       h.flags & XKV_HOST_CHECK_MAC ? "true" : "false",
		       h.flags & XKV_HOST_CHECK_IP ? "true" : "false");
		print_local(s, stdout, true);
		printf("],\"syncs\":%u},\"max_amplification\":%u,\"strict\":%s,\"rate_limit\":%u,"
		       "\"rate_burst\":%u,\"allow_low_ports\":%s}\n",
		       h.gen, s->cfg.max_amp, s->cfg.flags & XKV_CFG_STRICT ? "true" : "false",
		       s->cfg.rate_limit, s->cfg.rate_burst,
		       s->cfg.flags & XKV_CFG_LOW_PORTS ? "true" : "false");
		return EXIT_OK;
	}
	for (int l = 0; l < XKV_ACL__N; l++) {
		int n;
		printf("%-6s ", xkv_acl_list_names[l]);
		acl_print_list(s, l, stdout, &n);
		printf("%s%s\n", n ? "" : "(empty: nobody)",
		       h.flags & auto_flag[l] ? "  [follows the connected subnets]" : "");
	}
	printf("host   mac %02x:%02x:%02x:%02x:%02x:%02x (%s), addresses ", h.mac[0], h.mac[1],
	       h.mac[2], h.mac[3], h.mac[4], h.mac[5],
	       h.flags & XKV_HOST_CHECK_MAC ? "checked" : "not checked");
	print_local(s, stdout, false);
	printf(" (%s)\n", h.flags & XKV_HOST_CHECK_IP ? "checked" : "not checked");
	printf("limits max amplification %ux for %s; rate limit ", s->cfg.max_amp,
	       s->cfg.flags & XKV_CFG_STRICT ? "every source (--strict)" : "untrusted sources");
	if (s->cfg.rate_limit)
		printf("%u req/s per /24 or /64, burst %u", s->cfg.rate_limit, s->cfg.rate_burst);
	else
		printf("off");
	printf("; source ports < 1024 %s\n", s->cfg.flags & XKV_CFG_LOW_PORTS ? "served" : "refused");
	return EXIT_OK;
}

static int set_auto(const struct xkv_store *s, const char *ifname, int list, bool on)
{
	struct xkv_host h;
	__u32 zero = 0;
	char err[XKV_ERRLEN];
	int e = read_host(s, &h), changes;

	if (e)
		return sys_fail("acl", "reading the host map", e);
	if (on)
		h.flags |= auto_flag[list];
	else
		h.flags &= ~auto_flag[list];
	if (bpf_map_update_elem(s->host_fd, &zero, &h, BPF_ANY))
		return sys_fail("acl", "writing the host map", -errno);
	if (on && xkv_host_sync(s, ifname, 0, &changes, err, sizeof(err))) {
		xerr("acl: %s", err);
		return EXIT_SYS;
	}
	return EXIT_OK;
}

/* Remove every connected-subnet entry of a list (it stops following them). */
static int drop_auto_cb(const struct xkv_acl_key *k, __u32 origin, void *arg)
{
	const struct xkv_store *s = ((void **)arg)[0];
	int list = *(int *)((void **)arg)[1];
	if (origin & XKV_ACL_AUTO)
		xkv_acl_del(s, list, k, XKV_ACL_AUTO);
	return 0;
}

static int acl_change(const struct xkv_store *s, const struct acl_opts *o, bool add)
{
	const char *verb = add ? "add" : "del";
	char err[256], buf[64];
	struct xkv_acl_key k;

	if (!o->list || !o->cidr) {
		xerr("acl: '%s' needs a list and an address: xdpkv acl %s %s allow|write|trust CIDR", verb,
		     o->ifc.name, verb);
		return EXIT_USAGE;
	}
	int list = xkv_acl_list_find(o->list);
	if (list < 0) {
		xerr("acl: unknown list '%s' (allow, write or trust)", o->list);
		return EXIT_USAGE;
	}
	if (!strcmp(o->cidr, "connected")) {
		int rc = set_auto(s, o->ifc.name, list, add);
		if (rc == EXIT_OK && !add) {
			void *arg[2] = { (void *)s, &list };
			xkv_acl_walk(s, list, drop_auto_cb, arg);
		}
		if (rc == EXIT_OK)
			printf("%s list %s the connected subnets of %s\n", o->list,
			       add ? "follows" : "no longer follows", o->ifc.name);
		return rc;
	}
	if (xkv_cidr_parse(o->cidr, &k, err, sizeof(err))) {
		xerr("acl: %s", err);
		return EXIT_USAGE;
	}
	xkv_cidr_format(&k, buf, sizeof(buf));
	if (add) {
		int e = xkv_acl_add(s, list, &k, XKV_ACL_USER);
		if (e)
			return sys_fail("acl", "adding the entry", e);
		printf("added %s to the %s list of %s\n", buf, xkv_acl_list_names[list], o->ifc.name);
		if (k.prefixlen == 0 && list != XKV_ACL_TRUST)
			xinfo("xdpkv: warning: every source that reaches %s may now %s (xdpkv answers "
			      "before the firewall)", o->ifc.name, list == XKV_ACL_WRITE ? "write" : "read");
		return EXIT_OK;
	}
	int e = xkv_acl_del(s, list, &k, XKV_ACL_USER | XKV_ACL_AUTO);
	if (e == -ENOENT) {
		xerr("acl: %s is not in the %s list of %s", buf, xkv_acl_list_names[list], o->ifc.name);
		xhint("'xdpkv acl %s' shows the lists", o->ifc.name);
		return EXIT_MISS;
	}
	if (e)
		return sys_fail("acl", "removing the entry", e);
	printf("removed %s from the %s list of %s\n", buf, xkv_acl_list_names[list], o->ifc.name);
	return EXIT_OK;
}

static int run_acl(void *vo, const struct global_opts *g)
{
	struct acl_opts *o = vo;
	const char *action = o->action ? o->action : "list";
	struct xkv_store s;
	char err[XKV_ERRLEN];
	int rc;

	if (strcmp(action, "list") && strcmp(action, "add") && strcmp(action, "del") &&
	    strcmp(action, "sync")) {
		xerr("acl: unknown action '%s' (list, add, del or sync)", action);
		return EXIT_USAGE;
	}
	if ((rc = open_pinned(&s, "acl", o->ifc.name)))
		return rc;
	if (!strcmp(action, "list")) {
		rc = acl_show(&s, o->ifc.name, o->json);
	} else if (!strcmp(action, "sync")) {
		int changes;
		if (!o->ifc.ifindex) {
			xerr("acl: interface %s does not exist (here)", o->ifc.name);
			rc = EXIT_USAGE;
		} else if (xkv_host_sync(&s, o->ifc.name, 0, &changes, err, sizeof(err))) {
			xerr("acl: %s", err);
			rc = EXIT_SYS;
		} else if ((rc = xkv_acl_changed(&s))) {
			/* always: the remedy after the tries were edited by other tools */
			xerr("acl: cannot write the acl_gen token: %s", strerror(-rc));
			rc = EXIT_SYS;
		} else {
			printf("synced %s: %d change%s\n", o->ifc.name, changes, changes == 1 ? "" : "s");
		}
	} else {
		rc = acl_change(&s, o, !strcmp(action, "add"));
	}
	xkv_store_close(&s);
	return rc;
}

const struct cmd cmd_acl = {
	.name = "acl",
	.synopsis = "IFACE [list [--json] | add LIST CIDR | del LIST CIDR | sync]",
	.summary = "show or change who may read, write and get unlimited replies",
	.doc = "The XDP program checks three lists before it parses a request: 'allow' (may send\n"
	       "requests), 'write' (may change the store) and 'trust' (replies not capped by\n"
	       "--max-amplification).  Changes take effect at once, without reloading.  CIDR\n"
	       "'connected' makes a list follow the interface's connected subnets (the default of\n"
	       "all three); 'del LIST connected' stops that.  'sync' re-reads the interface's MAC\n"
	       "and addresses ('xdpkv serve' does it every second).\n\n"
	       "Examples: xdpkv acl eth0\n"
	       "          xdpkv acl eth0 add allow 198.51.100.0/24\n"
	       "          xdpkv acl eth0 del write connected\n"
	       "          xdpkv acl eth0 add trust 2001:db8::/32",
	.opts = acl_table,
	.opts_size = sizeof(struct acl_opts),
	.run = run_acl,
};
