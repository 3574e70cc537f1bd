/* SPDX-License-Identifier: MIT */
/* Requests and replies: memcached ASCII (UDP and TCP) and Redis RESP.
 *
 * Replies are parsed from the start each time more bytes arrive, and
 * counted only once complete, so a reply split over datagrams or TCP reads
 * is never counted twice.  Every value read is checked (value.c); a value
 * under the wrong key or with a bad checksum is a wrong value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg.h"

#define LG_VAL_TOKEN 96 /* enough for "set <key> 0 0 <len>" bookkeeping */

size_t lg_req_max(const struct lg_config *c)
{
	size_t per_key = c->key_size + 16;
	unsigned vmax = 0, nk = c->scan_ratio > 0 ? c->scan_len : 1;

	for (unsigned i = 0; i < c->nvalues; i++)
		if (c->values[i] > vmax)
			vmax = c->values[i];
	return 64 + per_key * nk + vmax + LG_VAL_TOKEN;
}

static int put(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
	if (*len + n > cap)
		return -1;
	memcpy(out + *len, s, n);
	*len += n;
	return 0;
}

static int put_key(char *out, size_t cap, size_t *len, const struct lg_config *c, uint64_t i)
{
	char k[LG_KEY_MAX + 1];
	unsigned kl = lg_klen(c, i);
	lg_key(k, kl, i);
	return put(out, cap, len, k, kl);
}

static int put_fmt(char *out, size_t cap, size_t *len, const char *fmt, unsigned long long v)
{
	char b[48];
	int n = snprintf(b, sizeof(b), fmt, v);
	return put(out, cap, len, b, (size_t)n);
}

/* Key i of a request: scans read consecutive keys, wrapping at the end. */
static uint64_t key_at(const struct lg_config *c, const struct lg_req *q, unsigned j)
{
	return (q->key + j) % c->keys;
}

static int write_value(const struct lg_config *c, const struct lg_req *q, char *out, size_t cap,
		       size_t *len)
{
	if (*len + q->vlen > cap)
		return -1;
	if (lg_value_make(out + *len, q->vlen, q->key, lg_klen(c, q->key), q->version) < 0)
		return -1;
	*len += q->vlen;
	return 0;
}

static int mc_write(const struct lg_config *c, const struct lg_req *q, char *out, size_t cap,
		    size_t *len)
{
	int e = 0;

	if (q->op == LG_SET) {
		e |= put(out, cap, len, "set ", 4);
		e |= put_key(out, cap, len, c, q->key);
		e |= put_fmt(out, cap, len, " 0 0 %llu\r\n", q->vlen);
		e |= write_value(c, q, out, cap, len);
		return e | put(out, cap, len, "\r\n", 2);
	}
	e |= put(out, cap, len, "get", 3);
	for (unsigned j = 0; j < q->count; j++) {
		e |= put(out, cap, len, " ", 1);
		e |= put_key(out, cap, len, c, key_at(c, q, j));
	}
	return e | put(out, cap, len, "\r\n", 2);
}

static int resp_bulk_key(char *out, size_t cap, size_t *len, const struct lg_config *c, uint64_t i)
{
	return put_fmt(out, cap, len, "$%llu\r\n", lg_klen(c, i)) | put_key(out, cap, len, c, i) |
	       put(out, cap, len, "\r\n", 2);
}

static int redis_write(const struct lg_config *c, const struct lg_req *q, char *out, size_t cap,
		       size_t *len)
{
	int e = 0;

	if (q->op == LG_SET) {
		e |= put(out, cap, len, "*3\r\n$3\r\nSET\r\n", 13);
		e |= resp_bulk_key(out, cap, len, c, q->key);
		e |= put_fmt(out, cap, len, "$%llu\r\n", q->vlen);
		e |= write_value(c, q, out, cap, len);
		return e | put(out, cap, len, "\r\n", 2);
	}
	if (q->op == LG_GET) {
		e |= put(out, cap, len, "*2\r\n$3\r\nGET\r\n", 13);
		return e | resp_bulk_key(out, cap, len, c, q->key);
	}
	e |= put_fmt(out, cap, len, "*%llu\r\n$4\r\nMGET\r\n", q->count + 1ULL);
	for (unsigned j = 0; j < q->count; j++)
		e |= resp_bulk_key(out, cap, len, c, key_at(c, q, j));
	return e;
}

int lg_req_write(const struct lg_config *c, const struct lg_req *q, char *out, size_t cap)
{
	size_t len = 0;
	int e = c->proto == LG_REDIS ? redis_write(c, q, out, cap, &len)
				     : mc_write(c, q, out, cap, &len);
	return e ? -1 : (int)len;
}

/* ---- replies ---- */

/* End of the line starting at p (index of its '\r'), or -1 if not all here. */
static long line_end(const char *buf, size_t len, size_t p)
{
	const char *e = memchr(buf + p, '\n', len - p);
	if (!e)
		return -1;
	if (e == buf + p || e[-1] != '\r')
		return -2;
	return (long)(e - buf) - 1;
}

static bool starts(const char *buf, size_t p, long end, const char *s)
{
	size_t n = strlen(s);
	return (size_t)(end - (long)p) >= n && !memcmp(buf + p, s, n);
}

static bool is_error_line(const char *buf, size_t p, long end)
{
	return starts(buf, p, end, "ERROR") || starts(buf, p, end, "SERVER_ERROR") ||
	       starts(buf, p, end, "CLIENT_ERROR");
}

/* Which key of q the reply key names; -1 if none at or after *next. */
static long match_key(const struct lg_config *c, const struct lg_req *q, const char *k, size_t n,
		      unsigned next)
{
	int64_t i = lg_key_index(k, n, (unsigned)n);
	if (i < 0 || (uint64_t)i >= c->keys || lg_klen(c, (uint64_t)i) != n)
		return -1;
	for (unsigned j = next; j < q->count; j++)
		if (key_at(c, q, j) == (uint64_t)i)
			return j;
	return -1;
}

/* "VALUE <key> <flags> <bytes>\r\n<data>\r\n" at p, line ending at end. */
static long mc_value(const struct lg_config *c, const struct lg_req *q, const char *buf,
		     size_t len, size_t p, long end, unsigned *next, struct lg_result *r)
{
	const char *k = buf + p + 6, *sp, *lim = buf + end;
	unsigned long long bytes;
	char tail[32], *stop;
	size_t kl, tl, data;
	long j;

	sp = memchr(k, ' ', (size_t)(lim - k));
	if (!sp)
		return -1;
	kl = (size_t)(sp - k);
	tl = (size_t)(lim - sp);
	if (tl >= sizeof(tail))
		return -1;
	memcpy(tail, sp, tl);
	tail[tl] = 0;
	/* flags, bytes (and maybe a cas) */
	strtoul(tail, &stop, 10);
	bytes = strtoull(stop, &stop, 10);
	if (stop == tail)
		return -1;
	data = (size_t)end + 2;
	if (bytes > len || data + bytes + 2 > len)
		return 0;
	if (memcmp(buf + data + bytes, "\r\n", 2))
		return -1;
	r->hits++;
	j = match_key(c, q, k, kl, *next);
	if (j < 0 || !lg_value_check(buf + data, bytes, key_at(c, q, (unsigned)j),
				     lg_klen(c, key_at(c, q, (unsigned)j))))
		r->wrong++;
	if (j >= 0)
		*next = (unsigned)j + 1;
	return (long)(data + bytes + 2);
}

static long mc_parse(const struct lg_config *c, const struct lg_req *q, const char *buf,
		     size_t len, struct lg_result *r)
{
	size_t p = 0;
	unsigned next = 0;

	for (;;) {
		long end = line_end(buf, len, p), n;
		if (end == -1)
			return 0;
		if (end < 0)
			return -1;
		if (is_error_line(buf, p, end)) {
			r->errors++;
			return end + 2;
		}
		if (q->op == LG_SET) {
			if (!starts(buf, p, end, "STORED") || end - (long)p != 6)
				r->errors++; /* NOT_STORED, EXISTS, ... */
			return end + 2;
		}
		if (starts(buf, p, end, "END") && end - (long)p == 3) {
			r->misses = q->count - r->hits;
			return end + 2;
		}
		if (!starts(buf, p, end, "VALUE "))
			return -1;
		n = mc_value(c, q, buf, len, p, end, &next, r);
		if (n <= 0)
			return n;
		p = (size_t)n;
	}
}

/* A RESP bulk string at p: > 0 end, 0 incomplete, -1 bad; *nil for $-1. */
static long resp_bulk(const char *buf, size_t len, size_t p, const char **data, long *dlen)
{
	long end = line_end(buf, len, p);
	char *stop;
	long n;

	if (end == -1)
		return 0;
	if (end < 0 || buf[p] != '$')
		return -1;
	n = strtol(buf + p + 1, &stop, 10);
	if (stop != buf + end)
		return -1;
	if (n < 0) {
		*dlen = -1;
		return end + 2;
	}
	if ((size_t)end + 2 + (size_t)n + 2 > len)
		return 0;
	*data = buf + end + 2;
	*dlen = n;
	return end + 2 + n + 2;
}

static long redis_value(const struct lg_config *c, const struct lg_req *q, unsigned j,
			const char *buf, size_t len, size_t p, struct lg_result *r)
{
	const char *d = NULL;
	long dl = 0, n = resp_bulk(buf, len, p, &d, &dl);

	if (n <= 0)
		return n;
	if (dl < 0) {
		r->misses++;
	} else {
		r->hits++;
		if (!lg_value_check(d, (size_t)dl, key_at(c, q, j), lg_klen(c, key_at(c, q, j))))
			r->wrong++;
	}
	return n;
}

static long redis_parse(const struct lg_config *c, const struct lg_req *q, const char *buf,
			size_t len, struct lg_result *r)
{
	long end = line_end(buf, len, 0), n;
	size_t p;

	if (end == -1)
		return 0;
	if (end < 0)
		return -1;
	if (buf[0] == '-') {
		r->errors++;
		return end + 2;
	}
	if (q->op == LG_SET) {
		if (end != 3 || memcmp(buf, "+OK", 3))
			r->errors++;
		return end + 2;
	}
	if (q->op == LG_GET)
		return redis_value(c, q, 0, buf, len, 0, r);
	if (buf[0] != '*' || strtol(buf + 1, NULL, 10) != (long)q->count)
		return -1;
	p = (size_t)end + 2;
	for (unsigned j = 0; j < q->count; j++) {
		n = redis_value(c, q, j, buf, len, p, r);
		if (n <= 0)
			return n;
		p = (size_t)n;
	}
	return (long)p;
}

long lg_reply_parse(const struct lg_config *c, const struct lg_req *q, const char *buf,
		    size_t len, struct lg_result *res)
{
	memset(res, 0, sizeof(*res));
	if (c->proto == LG_REDIS)
		return redis_parse(c, q, buf, len, res);
	return mc_parse(c, q, buf, len, res);
}
