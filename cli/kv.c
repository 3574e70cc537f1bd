// SPDX-License-Identifier: MIT
/* get, set, del: one item at a time through the pinned maps and the layout's
 * accessor (the same code the slow path uses). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

struct kv_opts {
	struct xo_iface ifc;
	const char *key, *value;
	unsigned flags;
	long long exptime;
	bool json, raw;
};

#define KV_IFACE { "IFACE", 0, XO_IFACE, offsetof(struct kv_opts, ifc), NULL, \
		   "interface the store is attached to", .flags = XO_POS | XO_REQ | XO_IF_ANY }
#define KV_KEY { "KEY", 0, XO_STR, offsetof(struct kv_opts, key), NULL, \
		 "the item's key (memcached rules: no spaces or control characters)", \
		 .flags = XO_POS | XO_REQ }

/* Open the store and check the key.  0 or an exit code (message printed). */
static int kv_open(struct xkv_store *s, const struct kv_opts *o, const char *cmd)
{
	int rc = open_pinned(s, cmd, o->ifc.name);
	if (rc)
		return rc;
	size_t klen = strlen(o->key);
	switch (xkv_key_check(&s->cfg, o->key, (__u32)klen)) {
	case XKV_OK:
		return 0;
	case XKV_E_KEY_LONG:
		xerr("%s: key is %zu bytes; this store takes keys of at most %u (--key-size at attach)",
		     cmd, klen, s->cfg.key_cap);
		break;
	default:
		xerr("%s: bad key '%s': keys are 1..%u bytes without spaces or control characters", cmd,
		     o->key, s->cfg.key_cap);
	}
	xkv_store_close(s);
	return EXIT_USAGE;
}

/* expire_ns (monotonic) -> unix seconds as memcached reports them; 0 = never */
static long long expire_unix(const struct xkv_store *s, __u64 expire_ns)
{
	if (!expire_ns)
		return 0;
	return ((long long)expire_ns + s->cfg.realtime_off_ns) / 1000000000ll;
}

/* ---- get ---- */

static const struct xo get_table[] = {
	KV_IFACE,
	KV_KEY,
	{ "json", 'j', XO_BOOL, offsetof(struct kv_opts, json), NULL,
	  "print {\"key\",\"flags\",\"value\",\"expire\"} (expire: unix seconds, 0 = never)" },
	{ "raw", 0, XO_BOOL, offsetof(struct kv_opts, raw), NULL,
	  "print the value's bytes exactly, without the trailing newline" },
	XO_END,
};

static int run_get(void *vo, const struct global_opts *g)
{
	struct kv_opts *o = vo;
	struct xkv_store s;
	struct xkv_item *it = malloc(sizeof(*it));
	int rc = it ? kv_open(&s, o, "get") : EXIT_SYS;

	if (rc) {
		free(it);
		return rc;
	}
	__u8 *big = NULL;
	size_t big_cap = 0;
	int e = xkv_item_get_whole(&s, o->key, (__u32)strlen(o->key), it, &big, &big_cap);
	const __u8 *val = e == 1 && it->len > s.cfg.val_cap ? big : it->data;
	if (e < 0) {
		rc = sys_fail("get", o->key, e);
	} else if (e == 0) {
		xerr("get: %s: not found", o->key);
		rc = EXIT_MISS;
	} else if (o->json) {
		printf("{\"key\":");
		json_cstr(stdout, o->key);
		printf(",\"flags\":%u,\"value\":", it->flags);
		json_str(stdout, val, it->len);
		printf(",\"expire\":%lld}\n", expire_unix(&s, it->expire_ns));
	} else {
		fwrite(val, 1, it->len, stdout);
		if (!o->raw)
			putchar('\n');
		if (g->verbose)
			xinfo("xdpkv: get: %s: %u bytes, flags %u, expire %lld", o->key, it->len,
			      it->flags, expire_unix(&s, it->expire_ns));
	}
	if (fflush(stdout))
		rc = EXIT_SYS;
	xkv_store_close(&s);
	free(it);
	free(big);
	return rc;
}

const struct cmd cmd_get = {
	.name = "get",
	.synopsis = "IFACE KEY [--json] [--raw]",
	.summary = "print an item's value (exit 1 if absent or expired)",
	.doc = "Reads through the pinned store (percpu, lru_percpu: the newest live copy of all CPUs).\n\n"
	       "Example: xdpkv get veth0 user:42",
	.opts = get_table,
	.opts_size = sizeof(struct kv_opts),
	.run = run_get,
};

/* ---- set ---- */

static const struct xo set_table[] = {
	KV_IFACE,
	KV_KEY,
	{ "VALUE", 0, XO_STR, offsetof(struct kv_opts, value), NULL, "the value (text)",
	  .flags = XO_POS | XO_REQ },
	{ "flags", 'f', XO_U32, offsetof(struct kv_opts, flags), "F",
	  "client flags, returned by get (default 0)" },
	{ "exptime", 'e', XO_S64, offsetof(struct kv_opts, exptime), "T",
	  "memcached exptime: 0 never, <= 30 days relative seconds, else unix time; < 0 expired",
	  -(1ll << 40), 1ll << 40 },
	XO_END,
};

static int store_item(struct xkv_store *s, const struct kv_opts *o)
{
	size_t len = strlen(o->value);
	int e = -EBUSY;

	if (len > xkv_val_max(s)) {
		xerr("set: value is %zu bytes; this store holds at most %u (%s at attach)", len,
		     xkv_val_max(s), xkv_big_on(s) ? "memcached's item size" : "--value-size; no --big-memory");
		return EXIT_USAGE;
	}
	bool big = len > s->cfg.val_cap;
	struct xkv_entry *ent = xkv_entry_make(s, o->flags, o->exptime, o->value, big ? 0 : (__u32)len);
	if (!ent)
		return sys_fail("set", "allocating the entry", -ENOMEM);
	if (big) { /* the value in the big map's chunks first (docs/protocol.md, "Large values") */
		ent->len = (__u32)len;
		e = xkv_big_put(s, o->key, (__u32)strlen(o->key), ent->wtime_ns, (const __u8 *)o->value,
				(__u32)len);
		if (e) {
			free(ent);
			if (e == -ENOMEM) {
				xerr("set: %s: the big map is full (--big-memory at attach); serve frees "
				     "the chunks of replaced values", o->key);
				return EXIT_SYS;
			}
			return sys_fail("set", o->key, e);
		}
		e = -EBUSY;
	}
	for (int tries = 0; tries < 100 && e == -EBUSY; tries++)
		e = s->L->set(s, o->key, (__u32)strlen(o->key), ent);
	if (e && big)
		xkv_big_del(s, o->key, (__u32)strlen(o->key), ent->wtime_ns, (__u32)len);
	free(ent);
	if (!e) {
		printf("stored\n");
		return EXIT_OK;
	}
	if (e == -ENOMEM || e == -E2BIG) {
		xerr("set: %s: the store is full (%u entries)", o->key, s->cfg.entries);
		xhint("%s keeps what it has when full; delete items or attach with a larger --entries",
		      s->L->name);
		return EXIT_SYS;
	}
	if (e == -EBUSY) {
		xerr("set: %s: the slot stayed busy (a writer is inside); try again", o->key);
		return EXIT_SYS;
	}
	return sys_fail("set", o->key, e);
}

static int run_set(void *vo, const struct global_opts *g)
{
	struct kv_opts *o = vo;
	struct xkv_store s;
	int rc = kv_open(&s, o, "set");

	if (rc)
		return rc;
	rc = store_item(&s, o);
	xkv_store_close(&s);
	return rc;
}

const struct cmd cmd_set = {
	.name = "set",
	.synopsis = "IFACE KEY VALUE [--flags F] [--exptime T]",
	.summary = "store an item (like memcached's set)",
	.doc = "Writes through the pinned store (percpu, lru_percpu: every CPU's copy).\n\n"
	       "Example: xdpkv set veth0 user:42 alice --flags 7 --exptime 3600",
	.opts = set_table,
	.opts_size = sizeof(struct kv_opts),
	.run = run_set,
};

/* ---- del ---- */

static const struct xo del_table[] = {
	KV_IFACE,
	KV_KEY,
	XO_END,
};

static int run_del(void *vo, const struct global_opts *g)
{
	struct kv_opts *o = vo;
	struct xkv_store s;
	int rc = kv_open(&s, o, "del");

	if (rc)
		return rc;
	int e = s.L->del(&s, o->key, (__u32)strlen(o->key));
	if (e < 0) {
		rc = sys_fail("del", o->key, e);
	} else if (e == 0) {
		xerr("del: %s: not found", o->key);
		rc = EXIT_MISS;
	} else {
		printf("deleted\n");
	}
	xkv_store_close(&s);
	return rc;
}

const struct cmd cmd_del = {
	.name = "del",
	.synopsis = "IFACE KEY",
	.summary = "delete an item (exit 1 if it was absent)",
	.doc = "Example: xdpkv del veth0 user:42",
	.opts = del_table,
	.opts_size = sizeof(struct kv_opts),
	.run = run_del,
};
