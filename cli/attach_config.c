// SPDX-License-Identifier: MIT
/* attach: the store's configuration (struct xkv_config) from attach's
 * options: layout, sizes, hash seed, flags, access limits; a re-attach's
 * pinned seed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include "cli.h"
#include "attach.h"

static int unknown_layout(const char *name)
{
	xerr("attach: unknown layout '%s' (--layout, or --variant)", name);
	fprintf(stderr, "the layouts:\n");
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
 * keys themselves (docs/layouts-buckets-arena.md, "Keyed placement").  A
 * re-attach keeps the pinned seed instead (keep_pinned_seed). */
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

void config_sizes(struct xkv_config *cfg, unsigned entries, unsigned key_size, unsigned value_size)
{
	if (entries)
		cfg->entries = entries;
	if (key_size)
		cfg->key_cap = key_size;
	if (value_size)
		cfg->val_cap = value_size;
}

int build_config(const struct attach_opts *o, const char *layout, struct xkv_config *cfg)
{
	char err[XKV_ERRLEN];
	int rc;

	if (!xkv_layout_find_any(layout))
		return unknown_layout(layout);
	if (xkv_config_defaults(cfg, layout))
		return unknown_layout(layout);
	config_sizes(cfg, o->entries, o->key_size, o->value_size);
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
	if (o->binary_keys && o->strict_keys) {
		xerr("attach: --strict-keys and --binary-keys contradict each other (binary keys are the default)");
		return EXIT_USAGE;
	}
	if (!o->strict_keys)
		cfg->flags |= XKV_CFG_BINARY_KEYS;
	if ((rc = hash_seed_opt(o, xkv_layout_find_any(layout), cfg)))
		return rc;
	if (o->strict)
		cfg->flags |= XKV_CFG_STRICT;
	if (o->low_ports)
		cfg->flags |= XKV_CFG_LOW_PORTS;
	if (o->no_tcp_fast)
		cfg->flags |= XKV_CFG_NO_TCP_FAST;
	if (o->no_xdp_tcp)
		cfg->flags |= XKV_CFG_NO_XDP_TCP;
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

/* Re-attach without --hash-seed/--fnv-unseeded: the kept items sit where the
 * pinned seed put them, so the new program takes that seed, not a new one.
 * An arena store is kept at the address it was created with, always. */
int keep_pinned_seed(const struct attach_opts *o, const struct prior *pr, struct xkv_config *cfg)
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
