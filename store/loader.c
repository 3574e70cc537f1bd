// SPDX-License-Identifier: MIT
/* Configuration, loading and opening stores: the part of libxdpkv every
 * tool goes through (the pins: pins.c). */
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
#include "maps.h"
#include "tcpx.h" /* the responder's programs */

static char log_buf[1u << 20];

int xkv_config_defaults(struct xkv_config *cfg, const char *layout)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->layout, sizeof(cfg->layout), "%s", layout ? layout : XKV_LAYOUT_DEFAULT);
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
	/* the null store's stand-in for a store update (variants/null_store/null_store.bpf.c):
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
	/* A test-mode object runs its XDP program through BPF_PROG_TEST_RUN and
	 * is never attached: its TCP verdict is not loaded (the verifier's work
	 * halves; the e2e tests load it with every attach); nor with
	 * --no-tcp-fast-path, which never attaches it. */
	struct bpf_program *tcp = bpf_object__find_program_by_name(obj, "xdpkv_tcp");
	if (tcp && (cfg->mode == XKV_MODE_TEST || (cfg->flags & XKV_CFG_NO_TCP_FAST)))
		bpf_program__set_autoload(tcp, false);
	/* The XDP TCP responder's programs (common/tcpx_*.bpf.h): not for a
	 * test-mode object, nor with --no-xdp-tcp (the tail calls then find
	 * nothing and TCP goes to the kernel); the load log for the rest. */
	static const char *const tcpx[] = XKV_TCPX_PROG_NAMES;
	for (size_t i = 0; i <= XKV_TCPX_PROGS; i++) { /* and the egress program */
		struct bpf_program *x = bpf_object__find_program_by_name(
			obj, i < XKV_TCPX_PROGS ? tcpx[i] : "xdpkv_tcpx_egress");
		if (!x)
			continue;
		if (cfg->mode == XKV_MODE_TEST || (cfg->flags & XKV_CFG_NO_XDP_TCP))
			bpf_program__set_autoload(x, false);
		else
			bpf_program__set_log_buf(x, log_buf, sizeof(log_buf));
	}
	/* Tests only (tests/e2e/fallback.sh): XDPKV_TEST_REFUSE=NAME[,NAME] has
	 * the kernel refuse those programs (loaded as socket filters, whose
	 * helpers they do not have), as an older kernel's verifier would; and
	 * with a flag no kernel knows, for the XDP program, which libxdp loads
	 * as XDP whatever its type here. */
	const char *refuse = getenv("XDPKV_TEST_REFUSE");
	struct bpf_program *q;
	if (refuse)
		bpf_object__for_each_program(q, obj) {
			size_t n = strlen(bpf_program__name(q));
			for (const char *r = refuse; (r = strstr(r, bpf_program__name(q))); r += n)
				if ((r == refuse || r[-1] == ',') && (r[n] == 0 || r[n] == ',')) {
					bpf_program__set_type(q, BPF_PROG_TYPE_SOCKET_FILTER);
					bpf_program__set_flags(q, bpf_program__flags(q) | (1u << 31));
				}
		}
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

static void store_fds_reset(struct xkv_store *s)
{
	for (size_t i = 0; i < XKV_NMAPS; i++)
		*MAP_FD(s, i) = -1;
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
		struct bpf_map *m = xkv_map_find(obj, i);
		*MAP_FD(s, i) = m ? bpf_map__fd(m) : -1;
	}
	if (s->stats_fd < 0 || s->cfg_fd < 0)
		return xkv_errf(err, errlen, -EINVAL, "object is not loaded");
	int e = xkv_cfg_read(s->cfg_fd, &s->cfg);
	if (e)
		return xkv_errf(err, errlen, e, "cannot read cfg: %s", strerror(-e));
	s->L = L;
	return store_finish(s, err, errlen);
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
	e = xkv_cfg_read(s->cfg_fd, &s->cfg);
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
