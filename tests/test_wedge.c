// SPDX-License-Identifier: MIT
/* A userspace writer killed inside an array_fnv slot (or a bucket, with
 * --layout set_assoc, sieve or s3fifo: "slot" below is then the key's bucket, its
 * counter the bucket's lock; or an arena slot, with --layout arena: the
 * key's home slot, where it is stored in an empty table) must not wedge it for good (issue 6, issue 9).  A forked child stores through the real accessor with
 * XDPKV_TEST_DIE_IN_SLOT=1, which makes set() SIGKILL itself halfway through
 * the value, the slot held (odd).  Then:
 *   1. at once: the accessor answers -EBUSY for that key, fast; the XDP
 *      program passes its get and set on (XDP_PASS);
 *   2. after the steal timeout (XDPKV_SLOT_STEAL_MS=200 here), the next
 *      userspace access takes the slot back: a set through the accessor
 *      stores, and XDP answers a get of the key with the new value;
 *   3. keys in other slots are served, by both sides, before and after.
 * Without the repair, step 2 answers -EBUSY forever.  Then the same with a
 * get as the repairing access (a miss: the half-written item is dropped),
 * and with a writer that was only stopped (=stop, SIGSTOP): robbed by a set
 * after the timeout, it learns so on release, takes the slot again and
 * rewrites its whole value once continued.
 *
 *   test_wedge [--layout array_fnv|set_assoc|sieve|s3fifo|arena]   exit 1 on a failed check */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include "inproc.h"
#include "xdpkv.h"
#include "array_fnv/slot.h"
#include "set_assoc/bucket.h"
#include "arena/table.h"
#include "pktbuild.h"
#include "layout_skip.h"

#define STEAL_MS 200
#define STR_(x) #x
#define STR(x) STR_(x)
#define KEY "k"
#define NOTHER 4

static struct xkv_store st;
static struct bpf_object *obj;
static int prog_fd, failed, passed;
static char others[NOTHER][16];

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "PASS" : "FAIL", what);
	ok ? passed++ : failed++;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1e3 + (t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* The one place the store is opened (the parent's, and the dying child's). */
static int open_store(struct xkv_store *s)
{
	char err[XKV_ERRLEN];
	if (xkv_store_from_object(s, NULL, obj, err, sizeof(err)) || xkv_policy_open_all(s)) {
		fprintf(stderr, "test_wedge: %s\n", err);
		return -1;
	}
	return 0;
}

/* Run one request through the XDP program; its reply text (after eth, ipv4,
 * udp and the frame header) NUL-terminated in reply.  Returns the action. */
static int xdp(const char *text, char *reply, size_t cap)
{
	static __u8 req[2048], out[4096];
	static struct pb b;
	const size_t hdr = 14 + 20 + 8 + 8;
	pb_init(&b);
	pb_ipv4(&b);
	pb_udp(&b, 40000, XKV_DEFAULT_PORT);
	pb_frame(&b, 7, 0, 1);
	pb_bytes(&b, text, strlen(text));
	size_t len = pb_build(&b, req, sizeof(req));
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = req, .data_size_in = len, .data_out = out,
		    .data_size_out = sizeof(out), .repeat = 1);
	if (bpf_prog_test_run_opts(prog_fd, &t))
		return -errno;
	size_t n = t.data_size_out > hdr ? t.data_size_out - hdr : 0;
	n = n < cap - 1 ? n : cap - 1;
	memcpy(reply, out + hdr, n);
	reply[n] = 0;
	return (int)t.retval;
}

static int uset(struct xkv_store *s, const char *key, const char *val)
{
	struct xkv_entry *e = xkv_entry_make(s, 0, 0, val, strlen(val));
	int ret = s->L->set(s, key, strlen(key), e);
	free(e);
	return ret;
}

/* The accessor's answer for key is val; the XDP program's too (XDP_TX). */
static int served(const char *key, const char *val)
{
	static struct xkv_item it;
	char req[64], exp[1200], got[1200];
	if (st.L->get(&st, key, strlen(key), &it) != 1 || it.len != strlen(val) ||
	    memcmp(it.data, val, it.len))
		return 0;
	snprintf(req, sizeof(req), "get %s\r\n", key);
	snprintf(exp, sizeof(exp), "VALUE %s 0 %zu\r\n%s\r\nEND\r\n", key, strlen(val), val);
	int act = xdp(req, got, sizeof(got));
	if (act != XDP_TX || strcmp(got, exp)) {
		printf("  XDP get %s: action %d, reply \"%s\", want XDP_TX \"%s\"\n", key, act, got, exp);
		return 0;
	}
	return 1;
}

static int others_served(void)
{
	int ok = 1;
	for (int i = 0; i < NOTHER; i++)
		ok &= served(others[i], others[i]);
	return ok;
}

static void nap(long ms)
{
	struct timespec t = { ms / 1000, ms % 1000 * 1000000L };
	nanosleep(&t, NULL);
}

/* A child that stores val under KEY through the real accessor, made to stop
 * halfway inside the slot by XDPKV_TEST_DIE_IN_SLOT=how ("1" SIGKILL,
 * "stop" SIGSTOP).  Exits 0 if its set returns 0 (after a SIGCONT). */
static pid_t writer_inside(const char *how, const char *val)
{
	pid_t pid = fork();
	if (pid)
		return pid;
	struct xkv_store cs;
	setenv("XDPKV_TEST_DIE_IN_SLOT", how, 1);
	if (open_store(&cs))
		_exit(2);
	_exit(uset(&cs, KEY, val) ? 3 : 0);
}

/* The counter a writer of key holds: its array_fnv slot's, or its bucket's
 * (set_assoc, sieve, s3fifo: the bucket lock). */
static __u32 *slot_of(const char *key)
{
	__u8 k[XKV_KEY_MAX + 8];
	xkv_key_pack(&st.cfg, key, strlen(key), k);
	__u64 h = xkv_key_hash(st.cfg.hash_seed, k, strlen(key));
	if (xkv_sa_layout(st.cfg.layout)) {
		__u32 b = xkv_sa_bucket_of(h, xkv_sa_buckets(st.cfg.entries, st.cfg.entry_size));
		return &((struct xkv_sa_bucket *)((__u8 *)st.mm + (size_t)b * st.slot_stride))->seq;
	}
	size_t off = !strcmp(st.cfg.layout, "arena") ? XKV_AR_TABLE_OFF : 0;
	return &((struct xkv_entry *)((__u8 *)st.mm + off + (size_t)(h % st.cfg.entries) * st.slot_stride))->seq;
}

/* Is key's slot clear of KEY's (ke)?  Another slot; for arena, also neither
 * window holding the other's home slot, so that no store of one key
 * touches the other's counter. */
static bool apart(const char *key, __u32 *ke)
{
	__u32 *o = slot_of(key);
	if (strcmp(st.cfg.layout, "arena"))
		return o != ke;
	size_t d = (size_t)((__u8 *)o - (__u8 *)ke) / st.slot_stride, n = st.cfg.entries;
	if (o < ke)
		d = n - (size_t)((__u8 *)ke - (__u8 *)o) / st.slot_stride;
	return d >= XKV_AR_WINDOW && n - d >= XKV_AR_WINDOW;
}

int main(int argc, char **argv)
{
	char err[XKV_ERRLEN], got[1200];
	struct xkv_config cfg;
	static struct xkv_item it;
	const char *layout = "array_fnv";

	if (argc == 3 && !strcmp(argv[1], "--layout") &&
	    (!strcmp(argv[2], "array_fnv") || xkv_sa_layout(argv[2]) || !strcmp(argv[2], "arena")))
		layout = argv[2];
	else if (argc != 1) {
		fprintf(stderr, "usage: %s [--layout array_fnv|set_assoc|sieve|s3fifo|arena]\n", argv[0]);
		return 2;
	}
	if (layout_unavailable(layout))
		return XKV_TEST_SKIPPED;
	setenv("XDPKV_SLOT_STEAL_MS", STR(STEAL_MS), 1); /* read when a store opens */
	xkv_config_defaults(&cfg, layout);
	if (strcmp(layout, "array_fnv"))
		cfg.hash_seed = 0x243f6a8885a308d3ull; /* keyed, as attach makes it */
	cfg.entries = 64;
	cfg.key_cap = 16;
	cfg.val_cap = 1024;
	cfg.mode = XKV_MODE_TEST;
	if (xkv_inproc_load(&cfg, NULL, &obj, NULL, err, sizeof(err))) {
		fprintf(stderr, "test_wedge: %s\n", err);
		return 1;
	}
	if (open_store(&st))
		return 1;
	prog_fd = bpf_program__fd(xkv_object_prog(obj));

	/* keys in slots other than KEY's */
	__u32 *ke = slot_of(KEY);
	for (int i = 0, n = 0; n < NOTHER; i++) {
		snprintf(others[n], sizeof(others[n]), "o%d", i);
		if (apart(others[n], ke))
			n++;
	}
	int ok = !uset(&st, KEY, "old-value");
	for (int i = 0; i < NOTHER; i++)
		ok &= !uset(&st, others[i], others[i]);
	check(ok && served(KEY, "old-value") && others_served(), "items stored and served");

	/* a writer dies inside KEY's slot */
	char big[601];
	memset(big, 'x', 600);
	big[600] = 0;
	pid_t pid = writer_inside("1", big);
	int ws;
	waitpid(pid, &ws, 0);
	check(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "the writer was SIGKILLed inside the slot");
	check(seq_read(ke) & 1, "its slot is left odd (a writer inside)");

	/* 1. busy, and fast about it */
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0); /* about when the accessor first sees it odd */
	int r = st.L->get(&st, KEY, 1, &it);
	double took = ms_since(&t0);
	printf("  accessor get: %d in %.1f ms\n", r, took);
	/* Before the steal timeout the get must answer -EBUSY, not wait; once
	 * it has passed (a machine that stalls this process that long: 11.7 s
	 * seen with tests side by side at load 10) it may also repair and miss. */
	if (took < STEAL_MS)
		check(r == -EBUSY, "accessor get answers -EBUSY at once");
	else {
		char what[96];
		snprintf(what, sizeof(what), "accessor get after a %.0f ms stall: -EBUSY or repaired (%d)",
			 took, r);
		check(r == -EBUSY || r == 0, what); /* 0: repaired, a miss */
	}
	check(xdp("get " KEY "\r\n", got, sizeof(got)) == XDP_PASS, "XDP passes the get on");
	check(xdp("set " KEY " 0 0 3\r\nabc\r\n", got, sizeof(got)) == XDP_PASS, "XDP passes the set on");
	clock_gettime(CLOCK_MONOTONIC, &t);
	r = uset(&st, KEY, "abc");
	took = ms_since(&t);
	double since = ms_since(&t0);
	/* only meaningful while the timeout has not passed (a stalled machine
	 * could get there first) */
	if (since < STEAL_MS * 3 / 4)
		check(r == -EBUSY && took < STEAL_MS, "accessor set answers -EBUSY before the timeout");
	else
		printf("SKIP set before the timeout: %.0f ms passed already\n", since);
	check(others_served(), "other slots are served while it is wedged");

	/* 2. after the timeout, the next userspace access repairs it */
	nap(STEAL_MS + 50);
	r = uset(&st, KEY, "new-value!");
	printf("  accessor set after %.0f ms: %d\n", ms_since(&t0), r);
	check(r == 0, "accessor set stores after the timeout (slot repaired)");
	struct xkv_stats slow;
	check(!xkv_stats_read(&st, XKV_STATS_SLOW, &slow, NULL) && slow.v[XKV_STAT_slot_repairs] == 1,
	      "the repair is counted (slot_repairs 1)");
	check(!(seq_read(ke) & 1), "the slot is even again");
	check(served(KEY, "new-value!"), "XDP and the accessor answer the new value");
	int act = xdp("set " KEY " 0 0 5\r\nfifth\r\n", got, sizeof(got));
	check(act == XDP_TX && !strcmp(got, "STORED\r\n") && served(KEY, "fifth"),
	      "XDP stores into the slot again");

	/* a get repairs too: the half-written item is gone, a miss */
	waitpid(writer_inside("1", big), &ws, 0);
	check(WIFSIGNALED(ws) && (seq_read(ke) & 1), "another writer dies inside");
	check(st.L->get(&st, KEY, 1, &it) == -EBUSY, "accessor get answers -EBUSY");
	nap(STEAL_MS + 50);
	check(st.L->get(&st, KEY, 1, &it) == 0 && !(seq_read(ke) & 1),
	      "after the timeout, accessor get repairs the slot and misses");
	act = xdp("get " KEY "\r\n", got, sizeof(got));
	check(act == XDP_TX && !strcmp(got, "END\r\n"), "XDP misses too");

	/* a writer that was only slow: robbed, it takes the slot again and
	 * rewrites its whole value */
	pid = writer_inside("stop", big);
	waitpid(pid, &ws, WUNTRACED);
	check(WIFSTOPPED(ws) && (seq_read(ke) & 1), "a writer stops inside");
	check(uset(&st, KEY, "thief") == -EBUSY, "accessor set answers -EBUSY");
	nap(STEAL_MS + 50);
	check(uset(&st, KEY, "thief") == 0 && served(KEY, "thief"), "after the timeout, a set takes the slot");
	kill(pid, SIGCONT);
	waitpid(pid, &ws, 0);
	check(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the slow writer finishes its set");
	check(!(seq_read(ke) & 1) && served(KEY, big), "the slot holds its whole value");
	act = xdp("delete " KEY "\r\n", got, sizeof(got));
	check(act == XDP_TX && !strcmp(got, "DELETED\r\n") && st.L->get(&st, KEY, 1, &it) == 0,
	      "XDP deletes from the slot");

	/* 3. */
	check(others_served(), "other slots were never affected");

	printf("%d passed, %d failed\n", passed, failed);
	xkv_store_close(&st);
	bpf_object__close(obj);
	return failed ? 1 : 0;
}
