// SPDX-License-Identifier: MIT
/* What the reference model's files share (tests/refmodel*.c), beyond
 * the public refmodel.h: the tokenized line and the helpers one file
 * defines and another calls. */
#ifndef XKV_REFMODEL_INT_H
#define XKV_REFMODEL_INT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include "refmodel.h"
#include "base64.h"
#include "policy.h" /* XKV_R_AMP: the line, like wire.h's */
#include "hash.h"

#define TOK_MAX 64   /* the model keeps more tokens than the fast path serves */

struct line {
	const __u8 *p[TOK_MAX];
	__u32 len[TOK_MAX];
	__u32 n;        /* tokens seen, may exceed TOK_MAX */
};

enum put_res { PUT_OK, PUT_FULL };

#define R_NON_NUMERIC_M "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"

int alive(const struct rm_item *it, int64_t now);
struct rm_item *find(const struct rm_store *s, const void *key, __u32 klen);
void drop(struct rm_store *s, struct rm_item *it);
__u32 set_of(const struct rm_store *s, const void *key, __u32 klen);
struct rm_set *set_state(struct rm_store *s, __u32 b);
int64_t expiry(int64_t exptime, int64_t now);
enum put_res put(struct rm_store *s, const void *key, __u32 klen, __u32 flags,
			int64_t exptime, const void *val, __u32 len, int64_t now,
			struct xkv_stats *delta);
void count(struct rm_result *r, enum xkv_stat st);
void say(struct rm_result *r, const void *p, size_t n);
void say_str(struct rm_result *r, const char *s);
void touch(struct rm_result *r, const __u8 *key, __u32 klen);
void used(struct rm_store *s, struct rm_item *it);
const char *decimal(__u64 v, char d[24], size_t *n);
void pass(struct rm_result *r, enum xkv_stat why);
void discard(struct rm_result *r, enum xkv_stat why);
int tok_eq(const struct line *l, __u32 i, const char *s);
int number(const __u8 *p, __u32 n, __u64 max, __u64 *out);
int signed_number(const __u8 *p, __u32 n, int64_t *out);
/* A key longer than key_cap, not than 250: the fast path passes the
 * request on (the slow path reads no item under it and stores none) */
extern const char RM_KEY_UNSTORABLE[];
const char *key_problem(const struct rm_config *c, const __u8 *k, __u32 n);
void split(const __u8 *p, __u32 n, struct line *l);
void handle_text(struct rm_store *s, const __u8 *t, __u32 n, int64_t now, int may_write,
			struct rm_result *r);
void handle_binary(struct rm_store *s, const __u8 *t, __u32 n, int64_t now, struct rm_result *r);
__u16 be16(const __u8 *p);
void out_put(struct rm_text *t, const void *p, size_t n);
void out_str(struct rm_text *t, const char *s);
void out_u64(struct rm_text *t, __u64 v);
void out_s64(struct rm_text *t, int64_t v);
int model_fault(struct rm_text *t, const char *why, const struct line *l);
struct rm_item *present(struct rm_store *s, const __u8 *k, __u32 n, int64_t now);
int new_cas(struct rm_store *s, const __u8 *k, __u32 n, __u64 before, rm_cas_fn cas,
		   void *arg, struct rm_text *t, int64_t now);
struct rm_item *model_store(struct rm_store *s, const __u8 *k, __u32 n, __u32 flags,
				   int64_t expire, const void *val, __u32 len, int64_t now);
void model_digits(__u64 v, __u8 *d, __u32 *n);
__u32 digits_len(const struct rm_item *it);
int model_arith(struct rm_store *s, struct rm_item *it, int incr, __u64 delta, int64_t now);
int model_mg(struct rm_store *s, const struct line *l, int64_t now, rm_cas_fn cas,
		    void *arg, struct rm_text *t);
int model_ms(struct rm_store *s, const struct line *l, const __u8 *data, int64_t now,
		    rm_cas_fn cas, void *arg, struct rm_text *t);
int model_md(struct rm_store *s, const struct line *l, int64_t now, rm_cas_fn cas,
		    void *arg, struct rm_text *t);
int model_ma(struct rm_store *s, const struct line *l, int64_t now, rm_cas_fn cas,
		    void *arg, struct rm_text *t);
int model_me(struct rm_store *s, const struct line *l, int64_t now, struct rm_text *t);

#endif
