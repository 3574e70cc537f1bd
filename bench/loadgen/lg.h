/* SPDX-License-Identifier: MIT */
/* xkv-loadgen: one load generator for xdpkv, memcached and Redis
 * (bench/loadgen/README.md).  Shared types of its parts:
 *
 *   opts.c   command line          keys.c   key choice (uniform, Zipf)
 *   value.c  self-checking values  hist.c   latency histogram
 *   workload.c  key and value sizes by workload name (fixed, etc, twitter)
 *   proto.c  requests and replies  engine.c the per-thread loops
 *   main.c   threads, progress, report
 */
#ifndef XKV_LG_H
#define XKV_LG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "workload.h"

#define LG_KEY_MIN       16
#define LG_KEY_MAX       250
#define LG_VAL_MIN       32
#define LG_VAL_MAX       1024
#define LG_VAL_CHOICES   16
#define LG_CPUS_MAX      64
#define LG_UDP_MAX       65507 /* largest UDP payload */
#define LG_NSEC          1000000000ULL

enum lg_proto { LG_MC_UDP, LG_MC_TCP, LG_REDIS };
enum lg_dist { LG_UNIFORM, LG_ZIPF };
enum lg_op { LG_GET, LG_SET, LG_SCAN };

/* ---- key choice (keys.c) ---- */

struct lg_zipf {
	uint64_t n;
	double theta, alpha, zetan, eta, half_pow_theta;
};

struct lg_rng {
	uint64_t s;
};

uint64_t lg_rand(struct lg_rng *r);
double lg_rand01(struct lg_rng *r);
void lg_zipf_init(struct lg_zipf *z, uint64_t n, double theta);
uint64_t lg_zipf_rank(const struct lg_zipf *z, struct lg_rng *r);
uint64_t lg_scramble(uint64_t rank, uint64_t n);

/* ---- configuration (opts.c) ---- */

struct lg_config {
	const char *server;
	unsigned port;
	enum lg_proto proto;
	unsigned threads;
	unsigned cpus[LG_CPUS_MAX], ncpus;
	unsigned depth;
	unsigned conns;              /* TCP connections per thread */
	double rate;                 /* open loop, total requests/s; 0: closed loop */
	uint64_t keys;
	enum lg_dist dist;
	double theta;
	unsigned key_size;           /* fixed; etc/twitter: the largest key */
	unsigned values[LG_VAL_CHOICES], nvalues; /* value sizes, one chosen per write */
	struct wl wl;                /* --workload: etc/twitter size each key by its id */
	bool mixed;
	double write_ratio, scan_ratio; /* percent */
	unsigned scan_len;
	unsigned timeout_ms;
	double duration, warmup;     /* seconds */
	uint64_t requests;           /* > 0: run this many measured requests instead */
	bool preload, verify_only;
	bool json, quiet, progress;
	bool spin;                   /* UDP: poll the socket without sleeping (busy-polling receive) */
	bool echo;                   /* UDP: any datagram with a request's id answers it, unparsed */
	bool kstamp;                 /* UDP: a reply's time is the kernel's receive timestamp */
	uint64_t seed;
	uint64_t dump_keys;          /* > 0: print the key histogram of this many draws */

	/* derived */
	struct lg_zipf zipf;
	struct sockaddr_storage addr;
	socklen_t addrlen;
};

int lg_parse_opts(struct lg_config *c, int argc, char **argv);
const char *lg_proto_name(enum lg_proto p);
uint64_t lg_pick_key(const struct lg_config *c, struct lg_rng *r);
/* Key i's size (--key-size, or its workload's size for it). */
unsigned lg_klen(const struct lg_config *c, uint64_t i);

/* ---- values (value.c) ---- */

/* Worst case bytes of a request for this config (key, value, framing). */
int lg_value_make(char *out, unsigned vlen, uint64_t key, unsigned klen, uint64_t version);
bool lg_value_check(const char *val, size_t vlen, uint64_t key, unsigned klen);
int lg_key(char *out, unsigned klen, uint64_t i);
/* Index of a key written by lg_key, or -1 if it is not one. */
int64_t lg_key_index(const char *k, size_t len, unsigned klen);

/* ---- latency histogram (hist.c) ---- */

#define LG_HIST_SUB_BITS 7
#define LG_HIST_BUCKETS  ((36 - LG_HIST_SUB_BITS) << LG_HIST_SUB_BITS)

struct lg_hist {
	uint64_t count, max, sum;
	uint64_t b[LG_HIST_BUCKETS];
};

void lg_hist_add(struct lg_hist *h, uint64_t ns);
void lg_hist_merge(struct lg_hist *to, const struct lg_hist *from);
uint64_t lg_hist_pct(const struct lg_hist *h, double q); /* ns */

/* ---- requests and replies (proto.c) ---- */

struct lg_req {
	enum lg_op op;
	uint64_t key;      /* first key */
	unsigned count;    /* keys (1, or scan length) */
	unsigned vlen;     /* SET */
	uint64_t version;  /* SET */
	uint64_t sched_ns, sent_ns;
	bool measured;
};

struct lg_result {
	unsigned hits, misses, wrong, errors;
};

/* Append the request text to out (cap bytes); returns its length or -1. */
int lg_req_write(const struct lg_config *c, const struct lg_req *q, char *out, size_t cap);
/* Parse one reply to q from buf: > 0 bytes consumed (complete), 0 need
 * more, -1 not a reply of this protocol. */
long lg_reply_parse(const struct lg_config *c, const struct lg_req *q, const char *buf,
		    size_t len, struct lg_result *res);
size_t lg_req_max(const struct lg_config *c);

/* ---- per-thread state and loops (engine.c) ---- */

struct lg_counters {
	uint64_t gets, sets, scans, hits, misses, wrong, timeouts, errors;
	uint64_t late; /* UDP: replies that came after their request's timeout (or not ours) */
};

struct lg_thread {
	unsigned id, cpu;
	bool pinned;
	const struct lg_config *c;
	struct lg_rng rng;
	uint64_t version;
	/* preload / verify-only: this thread's key range */
	uint64_t range_lo, range_hi, range_next;
	uint64_t *retry;
	size_t nretry, retry_cap;
	bool sequential, all_sets, measure_all;
	/* measurement window */
	uint64_t t_start, t_measure, t_end, quota, issued_measured;
	uint64_t t_last_done;
	struct lg_counters n;
	struct lg_hist hist;
	_Atomic uint64_t progress_ops, progress_timeouts, progress_wrong;
	char err[256];
};

uint64_t lg_now(void);
/* Run the phase configured in t; 0 on success, -1 with t->err set. */
int lg_run(struct lg_thread *t);
int lg_connect(const struct lg_config *c, int type, char *err, size_t errlen);

#endif
