// SPDX-License-Identifier: MIT
/* attach, detach, serve: putting the XDP program on an interface (through
 * libxdp), taking it off, and running the userspace slow path. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <xdp/libxdp.h>
#include "cli.h"
#include "sasl.h"
#include "slowpath.h"

#define XKV_PROG_NAME "xdpkv"

static const struct xo_enum mode_names[] = {
	{ "native", XKV_MODE_NATIVE },
	{ "skb", XKV_MODE_SKB },
	{ NULL },
};

/* ---- finding our program on an interface ---- */

/* The multiprog view of ifindex, or NULL when no XDP program is attached. */
static struct xdp_multiprog *get_mp(int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (libxdp_get_error(mp))
		return NULL;
	return mp;
}

static bool is_ours(struct xdp_program *p, unsigned id)
{
	return !strcmp(xdp_program__name(p), XKV_PROG_NAME) && (!id || xdp_program__id(p) == id);
}

/* Our program in mp (program id `id`, or any when 0): the legacy main program
 * or one under the dispatcher. */
static struct xdp_program *find_ours(struct xdp_multiprog *mp, unsigned id, const char **other)
{
	struct xdp_program *p;

	*other = NULL;
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		if (p && is_ours(p, id))
			return p;
		*other = p ? xdp_program__name(p) : "?";
		return NULL;
	}
	for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp)) {
		if (is_ours(p, id))
			return p;
		*other = xdp_program__name(p);
	}
	return NULL;
}

int xdpkv_prog_on(int ifindex, unsigned *prog_id, bool *legacy, char *other, size_t olen)
{
	struct xdp_multiprog *mp = ifindex ? get_mp(ifindex) : NULL;
	const char *oth = NULL;
	int found = 0;

	if (other && olen)
		other[0] = 0;
	if (!mp)
		return 0;
	struct xdp_program *p = find_ours(mp, 0, &oth);
	if (p) {
		found = 1;
		*prog_id = xdp_program__id(p);
		*legacy = xdp_multiprog__is_legacy(mp);
	} else if (oth && other) {
		snprintf(other, olen, "%s", oth);
	}
	xdp_multiprog__close(mp);
	return found;
}

/* Take our program (program id `only`, or any when 0) off ifindex.
 * 1 detached, 0 none there, <0 -errno. */
static int detach_ours(int ifindex, unsigned only, unsigned *id_out)
{
	struct xdp_multiprog *mp = get_mp(ifindex);
	const char *other;
	int e;

	if (!mp)
		return 0;
	struct xdp_program *p = find_ours(mp, only, &other);
	if (!p) {
		xdp_multiprog__close(mp);
		return 0;
	}
	*id_out = xdp_program__id(p);
	if (xdp_multiprog__is_legacy(mp))
		e = xdp_multiprog__detach(mp);
	else
		e = xdp_program__detach(p, ifindex, xdp_multiprog__attach_mode(mp), 0);
	xdp_multiprog__close(mp);
	return e ? e : 1;
}

/* ---- the slow path in the foreground ---- */

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = sig;
}

/* What `serve` adds to the slow path's defaults. */
struct serve_extra {
	unsigned max_keys, max_reply, threads, max_conns, idle_timeout, max_buffer_mib;
	bool no_tcp, no_tcp_fast;
	const char *drop_user; /* NULL: keep root (attach --serve must detach afterwards) */
	unsigned snapshot_every; /* seconds; 0: no periodic snapshot */
	const char *snapshot_file;
	const struct xkv_sasl *sasl; /* --sasl-pwdb */
};

struct snap_every {
	struct xkv_store *s;
	const char *file;
};

static void snapshot_tick(void *arg)
{
	struct snap_every *se = arg;
	snapshot_quiet(se->s, se->file, "periodic");
}

static int serve_loop(struct xkv_store *s, const char *ifname, unsigned port, const char *cmd,
		      const struct serve_extra *x)
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: wake the loop */
	char err[XKV_ERRLEN];

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL); /* a closed terminal stops it (attach --serve: keeps the store) */
	struct xkv_serve_opts o = {
		.ifname = ifname, .port = (__u16)port, .verbose = verbose_level(),
		.stop = &stop_flag, .ready_fd = -1,
	};
	struct snap_every se = { s, x ? x->snapshot_file : NULL };
	if (x) {
		o.limits.max_keys = x->max_keys;
		o.limits.max_reply = x->max_reply;
		o.drop_user = x->drop_user;
		o.threads = x->threads;
		o.max_conns = x->max_conns;
		o.idle_timeout = x->idle_timeout;
		o.max_buffer_mib = x->max_buffer_mib;
		o.no_tcp = x->no_tcp;
		o.no_tcp_fast = x->no_tcp_fast;
		o.sasl = x->sasl;
	}
	if (se.file && x->snapshot_every) {
		o.tick = snapshot_tick;
		o.tick_arg = &se;
		o.tick_ms = x->snapshot_every * 1000u;
	}
	xinfo("xdpkv: slow path serving %s (%s) on %s port %u; Ctrl-C, SIGTERM or SIGHUP stops it", ifname,
	      s->cfg.layout, o.no_tcp ? "UDP" : "UDP and TCP", port ? port : s->cfg.port);
	int e = xkv_serve(s, &o, err, sizeof(err));
	if (e) {
		xerr("%s: slow path: %s", cmd, err);
		return EXIT_SYS;
	}
	xinfo("xdpkv: slow path stopped (%s)", stop_flag == SIGTERM ? "SIGTERM" :
	      stop_flag == SIGHUP ? "SIGHUP" : "SIGINT");
	if (se.file && snapshot_quiet(s, se.file, "final"))
		return EXIT_SYS;
	return EXIT_OK;
}

/* ---- attach ---- */

struct attach_opts {
	struct xo_iface ifc;
	int mode;
	unsigned entries, key_size, value_size, port;
	unsigned big_memory;     /* MiB; 0: the default */
	bool no_big;
	bool no_prealloc, no_common_lru, binary_keys, serve;
	const char *hash_seed;   /* --hash-seed as given (NULL: random, or the pinned one) */
	bool fnv_unseeded;
	bool replace, reset_acl; /* re-attach */
	const char *restore;
	/* access policy (docs/security.md) */
	struct xo_cidrs allow, write_allow, trust;
	unsigned max_amp, rate_limit, rate_burst;
	bool strict, low_ports;
	bool no_tcp_fast;
	const char *sasl_pwdb;   /* with --serve: SASL required (serve --sasl-pwdb) */
	struct xkv_sasl *sasl;   /* read before anything is attached */
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
	{ "binary-keys", 0, XO_BOOL, offsetof(struct attach_opts, binary_keys), NULL,
	  "accept control bytes in keys as memcached does (memaslap needs it); default: CLIENT_ERROR bad key" },
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
	  "serve answers every TCP request in userspace (default: get, set and delete on serve's "
	  "connections are answered in the kernel)" },
	XO_END,
};

static int unknown_variant(const char *name)
{
	xerr("attach: unknown --variant '%s'", name);
	fprintf(stderr, "valid variants:\n");
	for (int i = 0; xkv_layouts[i]; i++)
		fprintf(stderr, "  %-10s %s\n", xkv_layouts[i]->name, xkv_layouts[i]->summary);
	fprintf(stderr, "benchmarks only:\n  %-10s %s\n", "null",
		"the handler with no map: answers every get with one fixed value");
	return EXIT_USAGE;
}

/* A veth's peer hands over UDP checksums it left for hardware it does not
 * have (CHECKSUM_PARTIAL): only the pseudo-header sum is in the field.  The
 * kernel trusts such frames from a local peer; so does the fast path on a
 * veth, and only there. */
static bool iface_is_veth(const char *ifname)
{
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool veth = false;

	if (fd < 0)
		return false;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&di;
	if (!ioctl(fd, SIOCETHTOOL, &ifr))
		veth = !strcmp(di.driver, "veth");
	close(fd);
	return veth;
}

/* --hash-seed / --fnv-unseeded, or a random seed for the layouts that place
 * keys themselves (docs/layouts.md, "Keyed placement").  A re-attach keeps
 * the pinned seed instead (keep_pinned_seed). */
static int hash_seed_opt(const struct attach_opts *o, const struct xkv_layout *L, struct xkv_config *cfg)
{
	if (o->hash_seed) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(o->hash_seed, &end, 0);
		if (errno || end == o->hash_seed || *end || o->hash_seed[0] == '-') {
			xerr("attach: --hash-seed '%s': not a 64-bit number (decimal or 0x hex)", o->hash_seed);
			return EXIT_USAGE;
		}
		if (o->fnv_unseeded && v) {
			xerr("attach: --fnv-unseeded and --hash-seed %s contradict each other", o->hash_seed);
			return EXIT_USAGE;
		}
		cfg->hash_seed = v;
		return 0;
	}
	if (o->fnv_unseeded || !L->hash_seeded) {
		if (o->fnv_unseeded && !L->hash_seeded) {
			xerr("attach: --fnv-unseeded applies to the layouts that place keys themselves "
			     "(array_fnv, set_assoc, sieve, s3fifo, arena), not %s", L->name);
			return EXIT_USAGE;
		}
		return 0;
	}
	while (!cfg->hash_seed)
		if (getrandom(&cfg->hash_seed, sizeof(cfg->hash_seed), 0) != sizeof(cfg->hash_seed)) {
			xerr("attach: getrandom: %s (give --hash-seed)", strerror(errno));
			return EXIT_SYS;
		}
	return 0;
}

static int build_config(const struct attach_opts *o, const char *variant, struct xkv_config *cfg)
{
	char err[XKV_ERRLEN];
	int rc;

	if (!xkv_layout_find_any(variant))
		return unknown_variant(variant);
	if (xkv_config_defaults(cfg, variant))
		return unknown_variant(variant);
	if (o->entries)
		cfg->entries = o->entries;
	if (o->key_size)
		cfg->key_cap = o->key_size;
	if (o->value_size)
		cfg->val_cap = o->value_size;
	if (o->big_memory)
		cfg->big_chunks = (__u32)(((__u64)o->big_memory << 20) / XKV_BIG_ELEM);
	if (o->no_big)
		cfg->big_chunks = 0;
	if (o->port)
		cfg->port = (__u16)o->port;
	if (o->no_prealloc)
		cfg->flags |= XKV_CFG_NO_PREALLOC;
	if (o->no_common_lru)
		cfg->flags |= XKV_CFG_NO_COMMON_LRU;
	if (o->binary_keys)
		cfg->flags |= XKV_CFG_BINARY_KEYS;
	if ((rc = hash_seed_opt(o, xkv_layout_find_any(variant), cfg)))
		return rc;
	if (o->strict)
		cfg->flags |= XKV_CFG_STRICT;
	if (o->low_ports)
		cfg->flags |= XKV_CFG_LOW_PORTS;
	if (o->no_tcp_fast)
		cfg->flags |= XKV_CFG_NO_TCP_FAST;
	cfg->max_amp = o->max_amp ? o->max_amp : XKV_DEFAULT_MAX_AMP;
	cfg->rate_limit = o->rate_limit;
	cfg->rate_burst = o->rate_burst ? o->rate_burst : o->rate_limit;
	if (o->rate_burst && !o->rate_limit) {
		xerr("attach: --rate-burst needs --rate-limit");
		return EXIT_USAGE;
	}
	if (iface_is_veth(o->ifc.name))
		cfg->flags |= XKV_CFG_CSUM_PARTIAL;
	cfg->ifindex = (__u32)o->ifc.ifindex;
	cfg->mode = (__u16)o->mode;
	if (xkv_config_finish(cfg, err, sizeof(err))) {
		xerr("attach: %s", err);
		return EXIT_USAGE;
	}
	return 0;
}


bool attach_prior(const struct xo_iface *ifc, struct prior *pr, char *other, size_t olen)
{
	bool leg = false;
	memset(pr, 0, sizeof(*pr));
	other[0] = 0;
	pr->ours = xdpkv_prog_on(ifc->ifindex, &pr->id, &pr->legacy, other, olen);
	pr->pins = xkv_pins_exist(ifc->name);
	struct xdp_multiprog *mp = get_mp(ifc->ifindex);
	if (mp) {
		leg = xdp_multiprog__is_legacy(mp);
		pr->xmode = xdp_multiprog__attach_mode(mp);
		xdp_multiprog__close(mp);
	}
	return leg;
}

/* Re-attach without --hash-seed/--fnv-unseeded: the kept items sit where the
 * pinned seed put them, so the new program takes that seed, not a new one.
 * An arena store is kept at the address it was created with, always. */
static int keep_pinned_seed(const struct attach_opts *o, const struct prior *pr, struct xkv_config *cfg)
{
	struct xkv_config old;
	char err[XKV_ERRLEN];
	bool seed = !o->hash_seed && !o->fnv_unseeded && xkv_layout_find_any(cfg->layout)->hash_seeded;
	if (!pr->pins || (!seed && !cfg->arena_base))
		return 0;
	if (xkv_pins_cfg(o->ifc.name, &old, err, sizeof(err))) {
		xerr("attach: %s", err);
		return EXIT_SYS;
	}
	if (strncmp(old.layout, cfg->layout, sizeof(old.layout)))
		return 0;
	if (seed)
		cfg->hash_seed = old.hash_seed;
	if (cfg->arena_base && old.arena_base)
		cfg->arena_base = old.arena_base;
	return 0;
}

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

static void print_load_failure(struct bpf_object *obj, int e, const struct xo_iface *ifc, int mode)
{
	char tail[3072];

	xerr("attach: loading or attaching the XDP program on %s failed: %s", ifc->name,
	     strerror(-e));
	xkv_object_log_tail(obj, tail, sizeof(tail));
	if (tail[0])
		fprintf(stderr, "verifier log (tail):\n%s\n", tail);
	xlog_dump();
	if (e == -EOPNOTSUPP && mode == XKV_MODE_NATIVE)
		xhint("the driver of %s may lack native XDP: try --mode skb", ifc->name);
	else if (e == -EBUSY || e == -EEXIST)
		xhint("another XDP program is on %s: 'xdp-loader status %s'", ifc->name, ifc->name);
	else if (e == -ERANGE || e == -EINVAL)
		xhint("the device MTU may be too large for native XDP, or try --mode skb");
}

/* Which way libxdp attached us (it tries its dispatcher first). */
static const char *attach_path(int ifindex, unsigned *id)
{
	bool legacy = true;
	*id = 0;
	if (!xdpkv_prog_on(ifindex, id, &legacy, NULL, 0))
		return "unknown (program not found after attach)";
	return legacy ? "single program (libxdp's dispatcher was not usable here, it fell back)"
		      : "libxdp dispatcher (multi-program)";
}

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
static int attach_policy(struct xkv_store *s, const struct attach_opts *o, bool reused, int *kept,
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

static void print_policy(const struct xkv_store *s, const struct attach_opts *o)
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

/* Put obj's program on the interface: fresh through libxdp, or in place of
 * our program there (pr) without a moment where neither runs.  *how says
 * which way.  0 or -errno (printed). */
int put_prog(struct bpf_object *obj, const struct xo_iface *ifc, int mode, const struct prior *pr,
	     int xmode, const char **how)
{
	char err[XKV_ERRLEN];
	unsigned id;
	int e;

	if (pr->ours && pr->legacy && pr->xmode == xmode) {
		/* libxdp will not replace a program it attached alone (-EBUSY):
		 * the kernel swaps it in one step, XDP_FLAGS_REPLACE naming the
		 * old one (a concurrent change makes it fail, not clobber) */
		if ((e = xkv_object_load(obj, err, sizeof(err)))) {
			xerr("attach: %s", err);
			return e;
		}
		int old = bpf_prog_get_fd_by_id(pr->id);
		if (old < 0) {
			e = -errno;
			xerr("attach: cannot open the attached program id %u: %s", pr->id, strerror(-e));
			return e;
		}
		LIBBPF_OPTS(bpf_xdp_attach_opts, ao, .old_prog_fd = old);
		__u32 fl = XDP_FLAGS_REPLACE | (xmode == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
		e = bpf_xdp_attach(ifc->ifindex, bpf_program__fd(xkv_object_prog(obj)), fl, &ao);
		close(old);
		if (e)
			print_load_failure(obj, e, ifc, mode);
		*how = "swapped in one step (XDP_FLAGS_REPLACE)";
		return e;
	}
	struct xdp_program *prog = xdp_program__from_bpf_obj(obj, "xdp");
	if ((e = (int)libxdp_get_error(prog))) {
		xerr("attach: libxdp cannot use the BPF object: %s", strerror(-e));
		xlog_dump();
		return e;
	}
	*how = NULL;
	if (pr->ours && pr->xmode != xmode) {
		/* an interface runs a native or a generic program, never both */
		if ((e = detach_ours(ifc->ifindex, pr->id, &id)) < 0)
			xerr("attach: detaching program id %u: %s", pr->id, strerror(-e));
		*how = "detached, then the new one attached (--mode changed: a moment without XDP)";
	}
	if (!(e = e < 0 ? e : xdp_program__attach(prog, ifc->ifindex, xmode, 0)) && pr->ours && !*how) {
		/* under libxdp's dispatcher: the new one joined it, the old one leaves */
		if ((e = detach_ours(ifc->ifindex, pr->id, &id)) < 0)
			xerr("attach: removing program id %u from the dispatcher: %s", pr->id, strerror(-e));
		e = e < 0 ? e : 0;
		*how = "added to libxdp's dispatcher, then the old one removed";
	} else if (e) {
		print_load_failure(obj, e, ifc, mode);
	}
	xdp_program__close(prog);
	return e;
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

	struct bpf_object *obj = xkv_object_open(cfg, err, sizeof(err));
	if (!obj) {
		xerr("attach: %s", err);
		return EXIT_SYS;
	}
	if (pr->pins && (rc = reuse_pins(obj, cfg, o, &reused)))
		goto out;
	rc = EXIT_SYS;
	if (put_prog(obj, &o->ifc, o->mode, pr, xmode, &how))
		goto out;
	const char *path = attach_path(o->ifc.ifindex, &id);
	xkv_pin_dir(o->ifc.name, dir, sizeof(dir));
	struct xkv_store ps;
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
	if (stop_flag == SIGHUP) {
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

static int run_attach(void *vo, const struct global_opts *g)
{
	struct attach_opts *o = vo;
	struct xkv_config cfg;
	struct prior pr;
	int rc = build_config(o, g->variant ? g->variant : "hash_map", &cfg);

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
		    "[--binary-keys] [--serve [--sasl-pwdb FILE]] [--allow CIDR]... "
		    "[--write-allow CIDR]... [--trust CIDR]... [--max-amplification N] [--strict] "
		    "[--rate-limit REQ/S [--rate-burst N]] [--allow-low-ports] [--no-tcp-fast-path] [--replace] "
		    "[--reset-acl] [--restore FILE]",
	.summary = "load the XDP store onto an interface and pin its maps",
	.doc = "Loads the layout chosen with --variant (default hash_map) through libxdp, attaches it\n"
	       "to IFACE and pins its maps in /sys/fs/bpf/xdpkv/IFACE/ so that the other commands\n"
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
	       "--variant null (benchmarks only, not a layout) attaches the same handler with no\n"
	       "map: a floor that answers every get with one fixed value of --value-size bytes and\n"
	       "drops every set (bench/capacity.sh measures the layouts against it).\n\n"
	       "Example: xdpkv --variant lru attach veth0 --entries 100000 --value-size 512\n"
	       "         xdpkv attach eth0 --allow 10.0.0.0/8 --write-allow 10.1.2.0/24 --rate-limit 10000",
	.opts = attach_table,
	.opts_size = sizeof(struct attach_opts),
	.uses_variant = true,
	.run = run_attach,
};

/* ---- detach ---- */

struct iface_opts {
	struct xo_iface ifc;
};

static const struct xo detach_table[] = {
	{ "IFACE", 0, XO_IFACE, offsetof(struct iface_opts, ifc), NULL,
	  "interface to detach from (may be gone: its stale pins are still removed)",
	  .flags = XO_POS | XO_REQ | XO_IF_ANY },
	XO_END,
};

static int run_detach(void *vo, const struct global_opts *g)
{
	struct iface_opts *o = vo;
	char dir[256];
	unsigned id = 0;
	int rc, did = 0;

	if ((rc = need_privileges("detach")))
		return rc;
	xkv_pin_dir(o->ifc.name, dir, sizeof(dir));
	if (o->ifc.ifindex) {
		int e = detach_ours(o->ifc.ifindex, 0, &id);
		if (e < 0) {
			xlog_dump();
			return sys_fail("detach", o->ifc.name, e);
		}
		if (e > 0) {
			printf("detached xdpkv (program id %u) from %s\n", id, o->ifc.name);
			did = 1;
		} else {
			printf("no xdpkv program is attached to %s\n", o->ifc.name);
		}
	} else {
		printf("interface %s does not exist (here); nothing to detach\n", o->ifc.name);
	}
	if (xkv_pins_exist(o->ifc.name)) {
		int n = xkv_pins_remove(o->ifc.name);
		if (n < 0)
			return sys_fail("detach", "removing pins", n);
		printf("removed %s%s\n", dir, did ? "" : " (stale pins)");
		did = 1;
	}
	return did ? EXIT_OK : EXIT_MISS;
}

const struct cmd cmd_detach = {
	.name = "detach",
	.synopsis = "IFACE",
	.summary = "take the XDP store off an interface and remove its pins",
	.doc = "Finds the xdpkv program on IFACE (alone or under libxdp's dispatcher), detaches it\n"
	       "and removes /sys/fs/bpf/xdpkv/IFACE.  Stale pins are removed even when no program\n"
	       "is attached.  Exit status 1 when there was nothing to remove.\n\n"
	       "Example: xdpkv detach veth0",
	.opts = detach_table,
	.opts_size = sizeof(struct iface_opts),
	.run = run_detach,
};

/* ---- serve ---- */

struct serve_opts {
	struct xo_iface ifc;
	unsigned port, max_keys, max_reply, threads, max_conns, idle_timeout, max_buffer_mib;
	const char *user;
	bool keep_privileges, no_tcp, no_tcp_fast;
	unsigned snapshot_every;
	const char *snapshot_file;
	const char *sasl_pwdb;
};

static const struct xo serve_table[] = {
	{ "IFACE", 0, XO_IFACE, offsetof(struct serve_opts, ifc), NULL,
	  "interface whose store to serve", .flags = XO_POS | XO_REQ },
	{ "port", 'p', XO_U32, offsetof(struct serve_opts, port), "P",
	  "UDP and TCP port (default: the port given at attach)", 1, 65535 },
	{ "max-keys", 0, XO_U32, offsetof(struct serve_opts, max_keys), "N",
	  "keys in one multi-get, at most (default 256; more: SERVER_ERROR too many keys)", 1, 4095 },
	{ "max-reply", 0, XO_U32, offsetof(struct serve_opts, max_reply), "BYTES",
	  "reply bytes to one request, at most (default 2097152, i.e. 2 MiB; more: SERVER_ERROR reply too large)",
	  1400, 65535u * 1400u },
	{ "user", 'u', XO_STR, offsetof(struct serve_opts, user), "NAME",
	  "after binding and opening the maps, run as this user with no capabilities (default nobody)" },
	{ "keep-privileges", 0, XO_BOOL, offsetof(struct serve_opts, keep_privileges), NULL,
	  "stay root with every capability (not recommended)" },
	{ "threads", 0, XO_U32, offsetof(struct serve_opts, threads), "N",
	  "TCP worker threads, each with its own connections (default: the online CPUs)", 1, 1024 },
	{ "max-conns", 0, XO_U32, offsetof(struct serve_opts, max_conns), "N",
	  "open TCP connections at most; more are closed at once (default 1024)", 1, 1000000 },
	{ "idle-timeout", 0, XO_U32, offsetof(struct serve_opts, idle_timeout), "SECONDS",
	  "close a TCP connection silent this long (default 0: never, as memcached)", 0, 30 * 86400 },
	{ "max-buffer-mib", 0, XO_U32, offsetof(struct serve_opts, max_buffer_mib), "MIB",
	  "memory for requests still arriving, all TCP connections together (default 256); a set "
	  "that does not fit gets SERVER_ERROR out of memory storing object", 1, 1 << 20 },
	{ "no-tcp", 0, XO_BOOL, offsetof(struct serve_opts, no_tcp), NULL,
	  "serve UDP only (no TCP listener)" },
	{ "no-tcp-fast-path", 0, XO_BOOL, offsetof(struct serve_opts, no_tcp_fast), NULL,
	  "answer every TCP request here, none in the kernel (default: as attach said)" },
	{ "snapshot-file", 0, XO_STR, offsetof(struct serve_opts, snapshot_file), "FILE",
	  "snapshot the store to FILE when stopped (SIGTERM, SIGINT, SIGHUP), and every "
	  "--snapshot-every seconds; --user must be able to write FILE's directory" },
	{ "snapshot-every", 0, XO_U32, offsetof(struct serve_opts, snapshot_every), "SECONDS",
	  "with --snapshot-file: also snapshot this often (one thread, lz4)", 1, 7 * 86400 },
	{ "sasl-pwdb", 'S', XO_STR, offsetof(struct serve_opts, sasl_pwdb), "FILE",
	  "require SASL PLAIN (memcached -S): user:password lines, a file root owns and only root "
	  "may read; binary-protocol TCP clients only, XDP and the TCP fast path answer nobody" },
	XO_END,
};

static int run_serve(void *vo, const struct global_opts *g)
{
	struct serve_opts *o = vo;
	struct xkv_store s;
	if (o->snapshot_every && !o->snapshot_file) {
		xerr("serve: --snapshot-every needs --snapshot-file");
		return EXIT_USAGE;
	}
	int rc = open_pinned(&s, "serve", o->ifc.name);

	if (rc)
		return rc;
	struct xkv_sasl *db = NULL;
	if (o->sasl_pwdb) {
		char err[XKV_ERRLEN];
		if (!(db = xkv_sasl_load(o->sasl_pwdb, err, sizeof(err)))) {
			xerr("serve: --sasl-pwdb: %s", err);
			xkv_store_close(&s);
			return EXIT_USAGE;
		}
	}
	struct serve_extra x = {
		.sasl = db,
		.max_keys = o->max_keys, .max_reply = o->max_reply,
		.threads = o->threads, .max_conns = o->max_conns,
		.idle_timeout = o->idle_timeout, .max_buffer_mib = o->max_buffer_mib, .no_tcp = o->no_tcp, .no_tcp_fast = o->no_tcp_fast,
		.drop_user = o->keep_privileges ? NULL : o->user ? o->user : "nobody",
		.snapshot_every = o->snapshot_every, .snapshot_file = o->snapshot_file,
	};
	rc = serve_loop(&s, o->ifc.name, o->port, "serve", &x);
	xkv_sasl_free(db);
	xkv_store_close(&s);
	return rc;
}

const struct cmd cmd_serve = {
	.name = "serve",
	.synopsis = "IFACE [--port P] [--max-keys N] [--max-reply BYTES] [--threads N] [--max-conns N] "
		    "[--no-tcp] [--no-tcp-fast-path]\n       [--user NAME | --keep-privileges] "
		    "[--snapshot-file FILE [--snapshot-every SECONDS]] [--sasl-pwdb FILE] [-v]",
	.summary = "run the userspace slow path for an attached interface",
	.doc = "Answers, from the pinned maps, what the XDP program passes on (other commands,\n"
	       "replies too large for one frame, busy slots).  Runs in the foreground and logs to\n"
	       "stderr; SIGTERM, SIGINT or SIGHUP stop it with exit status 0 (fits a systemd service).\n"
	       "It applies the same access rules as the XDP program (docs/security.md), caps what one\n"
	       "request may ask for, re-reads the interface's addresses every second, and once its\n"
	       "socket and maps are open it drops to --user with no capabilities.\n\n"
	       "It also listens on TCP, same port, for ordinary memcached clients (pymemcache,\n"
	       "python-memcache, libmemcached): pipelined requests, --threads workers, at most\n"
	       "--max-conns connections; the allow list is checked when a client connects (refused:\n"
	       "closed without a byte), the write list at every write (refused: the connection ends).\n"
	       "While a source holds a TCP connection its UDP requests are trusted (no amplification\n"
	       "cap).  --no-tcp turns TCP off.  'attach --serve' listens on TCP too, with the defaults.\n\n"
	       "With --snapshot-file it snapshots the store there when it stops, and with\n"
	       "--snapshot-every also periodically, while serving (docs/snapshots.md).\n\n"
	       "TCP clients may speak memcached's binary protocol too (docs/protocol.md).  With\n"
	       "--sasl-pwdb (memcached -S) every client must authenticate with SASL PLAIN over the\n"
	       "binary protocol first: text connections are closed, UDP is dropped (in XDP too) and\n"
	       "the TCP fast path is off (docs/security.md, \"SASL\").\n\n"
	       "Example: xdpkv serve veth0 -v\n"
	       "         xdpkv serve eth0 --snapshot-file /var/lib/xdpkv/eth0.snap --snapshot-every 300\n"
	       "         python3 -c 'import pymemcache; c = pymemcache.Client((\"10.0.0.1\", 11211)); "
	       "c.set(\"k\", \"v\"); print(c.get(\"k\"))'",
	.opts = serve_table,
	.opts_size = sizeof(struct serve_opts),
	.run = run_serve,
};
