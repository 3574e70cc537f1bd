// SPDX-License-Identifier: MIT
/* Configuration, loading, pinning and opening stores: the part of libxdpkv
 * every tool goes through. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include "xdpkv.h"

static char log_buf[1u << 20];

int xkv_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;
	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

int xkv_config_defaults(struct xkv_config *cfg, const char *layout)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->layout, sizeof(cfg->layout), "%s", layout ? layout : "hash_map");
	cfg->entries = 65536;
	cfg->key_cap = 64;
	cfg->val_cap = 1024;
	cfg->big_chunks = (XKV_BIG_DEFAULT_MB << 20) / XKV_BIG_ELEM;
	cfg->port = XKV_DEFAULT_PORT;
	cfg->mode = XKV_MODE_NATIVE;
	return xkv_layout_find_any(cfg->layout) ? 0 : -EINVAL;
}

/* The load-time options that change the store map; a layout lists those its
 * prepare() honours in map_opts. */
static const struct {
	__u32 flag;
	const char *opt;
} map_opts[] = {
	{ XKV_CFG_NO_PREALLOC, "--no-prealloc" },
	{ XKV_CFG_NO_COMMON_LRU, "--no-common-lru" },
};

int xkv_config_finish(struct xkv_config *cfg, char *err, size_t errlen)
{
	const struct xkv_layout *L = xkv_layout_find_any(cfg->layout);

	if (!L) {
		char names[128] = "";
		for (int i = 0; xkv_layouts[i]; i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 i ? ", " : "", xkv_layouts[i]->name);
		return xkv_errf(err, errlen, -EINVAL, "unknown layout '%s' (known: %s)", cfg->layout, names);
	}
	if (cfg->key_cap < 1 || cfg->key_cap > XKV_KEY_MAX)
		return xkv_errf(err, errlen, -EINVAL, "--key-size %u out of range 1..%u (memcached's limit)",
			    cfg->key_cap, XKV_KEY_MAX);
	if (cfg->val_cap < 1 || cfg->val_cap > XKV_VAL_MAX)
		return xkv_errf(err, errlen, -EINVAL, "--value-size %u out of range 1..%u", cfg->val_cap,
			    XKV_VAL_MAX);
	if (cfg->entries < 1 || cfg->entries > (1u << 26))
		return xkv_errf(err, errlen, -EINVAL, "--entries %u out of range 1..%u", cfg->entries, 1u << 26);
	if (cfg->port == 0)
		return xkv_errf(err, errlen, -EINVAL, "--port must be 1..65535");
	for (size_t i = 0; i < sizeof(map_opts) / sizeof(map_opts[0]); i++) {
		if (!(cfg->flags & map_opts[i].flag) || (L->map_opts & map_opts[i].flag))
			continue;
		char names[128] = "";
		for (int j = 0; xkv_layouts[j]; j++)
			if (xkv_layouts[j]->map_opts & map_opts[i].flag)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					 names[0] ? ", " : "", xkv_layouts[j]->name);
		return xkv_errf(err, errlen, -EINVAL, "%s applies to %s, not %s", map_opts[i].opt,
				names, L->name);
	}
	if (cfg->flags & XKV_CFG_NO_COMMON_LRU) {
		/* The kernel gives each CPU's LRU list an equal share and so rounds
		 * max_entries up to a multiple of the possible CPUs: do it here, so
		 * that cfg (status, capacity) says what the map holds. */
		int ncpus = libbpf_num_possible_cpus();
		if (ncpus < 1)
			return xkv_errf(err, errlen, -EINVAL, "cannot count CPUs");
		cfg->entries = (cfg->entries + (__u32)ncpus - 1) / (__u32)ncpus * (__u32)ncpus;
	}
	if (cfg->hash_seed && !L->hash_seeded) {
		char names[128] = "";
		for (int j = 0; xkv_layouts[j]; j++)
			if (xkv_layouts[j]->hash_seeded)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					 names[0] ? ", " : "", xkv_layouts[j]->name);
		return xkv_errf(err, errlen, -EINVAL,
				"--hash-seed applies to %s, not %s (its map hashes keys with the kernel's own seed)",
				names, L->name);
	}
	if (L->key_in_value)
		cfg->flags |= XKV_CFG_KEY_IN_VALUE;
	else
		cfg->flags &= ~XKV_CFG_KEY_IN_VALUE;
	if (!cfg->realtime_off_ns) {
		/* absolute exptimes: both paths convert with this one offset */
		struct timespec rt, mono;
		clock_gettime(CLOCK_REALTIME, &rt);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		cfg->realtime_off_ns = ((__s64)rt.tv_sec - mono.tv_sec) * 1000000000ll + (rt.tv_nsec - mono.tv_nsec);
	}
	cfg->key_size = XKV_KEY_SIZE(cfg->key_cap);
	cfg->entry_size = XKV_ENTRY_SIZE(L->key_in_value, cfg->key_cap, cfg->val_cap);
	return L->finish ? L->finish(cfg, err, errlen) : 0;
}

struct bpf_program *xkv_object_prog(struct bpf_object *obj)
{
	return bpf_object__find_program_by_name(obj, "xdpkv");
}

struct bpf_object *xkv_object_open_with(const struct xkv_layout *L, const struct xkv_config *cfg,
					char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = L->name);
	size_t sz;
	const void *elf = L->elf(&sz);
	struct bpf_object *obj = bpf_object__open_mem(elf, sz, &opts);
	struct bpf_map *m;
	int e;

	if (!obj) {
		xkv_errf(err, errlen, 0, "cannot open the %s BPF object: %s", L->name, strerror(errno));
		return NULL;
	}
	m = bpf_object__find_map_by_name(obj, ".rodata.cfg");
	if (!m || bpf_map__set_initial_value(m, cfg, sizeof(*cfg))) {
		xkv_errf(err, errlen, 0, "BPF object %s has no matching .rodata.cfg", L->name);
		goto out;
	}
	m = bpf_object__find_map_by_name(obj, "store");
	if (m) { /* the null store of the benchmarks has none */
		if ((e = bpf_map__set_max_entries(m, cfg->entries)) ||
		    (L->map_type != BPF_MAP_TYPE_ARRAY && (e = bpf_map__set_key_size(m, cfg->key_size))) ||
		    (e = bpf_map__set_value_size(m, cfg->entry_size)) ||
		    (L->prepare && (e = L->prepare(m, cfg)))) {
			xkv_errf(err, errlen, 0, "cannot size the store map: %s", strerror(-e));
			goto out;
		}
	}
	/* the null store's stand-in for a store update (bench/null_store.bpf.c):
	 * the same value size as a layout's entries */
	m = bpf_object__find_map_by_name(obj, "entry_sink");
	if (m && (e = bpf_map__set_value_size(m, cfg->entry_size))) {
		xkv_errf(err, errlen, 0, "cannot size the entry_sink map: %s", strerror(-e));
		goto out;
	}
	/* the big values' chunks (entry.h): --big-memory; a map needs one entry */
	m = bpf_object__find_map_by_name(obj, "big");
	if (m && (e = bpf_map__set_max_entries(m, cfg->big_chunks ? cfg->big_chunks : 1))) {
		xkv_errf(err, errlen, 0, "cannot size the big map: %s", strerror(-e));
		goto out;
	}
	/* the rate limiter's LRU is preallocated: no room when it is off */
	m = bpf_object__find_map_by_name(obj, "ratelimit");
	if (m && (e = bpf_map__set_max_entries(m, cfg->rate_limit ? XKV_RL_ENTRIES : 1))) {
		xkv_errf(err, errlen, 0, "cannot size the ratelimit map: %s", strerror(-e));
		goto out;
	}
	/* the working memory of both programs holds one whole entry */
	static const char *const scratches[] = { "scratch", "tcp_scratch" };
	for (size_t i = 0; i < sizeof(scratches) / sizeof(scratches[0]); i++) {
		m = bpf_object__find_map_by_name(obj, scratches[i]);
		if (!m ? !i : !!bpf_map__set_value_size(m, bpf_map__value_size(m) + cfg->entry_size -
							 XKV_ENTRY_HDR)) {
			xkv_errf(err, errlen, 0, "cannot size the %s map", scratches[i]);
			goto out;
		}
	}
	struct bpf_program *p = xkv_object_prog(obj);
	if (!p) {
		xkv_errf(err, errlen, 0, "BPF object %s has no program 'xdpkv'", L->name);
		goto out;
	}
	/* One buffer for the process: libbpf fills it only when a load fails,
	 * and loads are rare and one at a time. */
	log_buf[0] = 0;
	bpf_program__set_log_buf(p, log_buf, sizeof(log_buf));
	return obj;
out:
	bpf_object__close(obj);
	return NULL;
}

struct bpf_object *xkv_object_open(const struct xkv_config *cfg, char *err, size_t errlen)
{
	const struct xkv_layout *L = xkv_layout_find_any(cfg->layout);
	if (!L) {
		xkv_errf(err, errlen, 0, "unknown layout '%s'", cfg->layout);
		return NULL;
	}
	return xkv_object_open_with(L, cfg, err, errlen);
}

const char *xkv_object_log_tail(struct bpf_object *obj, char *buf, size_t len)
{
	struct bpf_program *p = obj ? xkv_object_prog(obj) : NULL;
	size_t sz = 0;
	const char *log = p ? bpf_program__log_buf(p, &sz) : NULL;

	if (!len)
		return buf;
	buf[0] = 0;
	if (!log || !log[0])
		return buf;
	size_t n = strlen(log);
	/* keep the last lines that fit, starting at a line boundary */
	const char *start = n + 1 > len ? log + n - (len - 1) : log;
	if (start != log) {
		const char *nl = strchr(start, '\n');
		if (nl)
			start = nl + 1;
	}
	snprintf(buf, len, "%s", start);
	return buf;
}

int xkv_object_load(struct bpf_object *obj, char *err, size_t errlen)
{
	int e = bpf_object__load(obj);
	if (!e)
		return 0;
	char tail[3072];
	xkv_object_log_tail(obj, tail, sizeof(tail));
	return xkv_errf(err, errlen, e, "loading the BPF program failed: %s%s%s", strerror(-e),
		    tail[0] ? "\nverifier log (tail):\n" : "", tail);
}

/* The maps a store holds open: name in the object, name of its pin, field.
 * The first three every object has; the policy maps only real layouts. */
static const struct {
	const char *map, *pin;
	size_t off;
} xkv_maps[] = {
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
	{ "tcp_conns", "tcp_conns", offsetof(struct xkv_store, tcp_conns_fd) },
	{ "tcp_paid", "tcp_paid", offsetof(struct xkv_store, tcp_paid_fd) },
	/* values above --value-size (entry.h, bigval.c) */
	{ "big", "big", offsetof(struct xkv_store, big_fd) },
};
#define XKV_NMAPS (sizeof(xkv_maps) / sizeof(xkv_maps[0]))
#define MAP_FD(s, i) ((int *)((char *)(s) + xkv_maps[i].off))

/* Map i of xkv_maps in obj.  The null store has no "store" map: its one
 * item lives in .bss, which then stands in for it (pinned as "store", read
 * by its accessor in bench/null_layout.c). */
static struct bpf_map *find_map(struct bpf_object *obj, size_t i)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, xkv_maps[i].map);
	if (!m && xkv_maps[i].off == offsetof(struct xkv_store, store_fd))
		m = bpf_object__find_map_by_name(obj, ".bss");
	return m;
}

static void store_fds_reset(struct xkv_store *s)
{
	for (size_t i = 0; i < XKV_NMAPS; i++)
		*MAP_FD(s, i) = -1;
}

/* The pinned cfg as this xdpkv knows it.  Another version's cfg may be
 * shorter (fields added since read as 0: hash_seed) or longer (fields this
 * one does not know are dropped); the kernel copies value_size bytes, so read
 * into a buffer of that size. */
static int read_cfg(int cfg_fd, struct xkv_config *cfg)
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

static int store_finish(struct xkv_store *s, char *err, size_t errlen)
{
	if (!s->L)
		s->L = xkv_layout_find_any(s->cfg.layout);
	if (!s->L)
		return xkv_errf(err, errlen, -EINVAL, "pinned store has unknown layout '%.16s'", s->cfg.layout);
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus < 1)
		return xkv_errf(err, errlen, -EINVAL, "cannot count CPUs");
	if (s->L->open) {
		int e = s->L->open(s);
		if ((e == -EEXIST || e == -EINVAL) && s->cfg.arena_base)
			return xkv_errf(err, errlen, e,
					"cannot map the %s store's arena at %#llx, the address it was created with "
					"and the only one the kernel allows: %s (something else in this process "
					"occupies it?)", s->L->name, (unsigned long long)s->cfg.arena_base,
					e == -EEXIST ? "the address is taken" : strerror(-e));
		if (e)
			return xkv_errf(err, errlen, e, "cannot open the %s store: %s", s->L->name, strerror(-e));
	}
	return 0;
}

int xkv_store_adopt(struct xkv_store *s, const struct xkv_store *base, int store_fd,
		    const struct xkv_config *cfg, char *err, size_t errlen)
{
	*s = *base;
	s->L = NULL;
	s->mm = NULL;
	s->mm_len = 0;
	s->new_items = s->overwrites = 0;
	s->owns_fds = false;
	s->store_fd = store_fd;
	s->cfg = *cfg;
	int e = store_finish(s, err, errlen);
	if (e)
		s->L = NULL;
	return e;
}

void xkv_store_swap(struct xkv_store *a, struct xkv_store *b)
{
	struct xkv_store t = *a;
	a->L = b->L;
	a->cfg = b->cfg;
	a->store_fd = b->store_fd;
	a->mm = b->mm;
	a->mm_len = b->mm_len;
	a->slot_stride = b->slot_stride;
	b->L = t.L;
	b->cfg = t.cfg;
	b->store_fd = t.store_fd;
	b->mm = t.mm;
	b->mm_len = t.mm_len;
	b->slot_stride = t.slot_stride;
}

void xkv_store_drop(struct xkv_store *s)
{
	if (s->L && s->L->close)
		s->L->close(s);
	if (s->store_fd >= 0)
		close(s->store_fd);
	s->store_fd = -1;
	s->L = NULL;
}

int xkv_object_make_store(struct bpf_object *obj, char *err, size_t errlen)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, "store");
	if (!m)
		return xkv_errf(err, errlen, -ENOENT, "the BPF object has no store map");
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = bpf_map__map_flags(m),
		    .map_extra = bpf_map__map_extra(m)); /* the arena's user address */
	int fd = bpf_map_create(bpf_map__type(m), "store", bpf_map__key_size(m), bpf_map__value_size(m),
				bpf_map__max_entries(m), &o);
	if (fd < 0)
		return xkv_errf(err, errlen, -errno, "cannot create the new store map: %s", strerror(errno));
	int e = bpf_map__reuse_fd(m, fd);
	if (e) {
		close(fd);
		return xkv_errf(err, errlen, e, "cannot give the new store map to the program: %s",
				strerror(-e));
	}
	return fd;
}

int xkv_store_from_object(struct xkv_store *s, const struct xkv_layout *L, struct bpf_object *obj,
			  char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	store_fds_reset(s);
	for (size_t i = 0; i < XKV_NMAPS; i++) {
		struct bpf_map *m = find_map(obj, i);
		*MAP_FD(s, i) = m ? bpf_map__fd(m) : -1;
	}
	if (s->stats_fd < 0 || s->cfg_fd < 0)
		return xkv_errf(err, errlen, -EINVAL, "object is not loaded");
	int e = read_cfg(s->cfg_fd, &s->cfg);
	if (e)
		return xkv_errf(err, errlen, e, "cannot read cfg: %s", strerror(-e));
	s->L = L;
	return store_finish(s, err, errlen);
}

/* ---- pins ---- */

int xkv_bpffs_mount(char *err, size_t errlen)
{
	struct statfs sf;
	if (!statfs("/sys/fs/bpf", &sf) && sf.f_type == BPF_FS_MAGIC)
		return 0;
	mkdir("/sys/fs/bpf", 0700);
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"))
		return xkv_errf(err, errlen, -errno, "bpffs is not mounted at /sys/fs/bpf and mounting it failed: %s",
			    strerror(errno));
	return 0;
}

int xkv_pin_dir(const char *ifname, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", XKV_PIN_ROOT, ifname);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}


int xkv_pins_cfg(const char *ifname, struct xkv_config *cfg, char *err, size_t errlen)
{
	char dir[256], p[300];
	if (xkv_pin_dir(ifname, dir, sizeof(dir)))
		return xkv_errf(err, errlen, -ENAMETOOLONG, "interface name too long");
	snprintf(p, sizeof(p), "%s/cfg", dir);
	int fd = bpf_obj_get(p);
	if (fd < 0)
		return xkv_errf(err, errlen, -errno, "cannot open %s: %s", p, strerror(errno));
	int e = read_cfg(fd, cfg);
	close(fd);
	return e ? xkv_errf(err, errlen, e, "cannot read %s: %s", p, strerror(-e)) : 0;
}

bool xkv_pins_exist(const char *ifname)
{
	char dir[256], p[300];
	if (xkv_pin_dir(ifname, dir, sizeof(dir)))
		return false;
	snprintf(p, sizeof(p), "%s/cfg", dir);
	return access(p, F_OK) == 0;
}

int xkv_pins_remove(const char *ifname)
{
	char dir[256], p[300];
	int removed = 0;
	if (xkv_pin_dir(ifname, dir, sizeof(dir)))
		return -ENAMETOOLONG;
	for (size_t i = 0; i < XKV_NMAPS; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, xkv_maps[i].pin);
		if (!unlink(p))
			removed++;
		snprintf(p, sizeof(p), "%s/%s-new", dir, xkv_maps[i].pin);
		unlink(p); /* left by a re-attach that was killed while pinning */
	}
	rmdir(dir);
	rmdir(XKV_PIN_ROOT); /* only if empty */
	return removed;
}

/* The kernel's view of the map pinned at path, its fd in *fd (caller closes).
 * 0, -ENOENT (no pin), or -errno. */
static int pin_info(const char *path, struct bpf_map_info *info, int *fd)
{
	__u32 len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	*fd = bpf_obj_get(path);
	if (*fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(*fd, info, &len)) {
		int e = -errno;
		close(*fd);
		*fd = -1;
		return e;
	}
	return 0;
}

/* What differs between map m of an object not loaded yet and a map the
 * kernel holds, appended to buf ("" when they match: libbpf would reuse it). */
static void map_diff(const struct bpf_map *m, const struct bpf_map_info *in, char *buf, size_t len)
{
	const struct {
		const char *what;
		__u32 now, pinned;
	} f[] = {
		{ "map type", bpf_map__type(m), in->type },
		{ "key size", bpf_map__key_size(m), in->key_size },
		{ "value size", bpf_map__value_size(m), in->value_size },
		{ "max_entries", bpf_map__max_entries(m), in->max_entries },
		{ "map flags", bpf_map__map_flags(m), in->map_flags },
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i].now != f[i].pinned)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s %u pinned, %u now",
				 buf[0] ? "; " : "", f[i].what, f[i].pinned, f[i].now);
}

int xkv_pins_match(struct bpf_object *obj, const struct xkv_config *cfg, const char *ifname,
		   char *diff, size_t difflen)
{
	char dir[256], p[300];
	struct xkv_config old;
	struct bpf_map_info info;
	int fd, e;

	diff[0] = 0;
	if (xkv_pin_dir(ifname, dir, sizeof(dir)))
		return xkv_errf(diff, difflen, -ENAMETOOLONG, "interface name too long");
	snprintf(p, sizeof(p), "%s/cfg", dir);
	if ((e = pin_info(p, &info, &fd)))
		return xkv_errf(diff, difflen, e, "cannot open %s: %s", p, strerror(-e));
	e = read_cfg(fd, &old);
	close(fd);
	if (e)
		return xkv_errf(diff, difflen, e, "cannot read %s: %s", p, strerror(-e));
	/* in the options' words first, then the map itself (another xdpkv
	 * version may size the same options differently) */
	const struct {
		const char *opt;
		__u32 pinned, now;
	} o[] = {
		{ "--entries", old.entries, cfg->entries },
		{ "--key-size", old.key_cap, cfg->key_cap },
		{ "--value-size", old.val_cap, cfg->val_cap },
		{ "--no-prealloc", !!(old.flags & XKV_CFG_NO_PREALLOC), !!(cfg->flags & XKV_CFG_NO_PREALLOC) },
		{ "--no-common-lru", !!(old.flags & XKV_CFG_NO_COMMON_LRU),
		  !!(cfg->flags & XKV_CFG_NO_COMMON_LRU) },
	};
	if (strncmp(old.layout, cfg->layout, sizeof(old.layout)))
		snprintf(diff, difflen, "--variant: %.16s pinned, %s now", old.layout, cfg->layout);
	else if (old.hash_seed != cfg->hash_seed) /* the values are secrets: not printed */
		snprintf(diff, difflen, "--hash-seed: %s pinned, %s now (a new seed would lose every item)",
			 old.hash_seed ? "a seed" : "unseeded", cfg->hash_seed ? "another seed" : "unseeded");
	else
		for (size_t i = 0; i < sizeof(o) / sizeof(o[0]); i++)
			if (o[i].pinned != o[i].now)
				snprintf(diff + strlen(diff), difflen - strlen(diff), "%s%s: %u pinned, %u now",
					 diff[0] ? "; " : "", o[i].opt, o[i].pinned, o[i].now);
	if (diff[0])
		return 0;
	snprintf(p, sizeof(p), "%s/store", dir);
	if ((e = pin_info(p, &info, &fd)))
		return xkv_errf(diff, difflen, e, "cannot open %s: %s", p, strerror(-e));
	close(fd);
	struct bpf_map *m = find_map(obj, 0);
	if (!m)
		return xkv_errf(diff, difflen, -ENOENT, "the BPF object has no store map");
	char md[256] = "";
	map_diff(m, &info, md, sizeof(md));
	if (md[0])
		snprintf(diff, difflen, "the store map (made by another xdpkv version?): %s", md);
	return !diff[0];
}

/* xkv_object_reuse_pins; with_store false: every pinned map but the store
 * (a migration's new program keeps the lists and counters, not the items). */
static int reuse_pins(struct bpf_object *obj, const char *ifname, bool with_store, char *err,
		      size_t errlen)
{
	char dir[256], p[300];
	struct bpf_map_info info;
	int fd, e, reused = 0;

	if (xkv_pin_dir(ifname, dir, sizeof(dir)))
		return xkv_errf(err, errlen, -ENAMETOOLONG, "interface name too long");
	for (size_t i = 0; i < XKV_NMAPS; i++) {
		struct bpf_map *m = find_map(obj, i);
		char d[256] = "";
		if (!m || xkv_maps[i].off == offsetof(struct xkv_store, cfg_fd))
			continue; /* the configuration belongs to the program */
		if (!i && !with_store)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, xkv_maps[i].pin);
		if ((e = pin_info(p, &info, &fd))) {
			if (e == -ENOENT && i)
				continue; /* made by an older xdpkv: a new one is pinned */
			return xkv_errf(err, errlen, e, "cannot open %s: %s", p, strerror(-e));
		}
		/* the big values stay through a re-attach, in the map they are in
		 * (its --big-memory kept): sized as the pinned one */
		if (!strcmp(xkv_maps[i].map, "big") && bpf_map__max_entries(m) != info.max_entries)
			bpf_map__set_max_entries(m, info.max_entries);
		map_diff(m, &info, d, sizeof(d));
		if (!d[0])
			e = bpf_map__reuse_fd(m, fd); /* dups fd */
		close(fd);
		if (d[0] && !i)
			return xkv_errf(err, errlen, -EINVAL, "the pinned store differs: %s", d);
		if (e)
			return xkv_errf(err, errlen, e, "cannot reuse %s: %s", p, strerror(-e));
		reused += !d[0]; /* the others (ratelimit sized by --rate-limit) start anew */
	}
	return reused;
}

int xkv_object_reuse_pins(struct bpf_object *obj, const char *ifname, char *err, size_t errlen)
{
	return reuse_pins(obj, ifname, true, err, errlen);
}

int xkv_object_reuse_pins_but_store(struct bpf_object *obj, const char *ifname, char *err,
				    size_t errlen)
{
	return reuse_pins(obj, ifname, false, err, errlen);
}

/* Is the map pinned at path the one whose fd is fd? */
static bool pinned_is(const char *path, int fd)
{
	struct bpf_map_info a, b;
	__u32 len = sizeof(b);
	int pfd;

	if (pin_info(path, &a, &pfd))
		return false;
	close(pfd);
	memset(&b, 0, sizeof(b));
	return !bpf_obj_get_info_by_fd(fd, &b, &len) && a.id == b.id;
}

int xkv_pins_create(struct bpf_object *obj, const char *ifname, char *err, size_t errlen)
{
	char dir[256], p[300], tmp[310];
	bool fresh = !xkv_pins_exist(ifname);
	int e = xkv_bpffs_mount(err, errlen);
	if (e)
		return e;
	if (xkv_pin_dir(ifname, dir, sizeof(dir)))
		return xkv_errf(err, errlen, -ENAMETOOLONG, "interface name too long");
	mkdir(XKV_PIN_ROOT, 0700);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return xkv_errf(err, errlen, -errno, "cannot create %s: %s", dir, strerror(errno));
	for (size_t i = 0; i < XKV_NMAPS; i++) {
		struct bpf_map *m = find_map(obj, i);
		int fd = m ? bpf_map__fd(m) : -ENOENT;
		snprintf(p, sizeof(p), "%s/%s", dir, xkv_maps[i].pin);
		if (fd >= 0 && pinned_is(p, fd))
			continue; /* reused: pinned already */
		/* pinned beside and renamed over: a reader sees the old map or the new one */
		snprintf(tmp, sizeof(tmp), "%s-new", p); /* bpffs refuses names with a dot */
		unlink(tmp);
		e = fd < 0 ? fd : bpf_obj_pin(fd, tmp) ? -errno : rename(tmp, p) ? -errno : 0;
		if (e) {
			unlink(tmp);
			if (fresh)
				xkv_pins_remove(ifname);
			return xkv_errf(err, errlen, e, "cannot pin %s at %s: %s", xkv_maps[i].map, p, strerror(-e));
		}
	}
	return 0;
}

int xkv_tcp_fast_attach(struct bpf_object *obj, char *err, size_t errlen)
{
	struct bpf_program *p = bpf_object__find_program_by_name(obj, "xdpkv_tcp");
	struct bpf_map *m = bpf_object__find_map_by_name(obj, "tcp_socks");

	if (!p || !m)
		return xkv_errf(err, errlen, -ENOENT, "the BPF object has no TCP fast path");
	/* held by the (pinned) sockhash from now on; a re-attach replaces it */
	if (bpf_prog_attach(bpf_program__fd(p), bpf_map__fd(m), BPF_SK_SKB_STREAM_VERDICT, 0))
		return xkv_errf(err, errlen, -errno, "cannot attach the TCP verdict program to tcp_socks: %s",
			    strerror(errno));
	return 0;
}

int xkv_tcp_fast_pause(const struct xkv_store *s, int *prog, long *conns, char *err, size_t errlen)
{
	__u32 ids[1], cnt = 1;
	__u64 key, next;

	*prog = -1;
	*conns = 0;
	if (s->tcp_socks_fd < 0)
		return 0;
	if (bpf_prog_query(s->tcp_socks_fd, BPF_SK_SKB_STREAM_VERDICT, 0, NULL, ids, &cnt))
		return xkv_errf(err, errlen, -errno, "cannot query the TCP verdict program: %s", strerror(errno));
	if (cnt) {
		int fd = bpf_prog_get_fd_by_id(ids[0]);
		if (fd < 0)
			return xkv_errf(err, errlen, -errno, "cannot open the TCP verdict program: %s",
					strerror(errno));
		if (bpf_prog_detach2(fd, s->tcp_socks_fd, BPF_SK_SKB_STREAM_VERDICT)) {
			int e = -errno;
			close(fd);
			return xkv_errf(err, errlen, e, "cannot detach the TCP verdict program: %s", strerror(-e));
		}
		*prog = fd;
	}
	for (void *k = NULL; !bpf_map_get_next_key(s->tcp_socks_fd, k, &next); k = &key) {
		key = next;
		(*conns)++;
	}
	return 0;
}

int xkv_tcp_fast_resume(const struct xkv_store *s, int prog, char *err, size_t errlen)
{
	if (prog < 0 || s->tcp_socks_fd < 0)
		return 0;
	if (bpf_prog_attach(prog, s->tcp_socks_fd, BPF_SK_SKB_STREAM_VERDICT, 0))
		return xkv_errf(err, errlen, -errno, "cannot attach the TCP verdict program again: %s",
				strerror(errno));
	return 0;
}

int xkv_store_open_pinned(struct xkv_store *s, const char *ifname, char *err, size_t errlen)
{
	char dir[256], p[300];
	memset(s, 0, sizeof(*s));
	store_fds_reset(s);
	int e = xkv_bpffs_mount(err, errlen);
	if (e)
		return e;
	if (xkv_pin_dir(ifname, dir, sizeof(dir)))
		return xkv_errf(err, errlen, -ENAMETOOLONG, "interface name too long");
	s->owns_fds = true;
	for (size_t i = 0; i < XKV_NMAPS; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, xkv_maps[i].pin);
		*MAP_FD(s, i) = bpf_obj_get(p);
		if (*MAP_FD(s, i) < 0) {
			e = -errno;
			xkv_store_close(s);
			if (e == -ENOENT && i == 0)
				return xkv_errf(err, errlen, e, "xdpkv is not attached to %s (no pins in %s)", ifname, dir);
			if (e == -ENOENT)
				return xkv_errf(err, errlen, e,
					    "%s lacks the pin %s: it was made by an older xdpkv; "
					    "'xdpkv detach %s' and attach again", dir, xkv_maps[i].pin, ifname);
			return xkv_errf(err, errlen, e, "cannot open %s: %s", p, strerror(-e));
		}
	}
	e = read_cfg(s->cfg_fd, &s->cfg);
	if (e) {
		xkv_store_close(s);
		return xkv_errf(err, errlen, e, "cannot read %s/cfg: %s", dir, strerror(-e));
	}
	e = store_finish(s, err, errlen);
	if (e)
		xkv_store_close(s);
	return e;
}

void xkv_store_close(struct xkv_store *s)
{
	/* what this process's stores did and nobody took (the CLI's set and
	 * load; the slow path takes its own per command) */
	if (s->stats_fd >= 0 && (s->new_items || s->overwrites)) {
		struct xkv_stats d = {};
		d.v[XKV_STAT_store_new] = s->new_items;
		d.v[XKV_STAT_overwrites] = s->overwrites;
		if (!xkv_stats_slow_add(s, &d))
			s->new_items = s->overwrites = 0;
	}
	if (s->L && s->L->close)
		s->L->close(s);
	if (s->owns_fds)
		for (size_t i = 0; i < XKV_NMAPS; i++)
			if (*MAP_FD(s, i) >= 0)
				close(*MAP_FD(s, i));
	store_fds_reset(s);
	s->owns_fds = false;
}
