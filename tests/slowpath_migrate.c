// SPDX-License-Identifier: MIT
/* Slow path tests: the live migration's mirror (engine/migrate_mirror.c) and
 * the lru eviction estimate made from its counts (server/migrate.h). */
#include "slowpath_test.h"
#include "migrate.h"

#define MIG_WRITERS 2
#define MIG_KEYS 500    /* per writer: far below the new lru's size, so nothing is evicted */
#define MIG_FIXUPS 300

struct mig_race {
	struct env *e;
	int idx;
	int stop;          /* __atomic */
	unsigned long n;   /* requests sent */
};

/* Sets and deletes of this writer's keys through the slow path, mirrored
 * into the new store, until told to stop. */
static void *mig_writer(void *arg)
{
	struct mig_race *r = arg;
	struct xkv_buf out = {};
	__u8 d[256];
	char req[96];

	for (unsigned long i = 0; !__atomic_load_n(&r->stop, __ATOMIC_RELAXED); i++) {
		unsigned k = (unsigned)(i * 7919 % MIG_KEYS);
		int n = i % 3 == 2 ? snprintf(req, sizeof(req), "delete mig%d-%u\r\n", r->idx, k)
				   : snprintf(req, sizeof(req), "set mig%d-%u 0 0 1\r\nx\r\n", r->idx, k);
		struct xkv_udp_hdr h;
		struct xkv_stats delta = {};
		out.len = 0;
		xkv_slow_handle(r->e->sl, NULL, d, mkdgram(d, REQ_ID, 0, 1, req, (size_t)n), &h, &out, &delta);
		r->n++;
	}
	xkv_buf_free(&out);
	return NULL;
}

/* Migrating an empty hash_map into an lru while writers keep creating and
 * deleting keys: every fixup's counts are those of the moment it counted
 * the live items, so the estimate of evictions is 0 each time (the serve
 * control socket once sent counts read after the lock was let go: a write
 * between made the estimate 1, seen in e2e_migrate). */
void t_mig_fixup(void)
{
	struct env e, n;
	char err[XKV_ERRLEN];

	if (env_open(&e, "hash_map", ENTRIES, VAL_CAP)) {
		n_fail++;
		return;
	}
	if (env_open(&n, "lru", ENTRIES, VAL_CAP)) {
		n_fail++;
		env_close(&e);
		return;
	}
	int fd = dup(n.s.store_fd);
	int rc = fd < 0 ? -errno : xkv_slow_mig_begin(e.sl, fd, &n.s.cfg, err, sizeof(err));
	report(rc == 0, "migrate hash_map -> lru: the mirror begins (%d%s%s)", rc, rc ? ": " : "", rc ? err : "");
	if (rc) {
		if (fd >= 0)
			close(fd);
		goto out;
	}
	struct mig_race r[MIG_WRITERS];
	pthread_t th[MIG_WRITERS];
	for (int i = 0; i < MIG_WRITERS; i++) {
		r[i] = (struct mig_race){ .e = &e, .idx = i };
		pthread_create(&th[i], NULL, mig_writer, &r[i]);
	}
	int off = 0, failed = 0;
	long worst = 0;
	struct xkv_slow_mig_stats at = {};
	for (int i = 0; i < MIG_FIXUPS; i++) {
		if (xkv_slow_mig_fixup(e.sl, &at) < 0) {
			failed++;
			continue;
		}
		/* no copier: nothing copied; lru: the estimate counts the mirror alone */
		__u64 ev = xkv_migrate_evicted(&n.s, 0, &at, (long)at.live);
		__s64 under = at.live - ((__s64)at.created - (__s64)at.removed);
		off += ev != 0 || under != 0;
		if (under < 0 ? -under > worst : under > worst)
			worst = under < 0 ? -under : under;
		usleep(200);
	}
	for (int i = 0; i < MIG_WRITERS; i++)
		__atomic_store_n(&r[i].stop, 1, __ATOMIC_RELAXED);
	unsigned long sent = 0;
	for (int i = 0; i < MIG_WRITERS; i++) {
		pthread_join(th[i], NULL);
		sent += r[i].n;
	}
	report(!failed && !off && at.mirrored > 0,
	       "migrate with %d writers (%lu requests): %d fixups, each one's counts those of its live "
	       "count (created - removed = live, the eviction estimate 0): %d off (by up to %ld), %d failed",
	       MIG_WRITERS, sent, MIG_FIXUPS, off, worst, failed);
	xkv_slow_mig_end(e.sl);
out:
	env_close(&n);
	env_close(&e);
}

/* A write of a key longer than the store's, while migrating: refused as
 * ever, and nothing for the mirror to do (no failure counted: the migrate
 * command reports failures as keys that may differ). */
void t_mig_longkey(void)
{
	struct env e, n;
	char err[XKV_ERRLEN], req[256];
	char k[34];

	env_key_cap = 32;
	int bad = env_open(&e, "hash_map", ENTRIES, VAL_CAP) ? 1
		  : env_open(&n, "lru", ENTRIES, VAL_CAP) ? 2 : 0;
	env_key_cap = 0;
	if (bad) {
		n_fail++;
		if (bad == 2)
			env_close(&e);
		return;
	}
	int fd = dup(n.s.store_fd);
	int rc = fd < 0 ? -errno : xkv_slow_mig_begin(e.sl, fd, &n.s.cfg, err, sizeof(err));
	report(rc == 0, "migrate hash_map -> lru, --key-size 32: the mirror begins (%d)", rc);
	if (!rc) {
		memset(k, 'M', 33);
		k[33] = 0;
		snprintf(req, sizeof(req), "set %s 0 0 1\r\nx\r\n", k);
		expect_n(&e, "while migrating: set of a 33-byte key refused", req, strlen(req),
			 XKV_R_TOO_LARGE, strlen(XKV_R_TOO_LARGE));
		snprintf(req, sizeof(req), "delete %s\r\n", k);
		expect_n(&e, "while migrating: its delete", req, strlen(req), "NOT_FOUND\r\n", 11);
		expect_n(&e, "while migrating: a set of a short key", "set s 0 0 1\r\ny\r\n", 16,
			 "STORED\r\n", 8);
		struct xkv_slow_mig_stats ms;
		xkv_slow_mig_stats(e.sl, &ms);
		report(ms.failed == 0 && ms.mirrored == 1, "while migrating: the mirror failed %llu "
		       "(want 0), mirrored %llu (want 1: the short key)", (unsigned long long)ms.failed,
		       (unsigned long long)ms.mirrored);
		xkv_slow_mig_end(e.sl);
	} else if (fd >= 0) {
		close(fd);
	}
	env_close(&n);
	env_close(&e);
}
