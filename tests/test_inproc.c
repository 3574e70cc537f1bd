// SPDX-License-Identifier: MIT
/* test_inproc: the in-process layout loader (store/inproc.c): a layout
 * loaded with and without its store, as the registry names it or as the
 * caller passes it, the null store loaded under its own name, and a refused
 * configuration that leaves nothing open and names its step.  Needs root
 * (BPF maps and programs); exits 77 (skip) without. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "inproc.h"
#include "log.h"
#include "unit_check.h"

static void small(struct xkv_config *cfg, const char *layout)
{
	CHECK(!xkv_config_defaults(cfg, layout), "defaults for %s", layout);
	cfg->entries = 256;
	cfg->key_cap = 16;
	cfg->val_cap = 64;
	cfg->mode = XKV_MODE_TEST;
}

/* layout by name (L NULL) or as passed, with its store */
static void with_store(const char *layout, const struct xkv_layout *L)
{
	char err[XKV_ERRLEN] = "";
	struct xkv_config cfg;
	struct bpf_object *obj = (struct bpf_object *)&cfg; /* set to NULL or an object */
	struct xkv_store s;

	small(&cfg, layout);
	int rc = xkv_inproc_load(&cfg, L, &obj, &s, err, sizeof(err));
	CHECK(!rc && obj, "%s: %d %s", layout, rc, err);
	if (rc || !obj)
		return;
	CHECK(s.cfg.entries == 256 && s.cfg.key_cap == 16 && s.cfg.val_cap == 64,
	      "%s: the store's cfg: %u entries, keys %u, values %u", layout, s.cfg.entries,
	      s.cfg.key_cap, s.cfg.val_cap);
	CHECK(cfg.key_size && cfg.entry_size, "%s: cfg not finished", layout);
	CHECK(s.L && !strcmp(s.L->name, layout), "%s: the store's layout %s", layout,
	      s.L ? s.L->name : "(none)");
	CHECK(!L || s.L == L, "%s: not the layout passed", layout);
	CHECK(bpf_program__fd(xkv_object_prog(obj)) >= 0, "%s: program not loaded", layout);
	CHECK(s.L && s.L->count(&s) == 0, "%s: a new store holds items", layout);
	xkv_store_close(&s);
	bpf_object__close(obj);
}

int main(void)
{
	char err[XKV_ERRLEN] = "";
	struct xkv_config cfg;
	struct bpf_object *obj;

	if (geteuid() != 0) {
		printf("test_inproc: needs root (BPF maps and programs); skipped\n");
		return 77;
	}
	xkv_log_set_level(XKV_LOG_ERROR); /* libbpf's warnings are not this test's */
	xkv_log_libbpf();

	with_store("hash_map", NULL);
	with_store("lru", xkv_layout_find("lru"));
	with_store("array_fnv", NULL);

	/* without a store: only the object */
	small(&cfg, "hash_map");
	int rc = xkv_inproc_load(&cfg, NULL, &obj, NULL, err, sizeof(err));
	CHECK(!rc && obj, "object only: %d %s", rc, err);
	bpf_object__close(obj);

	/* the null store: configured as hash_map, loaded as "null" */
	const struct xkv_layout *null = xkv_layout_find_any("null");
	CHECK(null, "no null store");
	if (null) {
		small(&cfg, "hash_map");
		rc = xkv_inproc_load(&cfg, null, &obj, NULL, err, sizeof(err));
		CHECK(!rc && obj && !strcmp(cfg.layout, "null"), "null store: %d %s, layout %s", rc, err,
		      cfg.layout);
		bpf_object__close(obj);
	}

	/* refused: nothing open, the step named */
	small(&cfg, "hash_map");
	cfg.entries = 0;
	obj = (struct bpf_object *)&cfg;
	rc = xkv_inproc_load(&cfg, NULL, &obj, NULL, err, sizeof(err));
	CHECK(rc < 0 && !obj && !strncmp(err, "config: --entries 0 out of range", 32),
	      "bad config: %d, obj %p, %s", rc, (void *)obj, err);
	small(&cfg, "hash_map");
	cfg.hash_seed = 1;
	rc = xkv_inproc_load(&cfg, NULL, &obj, NULL, err, sizeof(err));
	CHECK(rc < 0 && !obj && !strncmp(err, "config: ", 8), "seed for hash_map: %d, %s", rc, err);

	return unit_done("test_inproc");
}
