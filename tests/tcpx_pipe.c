// SPDX-License-Identifier: MIT
/* Segments of several requests (common/tcpx_pipe.bpf.h) through the XDP
 * responder (xdpkv_tcpx, BPF_PROG_TEST_RUN) on a repair-mode socket serve
 * holds.  The oracle is the slow path (serve alone): each row's bytes are
 * run through xkv_slow_stream on the same store state first, then the
 * state is put back and the segment goes through the responder.  A row the
 * responder answers must give the slow path's reply bytes, in one segment,
 * and leave the store as the slow path left it; a row it must not answer
 * is passed on whole, the frame untouched and the store unchanged. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include "xdpkv.h"
#include "slowpath.h"
#include "wire.h"
#include "unit_check.h"
#include "tcpx_test.h"

#define RCV_NXT 7000
#define SND_NXT 90000
#define PIPE_CPORT (CPORT + 20)

enum want {
	ANSWERED,   /* XDP_TX: the slow path's reply bytes */
	ACKED,      /* no reply bytes (noreply writes): applied, the segment
		     * acknowledged from XDP by a pure ACK */
	WHOLE,      /* passed on untouched, nothing changed */
};

/* The keys a row may touch and the state each row starts from. */
static const char *const keys[] = { "a", "b", "c", "x", "y", "zz", "big" };
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static void reset_store(struct xkv_store *s)
{
	static char big[1000];
	memset(big, 'B', sizeof(big));
	const struct { const char *k, *v; size_t n; __u32 flags; } st[] = {
		{ "a", "hello", 5, 0 }, { "b", "bee", 3, 7 }, { "c", "", 0, 42 }, { "big", big, sizeof(big), 1 },
	};
	for (size_t i = 0; i < NKEYS; i++)
		s->L->del(s, keys[i], (__u32)strlen(keys[i]));
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		struct xkv_entry *e = xkv_entry_make(s, st[i].flags, 0, st[i].v, (__u32)st[i].n);
		if (e)
			s->L->set(s, st[i].k, (__u32)strlen(st[i].k), e);
		free(e);
	}
}

/* The store's view of the row's keys: present, flags, value. */
struct view {
	int has[NKEYS];
	__u32 flags[NKEYS], len[NKEYS];
	__u8 v[NKEYS][1024];
};

static void look(struct xkv_store *s, struct view *w)
{
	static struct xkv_item it;
	memset(w, 0, sizeof(*w));
	for (size_t i = 0; i < NKEYS; i++) {
		w->has[i] = s->L->get(s, keys[i], (__u32)strlen(keys[i]), &it) == 1;
		if (!w->has[i])
			continue;
		w->flags[i] = it.flags;
		w->len[i] = it.len;
		memcpy(w->v[i], it.data, it.len < 1024 ? it.len : 1024);
	}
}

static int same(const struct view *a, const struct view *b)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (a->has[i] != b->has[i] ||
		    (a->has[i] && (a->flags[i] != b->flags[i] || a->len[i] != b->len[i] ||
				   memcmp(a->v[i], b->v[i], a->len[i] < 1024 ? a->len[i] : 1024))))
			return 0;
	return 1;
}

/* A binary request appended at b[*n]: header, extras (a set's flags and
 * exptime when val), key, value. */
static void binv(__u8 *b, size_t *n, __u8 op, const char *key, __u32 opaque, const char *val, __u32 flags,
		 __u64 cas)
{
	__u16 kl = key ? (__u16)strlen(key) : 0;
	__u8 ext = val ? 8 : 0;
	__u32 vl = val ? (__u32)strlen(val) : 0;
	__u8 *h = b + *n;
	memset(h, 0, XKV_BIN_HDR_LEN);
	h[0] = XKV_BIN_REQ;
	h[1] = op;
	h[2] = (__u8)(kl >> 8), h[3] = (__u8)kl;
	h[4] = ext;
	__u32 body = htonl(ext + kl + vl), op_be = htonl(opaque), fl = htonl(flags), zero = 0;
	memcpy(h + 8, &body, 4);
	memcpy(h + 12, &op_be, 4);
	for (int i = 0; i < 8; i++)
		h[16 + i] = (__u8)(cas >> (56 - 8 * i));
	__u8 *p = h + XKV_BIN_HDR_LEN;
	if (ext) {
		memcpy(p, &fl, 4);
		memcpy(p + 4, &zero, 4);
		p += 8;
	}
	memcpy(p, key, kl);
	memcpy(p + kl, val, vl);
	*n += XKV_BIN_HDR_LEN + ext + kl + vl;
}

static void bin(__u8 *b, size_t *n, __u8 op, const char *key, __u32 opaque)
{
	binv(b, n, op, key, opaque, NULL, 0, 0);
}

/* Binary responses with their cas zeroed (a write's is its time). */
static void mask_cas(__u8 *p, size_t len)
{
	for (size_t i = 0; i + XKV_BIN_HDR_LEN <= len;) {
		__u32 body;
		memcpy(&body, p + i + 8, 4);
		memset(p + i + 16, 0, 8);
		i += XKV_BIN_HDR_LEN + ntohl(body);
	}
}

struct prow {
	const char *what;
	const char *text; /* NULL: bytes */
	const __u8 *bytes;
	size_t len;
	enum want want;
	__u16 win;        /* 0: 4096 */
	int cas_masked;   /* binary writes: their responses' cas is the write's time */
};

struct pctx {
	const char *L;
	int xdp, flows;
	struct xkv_store *s;
	struct xkv_slow *sl;
	struct xkv_tcpx_key k;
	__u8 in[4096];
	struct out o;
};

static void one_row(struct pctx *c, const struct prow *r)
{
	const __u8 *req = r->text ? (const __u8 *)r->text : r->bytes;
	size_t n = r->text ? strlen(r->text) : r->len;
	struct xkv_buf want = { 0 };
	struct xkv_slow_stream st = { 0 };
	struct xkv_stats delta = { 0 };
	size_t used = 0;
	static struct view before, oracle, after;

	/* the oracle: serve alone, on the row's starting state */
	reset_store(c->s);
	look(c->s, &before);
	xkv_slow_stream(c->sl, NULL, &st, req, n, &used, &want, &delta);
	look(c->s, &oracle);
	/* the responder, from the same state, as the connection's first data
	 * (the items themselves when nothing was written: a binary reply
	 * carries their cas) */
	if (!same(&oracle, &before))
		reset_store(c->s);
	bpf_map_delete_elem(c->flows, &c->k);
	struct seg g = { .saddr = htonl(0x7f000002), .daddr = htonl(0x7f000001), .sport = PIPE_CPORT,
			 .dport = PORT, .flags = F_ACK | F_PSH, .seq = RCV_NXT, .ack = SND_NXT,
			 .win = r->win, .tsval = 9, .tsecr = 7, .payload = (const char *)req, .plen = n };
	size_t fl = build(&g, c->in);
	__u64 a0 = counter(c->s, XKV_STAT_tcpx_answered), p0 = counter(c->s, XKV_STAT_tcpx_pipelined);
	run(c->xdp, c->in, fl, &c->o);
	look(c->s, &after);
	__u8 *t = (__u8 *)tcp_of(&c->o);
	size_t hl = (size_t)(t[12] >> 4) * 4, got = c->o.len - (size_t)(t - c->o.f) - hl;
	int sum_ok = csum_ok(c->o.f, c->o.len);
	if (r->cas_masked && r->want == ANSWERED) {
		mask_cas(want.p, want.len);
		mask_cas(t + hl, got);
	}
	struct xkv_tcpx_flow f;
	int has_flow = !get_flow(c->flows, &c->k, &f);
	__u64 da = counter(c->s, XKV_STAT_tcpx_answered) - a0, dp = counter(c->s, XKV_STAT_tcpx_pipelined) - p0;

	if (getenv("TCPX_PIPE_DUMP") && r->want == ANSWERED && (got != want.len || memcmp(t + hl, want.p, want.len))) {
		for (size_t i = 0; i < want.len || i < got; i++)
			fprintf(stderr, "%3zu %02x %02x%s\n", i, i < want.len ? want.p[i] : 0, i < got ? t[hl + i] : 0,
				i < want.len && i < got && want.p[i] != t[hl + i] ? " <" : "");
	}
	switch (r->want) {
	case ANSWERED:
		CHECK(used == n && c->o.ret == XDP_TX && got == want.len && !memcmp(t + hl, want.p, want.len) &&
		      rd32(t + 4) == SND_NXT && rd32(t + 8) == RCV_NXT + n && sum_ok &&
		      same(&after, &oracle) && has_flow && f.dc == n && f.ds == want.len && da >= 1 &&
		      dp == (da > 1),
		      "%s: %s: answered in one segment, the slow path's %zu reply bytes (ret %d, got %zu: %.*s), "
		      "the store as it leaves it, the flow past it (%u/%u), %llu requests counted",
		      c->L, r->what, want.len, c->o.ret, got, (int)(got < 80 ? got : 80), t + hl,
		      has_flow ? f.dc : 0, has_flow ? f.ds : 0, (unsigned long long)da);
		break;
	case ACKED:
		CHECK(used == n && want.len == 0 && c->o.ret == XDP_TX && got == 0 && t[13] == F_ACK &&
		      rd32(t + 4) == SND_NXT && rd32(t + 8) == RCV_NXT + n && sum_ok &&
		      same(&after, &oracle) && !same(&after, &before) && has_flow &&
		      (f.flags & XKV_TCPX_F_NOREPLY) && da >= 1,
		      "%s: %s: applied as the slow path does, no reply, a pure ACK of it from here %u/%u "
		      "(want %u/%u; ret %d, %zu bytes)", c->L, r->what, rd32(t + 4), rd32(t + 8), SND_NXT,
		      RCV_NXT + (__u32)n, c->o.ret, got);
		break;
	case WHOLE:
		CHECK(c->o.ret == XDP_PASS && c->o.len == fl && !memcmp(c->o.f, c->in, fl) && same(&after, &before) &&
		      da == 0,
		      "%s: %s: passed on whole, untouched, the store unchanged (ret %d, %llu answered)", c->L,
		      r->what, c->o.ret, (unsigned long long)da);
		break;
	}
	xkv_buf_free(&want);
}

int tcpx_pipe_cases(const char *L, struct bpf_object *obj, struct xkv_store *s)
{
	struct bpf_program *x = bpf_object__find_program_by_name(obj, "xdpkv_tcpx");
	struct pctx *c = calloc(1, sizeof(*c));
	int fd = repaired(PIPE_CPORT, RCV_NXT, SND_NXT);
	c->sl = xkv_slow_new(s, NULL);
	CHECK(x && c && fd >= 0 && c->sl, "%s: pipelined rows: the program, a repair-mode socket, the slow path", L);
	if (!x || !c || fd < 0 || !c->sl)
		goto out;
	c->L = L, c->xdp = bpf_program__fd(x), c->flows = s->tcpx_flows_fd, c->s = s;
	c->k = key_of(htonl(0x7f000002), PIPE_CPORT, htonl(0x7f000001));
	serve_it(s, fd, 20);

	char gets16[256] = "", gets17[256];
	for (int i = 0; i < 16; i++)
		strcat(gets16, i % 3 ? "get a\r\n" : "get zz\r\n");
	snprintf(gets17, sizeof(gets17), "%sget b\r\n", gets16);
	__u8 b1[512], b2[512], b3[512];
	size_t n1 = 0, n2 = 0, n3 = 0;
	bin(b1, &n1, XKV_BIN_GETKQ, "a", 1);
	bin(b1, &n1, XKV_BIN_GETKQ, "zz", 2);
	bin(b1, &n1, XKV_BIN_GETK, "b", 3);
	bin(b1, &n1, XKV_BIN_GET, "zz", 4);
	bin(b1, &n1, XKV_BIN_NOOP, NULL, 5);
	bin(b2, &n2, XKV_BIN_GETQ, "zz", 6);
	bin(b2, &n2, XKV_BIN_GETKQ, "x", 7);
	bin(b2, &n2, XKV_BIN_NOOP, NULL, 8);
	bin(b3, &n3, XKV_BIN_GETQ, "a", 9);
	bin(b3, &n3, XKV_BIN_SETQ, "x", 10); /* not one the path answers */
	bin(b3, &n3, XKV_BIN_NOOP, NULL, 11);
	__u8 b4[512], b5[512], b6[512], b7[512];
	size_t n4 = 0, n5 = 0, n6 = 0, n7 = 0;
	binv(b4, &n4, XKV_BIN_SETQ, "x", 12, "xx", 3, 0); /* Dalli's set_multi: setq..., noop */
	binv(b4, &n4, XKV_BIN_SETQ, "y", 13, "yyy", 0, 0);
	bin(b4, &n4, XKV_BIN_NOOP, NULL, 14);
	bin(b5, &n5, XKV_BIN_GETK, "a", 15);
	binv(b5, &n5, XKV_BIN_SET, "x", 16, "v", 9, 0);
	bin(b5, &n5, XKV_BIN_DELETE, "b", 17);
	bin(b5, &n5, XKV_BIN_DELETEQ, "zz", 18); /* a miss: answered even quiet */
	bin(b5, &n5, XKV_BIN_DELETEQ, "c", 19);
	bin(b5, &n5, XKV_BIN_NOOP, NULL, 20);
	binv(b6, &n6, XKV_BIN_SET, "x", 21, "v", 0, 0);
	bin(b6, &n6, XKV_BIN_GET, "x", 22); /* a read after a write */
	binv(b7, &n7, XKV_BIN_SET, "a", 23, "v", 0, 12345); /* a cas */
	__u8 b9[512], b10[512];
	size_t n9 = 0, n10 = 0;
	bin(b9, &n9, XKV_BIN_NOOP, NULL, 24); /* a binary connection, then text */
	memcpy(b9 + n9, "get a\r\n", 7), n9 += 7;
	memcpy(b10, "get a\r\n", 7), n10 = 7; /* a text connection, then a binary frame */
	bin(b10, &n10, XKV_BIN_GETK, "a", 25);
	const struct prow rows[] = {
		{ "3 gets: hit, miss, hit", "get a\r\nget zz\r\nget b\r\n", NULL, 0, ANSWERED, 0 },
		{ "a multi-key get and a get", "get a b zz c\r\nget c\r\n", NULL, 0, ANSWERED, 0 },
		{ "16 gets (XKV_TCPX_PIPE_MAX)", gets16, NULL, 0, ANSWERED, 0 },
		{ "17 gets", gets17, NULL, 0, WHOLE, 0 },
		{ "gets, then a set and a delete", "get a\r\nget b\r\nset x 5 0 3\r\nxyz\r\ndelete b\r\n", NULL, 0,
		  ANSWERED, 0 },
		{ "sets and deletes (a miss among them)", "set x 0 0 1\r\nq\r\nset y 1 0 2\r\nyy\r\ndelete zz\r\n"
		  "delete a\r\n", NULL, 0, ANSWERED, 0 },
		{ "noreply writes alone", "set x 0 0 1 noreply\r\nq\r\ndelete a noreply\r\nset y 3 0 0 noreply\r\n\r\n",
		  NULL, 0, ACKED, 0 },
		{ "noreply and replied writes", "set x 0 0 1 noreply\r\nq\r\nset y 0 0 2\r\nyy\r\ndelete c noreply\r\n",
		  NULL, 0, ANSWERED, 0 },
		{ "a read after a write", "set x 0 0 1\r\nq\r\nget x\r\n", NULL, 0, WHOLE, 0 },
		{ "a request cut at the end", "get a\r\nget b\r\nget c", NULL, 0, WHOLE, 0 },
		{ "a set whose data is cut", "get a\r\nset x 0 0 10\r\nabc", NULL, 0, WHOLE, 0 },
		{ "a command the path leaves to serve between gets", "get a\r\nincr n 1\r\nget b\r\n", NULL, 0, WHOLE,
		  0 },
		{ "a get of a key named noreply (as memcached reads it)", "get a\r\nget b noreply\r\n", NULL, 0,
		  ANSWERED, 0 },
		{ "writes whose replies may not fit the window", "get a\r\nset x 0 0 1\r\nq\r\nset y 0 0 1\r\nr\r\n",
		  NULL, 0, WHOLE, 100 },
		{ "gets whose replies outgrow one segment", "get big\r\nget big\r\n", NULL, 0, WHOLE, 0 },
		{ "binary getkq hit, getkq miss, getk hit, get miss, noop", NULL, b1, n1, ANSWERED, 0 },
		{ "binary quiet misses and a noop", NULL, b2, n2, ANSWERED, 0 },
		{ "binary with a setq without extras among them", NULL, b3, n3, WHOLE, 0 },
		{ "binary setq, setq, noop (a set_multi)", NULL, b4, n4, ANSWERED, 0, 1 },
		{ "binary getk, set, delete, deleteq miss, deleteq hit, noop", NULL, b5, n5, ANSWERED, 0, 1 },
		{ "binary set, then a get", NULL, b6, n6, WHOLE, 0 },
		{ "binary set with a cas", NULL, b7, n7, WHOLE, 0 },
		{ "a binary noop, then a text get (memcached closes)", NULL, b9, n9, WHOLE, 0 },
		{ "a text get, then a binary getk", NULL, b10, n10, WHOLE, 0 },
		{ "meta mg hits and misses with return flags, mn", "mg a v f s k O1\r\nmg zz v\r\nmg zz k O2 q\r\n"
		  "mg b s f q\r\nmg c v c t\r\nmg zz O123456789012345678901234567890 k\r\nmn\r\n", NULL, 0,
		  ANSWERED, 0 },
		{ "meta ms and md (F T MS q O k), mn", "ms x 3 F5 T0 O7 k\r\nabc\r\nms y 2 q MS\r\nyy\r\n"
		  "md a q\r\nmd zz q O3 k\r\nmd b k\r\nmn\r\n", NULL, 0, ANSWERED, 0 },
		{ "meta quiet writes alone", "ms x 1 q\r\n1\r\nmd a q\r\n", NULL, 0, ACKED, 0 },
		{ "classic get, meta get, meta set", "get a b\r\nmg b v k\r\nms y 2 T100\r\nyy\r\n", NULL, 0, ANSWERED,
		  0 },
		{ "meta mg after ms", "ms x 1\r\nq\r\nmg x v\r\n", NULL, 0, WHOLE, 0 },
		{ "meta mg with a base64 key", "mg a v\r\nmg YQ== b v\r\n", NULL, 0, WHOLE, 0 },
		{ "meta mg with T (a touch)", "mg a v T30\r\n", NULL, 0, WHOLE, 0 },
		{ "meta mg with h (read before)", "mg a v h\r\n", NULL, 0, WHOLE, 0 },
		{ "meta ms in mode E (add)", "ms x 1 ME\r\nq\r\n", NULL, 0, WHOLE, 0 },
		{ "meta ms with a cas to compare", "ms a 1 C5\r\nq\r\n", NULL, 0, WHOLE, 0 },
		{ "meta ms with a negative ttl", "ms a 1 T-1\r\nq\r\n", NULL, 0, WHOLE, 0 },
		{ "meta md with I (invalidate)", "md a I\r\n", NULL, 0, WHOLE, 0 },
		{ "meta flag twice (memcached: an error)", "mg a v v\r\n", NULL, 0, WHOLE, 0 },
		{ "meta flag with a tail (memcached reads its first byte)", "mg a vx\r\n", NULL, 0, WHOLE, 0 },
		{ "meta opaque over 32 bytes", "mg a O1234567890123456789012345678901234\r\n", NULL, 0, WHOLE, 0 },
		{ "meta ms whose data is cut", "mg a v\r\nms x 5\r\nab", NULL, 0, WHOLE, 0 },
		{ "meta ma and me (serve's)", "ma a\r\n", NULL, 0, WHOLE, 0 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		one_row(c, &rows[i]);
	/* a binary set's response carries the new item's cas, the one a gets
	 * or a later cas sees */
	__u8 b8[128];
	size_t n8 = 0;
	binv(b8, &n8, XKV_BIN_SET, "x", 30, "cas?", 5, 0);
	reset_store(s);
	bpf_map_delete_elem(c->flows, &c->k);
	struct seg g = { .saddr = htonl(0x7f000002), .daddr = htonl(0x7f000001), .sport = PIPE_CPORT,
			 .dport = PORT, .flags = F_ACK | F_PSH, .seq = RCV_NXT, .ack = SND_NXT,
			 .tsval = 9, .tsecr = 7, .payload = (const char *)b8, .plen = n8 };
	run(c->xdp, c->in, build(&g, c->in), &c->o);
	static struct xkv_item it;
	const __u8 *t = tcp_of(&c->o);
	__u64 cas = 0;
	for (int i = 0; i < 8; i++)
		cas = cas << 8 | t[32 + 16 + i];
	CHECK(c->o.ret == XDP_TX && s->L->get(s, "x", 1, &it) == 1 && it.flags == 5 && cas && cas == it.wtime_ns,
	      "%s: a binary set's response: the stored item's cas (%llu, the item's %llu)", L,
	      (unsigned long long)cas, (unsigned long long)it.wtime_ns);
	bpf_map_delete_elem(c->flows, &c->k);
out:
	if (fd >= 0)
		close(fd);
	if (c && c->sl)
		xkv_slow_free(c->sl);
	free(c);
	return unit_fails;
}
