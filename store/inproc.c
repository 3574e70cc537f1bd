// SPDX-License-Identifier: MIT
/* Loading a layout in this process, unattached: config, open, load, store
 * (the sequence every test, benchmark and fuzzer runs). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "inproc.h"

/* err = "step: " + what the step said */
static int step_failed(const char *step, int rc, char *err, size_t errlen)
{
	char why[XKV_ERRLEN];

	snprintf(why, sizeof(why), "%s", err && errlen ? err : "");
	xkv_errf(err, errlen, rc, "%s: %s", step, why);
	return rc < 0 ? rc : -EINVAL;
}

int xkv_inproc_load(struct xkv_config *cfg, const struct xkv_layout *L, struct bpf_object **obj,
		    struct xkv_store *s, char *err, size_t errlen)
{
	int e;

	*obj = NULL;
	if ((e = xkv_config_finish(cfg, err, errlen)))
		return step_failed("config", e, err, errlen);
	if (L && strcmp(cfg->layout, L->name))
		snprintf(cfg->layout, sizeof(cfg->layout), "%s", L->name);
	*obj = L ? xkv_object_open_with(L, cfg, err, errlen) : xkv_object_open(cfg, err, errlen);
	if (!*obj)
		return step_failed("open", -EINVAL, err, errlen);
	if ((e = xkv_object_load(*obj, err, errlen))) {
		e = step_failed("load", e, err, errlen);
		goto fail;
	}
	if (s && (e = xkv_store_from_object(s, L, *obj, err, errlen))) {
		e = step_failed("store", e, err, errlen);
		goto fail;
	}
	return 0;
fail:
	bpf_object__close(*obj);
	*obj = NULL;
	return e;
}
