// SPDX-License-Identifier: MIT
/* Slow path tests.
 *   test_slowpath unit [LAYOUT|once]  every layout (or one; once: the
 *                         64-entry hash_map cases), in-process: exact reply texts of
 *                         xkv_slow_handle, framing, counters, stats; the
 *                         access rules, amplification cap and request limits
 *                         (issue 6).
 *   test_slowpath daemon  xkv_serve on lo in a thread, real UDP clients over
 *                         127.0.0.1 and ::1; a refused source; a forked
 *                         server that drops its privileges to nobody.
 *   test_slowpath stream  every layout, in-process: xkv_slow_stream (the TCP
 *                         server's entry): requests split at every byte,
 *                         pipelines, data in pieces, noreply, oversize line
 *                         and value, quit, the write list, the output
 *                         bound, two threads at once.
 * No XDP attach: the BPF object is loaded in-process and its maps used. */
/* This file: the modes and the list of unit tests each layout runs. */
#include "slowpath_test.h"
#include "layout_skip.h"

/* only: NULL, every layout then the hash_map cases; a layout's name, that
 * layout alone; "once", the hash_map cases alone (ctest runs them side by
 * side: slowpath_unit_<layout>, slowpath_unit_once). */
static int run_unit(const char *only)
{
	if (only && strcmp(only, "once") && !xkv_layout_find(only)) {
		fprintf(stderr, "test_slowpath: no layout %s\n", only);
		n_fail++;
		return 1;
	}
	for (int i = 0; xkv_layouts[i]; i++) {
		struct env e;
		const char *name = xkv_layouts[i]->name;

		if (only && strcmp(only, name))
			continue;

		printf("== %s\n", name);
		if (layout_unavailable(name))
			continue;
		if (env_open(&e, name, ENTRIES, VAL_CAP)) {
			n_fail++;
			continue;
		}
		t_basic(&e);
		t_add_replace(&e);
		t_arith(&e);
		t_append(&e);
		t_gets_cas(&e);
		t_touch(&e);
		t_meta(&e);
		t_atomic(&e);
		t_errors(&e);
		t_multi_cmd(&e);
		t_paused(&e);
		t_flush(&e);
		t_large(&e);
		t_multiget(&e);
		t_counters(&e);
		t_stats(&e);
		t_access(&e);
		t_silence(&e);
		if (!strcmp(name, "percpu") || !strcmp(name, "lru_percpu"))
			t_percpu(&e);
		t_metadump(&e);
		t_exact(&e);
		t_stats_groups(&e); /* last: stats reset leaves its base */
		env_close(&e);
	}
	if (only && strcmp(only, "once"))
		return 0;
	printf("== hash_map, 64 entries\n");
	t_oom();
	t_amp();
	t_ratelimit();
	t_stamp_ids();
	t_big_budget();
	t_limits();
	t_big();
	t_mig_fixup();
	t_mig_longkey();
	t_key_cap();
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "unit";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "unit"))
		run_unit(argc > 2 ? argv[2] : NULL);
	else if (!strcmp(mode, "daemon"))
		run_daemon();
	else if (!strcmp(mode, "stream") || !strcmp(mode, "bigvals")) {
		env_only = argc > 2 ? argv[2] : NULL; /* one layout, or "once" */
		if (env_only && strcmp(env_only, "once") && !xkv_layout_find(env_only)) {
			fprintf(stderr, "test_slowpath: no layout %s\n", env_only);
			return 2;
		}
		if (!strcmp(mode, "stream"))
			run_stream();
		else
			run_bigvals();
	}
	else if (!strcmp(mode, "model"))
		run_model(argc > 2 ? strtoull(argv[2], NULL, 0) : 0, argc > 3 ? atoi(argv[3]) : 0);
	else {
		fprintf(stderr, "usage: %s unit|stream|bigvals [LAYOUT|once] | daemon | model [seed [steps]]\n", argv[0]);
		return 2;
	}
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
