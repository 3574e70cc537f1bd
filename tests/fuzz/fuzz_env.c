// SPDX-License-Identifier: MIT
/* The fuzz targets' store (fuzz_env.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_env.h"
#include "inproc.h"
#include "log.h"

static struct fuzz_env env;
static int env_up;

static void die(const char *what, const char *err)
{
	fprintf(stderr, "fuzz: %s: %s (BPF maps need root)\n", what, err);
	exit(2);
}

struct fuzz_env *fuzz_env_get(void)
{
	char err[XKV_ERRLEN];
	struct xkv_config cfg;
	const char *layout = getenv("XKV_FUZZ_LAYOUT");

	if (env_up)
		return &env;
	if (!layout || !*layout)
		layout = "hash_map";
	/* the loader's chatter is not the fuzzer's: libbpf says nothing at ERROR */
	xkv_log_set_level(XKV_LOG_ERROR);
	xkv_log_libbpf();
	if (xkv_config_defaults(&cfg, layout))
		die("layout", layout);
	cfg.entries = FUZZ_ENTRIES;
	cfg.val_cap = FUZZ_VAL_CAP;
	cfg.key_cap = XKV_KEY_MAX;
	cfg.big_chunks = FUZZ_BIG_CHUNKS;
	if (xkv_inproc_load(&cfg, NULL, &env.obj, &env.s, err, sizeof(err)))
		die(layout, err);
	env_up = 1;
	return &env;
}

void fuzz_env_clear(struct fuzz_env *e)
{
	struct xkv_big_census c;

	if (e->s.L->flush(&e->s, XKV_FLUSH_ALL))
		fprintf(stderr, "fuzz: flush failed\n");
	if (xkv_big_on(&e->s))
		xkv_big_collect(&e->s, 0, NULL, &c); /* no item left: every chunk goes */
}
