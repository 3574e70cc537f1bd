// SPDX-License-Identifier: MIT
/* array_fnv and the bucketed layouts (set_assoc, sieve, s3fifo) must never show a torn value: while writers on one CPU keep
 * replacing a slot's value, readers on another CPU — the XDP program through
 * BPF_PROG_TEST_RUN and the userspace accessor on the mmapped slots — must
 * see either a whole old value or a whole new one (or, for XDP, pass the
 * request to the slow path while a writer is inside).
 *
 * Each version of the value is one repeated letter with a length that
 * belongs to that letter, so a reply mixing two versions is caught by its
 * bytes or by its length.  Writers alternate the XDP program and the
 * userspace accessor.  Other layouts make no such promise (a hash map
 * recycles elements), so only array_fnv, the bucketed layouts and arena are checked here.
 *
 *   test_torn [--seconds S] [--layout NAME] [--no-prealloc]   exit 1 on a torn read
 * (ctest runs array_fnv, set_assoc, sieve, s3fifo, arena; the others are for
 * docs/architecture.md's table) */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include "inproc.h"
#include "xdpkv.h"
#include "pktbuild.h"
#include "layout_skip.h"

#define KEY "torn"
#define NVER 4
static const char letters[NVER] = { 'a', 'b', 'c', 'd' };
static const __u32 lens[NVER] = { 100, 1000, 400, 777 }; /* all fit one datagram */

static struct xkv_store st;
static int prog_fd;
static atomic_int stop;

struct counts {
	unsigned long writes, reads, hits, passes, torn, user_reads, user_torn;
};

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static size_t frame(__u8 *out, size_t cap, const void *text, __u32 n)
{
	struct pb *b = calloc(1, sizeof(*b));
	pb_init(b);
	pb_ipv4(b);
	pb_udp(b, 40000, XKV_DEFAULT_PORT);
	pb_frame(b, 7, 0, 1);
	pb_bytes(b, text, n);
	size_t len = pb_build(b, out, cap);
	free(b);
	return len;
}

static int run(const __u8 *in, size_t inlen, __u8 *out, __u32 *outlen)
{
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = in, .data_size_in = inlen, .data_out = out,
		    .data_size_out = *outlen, .repeat = 1);
	if (bpf_prog_test_run_opts(prog_fd, &t))
		return -errno;
	*outlen = t.data_size_out;
	return (int)t.retval;
}

/* A value is whole if it is one letter repeated for that letter's length. */
static int whole(const __u8 *v, __u32 len)
{
	for (int k = 0; k < NVER; k++) {
		if (v[0] != letters[k])
			continue;
		if (len != lens[k])
			return 0;
		for (__u32 i = 0; i < len; i++)
			if (v[i] != letters[k])
				return 0;
		return 1;
	}
	return 0;
}

static void *writer(void *arg)
{
	struct counts *c = arg;
	static __u8 req[2048], out[4096], text[1200];
	pin(1);
	for (unsigned long i = 0; !atomic_load(&stop); i++) {
		int k = i % NVER;
		if (i & 1) { /* the XDP program's store path */
			int n = snprintf((char *)text, sizeof(text), "set " KEY " 0 0 %u noreply\r\n", lens[k]);
			memset(text + n, letters[k], lens[k]);
			memcpy(text + n + lens[k], "\r\n", 2);
			size_t len = frame(req, sizeof(req), text, n + lens[k] + 2);
			__u32 olen = sizeof(out);
			run(req, len, out, &olen);
		} else { /* the userspace accessor's store path */
			__u8 v[1000];
			memset(v, letters[k], lens[k]);
			struct xkv_entry *e = xkv_entry_make(&st, 0, 0, v, lens[k]);
			st.L->set(&st, KEY, sizeof(KEY) - 1, e);
			free(e);
		}
		c->writes++;
	}
	return NULL;
}

static void reader(struct counts *c)
{
	static __u8 req[256], out[4096];
	static struct xkv_item it;
	size_t len = frame(req, sizeof(req), "get " KEY "\r\n", sizeof("get " KEY "\r\n") - 1);
	const size_t hdr = 14 + 20 + 8 + 8; /* eth, ipv4, udp, frame header */

	pin(0);
	while (!atomic_load(&stop)) {
		__u32 olen = sizeof(out);
		int act = run(req, len, out, &olen);
		c->reads++;
		if (act == XDP_PASS) {
			c->passes++; /* a writer was inside: the slow path answers */
		} else if (act == XDP_TX && olen > hdr) {
			const char *t = (const char *)out + hdr;
			unsigned flags, vlen;
			int off = 0;
			if (sscanf(t, "VALUE " KEY " %u %u\r\n%n", &flags, &vlen, &off) == 2 && off) {
				c->hits++;
				if (hdr + off + vlen + 7 != olen || !whole(out + hdr + off, vlen))
					c->torn++;
			}
		}
		if (st.L->get(&st, KEY, sizeof(KEY) - 1, &it) == 1) {
			c->user_reads++;
			if (!whole(it.data, it.len))
				c->user_torn++;
		}
	}
}

static void *sleeper(void *a)
{
	nanosleep(a, NULL);
	atomic_store(&stop, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *layout = "array_fnv";
	double seconds = 2;
	__u32 flags = 0;
	char err[XKV_ERRLEN];
	struct xkv_config cfg;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--layout") && i + 1 < argc)
			layout = argv[++i];
		else if (!strcmp(argv[i], "--no-prealloc"))
			flags |= XKV_CFG_NO_PREALLOC;
		else {
			fprintf(stderr, "usage: %s [--seconds S] [--layout NAME] [--no-prealloc]\n", argv[0]);
			return 2;
		}
	}
	if (layout_unavailable(layout))
		return XKV_TEST_SKIPPED;
	xkv_config_defaults(&cfg, layout);
	cfg.entries = 64;
	cfg.key_cap = 16;
	cfg.val_cap = 1024;
	cfg.mode = XKV_MODE_TEST;
	cfg.flags |= flags;
	struct bpf_object *obj;
	if (xkv_inproc_load(&cfg, NULL, &obj, &st, err, sizeof(err))) {
		fprintf(stderr, "test_torn: %s\n", err);
		return 1;
	}
	if (xkv_policy_open_all(&st)) { /* no access control in this test */
		fprintf(stderr, "test_torn: cannot open the access policy\n");
		return 1;
	}
	prog_fd = bpf_program__fd(xkv_object_prog(obj));

	struct counts w = { 0 }, r = { 0 };
	pthread_t th;
	pthread_create(&th, NULL, writer, &w);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* the reader runs here; a helper thread ends the run after `seconds` */
	pthread_t timer;
	struct timespec dur = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	pthread_create(&timer, NULL, sleeper, &dur);
	reader(&r);
	pthread_join(timer, NULL);
	pthread_join(th, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	printf("%s: %lu writes, %lu XDP reads (%lu hits, %lu passed on while a writer was inside), "
	       "%lu userspace reads; torn: %lu XDP, %lu userspace\n",
	       layout, w.writes, r.reads, r.hits, r.passes, r.user_reads, r.torn, r.user_torn);
	int failed = 0;
	if (r.torn || r.user_torn) {
		printf("FAIL torn values were read\n");
		failed++;
	}
	if (r.hits < 100 || w.writes < 100 || r.user_reads < 100) {
		printf("FAIL too few operations to mean anything\n");
		failed++;
	}
	printf("%d passed, %d failed\n", 2 - failed, failed);
	xkv_store_close(&st);
	bpf_object__close(obj);
	return failed ? 1 : 0;
}
