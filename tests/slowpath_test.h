// SPDX-License-Identifier: MIT
/* What the slow path test files share (tests/test_slowpath.c and
 * tests/slowpath_*.c): the in-process store, asking it, checking replies,
 * reassembling frames, the stream connection, the pass/fail counters. */
#ifndef XKV_SLOWPATH_TEST_H
#define XKV_SLOWPATH_TEST_H

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include "inproc.h"
#include "xdpkv.h"
#include "fnv.h"
#include "slowpath.h"
#include "refmodel.h"
#include "set_assoc/bucket.h"

#define REQ_ID 0x1234
#define VAL_CAP 8192
#define ENTRIES 4096
#define MAX_FRAMES 4096

struct env {
	const char *layout;
	struct bpf_object *obj;
	struct xkv_store s;
	struct xkv_slow *sl;
	const struct xkv_slow_src *src; /* NULL: a trusted local caller */
	struct xkv_stats delta;
};

#define EXPECT(e, req, want) expect_n(e, NULL, req, sizeof(req) - 1, want, sizeof(want) - 1)
#define EXPECTB(e, what, req, want) expect_n(e, what, (req)->p, (req)->len, (want)->p, (want)->len)
/* request in a buffer, reply a literal */
#define EXPECTL(e, what, req, lit) expect_n(e, what, (req)->p, (req)->len, lit, sizeof(lit) - 1)

struct frames {
	int n;
	size_t len[MAX_FRAMES];
	__u8 d[MAX_FRAMES][XKV_DGRAM_MAX + 64];
};

/* A connection as the TCP server keeps it: what arrived and was not
 * consumed, and every reply so far. */
struct conn {
	struct xkv_slow_stream st;
	const struct xkv_slow_src *src;
	struct xkv_buf in, out;
	int closed;
	size_t max_in;       /* the most input ever held */
};

extern int n_pass, n_fail;
void report(int ok, const char *fmt, ...);
void tprintf(struct xkv_buf *b, const char *fmt, ...);
void tput(struct xkv_buf *b, const void *p, size_t n);
void print_escaped(const char *label, const __u8 *p, size_t n, size_t max);
void show_diff(const __u8 *got, size_t gl, const __u8 *want, size_t wl);
void short_name(char *dst, size_t n, const void *src, size_t len);
extern __u32 env_big_chunks;
extern __u32 env_key_cap;
extern __u32 env_rate_limit, env_rate_burst;
int env_open_cfg(struct env *e, const char *layout, __u32 entries, __u32 val_cap,
			__u32 cfg_flags, __u32 max_amp);
int env_open(struct env *e, const char *layout, __u32 entries, __u32 val_cap);
void env_close(struct env *e);
size_t mkdgram(__u8 *d, __u16 id, __u16 seq, __u16 total, const void *text, size_t len);
int ask(struct env *e, const void *req, size_t len, struct xkv_buf *out);
void expect_hdr(struct env *e, const char *what, __u16 seq, __u16 total, const void *req,
		       size_t rl, const void *want, size_t wl);
void expect_n(struct env *e, const char *what, const void *req, size_t rl,
		     const void *want, size_t wl);
int flush_wait(struct env *e, int timeout_ms);
void flush_store(struct env *e);
int collect(void *arg, const __u8 *dgram, size_t dlen);
int reassemble(const struct frames *f, __u16 req_id_be, struct xkv_buf *text, char *why, size_t wl);
void expect_framed(struct env *e, const char *what, const struct xkv_buf *req,
			  const struct xkv_buf *want, int ndgrams);
void t_basic(struct env *e);
void t_add_replace(struct env *e);
void t_arith(struct env *e);
void t_errors(struct env *e);
void t_multi_cmd(struct env *e);
void t_paused(struct env *e);
void t_flush(struct env *e);
void fill(__u8 *p, size_t n, unsigned seed);
void st_mget(struct env *e); /* slowpath_mget.c */
void t_large(struct env *e);
void t_multiget(struct env *e);
void t_counters(struct env *e);
int stat_field(const struct xkv_buf *b, const char *name, char *val, size_t vl);
void t_stats(struct env *e);
void t_stats_groups(struct env *e);
void t_metadump(struct env *e);
void t_exact(struct env *e); /* slowpath_exact.c */
void t_oom(void);
void t_percpu(struct env *e);
void t_access(struct env *e);
void t_silence(struct env *e);
void t_amp(void);
void t_ratelimit(void);
void t_big_budget(void);
void t_stamp_ids(void);
void t_limits(void);
void t_big(void);
void t_mig_fixup(void);
void t_mig_longkey(void);
void t_key_cap(void);
int item_of(struct env *e, const char *key, struct xkv_item *it);
__u64 cas_of(struct env *e, const char *key);
void t_append(struct env *e);
void t_gets_cas(struct env *e);
void t_touch(struct env *e);
void t_meta(struct env *e);
void t_atomic(struct env *e);
int feed(struct env *e, struct conn *c, const void *p, size_t n);
void conn_free(struct conn *c);
int same(const struct xkv_buf *got, const void *want, size_t wl);
void expect(struct env *e, const char *what, const char *req, const char *want, int closes);
void clear(struct env *e);
/* Run fn on every layout's store in turn (env_only: that layout alone; the
 * modes' cases outside each_layout run when it is NULL or "once"). */
extern const char *env_only;
void each_layout(void (*fn)(struct env *e));
int run_stream(void);
int run_model(__u64 seed, int steps);
int run_daemon(void);
void run_bigvals(void);

#endif
