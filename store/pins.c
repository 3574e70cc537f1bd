// SPDX-License-Identifier: MIT
/* The pins of a store under <XKV_PIN_ROOT>/<ifname>: bpffs mounted, the
 * pinned config read, pins checked against an object, reused, created and
 * removed. */
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
#include "xdpkv.h"

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
	int e = xkv_cfg_read(fd, cfg);
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
	e = xkv_cfg_read(fd, &old);
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
	struct bpf_map *m = xkv_map_find(obj, 0);
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
		struct bpf_map *m = xkv_map_find(obj, i);
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
		struct bpf_map *m = xkv_map_find(obj, i);
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
