// SPDX-License-Identifier: MIT
/* Slow path tests: atomicity of conditional stores against racing threads. */
#include "slowpath_test.h"

/* ---- atomicity (docs/protocol.md, "Atomicity") ----------------------------- */

#define RACE_THREADS 4
#define RACE_ROUNDS 150

struct atom {
	struct env *e;
	pthread_barrier_t go;
	int round_won[RACE_ROUNDS];   /* __atomic */
	int mode;                     /* 0: add through the slow path, 1: set_if add direct, 2: cas loop,
				       * 3: mg of a stale item (the win token) */
	int cas_ok;                   /* __atomic: cas loop successes */
};

/* One request through the slow path, with this thread's own buffers. */
static void atom_ask(struct atom *r, const char *req, struct xkv_buf *out)
{
	__u8 d[256];
	struct xkv_udp_hdr h;
	struct xkv_stats delta = {};
	out->len = 0;
	xkv_slow_handle(r->e->sl, NULL, d, mkdgram(d, REQ_ID, 0, 1, req, strlen(req)), &h, out, &delta);
}

/* set_if's decision for an add: store only where there is no item. */
static int decide_add(void *arg, const struct xkv_item *cur, struct xkv_entry *e)
{
	(void)arg;
	if (cur)
		return 1;
	e->len = 1;
	e->data[0] = 'w';
	e->wtime_ns = xkv_write_stamp();
	return 0;
}

static void *atom_main(void *arg)
{
	struct atom *r = arg;
	struct xkv_buf out = {};
	struct xkv_store *s = &r->e->s;
	char req[128];

	for (int i = 0; i < RACE_ROUNDS; i++) {
		pthread_barrier_wait(&r->go); /* the key was removed */
		int won = 0;
		if (r->mode == 0) {
			snprintf(req, sizeof(req), "add race 0 0 1\r\nx\r\n");
			atom_ask(r, req, &out);
			won = out.len == 8 && !memcmp(out.p, "STORED\r\n", 8);
		} else if (r->mode == 3) {
			atom_ask(r, "mg race\r\n", &out);
			won = out.len == 8 && !memcmp(out.p, "HD X W\r\n", 8);
			if (!won && !(out.len == 8 && !memcmp(out.p, "HD Z X\r\n", 8)))
				won = -100; /* neither answer: the round fails */
		} else if (r->mode == 1) {
			struct xkv_entry *e = xkv_entry_make(s, 0, 0, NULL, 0);
			int rc = -EBUSY;
			for (int t = 0; t < 16 && rc == -EBUSY; t++)
				rc = s->L->set_if(s, "race", 4, decide_add, NULL, e);
			won = rc == 0;
			free(e);
		} else {
			/* gets, then cas with one more: every STORED is one increment */
			for (int tries = 0; tries < 1000; tries++) {
				atom_ask(r, "gets race\r\n", &out);
				unsigned long long v, cas;
				unsigned fl, len;
				if (out.len < 6 || sscanf((const char *)out.p, "VALUE race %u %u %llu", &fl, &len, &cas) != 3)
					break;
				const char *nl = memchr(out.p, '\n', out.len);
				v = strtoull(nl + 1, NULL, 10);
				char val[24];
				int vl = snprintf(val, sizeof(val), "%llu", v + 1);
				snprintf(req, sizeof(req), "cas race 0 0 %d %llu\r\n%s\r\n", vl, cas, val);
				atom_ask(r, req, &out);
				if (out.len == 8 && !memcmp(out.p, "STORED\r\n", 8)) {
					__atomic_add_fetch(&r->cas_ok, 1, __ATOMIC_RELAXED);
					break;
				}
			}
		}
		if (won)
			__atomic_add_fetch(&r->round_won[i], won, __ATOMIC_RELAXED);
		pthread_barrier_wait(&r->go); /* round over */
	}
	xkv_buf_free(&out);
	return NULL;
}

/* RACE_THREADS threads race RACE_ROUNDS times; the main thread resets the
 * key between rounds (mode 2: sets it to 0 once). */
static void atom_run(struct env *e, int mode)
{
	struct atom *r = calloc(1, sizeof(*r));
	pthread_t th[RACE_THREADS];
	r->e = e;
	r->mode = mode;
	pthread_barrier_init(&r->go, NULL, RACE_THREADS + 1);
	flush_store(e);
	if (mode == 2)
		EXPECT(e, "set race 0 0 1\r\n0\r\n", "STORED\r\n");
	for (int t = 0; t < RACE_THREADS; t++)
		pthread_create(&th[t], NULL, atom_main, r);
	for (int i = 0; i < RACE_ROUNDS; i++) {
		if (mode == 3)
			EXPECT(e, "set race 0 0 1\r\nx\r\nmd race I\r\n", "STORED\r\nHD\r\n");
		else if (mode != 2)
			e->s.L->del(&e->s, "race", 4);
		pthread_barrier_wait(&r->go);
		pthread_barrier_wait(&r->go);
	}
	for (int t = 0; t < RACE_THREADS; t++)
		pthread_join(th[t], NULL);
	if (mode == 2) {
		static struct xkv_item it;
		int got = item_of(e, "race", &it) ? -1 : atoi((char *)it.data);
		report(got == r->cas_ok && r->cas_ok == RACE_THREADS * RACE_ROUNDS,
		       "%s: %d threads x %d gets/cas increments through the slow path: value %d, "
		       "%d cas STORED (no lost update)", e->layout, RACE_THREADS, RACE_ROUNDS, got, r->cas_ok);
	} else {
		int bad = 0;
		for (int i = 0; i < RACE_ROUNDS; i++)
			bad += r->round_won[i] != 1;
		report(!bad, "%s: %d rounds of %d concurrent %s of one key: exactly one %s each "
		       "(%d rounds wrong)", e->layout, RACE_ROUNDS, RACE_THREADS,
		       mode == 3 ? "mg of a stale item" :
		       mode ? "set_if adds, outside the slow path's key locks," : "add through the slow path",
		       mode == 3 ? "got the win token W (the others Z)" : "stored", bad);
	}
	pthread_barrier_destroy(&r->go);
	free(r);
}

void t_atomic(struct env *e)
{
	atom_run(e, 0);
	/* every store layout is atomic through its own set_if (write.c's
	 * set_if_plain is for the benchmarks' null store only) */
	if (e->s.L->set_if)
		atom_run(e, 1);
	else
		report(0, "%s: the layout has no set_if accessor (struct xkv_layout): its conditional "
		       "stores are not atomic against XDP writers", e->layout);
	atom_run(e, 2);
	atom_run(e, 3);
}
