/* SPDX-License-Identifier: MIT */
/* xkv-loadgen: threads, phases (preload, measure), progress and report. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "lg.h"

struct run {
	struct lg_config c;
	struct lg_thread *t;
	pthread_barrier_t ready, go;
	_Atomic int failed;
	uint64_t t0;
	double preload_s;
	struct lg_counters preload;
};

static void split_range(struct lg_thread *t, uint64_t keys, unsigned nthreads)
{
	uint64_t per = keys / nthreads, extra = keys % nthreads;

	t->range_lo = t->id * per + (t->id < extra ? t->id : extra);
	t->range_hi = t->range_lo + per + (t->id < extra);
	t->range_next = t->range_lo;
}

static void pin(struct lg_thread *t)
{
	cpu_set_t set;

	if (!t->c->ncpus)
		return;
	t->cpu = t->c->cpus[t->id % t->c->ncpus];
	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		fprintf(stderr, "xkv-loadgen: thread %u: cannot pin to CPU %u\n", t->id, t->cpu);
	else
		t->pinned = true;
}

static int preload(struct lg_thread *t)
{
	split_range(t, t->c->keys, t->c->threads);
	t->sequential = t->all_sets = t->measure_all = true;
	if (lg_run(t) < 0)
		return -1;
	t->sequential = t->all_sets = t->measure_all = false;
	return 0;
}

/* The run the threads belong to (set before they start). */
static struct run *the_run;

static void *worker(void *arg)
{
	struct lg_thread *t = arg;
	struct run *r = the_run;
	const struct lg_config *c = &r->c;
	int rc = 0;

	pin(t);
	if (c->preload && preload(t) < 0)
		rc = -1;
	if (rc)
		r->failed = 1;
	pthread_barrier_wait(&r->ready);
	pthread_barrier_wait(&r->go); /* main has set t0 */
	if (r->failed)
		return NULL;
	memset(&t->n, 0, sizeof(t->n));
	memset(&t->hist, 0, sizeof(t->hist));
	t->t_start = r->t0;
	t->t_measure = r->t0 + (uint64_t)(c->warmup * LG_NSEC);
	t->t_end = t->t_measure + (uint64_t)(c->duration * LG_NSEC);
	if (c->verify_only) {
		split_range(t, c->keys, c->threads);
		t->sequential = t->measure_all = true;
		t->t_measure = r->t0;
	} else if (c->requests) {
		t->quota = c->requests / c->threads + (t->id < c->requests % c->threads);
		t->t_end = UINT64_MAX;
	}
	if (lg_run(t) < 0)
		r->failed = 1;
	return NULL;
}

static void sum(const struct run *r, struct lg_counters *n, struct lg_hist *h)
{
	memset(n, 0, sizeof(*n));
	for (unsigned i = 0; i < r->c.threads; i++) {
		const struct lg_counters *m = &r->t[i].n;
		n->gets += m->gets;
		n->sets += m->sets;
		n->scans += m->scans;
		n->hits += m->hits;
		n->misses += m->misses;
		n->wrong += m->wrong;
		n->timeouts += m->timeouts;
		n->errors += m->errors;
		n->late += m->late;
		if (h)
			lg_hist_merge(h, &r->t[i].hist);
	}
}

static double seconds(uint64_t ns)
{
	return (double)ns / LG_NSEC;
}

/* Length of the measured window: the configured duration, or (--requests,
 * --verify-only) from its start to the last reply. */
static double window_s(const struct run *r, unsigned i)
{
	const struct lg_thread *t = &r->t[i];

	if (r->c.requests || r->c.verify_only)
		return t->t_last_done > t->t_measure ? seconds(t->t_last_done - t->t_measure) : 0;
	return r->c.duration;
}

static double run_window_s(const struct run *r)
{
	double w = 0;
	for (unsigned i = 0; i < r->c.threads; i++)
		if (window_s(r, i) > w)
			w = window_s(r, i);
	return w;
}

static double cpu_s(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
	       u.ru_stime.tv_usec / 1e6;
}

static void progress_line(struct run *r, uint64_t *last_ops, uint64_t now, uint64_t *last_t)
{
	uint64_t ops = 0, to = 0, wrong = 0;

	for (unsigned i = 0; i < r->c.threads; i++) {
		ops += atomic_load_explicit(&r->t[i].progress_ops, memory_order_relaxed);
		to += atomic_load_explicit(&r->t[i].progress_timeouts, memory_order_relaxed);
		wrong += atomic_load_explicit(&r->t[i].progress_wrong, memory_order_relaxed);
	}
	fprintf(stderr, "[xkv-loadgen] %5.1fs %10.0f ops/s  ops %llu  timeouts %llu  wrong %llu\n",
		seconds(now - r->t0), (double)(ops - *last_ops) / seconds(now - *last_t),
		(unsigned long long)ops, (unsigned long long)to, (unsigned long long)wrong);
	*last_ops = ops;
	*last_t = now;
}

static bool all_done(struct run *r, pthread_t *th, bool *done)
{
	bool all = true;
	for (unsigned i = 0; i < r->c.threads; i++) {
		if (!done[i] && pthread_tryjoin_np(th[i], NULL) == 0)
			done[i] = true;
		all &= done[i];
	}
	return all;
}

static void wait_threads(struct run *r, pthread_t *th)
{
	bool show = !r->c.quiet && (r->c.progress || isatty(STDERR_FILENO));
	bool done[256] = { false };
	uint64_t last_ops = 0, last_t = r->t0, next = r->t0 + LG_NSEC;
	struct timespec tick = { 0, 20 * 1000 * 1000 };

	while (!all_done(r, th, done)) {
		nanosleep(&tick, NULL);
		if (show && lg_now() >= next) {
			progress_line(r, &last_ops, lg_now(), &last_t);
			next += LG_NSEC;
		}
	}
}

/* ---- report ---- */

static void json_config(const struct lg_config *c)
{
	printf("\"config\":{\"server\":\"%s\",\"port\":%u,\"proto\":\"%s\",\"threads\":%u,\"cpus\":[",
	       c->server, c->port, lg_proto_name(c->proto), c->threads);
	for (unsigned i = 0; i < c->ncpus; i++)
		printf("%s%u", i ? "," : "", c->cpus[i]);
	printf("],\"depth\":%u,\"conns\":%u,\"mode\":\"%s\",\"rate\":%.0f,\"keys\":%llu,", c->depth,
	       c->conns, c->rate > 0 ? "open" : "closed", c->rate, (unsigned long long)c->keys);
	if (c->dist == LG_ZIPF)
		printf("\"dist\":\"zipf:%g\",", c->theta);
	else
		printf("\"dist\":\"uniform\",");
	printf("\"workload\":\"%s\",\"workload_source\":\"%s\",", wl_name(c->wl.kind),
	       wl_source(c->wl.kind));
	printf("\"key_size\":%u,\"value_sizes\":[", c->key_size);
	for (unsigned i = 0; i < c->nvalues; i++)
		printf("%s%u", i ? "," : "", c->values[i]);
	printf("],\"write_ratio\":%g,\"scan_ratio\":%g,\"scan_len\":%u,\"timeout_ms\":%u,"
	       "\"duration\":%g,\"warmup\":%g,\"requests\":%llu,\"preload\":%s,\"verify_only\":%s,"
	       "\"spin\":%s,\"echo\":%s,\"kernel_stamps\":%s,\"seed\":%llu},",
	       c->write_ratio, c->scan_ratio, c->scan_len, c->timeout_ms, c->duration, c->warmup,
	       (unsigned long long)c->requests, c->preload ? "true" : "false",
	       c->verify_only ? "true" : "false", c->spin ? "true" : "false",
	       c->echo ? "true" : "false", c->kstamp ? "true" : "false", (unsigned long long)c->seed);
}

static double us(uint64_t ns)
{
	return (double)ns / 1000.0;
}

static void report_json(const struct run *r, const struct lg_counters *n, const struct lg_hist *h,
			double win, double cpu)
{
	uint64_t ops = n->gets + n->sets + n->scans;

	printf("{");
	json_config(&r->c);
	printf("\"duration_s\":%.6f,\"ops\":%llu,\"throughput_ops\":%.1f,", win,
	       (unsigned long long)ops, win > 0 ? ops / win : 0.0);
	if (r->c.rate > 0)
		printf("\"offered_rate\":%.1f,", r->c.rate);
	else
		printf("\"offered_rate\":null,");
	printf("\"gets\":%llu,\"sets\":%llu,\"scans\":%llu,\"hits\":%llu,\"misses\":%llu,"
	       "\"wrong_values\":%llu,\"timeouts\":%llu,\"late_replies\":%llu,\"errors\":%llu,",
	       (unsigned long long)n->gets, (unsigned long long)n->sets,
	       (unsigned long long)n->scans, (unsigned long long)n->hits,
	       (unsigned long long)n->misses, (unsigned long long)n->wrong,
	       (unsigned long long)n->timeouts, (unsigned long long)n->late,
	       (unsigned long long)n->errors);
	printf("\"latency_us\":{\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f,\"p999\":%.2f,\"max\":%.2f,"
	       "\"mean\":%.2f},",
	       us(lg_hist_pct(h, 0.5)), us(lg_hist_pct(h, 0.9)), us(lg_hist_pct(h, 0.99)),
	       us(lg_hist_pct(h, 0.999)), us(h->max), h->count ? us(h->sum / h->count) : 0.0);
	printf("\"client_cpu_s\":%.3f,", cpu);
	if (r->c.preload)
		printf("\"preload\":{\"keys\":%llu,\"seconds\":%.3f,\"errors\":%llu,\"retries\":%llu},",
		       (unsigned long long)r->c.keys, r->preload_s,
		       (unsigned long long)r->preload.errors,
		       (unsigned long long)r->preload.timeouts);
	printf("\"per_thread\":[");
	for (unsigned i = 0; i < r->c.threads; i++) {
		const struct lg_thread *t = &r->t[i];
		uint64_t o = t->n.gets + t->n.sets + t->n.scans;
		double w = window_s(r, i);
		printf("%s{\"id\":%u,\"cpu\":%d,\"ops\":%llu,\"throughput_ops\":%.1f,\"timeouts\":%llu}",
		       i ? "," : "", i, t->pinned ? (int)t->cpu : -1, (unsigned long long)o,
		       w > 0 ? o / w : 0.0, (unsigned long long)t->n.timeouts);
	}
	printf("]}\n");
}

static void report_human(const struct run *r, const struct lg_counters *n,
			 const struct lg_hist *h, double win, double cpu)
{
	const struct lg_config *c = &r->c;
	uint64_t ops = n->gets + n->sets + n->scans;

	printf("xkv-loadgen: %s %s:%u, %u thread(s), %s loop", lg_proto_name(c->proto), c->server,
	       c->port, c->threads, c->rate > 0 ? "open" : "closed");
	if (c->rate > 0)
		printf(" at %.0f req/s offered", c->rate);
	else
		printf(", depth %u", c->depth);
	printf("\n");
	if (c->preload)
		printf("  preload     %llu keys in %.2f s (%llu errors, %llu retried)\n",
		       (unsigned long long)c->keys, r->preload_s,
		       (unsigned long long)r->preload.errors, (unsigned long long)r->preload.timeouts);
	printf("  ops         %llu in %.2f s = %.0f ops/s\n", (unsigned long long)ops, win,
	       win > 0 ? ops / win : 0.0);
	printf("  mix         %llu gets, %llu sets, %llu scans\n", (unsigned long long)n->gets,
	       (unsigned long long)n->sets, (unsigned long long)n->scans);
	printf("  keys read   %llu hits, %llu misses\n", (unsigned long long)n->hits,
	       (unsigned long long)n->misses);
	printf("  problems    %llu wrong values, %llu timeouts, %llu errors\n",
	       (unsigned long long)n->wrong, (unsigned long long)n->timeouts,
	       (unsigned long long)n->errors);
	printf("  latency us  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  mean %.1f\n",
	       us(lg_hist_pct(h, 0.5)), us(lg_hist_pct(h, 0.9)), us(lg_hist_pct(h, 0.99)),
	       us(lg_hist_pct(h, 0.999)), us(h->max), h->count ? us(h->sum / h->count) : 0.0);
	printf("  client cpu  %.2f s\n", cpu);
}

/* ---- --dump-key-histogram ---- */

static int cmp_desc(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

static int dump_keys(const struct lg_config *c)
{
	uint32_t *cnt = calloc(c->keys, sizeof(*cnt)), *sorted;
	struct lg_rng rng = { c->seed };
	uint64_t distinct = 0, hot = 0;

	if (!cnt) {
		fprintf(stderr, "xkv-loadgen: out of memory for %llu counters\n",
			(unsigned long long)c->keys);
		return 1;
	}
	for (uint64_t i = 0; i < c->dump_keys; i++)
		cnt[lg_pick_key(c, &rng)]++;
	for (uint64_t i = 0; i < c->keys; i++) {
		distinct += cnt[i] > 0;
		if (cnt[i] > cnt[hot])
			hot = i;
	}
	printf("{\"draws\":%llu,\"keys\":%llu,\"distinct\":%llu,\"hottest_key\":%llu,"
	       "\"top1_share\":%.6f,\"uniform_share\":%.9f,\"top\":[",
	       (unsigned long long)c->dump_keys, (unsigned long long)c->keys,
	       (unsigned long long)distinct, (unsigned long long)hot,
	       (double)cnt[hot] / c->dump_keys, 1.0 / c->keys);
	sorted = cnt;
	qsort(sorted, c->keys, sizeof(*sorted), cmp_desc);
	for (unsigned i = 0; i < 10 && i < c->keys; i++)
		printf("%s%.6f", i ? "," : "", (double)sorted[i] / c->dump_keys);
	printf("]}\n");
	free(cnt);
	return 0;
}

int main(int argc, char **argv)
{
	static struct run r;
	struct lg_counters n;
	static struct lg_hist h;
	pthread_t th[256];
	double cpu0, win;
	uint64_t tp;
	int rc;

	rc = lg_parse_opts(&r.c, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (r.c.dump_keys)
		return dump_keys(&r.c);
	signal(SIGPIPE, SIG_IGN);
	the_run = &r;
	r.t = calloc(r.c.threads, sizeof(*r.t));
	if (!r.t) {
		fprintf(stderr, "xkv-loadgen: out of memory\n");
		return 1;
	}
	pthread_barrier_init(&r.ready, NULL, r.c.threads + 1);
	pthread_barrier_init(&r.go, NULL, r.c.threads + 1);
	for (unsigned i = 0; i < r.c.threads; i++) {
		r.t[i].id = i;
		r.t[i].c = &r.c;
		r.t[i].rng.s = r.c.seed * 0x2545f4914f6cdd1dULL + i * 0x9e3779b97f4a7c15ULL + 1;
		if (pthread_create(&th[i], NULL, worker, &r.t[i])) {
			fprintf(stderr, "xkv-loadgen: cannot start thread %u\n", i);
			return 1;
		}
	}
	tp = lg_now();
	pthread_barrier_wait(&r.ready);
	r.preload_s = seconds(lg_now() - tp);
	sum(&r, &r.preload, NULL);
	cpu0 = cpu_s();
	r.t0 = lg_now();
	pthread_barrier_wait(&r.go);
	wait_threads(&r, th);
	for (unsigned i = 0; i < r.c.threads; i++)
		if (r.t[i].err[0])
			fprintf(stderr, "xkv-loadgen: thread %u: %s\n", i, r.t[i].err);
	if (r.failed)
		return 1;
	sum(&r, &n, &h);
	win = run_window_s(&r);
	if (r.c.json)
		report_json(&r, &n, &h, win, cpu_s() - cpu0);
	else
		report_human(&r, &n, &h, win, cpu_s() - cpu0);
	return n.wrong ? 3 : 0;
}
