// SPDX-License-Identifier: MIT
/* What the packet fixture test files share (tests/test_fixtures.c and
 * tests/fixtures_*.c): the table's types, a run, the checks' helpers. */
#ifndef XKV_FIXTURES_TEST_H
#define XKV_FIXTURES_TEST_H

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "inproc.h"
#include "xdpkv.h"
#include "slowpath.h"
#include "fnv.h"
#include "pktbuild.h"
#include "refmodel.h"
#include "array_fnv/slot.h"
#include "set_assoc/bucket.h"
#include "arena/table.h"

#define FAM4 1
#define FAM6 2
#define BOTH (FAM4 | FAM6)
#define PASS RM_XDP_PASS
#define TX RM_XDP_TX
#define DROP RM_XDP_DROP

#define MAX_AMP 10          /* the tables' --max-amplification */
#define KEY_CAP 32
#define VAL_CAP 1024
#define CLIENT_PORT 40000

struct seed {
	const char *key;
	__u32 flags;
	int64_t exptime;
	const char *val;   /* NULL: vlen bytes of a pattern */
	__u32 vlen;
};

struct step {
	const char *text;  /* request text; NULL: the fixture's gen() writes it */
	int act;           /* expected XDP action */
	const char *reply; /* expected reply text when act is TX (NULL: the model's) */
	void (*mod)(struct pb *b); /* applied to this step's frame, after the fixture's */
	int why;           /* W(counter): the counter the table expects to go up; 0 none */
	int sleep_ms;      /* wait before sending (the rate limit refills) */
	__u32 text_len;    /* > 0: text is that many bytes (binary), not a C string */
	__u32 reply_len;   /* > 0: reply is that many bytes (binary) */
};
#define W(c) (XKV_STAT_##c + 1)
/* a table's rows: seeds and steps */
#define S(k, f, e, v) { k, f, e, v, 0 }
#define SBIG(k, n) { k, 0, 0, NULL, n }
#define ST(t, a, r) { t, a, r }
#define ROWS(a) a, (int)(sizeof(a) / sizeof(a[0]))
#define SM(t, mod, a, r) { t, a, r, mod }                /* with a step modifier */
#define SX(t, mod, a, r, c) { t, a, r, mod, W(c) }       /* ... and the counter it moves */

struct fixture {
	const char *name;
	unsigned fams;
	struct seed seeds[3];
	struct step steps[8];
	void (*gen)(struct pb *b, int64_t now);  /* payload for a step without text */
	void (*mod)(struct pb *b);               /* applied to every request frame */
	int keep;                                /* store must equal the seeds after */
};

static const struct seed K = { "k", 7, 0, "orig", 0 }; /* the key errors must not hurt */

/* One load of the program per table: the settings that are rodata. */
struct table {
	const char *name;
	__u32 flags;             /* XKV_CFG_* */
	__u32 max_amp, rate_limit, rate_burst;
	const struct fixture *rows;
	int nrows;
	int addrs_in_map;        /* local addresses only in local_addrs, not inline */
	int pause_writes;        /* the host entry says snapshot --pause-writes is running */
};

struct run {
	const struct xkv_layout *L;
	const char *table;      /* the table's name, "" for the default policy */
	struct bpf_object *obj;
	int prog_fd;
	struct xkv_store st;
	struct rm_config mc;
	__u64 seed;             /* --hash-seed for the layouts that take one (0: unseeded) */
	struct xkv_slow *sl;    /* the slow path on the same store: a binary reply must be its */
	int verbose;
	int passed, failed, skipped;
};

/* The seed the tables run array_fnv and set_assoc with (keyed placement, as
 * attach does by default; the model computes the same placement). */
#define FIXTURE_SEED 0x9b1d5eedc0ffee01ull

/* failure reporting: the first line names the fixture and the layout */
struct where {
	struct run *r;
	const char *name;
	int fam;
	int step;
	int bad;
	int ids;           /* IPv4 replies seen, and the last one's id */
	__u16 last_id;
};

struct keyset {
	__u8 k[128][XKV_KEY_MAX];
	__u32 len[128];
	__u32 n;
};

extern const char *const host_addrs[];
extern const char *const allow_nets[];
extern const char *const write_nets[];
extern const char *const trust_nets[];
extern const char *const tcp_peer_addrs[];
extern const struct table tables[];
extern const struct table setting_tables[]; /* fixtures_settings.c: the load-time settings */
extern const int n_setting_tables;
extern const struct table bin_tables[]; /* fixtures_bin.c: the binary protocol */
extern const int n_bin_tables;
/* frame modifiers the tables share (test_fixtures.c) */
void mod_total2(struct pb *b);
void from_reader(struct pb *b);   /* may read, may not write, not trusted */
void from_stranger(struct pb *b); /* outside the allow list */
void udp_csum_bad(struct pb *b);
void mod_seq1(struct pb *b);
void mod_csum0(struct pb *b);
void from_tcp_peer(struct pb *b);
void from_neighbour(struct pb *b);
void to_other_mac(struct pb *b);
void to_other_ip(struct pb *b);
void sport0(struct pb *b);
void sport_service(struct pb *b);
void sport1(struct pb *b);
void sport53(struct pb *b);
void ip_csum_bad(struct pb *b);
void udp_csum_partial(struct pb *b);
void stranger_bad_csum(struct pb *b);
void reader_sport53(struct pb *b);
int64_t unix_now(void);
void fail(struct where *w, const char *fmt, ...);
void request_frame(struct pb *b, int fam, int idx);
int send_frame(struct where *w, struct rm_store *m, const struct pb *req, int want_act,
		      const char *want_reply, size_t want_len, int why, __u8 *out, __u32 *outlen,
		      struct xkv_stats *delta);
void check_store(struct where *w, const struct rm_store *m, const __u8 (*keys)[XKV_KEY_MAX],
			const __u32 *klens, __u32 nkeys);
void keyset_add(struct keyset *ks, const void *k, __u32 len);
int seed_one(struct where *w, struct rm_store *m, const char *key, __u32 flags,
		    int64_t exptime, const __u8 *val, __u32 len);
int flush_store(struct run *r);
int layout_open(struct run *r, const char *name, __u32 entries, const struct table *t,
		       __u32 flags);
void layout_close(struct run *r);
int pin_cpu(int cpu);
int xdp_req(struct where *w, struct rm_store *m, const char *text, int want_act,
		   const char *want_reply, struct xkv_stats *delta);
void case_done(struct run *r, struct where *w);
int two_cpus(struct run *r, struct where *w);
int run_on(struct where *w, int cpu);
void case_array_collision(struct run *r);
void case_arena_window(struct run *r);
void case_arena_address(struct run *r);
void case_set_assoc_clock(struct run *r);
void case_bucket_random(struct run *r);
void case_sieve_hand(struct run *r);
void case_s3fifo_queues(struct run *r);
void case_lru_evict(struct run *r);
void run_binary_keys(struct run *r, const char *name);
void run_layout_cases(struct run *r, const char *name);
void check_map_opts(struct run *r, const char *name);
void run_table(struct run *r, const char *name, const struct table *t);

#endif
