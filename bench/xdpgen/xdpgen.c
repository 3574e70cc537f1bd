// SPDX-License-Identifier: MIT
/* xdpgen: measure an XDP memcached server's capacity from inside the kernel.
 *
 * The generator program (xdpgen.bpf.c) runs under BPF_PROG_TEST_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES on the client's device and returns XDP_TX, which
 * live mode turns into a transmit out of that device; the server answers with
 * XDP_TX back to it, where the counter (count.bpf.c) classifies and drops the
 * replies.  Requests are pre-built frames in a table, in the order the key
 * distribution gives (README.md).
 *
 *   xdpgen DEV --dst-ip IP [--keys N] [--duration S] [--cpus LIST] ...
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <math.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "xg.h"
#include "lg.h"
#include "xdpgen.skel.h"
#include "xdpgen_count.skel.h"
#include "wire.h"
#include "fnv.h"
#include "loadgen.h"

#define XG_REPEAT (1u << 31) /* frames per test run call: the thread is interrupted long before */
#define XG_ENOTSUPP 524 /* the kernel's internal ENOTSUPP, as BPF returns it */

/* ---- per-CPU counters ----------------------------------------------------- */

static int ncpus_possible;

static int read_gen(int fd, struct xg_gen_state *sum)
{
	struct xg_gen_state v[ncpus_possible];
	__u32 zero = 0;
	memset(sum, 0, sizeof(*sum));
	if (bpf_map_lookup_elem(fd, &zero, v))
		return -1;
	for (int c = 0; c < ncpus_possible; c++) {
		sum->sent += v[c].sent;
		sum->bad += v[c].bad;
	}
	return 0;
}

static int read_counts(int fd, struct xg_counts *sum)
{
	struct xg_counts v[ncpus_possible];
	__u32 zero = 0;
	memset(sum, 0, sizeof(*sum));
	if (bpf_map_lookup_elem(fd, &zero, v))
		return -1;
	for (int c = 0; c < ncpus_possible; c++)
		for (int i = 0; i < XG_C__MAX; i++)
			sum->v[i] += v[c].v[i];
	return 0;
}

/* Spread the CPUs' starting points over the sequence, so threads do not send
 * the same requests in lockstep. */
static int init_positions(int fd, const struct opts *o)
{
	struct xg_gen_state v[ncpus_possible];
	__u32 zero = 0;
	memset(v, 0, sizeof(v));
	for (int t = 0; t < o->ncpus; t++)
		if (o->cpus[t] < ncpus_possible)
			v[o->cpus[t]].pos = (__u64)o->seq_len * (unsigned)t / (unsigned)o->ncpus;
	return bpf_map_update_elem(fd, &zero, v, 0);
}

/* ---- server CPU time ------------------------------------------------------ */

/* busy ticks (user+nice+system+irq+softirq+steal in /proc/stat) of each
 * of cpus[0..n-1] into busy[]; -1 where a CPU has no line.  Returns the sum,
 * or -1 when any CPU is missing. */
static long long cpu_busy_ticks(const int *cpus, int n, long long *busy)
{
	char line[512];
	unsigned long long u, ni, s, idle, iow, irq, sirq, steal;
	long long sum = 0;
	FILE *f = fopen("/proc/stat", "r");

	for (int i = 0; i < n; i++)
		busy[i] = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		int cpu;
		if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &u, &ni, &s,
			   &idle, &iow, &irq, &sirq, &steal) != 9)
			continue;
		for (int i = 0; i < n; i++)
			if (cpus[i] == cpu)
				busy[i] = (long long)(u + ni + s + irq + sirq + steal);
	}
	fclose(f);
	for (int i = 0; i < n; i++) {
		if (busy[i] < 0)
			return -1;
		sum += busy[i];
	}
	return sum;
}

/* ---- XDP on the device ---------------------------------------------------- */

struct attach {
	int ifindex;
	int old_fd;   /* the program we replaced (-1: none) */
	int our_fd;
	bool attached;
};

static int count_attach(struct attach *a, int ifindex, int prog_fd, const char *dev)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	LIBBPF_OPTS(bpf_xdp_attach_opts, ao);
	__u32 flags = XDP_FLAGS_DRV_MODE;

	a->ifindex = ifindex;
	a->old_fd = -1;
	a->our_fd = prog_fd;
	if (bpf_xdp_query(ifindex, 0, &q)) {
		fprintf(stderr, "xdpgen: %s: cannot query XDP: %s\n", dev, strerror(errno));
		return -1;
	}
	if (q.attach_mode == XDP_ATTACHED_SKB || q.attach_mode == XDP_ATTACHED_HW ||
	    q.attach_mode == XDP_ATTACHED_MULTI) {
		fprintf(stderr, "xdpgen: %s has a generic/offloaded XDP program: the counter needs "
				"native mode alone (detach it first)\n", dev);
		return -1;
	}
	if (q.attach_mode == XDP_ATTACHED_DRV) {
		/* hold the old program: once replaced, nothing else might */
		a->old_fd = bpf_prog_get_fd_by_id(q.drv_prog_id);
		if (a->old_fd < 0) {
			fprintf(stderr, "xdpgen: %s: cannot get its XDP program %u: %s\n", dev,
				q.drv_prog_id, strerror(errno));
			return -1;
		}
		flags |= XDP_FLAGS_REPLACE;
		ao.old_prog_fd = a->old_fd;
	} else {
		flags |= XDP_FLAGS_UPDATE_IF_NOEXIST;
	}
	if (bpf_xdp_attach(ifindex, prog_fd, flags, &ao)) {
		fprintf(stderr, "xdpgen: %s: cannot attach the reply counter in native mode: %s\n",
			dev, strerror(errno));
		if (a->old_fd >= 0)
			close(a->old_fd);
		a->old_fd = -1;
		return -1;
	}
	a->attached = true;
	return 0;
}

/* Put back what was there (or nothing). */
static void count_detach(struct attach *a, const char *dev)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, ao, .old_prog_fd = a->our_fd);
	int err;

	if (!a->attached)
		return;
	if (a->old_fd >= 0)
		err = bpf_xdp_attach(a->ifindex, a->old_fd, XDP_FLAGS_DRV_MODE | XDP_FLAGS_REPLACE, &ao);
	else
		err = bpf_xdp_detach(a->ifindex, XDP_FLAGS_DRV_MODE, &ao);
	if (err)
		fprintf(stderr, "xdpgen: %s: could not restore its XDP program: %s\n", dev, strerror(errno));
	if (a->old_fd >= 0)
		close(a->old_fd);
	a->old_fd = -1;
	a->attached = false;
}

/* ---- generator threads ---------------------------------------------------- */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

struct gen {
	pthread_t tid;
	int cpu;
	int prog_fd;
	int ifindex;
	const void *data_in;
	unsigned data_len;
	unsigned batch;
	int err;     /* errno of a failed call, 0 */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int test_run(const struct gen *g, unsigned repeat)
{
	/* the kernel wants data_end = the data size, data_meta and data 0 */
	struct xdp_md ctx = { .data_end = g->data_len, .ingress_ifindex = (__u32)g->ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = g->data_in,
		.data_size_in = g->data_len,
		.ctx_in = &ctx,
		.ctx_size_in = sizeof(ctx),
		.repeat = repeat,
		.flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		.batch_size = g->batch);
	return bpf_prog_test_run_opts(g->prog_fd, &o) ? -errno : 0;
}

/* One long test run per thread: a call costs an RCU grace period or so (the
 * kernel sets up and tears down a page pool), so the thread makes one that
 * lasts until the main thread interrupts it with SIGUSR1 (the kernel checks
 * for signals between batches). */
static void *gen_main(void *arg)
{
	struct gen *g = arg;

	while (!stop) {
		int err = test_run(g, XG_REPEAT);
		if (err == -EINTR)
			continue;
		if (err) {
			g->err = -err;
			stop = 1;
			break;
		}
	}
	return NULL;
}

/* Interrupt the thread's test run until it has ended (a signal that lands
 * just before it enters the kernel is lost). */
static void gen_stop(struct gen *g)
{
	struct timespec ts;

	do {
		pthread_kill(g->tid, SIGUSR1);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
	} while (pthread_timedjoin_np(g->tid, NULL, &ts) == ETIMEDOUT);
}

static int gen_start(struct gen *g)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	CPU_ZERO(&set);
	CPU_SET(g->cpu, &set);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	err = pthread_create(&g->tid, &attr, gen_main, g);
	pthread_attr_destroy(&attr);
	if (err)
		fprintf(stderr, "xdpgen: cannot start a thread on CPU %d: %s\n", g->cpu, strerror(err));
	return err ? -1 : 0;
}

static void explain_run_error(int err, const char *dev)
{
	if (err == EINVAL || err == EOPNOTSUPP || err == XG_ENOTSUPP)
		fprintf(stderr, "xdpgen: BPF_PROG_TEST_RUN with live frames failed (%s): the kernel "
				"needs BPF_F_TEST_XDP_LIVE_FRAMES (Linux 5.18+) and %s must accept "
				"XDP frames (ndo_xdp_xmit)\n", strerror(err), dev);
	else if (err == ENXIO || err == ENETDOWN)
		fprintf(stderr, "xdpgen: %s cannot transmit XDP frames (%s): is it up, and does "
				"its veth peer run a native XDP program?\n", dev, strerror(err));
	else
		fprintf(stderr, "xdpgen: BPF_PROG_TEST_RUN failed: %s\n", strerror(err));
}

/* ---- report --------------------------------------------------------------- */

struct result {
	double elapsed;
	unsigned long long sent, bad;
	struct xg_counts c;
	double busy_s;  /* server CPUs' busy seconds, summed; < 0: unknown */
	double cpu_busy_s[XG_CPUS_MAX];  /* each server CPU's */
	unsigned nsets;
};

static void report(const struct opts *o, const struct result *r)
{
	double sent_pps = r->sent / r->elapsed, reply_pps = r->c.v[XG_C_replies] / r->elapsed;
	double ratio = r->sent ? (double)r->c.v[XG_C_replies] / (double)r->sent : 0;
	double ns_per_reply = r->busy_s >= 0 && r->c.v[XG_C_replies]
				      ? r->busy_s * 1e9 / (double)r->c.v[XG_C_replies] : -1;
	char cpus[XG_CPUS_MAX * 4 + 1] = "", scpus[XG_CPUS_MAX * 4 + 1] = "";
	char spct[XG_CPUS_MAX * 8 + 1] = "";
	/* the mean over the server CPUs: 100 is every one of them busy all the time */
	double busy_pct = r->busy_s >= 0 ? 100 * r->busy_s / r->elapsed / o->nserver : -1;

	for (int i = 0; i < o->ncpus; i++)
		snprintf(cpus + strlen(cpus), sizeof(cpus) - strlen(cpus), "%s%d", i ? "," : "",
			 o->cpus[i]);
	for (int i = 0; i < o->nserver; i++) {
		snprintf(scpus + strlen(scpus), sizeof(scpus) - strlen(scpus), "%s%d", i ? "," : "",
			 o->server_cpus[i]);
		snprintf(spct + strlen(spct), sizeof(spct) - strlen(spct), "%s%.1f", i ? ", " : "",
			 r->busy_s >= 0 ? 100 * r->cpu_busy_s[i] / r->elapsed : -1);
	}
	if (o->json) {
		printf("{\"dev\": \"%s\", \"threads\": %d, \"cpus\": [%s], \"duration_s\": %.6f, "
		       "\"keys\": %llu, \"key_base\": %llu, \"key_size\": %u, \"value_size\": %u, "
		       "\"dist\": \"%s\", \"theta\": %g, \"write_ratio\": %g, \"seq\": %u, "
		       "\"seq_sets\": %u, \"rate\": %.0f, \"sent\": %llu, \"bad\": %llu",
		       o->dev, o->ncpus, cpus, r->elapsed, o->keys, o->key_base, o->key_size,
		       o->value_size, o->dist == DIST_ZIPF ? "zipf" : "uniform",
		       o->dist == DIST_ZIPF ? o->theta : 0, o->write_ratio, o->seq_len, r->nsets,
		       o->rate, r->sent, r->bad);
#define XG_JSON(n, h) printf(", \"%s\": %llu", #n, (unsigned long long)r->c.v[XG_C_##n]);
		XG_COUNT_LIST(XG_JSON)
#undef XG_JSON
		printf(", \"sent_pps\": %.0f, \"reply_pps\": %.0f, \"reply_ratio\": %.6f, "
		       "\"server_cpu\": %d, \"server_cpus\": [%s], \"server_busy_s\": %.3f, "
		       "\"server_busy_pct\": %.1f, \"server_busy_pct_per_cpu\": [%s], "
		       "\"server_ns_per_reply\": %.1f}\n",
		       sent_pps, reply_pps, ratio, o->server_cpus[0], scpus, r->busy_s, busy_pct, spct,
		       ns_per_reply);
		return;
	}
	printf("xdpgen %s: %d thread(s) on CPU %s, %.2f s, %llu keys from %llu (%s), %.0f%% sets\n",
	       o->dev, o->ncpus, cpus, r->elapsed, o->keys, o->key_base,
	       o->dist == DIST_ZIPF ? "zipf" : "uniform", 100.0 * r->nsets / o->seq_len);
	printf("sent     %12llu  %8.3f Mpps%s\n", r->sent, sent_pps / 1e6, r->bad ? "  (bad frames!)" : "");
	printf("replies  %12llu  %8.3f Mpps  (%.1f%% of sent)\n", (unsigned long long)r->c.v[XG_C_replies],
	       reply_pps / 1e6, 100 * ratio);
	printf("  hits %llu  misses %llu  stored %llu  errors %llu  echoes %llu  other %llu\n",
	       (unsigned long long)r->c.v[XG_C_hits], (unsigned long long)r->c.v[XG_C_misses],
	       (unsigned long long)r->c.v[XG_C_stored], (unsigned long long)r->c.v[XG_C_errors],
	       (unsigned long long)r->c.v[XG_C_echoes], (unsigned long long)r->c.v[XG_C_other]);
	if (r->busy_s >= 0)
		printf("server CPU %s busy %.2f s (%.0f%% per CPU: %s), %.0f ns per reply\n", scpus,
		       r->busy_s, busy_pct, spct, ns_per_reply);
}

/* ---- main ----------------------------------------------------------------- */

static void progress(double t0, double t, int gen_fd, int cnt_fd, struct xg_gen_state *g0,
		     struct xg_counts *c0, double *tp)
{
	struct xg_gen_state g;
	struct xg_counts c;
	if (read_gen(gen_fd, &g) || read_counts(cnt_fd, &c))
		return;
	double dt = t - *tp;
	fprintf(stderr, "\r%6.1f s  sent %7.3f Mpps  replies %7.3f Mpps ", t - t0,
		(double)(g.sent - g0->sent) / dt / 1e6,
		(double)(c.v[XG_C_replies] - c0->v[XG_C_replies]) / dt / 1e6);
	*g0 = g;
	*c0 = c;
	*tp = t;
}

static int run(const struct opts *o, struct xdpgen *gskel, struct xdpgen_count *cskel,
	       const struct netinfo *ni, const void *data_in, unsigned data_len, struct result *r)
{
	int gen_fd = bpf_map__fd(gskel->maps.state), cnt_fd = bpf_map__fd(cskel->maps.counts);
	int prog_fd = bpf_program__fd(gskel->progs.xdpgen);
	struct gen g[XG_CPUS_MAX] = { 0 };
	struct xg_gen_state gs0, gs1, gp;
	struct xg_counts c0, c1, cp;
	bool tty = isatty(STDERR_FILENO) && !o->json;
	int started = 0, rc = 0;

	/* one frame first: a clear error if live frames do not work here */
	g[0] = (struct gen){ .prog_fd = prog_fd, .ifindex = ni->ifindex, .data_in = data_in,
			     .data_len = data_len, .batch = o->batch };
	int err = test_run(&g[0], 1);
	if (err) {
		explain_run_error(-err, o->dev);
		return -1;
	}
	usleep(20000);

	if (read_gen(gen_fd, &gs0) || read_counts(cnt_fd, &c0)) {
		fprintf(stderr, "xdpgen: reading the counters: %s\n", strerror(errno));
		return -1;
	}
	long long bc0[XG_CPUS_MAX], bc1[XG_CPUS_MAX];
	long long b0 = cpu_busy_ticks(o->server_cpus, o->nserver, bc0);
	double t0 = now_s(), tp = t0;
	gp = gs0;
	cp = c0;
	for (int i = 0; i < o->ncpus; i++) {
		g[i] = (struct gen){ .cpu = o->cpus[i], .prog_fd = prog_fd, .ifindex = ni->ifindex,
				     .data_in = data_in, .data_len = data_len, .batch = o->batch };
		if (gen_start(&g[i])) {
			stop = 1;
			rc = -1;
			break;
		}
		started++;
	}
	double next_print = t0 + 1;
	while (!stop) {
		double t = now_s();
		if (t - t0 >= o->duration)
			break;
		if (tty && t >= next_print) {
			progress(t0, t, gen_fd, cnt_fd, &gp, &cp, &tp);
			next_print += 1;
		}
		double left = t0 + o->duration - t;
		usleep((useconds_t)(1e6 * (left < 0.1 ? left : 0.1)));
	}
	stop = 1;
	for (int i = 0; i < started; i++)
		gen_stop(&g[i]);
	r->elapsed = now_s() - t0;
	long long b1 = cpu_busy_ticks(o->server_cpus, o->nserver, bc1);
	if (tty)
		fprintf(stderr, "\n");
	/* replies still in flight */
	usleep(50000);
	if (read_gen(gen_fd, &gs1) || read_counts(cnt_fd, &c1)) {
		fprintf(stderr, "xdpgen: reading the counters: %s\n", strerror(errno));
		return -1;
	}
	for (int i = 0; i < started; i++) {
		if (g[i].err) {
			explain_run_error(g[i].err, o->dev);
			rc = -1;
		}
	}
	r->sent = gs1.sent - gs0.sent;
	r->bad = gs1.bad - gs0.bad;
	for (int i = 0; i < XG_C__MAX; i++)
		r->c.v[i] = c1.v[i] - c0.v[i];
	double hz = (double)sysconf(_SC_CLK_TCK);
	r->busy_s = b0 >= 0 && b1 >= 0 ? (double)(b1 - b0) / hz : -1;
	for (int i = 0; i < o->nserver; i++)
		r->cpu_busy_s[i] = r->busy_s >= 0 ? (double)(bc1[i] - bc0[i]) / hz : -1;
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct netinfo ni;
	struct frame_src fs;
	struct xdpgen *gskel = NULL;
	struct xdpgen_count *cskel = NULL;
	struct attach at = { .old_fd = -1 };
	struct xg_frame *first = NULL;
	struct result r = { 0 };
	int rc = 1;

	if (parse_args(argc, argv, &o))
		return 2;
	if (geteuid() != 0) {
		fprintf(stderr, "xdpgen: must run as root (BPF programs, XDP attach)\n");
		return 1;
	}
	/* libbpf's messages through lib/log.c: all with -v, else its errors */
	xkv_log_set_level(o.verbose ? XKV_LOG_DEBUG : XKV_LOG_ERROR);
	xkv_log_libbpf();
	setrlimit(RLIMIT_MEMLOCK, &(struct rlimit){ RLIM_INFINITY, RLIM_INFINITY });
	ncpus_possible = libbpf_num_possible_cpus();
	if (ncpus_possible <= 0) {
		fprintf(stderr, "xdpgen: cannot count the possible CPUs\n");
		return 1;
	}

	if (dev_info(&o, &ni))
		return 1;
	if (!o.have_src_ip && src_ip_of(o.dev, &o.src_ip))
		return 1;
	if (!o.have_dst_mac && arp_lookup(o.dev, o.dst_ip, o.dst_mac))
		return 1;
	fs = (struct frame_src){ .src_mac = ni.mac, .dst_mac = o.dst_mac, .src_ip = o.src_ip,
				 .dst_ip = o.dst_ip, .src_port = o.src_port, .port = o.port };

	first = calloc(1, sizeof(*first));
	if (!first)
		return 1;
	unsigned frame_max = longest_frame(&fs, &o, first);
	if (!frame_max || frame_max > ni.mtu + ETH_HLEN) {
		fprintf(stderr, "xdpgen: a request frame of %u bytes does not fit %s (MTU %u): "
				"smaller --value-size\n", frame_max, o.dev, ni.mtu);
		goto out;
	}

	gskel = xdpgen__open();
	if (!gskel) {
		fprintf(stderr, "xdpgen: cannot open the generator program: %s\n", strerror(errno));
		goto out;
	}
	gskel->rodata->gcfg.nframes = o.seq_len;
	gskel->rodata->gcfg.frame_max = frame_max;
	gskel->rodata->gcfg.static_frame = o.static_frame;
	if (o.rate > 0)
		gskel->rodata->gcfg.interval_ns = (__u64)(1e9 * o.ncpus / o.rate);
	/* a batch's worth: it leaves as one burst anyway */
	gskel->rodata->gcfg.burst_ns = gskel->rodata->gcfg.interval_ns * o.batch;
	__u32 value_size = (XG_FRAME_OFF + frame_max + 7) & ~7u;
	if (bpf_map__set_max_entries(gskel->maps.table, o.seq_len) ||
	    bpf_map__set_value_size(gskel->maps.table, value_size)) {
		fprintf(stderr, "xdpgen: cannot size the request table\n");
		goto out;
	}
	if (xdpgen__load(gskel)) {
		fprintf(stderr, "xdpgen: cannot load the generator program: %s (-v for the "
				"verifier log)\n", strerror(errno));
		goto out;
	}
	if (fill_table(bpf_map__fd(gskel->maps.table), value_size, &fs, &o, &r.nsets))
		goto out; /* it said why */
	if (init_positions(bpf_map__fd(gskel->maps.state), &o)) {
		fprintf(stderr, "xdpgen: preparing the generator: %s\n", strerror(errno));
		goto out;
	}

	cskel = xdpgen_count__open();
	if (!cskel) {
		fprintf(stderr, "xdpgen: cannot open the reply counter: %s\n", strerror(errno));
		goto out;
	}
	cskel->rodata->ccfg.port = (__u16)o.port;
	if (xdpgen_count__load(cskel)) {
		fprintf(stderr, "xdpgen: cannot load the reply counter: %s\n", strerror(errno));
		goto out;
	}

	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	if (count_attach(&at, ni.ifindex, bpf_program__fd(cskel->progs.xdpgen_count), o.dev))
		goto out;

	if (run(&o, gskel, cskel, &ni, first->data, frame_max, &r) == 0) {
		report(&o, &r);
		rc = 0;
	}
out:
	count_detach(&at, o.dev);
	xdpgen_count__destroy(cskel);
	xdpgen__destroy(gskel);
	free(first);
	return rc;
}
