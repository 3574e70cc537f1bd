// SPDX-License-Identifier: MIT
/* What the binary protocol test files share (tests/test_binproto.c and
 * tests/binproto_*.c): the store loaded in-process (env), request frames
 * built and response frames decoded, one stream call and one request through
 * it, the pass/fail counters. */
#ifndef XKV_BINPROTO_TEST_H
#define XKV_BINPROTO_TEST_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include "inproc.h"
#include "xdpkv.h"
#include "slowpath.h"
#include "binproto.h"
#include "sasl.h"

#define VAL_CAP 4096
#define ENTRIES 4096
#define BIG_CHUNKS 2048

struct env {
	struct bpf_object *obj;
	struct xkv_store s;
	struct xkv_slow *sl;
	struct xkv_stats delta;
};

/* One response, decoded. */
struct res {
	__u8 op, extlen;
	__u16 status, keylen;
	__u32 opaque, flags;
	__u64 cas;
	const __u8 *key, *val;
	__u32 vlen;
};

extern int n_pass, n_fail;
extern const char *layout;
void report(bool ok, const char *fmt, ...);
int env_open(struct env *e, const char *name);
void env_close(struct env *e);
void be(__u8 *p, __u64 v, int n);
__u64 rd(const __u8 *p, int n);
void req(struct xkv_buf *b, __u8 op, __u32 opaque, __u64 cas, const void *ext, __u8 extlen,
	 const char *key, const void *val, __u32 vlen);
void req_set(struct xkv_buf *b, __u8 op, __u32 opaque, __u64 cas, const char *key,
	     const char *val, __u32 flags, __u32 exp);
void req_arith(struct xkv_buf *b, __u8 op, __u32 opaque, const char *key, __u64 delta,
	       __u64 initial, __u32 exp);
int next_res(const struct xkv_buf *out, size_t *off, struct res *r);
int run(struct env *e, struct xkv_slow_stream *st, const struct xkv_buf *in, struct xkv_buf *out,
	size_t *used);
bool one(struct env *e, const struct xkv_buf *in, struct res *r);
void flush_settle(struct env *e);
bool val_is(const struct res *r, const char *v);
/* tests/binproto_conn.c */
void t_malformed(struct env *e);
void t_udp(struct env *e);
void t_sasl(struct env *e);

#endif
