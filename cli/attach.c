// SPDX-License-Identifier: MIT
/* xdpkv attach: load the XDP store onto an interface, pin its maps, keep a
 * store that is already there, and with --serve run the slow path. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "cli.h"
#include "attach.h"
#include "sasl.h"

static const struct xo_enum mode_names[] = {
	{ "native", XKV_MODE_NATIVE },
	{ "skb", XKV_MODE_SKB },
	{ NULL },
};

static const struct xo attach_table[] = {
	{ "IFACE", 0, XO_IFACE, offsetof(struct attach_opts, ifc), NULL,
	  "interface to attach to", .flags = XO_POS | XO_REQ },
	{ "mode", 'm', XO_ENUM, offsetof(struct attach_opts, mode), "MODE",
	  "XDP mode: native (in the driver) or skb (generic), default native", .enums = mode_names },
	{ "entries", 'n', XO_U32, offsetof(struct attach_opts, entries), "N",
	  "store capacity in items (default 65536)", 1, 1 << 26 },
	{ "key-size", 'k', XO_U32, offsetof(struct attach_opts, key_size), "K",
	  "largest key in bytes (default 64)", 1, XKV_KEY_MAX },
	{ "value-size", 's', XO_U32, offsetof(struct attach_opts, value_size), "V",
	  "largest value in bytes (default 1024)", 1, XKV_VAL_MAX },
	{ "big-memory", 0, XO_U32, offsetof(struct attach_opts, big_memory), "MIB",
	  "memory for values longer than --value-size, up to memcached's 1 MiB item size, which only the "
	  "slow path serves (default 64; 4 KiB per 3712-byte chunk, allocated as used)", 1, 65536 },
	{ "no-big-values", 0, XO_BOOL, offsetof(struct attach_opts, no_big), NULL,
	  "no values above --value-size at all: SERVER_ERROR object too large for cache" },
	{ "port", 'p', XO_U32, offsetof(struct attach_opts, port), "P",
	  "UDP port to answer on (default 11211)", 1, 65535 },
	{ "no-prealloc", 0, XO_BOOL, offsetof(struct attach_opts, no_prealloc), NULL,
	  "hash_map: allocate items on insert (BPF_F_NO_PREALLOC)" },
	{ "no-common-lru", 0, XO_BOOL, offsetof(struct attach_opts, no_common_lru), NULL,
	  "lru: an LRU list per CPU, each evicting from its own entries/CPUs share; entries rounded up to a multiple of the CPUs (BPF_F_NO_COMMON_LRU)" },
	{ "hash-seed", 0, XO_STR, offsetof(struct attach_opts, hash_seed), "SEED",
	  "array_fnv, set_assoc, sieve, s3fifo, arena: key of the hash that places keys (64-bit, decimal or 0x hex); default: "
	  "random at attach (getrandom), the pinned one on re-attach; 0 = unseeded FNV-1a (BMC's placement)" },
	{ "fnv-unseeded", 0, XO_BOOL, offsetof(struct attach_opts, fnv_unseeded), NULL,
	  "array_fnv, set_assoc, sieve, s3fifo, arena: place keys by plain FNV-1a, as BMC does (--hash-seed 0): clients can compute "
	  "which keys collide" },
	{ "strict-keys", 0, XO_BOOL, offsetof(struct attach_opts, strict_keys), NULL,
	  "refuse keys with control bytes or DEL (CLIENT_ERROR bad key), as protocol.txt says; default: any byte "
	  "but NUL, as memcached takes (memaslap's keys carry 0x10-0x1f)" },
	{ "binary-keys", 0, XO_BOOL, offsetof(struct attach_opts, binary_keys), NULL,
	  "any byte but NUL in keys: the default (kept for scripts)" },
	{ "serve", 0, XO_BOOL, offsetof(struct attach_opts, serve), NULL,
	  "then run the slow path in the foreground; SIGINT/SIGTERM detach, SIGHUP keeps the store attached" },
	{ "sasl-pwdb", 'S', XO_STR, offsetof(struct attach_opts, sasl_pwdb), "FILE",
	  "with --serve: require SASL PLAIN, as serve --sasl-pwdb" },
	{ "replace", 0, XO_BOOL, offsetof(struct attach_opts, replace), NULL,
	  "discard the store already on IFACE (detach, then attach fresh) instead of keeping it" },
	{ "reset-acl", 0, XO_BOOL, offsetof(struct attach_opts, reset_acl), NULL,
	  "re-attach: drop the access-list entries of before (earlier options, 'xdpkv acl add')" },
	{ "restore", 0, XO_STR, offsetof(struct attach_opts, restore), "FILE",
	  "then restore the snapshot FILE into the store (as 'xdpkv restore')" },
	{ "allow", 'a', XO_CIDRS, offsetof(struct attach_opts, allow), "CIDR",
	  "who may send requests (repeatable; 'any' for everyone); default: IFACE's connected subnets" },
	{ "write-allow", 'w', XO_CIDRS, offsetof(struct attach_opts, write_allow), "CIDR",
	  "who may change the store (repeatable); default: the same as --allow" },
	{ "trust", 't', XO_CIDRS, offsetof(struct attach_opts, trust), "CIDR",
	  "sources whose replies are not capped by --max-amplification (repeatable); "
	  "IFACE's connected subnets always are" },
	{ "max-amplification", 0, XO_U32, offsetof(struct attach_opts, max_amp), "N",
	  "an untrusted source gets at most N reply bytes per request byte (default 10)", 1, 10000 },
	{ "strict", 0, XO_BOOL, offsetof(struct attach_opts, strict), NULL,
	  "apply --max-amplification to every source, trusted ones too" },
	{ "rate-limit", 0, XO_U32, offsetof(struct attach_opts, rate_limit), "REQ/S",
	  "requests per second per source /24 (IPv4) or /64 (IPv6); default off", 1, 100000000 },
	{ "rate-burst", 0, XO_U32, offsetof(struct attach_opts, rate_burst), "N",
	  "requests a source may send at once before --rate-limit applies (default: one second's worth)",
	  1, 100000000 },
	{ "allow-low-ports", 0, XO_BOOL, offsetof(struct attach_opts, low_ports), NULL,
	  "answer requests from source ports below 1024 (refused by default: reflection)" },
	{ "no-tcp-fast-path", 0, XO_BOOL, offsetof(struct attach_opts, no_tcp_fast), NULL,
	  "no sk_skb verdict on serve's connections (it answers only where --no-xdp-tcp is given)" },
	{ "no-xdp-tcp", 0, XO_BOOL, offsetof(struct attach_opts, no_xdp_tcp), NULL,
	  "XDP answers UDP only (default: a get, set or delete alone in a TCP segment on serve's "
	  "connections is answered in the driver hook, the stream kept in step by sequence "
	  "translation; docs/architecture.md)" },
	XO_END,
};

/* Refuse early, with reasons: kernel support, bpffs, another program there.
 * Fills pr with what an earlier attach left; --replace removes it here. */
static int attach_preflight(const struct attach_opts *o, struct prior *pr)
{
	const struct xo_iface *ifc = &o->ifc;
	char err[XKV_ERRLEN], dir[256], other[64];

	int e = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_XDP, NULL);
	if (e == 0) {
		xerr("attach: this kernel cannot load XDP programs (CONFIG_BPF_SYSCALL / CONFIG_XDP_SOCKETS?)");
		return EXIT_SYS;
	}
	if (e < 0) {
		if (e == -ENOSYS)
			xerr("attach: this kernel has no bpf() system call (CONFIG_BPF_SYSCALL is off)");
		else
			return sys_fail("attach", "probing for XDP support", e);
		return EXIT_SYS;
	}
	if (bpffs_hidden()) {
		xerr("attach: this process sees another /sys/fs/bpf than the system's, so the pins "
		     "would vanish when it exits ('ip netns exec' remounts /sys)");
		xhint("run it as 'nsenter --net=/run/netns/NAME xdpkv attach %s ...'", ifc->name);
		return EXIT_SYS;
	}
	if (xkv_bpffs_mount(err, sizeof(err))) {
		xerr("attach: %s", err);
		return EXIT_SYS;
	}
	xkv_pin_dir(ifc->name, dir, sizeof(dir));
	bool leg = attach_prior(ifc, pr, other, sizeof(other));
	{
		if (!pr->ours && other[0] && leg) {
			xerr("attach: %s already runs another XDP program ('%s')", ifc->name, other);
			xhint("remove it first, e.g. 'xdp-loader unload %s --all' or "
			      "'ip link set dev %s xdp off'", ifc->name, ifc->name);
			return EXIT_SYS;
		}
	}
	if (o->replace && (pr->ours || pr->pins)) {
		unsigned id = 0;
		if ((e = detach_ours(ifc->ifindex, 0, &id)) < 0) {
			xlog_dump();
			return sys_fail("attach --replace", "detaching", e);
		}
		xkv_pins_remove(ifc->name);
		if (id)
			printf("replaced: detached program id %u from %s, ", id, ifc->name);
		printf("removed %s: the old store is discarded\n", dir);
		memset(pr, 0, sizeof(*pr));
	} else if (pr->ours && !pr->pins) {
		xerr("attach: xdpkv is attached to %s (program id %u) but its pins in %s are gone: "
		     "there is no store to keep", ifc->name, pr->id, dir);
		xhint("'xdpkv attach %s --replace ...' detaches it and attaches anew", ifc->name);
		return EXIT_SYS;
	}
	return 0;
}

/* Reuse the pinned maps when they match what cfg makes.  0, or an exit code
 * after printing why not. */
static int reuse_pins(struct bpf_object *obj, const struct xkv_config *cfg, const struct attach_opts *o,
		      int *reused)
{
	char diff[1024], dir[256];
	int m = xkv_pins_match(obj, cfg, o->ifc.name, diff, sizeof(diff));

	xkv_pin_dir(o->ifc.name, dir, sizeof(dir));
	if (m < 0) {
		xerr("attach: %s", diff);
		return EXIT_SYS;
	}
	if (!m) {
		xerr("attach: the store pinned in %s is not what this attach makes (%s): "
		     "nothing changed", dir, diff);
		xhint("attach with the options it has to keep its items ('xdpkv status %s' shows them), or",
		      o->ifc.name);
		xhint("move the items: 'xdpkv snapshot %s FILE', then 'xdpkv attach %s ... --replace --restore FILE'",
		      o->ifc.name, o->ifc.name);
		xhint("--replace alone discards the old store");
		return EXIT_USAGE;
	}
	if ((*reused = xkv_object_reuse_pins(obj, o->ifc.name, diff, sizeof(diff))) < 0) {
		xerr("attach: %s", diff);
		return EXIT_SYS;
	}
	return 0;
}

/* After a failure once the program is on: a fresh attach is undone; a store
 * that was there before is never removed. */
static void undo_attach(const struct attach_opts *o, const struct prior *pr)
{
	unsigned id;
	if (!pr->ours)
		detach_ours(o->ifc.ifindex, 0, &id);
	if (!pr->pins)
		xkv_pins_remove(o->ifc.name);
	else
		xhint("the store of before is kept: 'xdpkv status %s'", o->ifc.name);
}

static int do_attach(struct attach_opts *o, struct xkv_config *cfg, const struct prior *pr)
{
	char err[XKV_ERRLEN], dir[256];
	enum xdp_attach_mode xmode = o->mode == XKV_MODE_SKB ? XDP_MODE_SKB : XDP_MODE_NATIVE;
	int rc = EXIT_SYS, reused = 0, kept = 0;
	unsigned id;
	const char *how = NULL;

	struct bpf_object *obj = NULL;
	/* a second try when the kernel refuses an optional program (left out) */
	for (int tries = 0;; tries++) {
		obj = xkv_object_open(cfg, err, sizeof(err));
		if (!obj) {
			xerr("attach: %s", err);
			return EXIT_SYS;
		}
		if (pr->pins && (rc = reuse_pins(obj, cfg, o, &reused)))
			goto out;
		rc = EXIT_SYS;
		int e = put_prog(obj, &o->ifc, o->mode, pr, xmode, &how);
		if (!e)
			break;
		if (tries) {
			print_load_failure(obj, e, &o->ifc, o->mode);
			goto out;
		}
		if (attach_load_failed(obj, cfg, e, &o->ifc, o->mode))
			goto out;
		bpf_object__close(obj);
	}
	const char *path = attach_path(o->ifc.ifindex, &id);
	xkv_pin_dir(o->ifc.name, dir, sizeof(dir));
	struct xkv_store ps;
	if (!(cfg->flags & XKV_CFG_NO_XDP_TCP) && tcpx_egress_attach(obj, o->ifc.ifindex, err, sizeof(err)))
		/* an optional feature: the rest goes on without it */
		printf("attach: left out the TCP responder in the driver hook: %s; TCP is answered by "
		       "serve ('--no-xdp-tcp' says so and skips it)\n", err);
	if (xkv_pins_create(obj, o->ifc.name, err, sizeof(err)) ||
	    (!(cfg->flags & XKV_CFG_NO_TCP_FAST) && xkv_tcp_fast_attach(obj, err, sizeof(err))) ||
	    xkv_store_from_object(&ps, NULL, obj, err, sizeof(err))) {
		xerr("attach: %s", err);
		undo_attach(o, pr);
		goto out;
	}
	if (attach_policy(&ps, o, pr->pins, &kept, err, sizeof(err))) {
		xerr("attach: setting up access control: %s", err);
		xkv_store_close(&ps);
		undo_attach(o, pr);
		goto out;
	}
	if (ps.L->loaded && ps.L->loaded(obj, cfg, err, sizeof(err))) {
		xerr("attach: %s", err);
		xkv_store_close(&ps);
		undo_attach(o, pr);
		goto out;
	}
	printf("%s %s to %s (ifindex %d), %s mode, as a %s, program id %u", pr->pins ? "re-attached" : "attached",
	       cfg->layout, o->ifc.name, o->ifc.ifindex, xkv_mode_name(o->mode), path, id);
	if (pr->ours)
		printf(" (replaced id %u: %s)", pr->id, how);
	printf("\n");
	if (pr->pins)
		printf("kept: %ld items in the store, the counters and the access lists (%d pinned maps "
		       "reused; %d entries of before kept in the lists%s)\n", ps.L->count ? ps.L->count(&ps) : 0L,
		       reused, kept, kept ? ", --reset-acl drops them" : "");
	if (ps.L->bench_only)
		printf("store: none, a benchmark floor (%s): %s; keys <= %u B, UDP port %u; "
		       "maps pinned in %s\n", ps.L->summary, ps.L->loses, cfg->key_cap, cfg->port, dir);
	else
		printf("store: %u entries, keys <= %u B, values <= %u B, UDP port %u%s%s; maps pinned in %s\n",
		       cfg->entries, cfg->key_cap, cfg->val_cap, cfg->port,
		       cfg->flags & XKV_CFG_NO_PREALLOC ? ", no prealloc" : "",
		       cfg->flags & XKV_CFG_NO_COMMON_LRU ? ", an LRU list per CPU" : "", dir);
	print_policy(&ps, o);
	rc = EXIT_OK;
	if (o->restore) {
		fflush(stdout);
		rc = restore_into(&ps, o->ifc.name, o->restore, "attach --restore");
	}
	xkv_store_close(&ps);
	fflush(stdout);
	if (rc != EXIT_OK && rc != EXIT_MISS)
		goto out;
	if (!o->serve) {
		printf("next: 'xdpkv serve %s' runs the slow path; 'xdpkv status %s' shows counters\n",
		       o->ifc.name, o->ifc.name);
		goto out;
	}
	struct xkv_store s;
	if (xkv_store_from_object(&s, NULL, obj, err, sizeof(err))) {
		xerr("attach: %s", err);
		rc = EXIT_SYS;
	} else {
		struct serve_extra sx = { .sasl = o->sasl };
		rc = serve_loop(&s, o->ifc.name, 0, "attach", o->sasl ? &sx : NULL);
		xkv_store_close(&s);
	}
	if (serve_stop_signal() == SIGHUP) {
		xinfo("xdpkv: SIGHUP: xdpkv stays on %s with its store (%s); 'xdpkv serve %s' serves the "
		      "slow path again, 'xdpkv detach %s' removes it", o->ifc.name, dir, o->ifc.name, o->ifc.name);
		goto out;
	}
	int e = detach_ours(o->ifc.ifindex, 0, &id);
	if (e < 0)
		xerr("attach: detaching from %s failed: %s", o->ifc.name, strerror(-e));
	xkv_pins_remove(o->ifc.name);
	xinfo("xdpkv: detached from %s and removed %s", o->ifc.name, dir);
out:
	bpf_object__close(obj);
	return rc;
}

/* The layout to load: --layout's; without it, a store's already pinned
 * for the interface (attaching again keeps the store, whatever the
 * default), else the default. */
static const char *attach_layout(const struct attach_opts *o, const struct global_opts *g)
{
	static struct xkv_config pinned;
	char err[XKV_ERRLEN];

	if (g->layout)
		return g->layout;
	if (!o->replace && !xkv_pins_cfg(o->ifc.name, &pinned, err, sizeof(err)) && pinned.layout[0])
		return pinned.layout;
	return XKV_LAYOUT_DEFAULT;
}

static int run_attach(void *vo, const struct global_opts *g)
{
	struct attach_opts *o = vo;
	struct xkv_config cfg;
	struct prior pr;
	int rc = build_config(o, attach_layout(o, g), &cfg);

	if (rc)
		return rc;
	if (o->reset_acl && o->replace) {
		xerr("attach: --reset-acl keeps the store and drops its lists; --replace drops both: one of them");
		return EXIT_USAGE;
	}
	if (o->big_memory && o->no_big) {
		xerr("attach: --big-memory sizes the values above --value-size, --no-big-values refuses them: one of them");
		return EXIT_USAGE;
	}
	if (o->restore && access(o->restore, R_OK)) {
		xerr("attach: --restore %s: %s", o->restore, strerror(errno));
		return EXIT_USAGE;
	}
	if (o->sasl_pwdb && !o->serve) {
		xerr("attach: --sasl-pwdb is for the slow path: with --serve (or give it to 'xdpkv serve')");
		return EXIT_USAGE;
	}
	if ((rc = need_privileges("attach")) || (rc = attach_preflight(o, &pr)) ||
	    (rc = keep_pinned_seed(o, &pr, &cfg)))
		return rc;
	if (o->sasl_pwdb) { /* a bad file refuses before anything is attached */
		char err[XKV_ERRLEN];
		if (!(o->sasl = xkv_sasl_load(o->sasl_pwdb, err, sizeof(err)))) {
			xerr("attach: --sasl-pwdb: %s", err);
			return EXIT_USAGE;
		}
	}
	rc = do_attach(o, &cfg, &pr);
	xkv_sasl_free(o->sasl);
	return rc;
}

const struct cmd cmd_attach = {
	.name = "attach",
	.synopsis = "IFACE [--mode native|skb] [--entries N] [--key-size K] [--value-size V] "
		    "[--big-memory MIB | --no-big-values] [--port P] [--no-prealloc] [--no-common-lru] [--hash-seed SEED | --fnv-unseeded] "
		    "[--strict-keys] [--serve [--sasl-pwdb FILE]] [--allow CIDR]... "
		    "[--write-allow CIDR]... [--trust CIDR]... [--max-amplification N] [--strict] "
		    "[--rate-limit REQ/S [--rate-burst N]] [--allow-low-ports] [--no-tcp-fast-path] [--no-xdp-tcp] [--replace] "
		    "[--reset-acl] [--restore FILE]",
	.summary = "load the XDP store onto an interface and pin its maps",
	.doc = "Loads the layout chosen with --layout (or --variant; default: the store's already\n"
	       "pinned for IFACE, else lru, which evicts the least recently used item when full,\n"
	       "as memcached does) through libxdp,\n"
	       "attaches it to IFACE and pins its maps in /sys/fs/bpf/xdpkv/IFACE/ so that the other commands\n"
	       "find them.  The program stays attached after xdpkv exits (until 'xdpkv detach').\n"
	       "With --serve the slow path runs in the foreground; SIGINT or SIGTERM detach the\n"
	       "program when it stops, SIGHUP leaves it attached with its store.\n\n"
	       "Attaching again where xdpkv is attached (or its pins are left) keeps the store:\n"
	       "with the same layout and sizes the new program is loaded on the pinned maps and\n"
	       "swapped in one step (items, counters and access lists kept; --reset-acl empties\n"
	       "the lists first), so upgrades and new --port, --mode or access options keep serving.\n"
	       "Another layout or size is refused, naming the difference: --replace discards the\n"
	       "old store, 'xdpkv snapshot' then --replace --restore FILE moves the items.\n\n"
	       "Access control runs in XDP before any parsing, i.e. before the host firewall: by\n"
	       "default only IFACE's connected subnets may read and write, only frames addressed to\n"
	       "this host are answered, and sources outside the connected subnets get at most 10x\n"
	       "their request's bytes back.  'xdpkv acl IFACE' changes the lists at run time;\n"
	       "docs/security.md has the threat model.\n\n"
	       "--layout null (benchmarks only, not a layout) attaches the same handler with no\n"
	       "map: a floor that answers every get with one fixed value of --value-size bytes and\n"
	       "drops every set (bench/capacity.sh measures the layouts against it).\n\n"
	       "Example: xdpkv --layout lru attach veth0 --entries 100000 --value-size 512\n"
	       "         xdpkv attach eth0 --allow 10.0.0.0/8 --write-allow 10.1.2.0/24 --rate-limit 10000",
	.opts = attach_table,
	.opts_size = sizeof(struct attach_opts),
	.uses_layout = true,
	.run = run_attach,
};
