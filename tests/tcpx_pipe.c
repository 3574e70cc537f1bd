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
	__u32 meta; /* bytes of metadata before the next frame: room it lacks */
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

/* The slow path's replies to req (n bytes) from the store as it is: into
 * *out; the bytes it took (a cut request at the end stays). */
static size_t oracle(struct pctx *c, const void *req, size_t n, struct xkv_buf *out)
{
	struct xkv_slow_stream st = { 0 };
	struct xkv_stats delta = { 0 };
	size_t used = 0;
	xkv_slow_stream(c->sl, NULL, &st, req, n, &used, out, &delta);
	return used;
}

/* One segment of the hold rows through the responder: seq on from RCV_NXT,
 * acknowledging ack. */
static void hseg(struct pctx *c, __u32 seq, __u32 ack, __u8 flags, __u32 tsval, const void *pl, size_t n)
{
	struct seg g = { .saddr = htonl(0x7f000002), .daddr = htonl(0x7f000001), .sport = PIPE_CPORT,
			 .dport = PORT, .flags = flags, .seq = seq, .ack = ack, .tsval = tsval, .tsecr = 7,
			 .payload = pl, .plen = n };
	static __u8 empty[1];
	if (!n)
		g.payload = (const char *)empty; /* no payload: not strlen's */
	run_meta(c->xdp, c->in, build(&g, c->in), c->meta, &c->o);
}

/* A reply frame's text (its TCP header skipped): *len bytes. */
static const __u8 *htext(const struct pctx *c, size_t *len)
{
	const __u8 *t = tcp_of(&c->o);
	size_t hl = (size_t)(t[12] >> 4) * 4;
	*len = c->o.len - (size_t)(t - c->o.f) - hl;
	return t + hl;
}

struct hrow {
	const char *what;
	const char *first, *next; /* the first segment ends in a cut request */
	int next_passed;          /* the next one, the cut request in front, goes to the kernel */
	size_t n1, n2;            /* their bytes (0: text, strlen) */
};

/* A request cut at an answered segment's end (tcpx.h): the requests before
 * it answered as the slow path answers them, the whole segment
 * acknowledged, the cut bytes held in the flow; the client's next segment
 * gets them in front: answered with them (the slow path's replies to the
 * cut request and what follows), or handed to the kernel with them at its
 * rcv_nxt, checksums right, nothing applied. */
static void hold_row(struct pctx *c, const struct hrow *r)
{
	size_t n1 = r->n1 ? r->n1 : strlen(r->first), n2 = r->n2 ? r->n2 : strlen(r->next);
	struct xkv_buf w1 = { 0 }, w2 = { 0 };
	static struct view before, oracle1, after;
	char rest[1024];

	reset_store(c->s);
	look(c->s, &before);
	size_t used = oracle(c, r->first, n1, &w1);
	look(c->s, &oracle1);
	size_t cut = n1 - used;
	memcpy(rest, r->first + used, cut);
	memcpy(rest + cut, r->next, n2);
	size_t cut2 = cut + n2 - oracle(c, rest, cut + n2, &w2); /* the next one may end cut too */
	look(c->s, &after);
	if (!same(&after, &before)) /* else the items themselves: a binary reply carries their cas */
		reset_store(c->s);
	bpf_map_delete_elem(c->flows, &c->k);
	__u64 h0 = counter(c->s, XKV_STAT_tcpx_held);

	hseg(c, RCV_NXT, SND_NXT, F_ACK | F_PSH, 9, r->first, n1);
	size_t got;
	const __u8 *txt = htext(c, &got);
	const __u8 *t = tcp_of(&c->o);
	struct xkv_tcpx_flow f;
	int has = !get_flow(c->flows, &c->k, &f);
	look(c->s, &after);
	CHECK(cut > 0 && cut <= XKV_TCPX_HOLD_MAX && c->o.ret == XDP_TX && got == w1.len &&
	      !memcmp(txt, w1.p, w1.len) && rd32(t + 8) == RCV_NXT + n1 && csum_ok(c->o.f, c->o.len) &&
	      same(&after, &oracle1) && has && f.dc == used && f.c_end == RCV_NXT + used && f.held == cut &&
	      !memcmp(f.hold, r->first + used, cut) && counter(c->s, XKV_STAT_tcpx_held) == h0 + 1,
	      "%s: %s: the requests before the cut one answered (%zu reply bytes, want %zu), all %zu "
	      "acknowledged (%u), the cut %zu held (dc %u, held %u)", c->L, r->what, got, w1.len, n1,
	      rd32(t + 8) - RCV_NXT, cut, has ? f.dc : 0, has ? f.held : 0);

	__u32 seq2 = RCV_NXT + (__u32)n1, ack2 = SND_NXT + (__u32)w1.len;
	hseg(c, seq2, ack2, F_ACK | F_PSH, 10, r->next, n2);
	txt = htext(c, &got);
	t = tcp_of(&c->o);
	has = !get_flow(c->flows, &c->k, &f);
	if (!r->next_passed) {
		look(c->s, &after);
		CHECK(c->o.ret == XDP_TX && got == w2.len && !memcmp(txt, w2.p, w2.len) &&
		      rd32(t + 4) == ack2 && rd32(t + 8) == seq2 + n2 && csum_ok(c->o.f, c->o.len) && has &&
		      f.held == cut2 && f.dc == n1 + n2 - cut2 && (!cut2 || !memcmp(f.hold, rest + cut + n2 - cut2, cut2)),
		      "%s: %s: the next segment answered with the held bytes in front (%zu reply bytes, "
		      "want %zu: %.*s), acknowledged to its end, its own cut request held (%u, want %zu)", c->L,
		      r->what, got, w2.len, (int)(got < 60 ? got : 60), txt, has ? f.held : 0, cut2);
	} else {
		look(c->s, &after);
		CHECK(c->o.ret == XDP_PASS && rd32(t + 4) == RCV_NXT && got == cut + n2 &&
		      !memcmp(txt, rest, cut + n2) && csum_ok(c->o.f, c->o.len) && same(&after, &oracle1) &&
		      has && f.held == 0,
		      "%s: %s: the next segment to the kernel with the held bytes in front, at its rcv_nxt "
		      "(seq %u, want %u; %zu bytes, want %zu), checksums right, nothing applied, nothing held",
		      c->L, r->what, rd32(t + 4), RCV_NXT, got, cut + n2);
	}
	xkv_buf_free(&w1);
	xkv_buf_free(&w2);
}

/* Around held bytes: an ACK after them is at the kernel's rcv_nxt; a
 * segment past a gap goes on in the kernel's numbering, the bytes still
 * held; one inside them (never sent by a client: they were acknowledged)
 * is dropped; a copy of the answered segment brings its reply again,
 * acknowledging the held bytes too. */
static void hold_edges(struct pctx *c)
{
	const char *first = "get a\r\nget b\r\nget c";
	size_t n1 = strlen(first), cut = 5, got;
	reset_store(c->s);
	bpf_map_delete_elem(c->flows, &c->k);
	hseg(c, RCV_NXT, SND_NXT, F_ACK | F_PSH, 9, first, n1);
	const __u8 *txt = htext(c, &got);
	__u8 reply[256];
	size_t rl = got < sizeof(reply) ? got : sizeof(reply);
	memcpy(reply, txt, rl);
	struct xkv_tcpx_flow f;
	__u32 end = RCV_NXT + (__u32)n1;

	hseg(c, RCV_NXT, SND_NXT, F_ACK | F_PSH, 9, first, n1); /* at once: within the replay gap */
	CHECK(c->o.ret == XDP_DROP, "%s: held: a copy of the answered segment at once dropped (ret %d)", c->L,
	      c->o.ret);
	struct xkv_tcpx_flow w;
	if (!get_flow(c->flows, &c->k, &w)) {
		w.replay_ns = 0; /* the replay gap passed */
		bpf_map_update_elem(c->flows, &c->k, &w, BPF_EXIST);
	}
	hseg(c, RCV_NXT, SND_NXT, F_ACK | F_PSH, 9, first, n1);
	txt = htext(c, &got);
	const __u8 *t = tcp_of(&c->o);
	CHECK(c->o.ret == XDP_TX && got == rl && !memcmp(txt, reply, rl) && rd32(t + 8) == end,
	      "%s: held: a copy of the answered segment brings its reply again (ret %d, %zu bytes, want %zu), "
	      "acknowledging the held bytes (%u, want %u)", c->L, c->o.ret, got, rl, rd32(t + 8), end);
	hseg(c, end, SND_NXT + (__u32)rl, F_ACK, 10, NULL, 0);
	t = tcp_of(&c->o);
	CHECK(c->o.ret == XDP_PASS && rd32(t + 4) == RCV_NXT && !get_flow(c->flows, &c->k, &f) && f.held == cut,
	      "%s: held: an ACK after the held bytes goes on at the kernel's rcv_nxt (ret %d, seq %u, want "
	      "%u), the bytes still held", c->L, c->o.ret, rd32(t + 4), RCV_NXT);
	hseg(c, end + 5, SND_NXT + (__u32)rl, F_ACK | F_PSH, 10, "get b\r\n", 7);
	t = tcp_of(&c->o);
	CHECK(c->o.ret == XDP_PASS && rd32(t + 4) == RCV_NXT + (__u32)cut + 5 && !get_flow(c->flows, &c->k, &f) &&
	      f.held == cut,
	      "%s: held: a segment past a gap goes on in the kernel's numbering (seq %u, want %u), the "
	      "bytes still held", c->L, rd32(t + 4), RCV_NXT + (__u32)cut + 5);
	hseg(c, end - 2, SND_NXT + (__u32)rl, F_ACK | F_PSH, 10, "c\r\n", 3);
	CHECK(c->o.ret == XDP_DROP && !get_flow(c->flows, &c->k, &f) && f.held == cut,
	      "%s: held: a segment inside the held bytes dropped (ret %d), the bytes still held", c->L, c->o.ret);
	hseg(c, end - 1, SND_NXT + (__u32)rl, F_ACK, 10, NULL, 0); /* a keepalive probe, 0 bytes */
	t = tcp_of(&c->o);
	CHECK(c->o.ret == XDP_PASS && rd32(t + 4) == RCV_NXT - 1,
	      "%s: held: a keepalive probe at their last byte goes on before the kernel's rcv_nxt, which it "
	      "answers (ret %d, seq %u, want %u)", c->L, c->o.ret, rd32(t + 4), RCV_NXT - 1);
	hseg(c, end - 1, SND_NXT + (__u32)rl, F_ACK, 10, "c", 1); /* ... of 1 byte */
	t = tcp_of(&c->o);
	CHECK(c->o.ret == XDP_PASS && rd32(t + 4) == RCV_NXT + (__u32)cut - 1 && !get_flow(c->flows, &c->k, &f) &&
	      f.held == cut,
	      "%s: held: a 1-byte keepalive probe goes on (ret %d, seq %u, want %u), the bytes still held", c->L,
	      c->o.ret, rd32(t + 4), RCV_NXT + (__u32)cut - 1);
	/* the reply acknowledged: a copy goes to the kernel, whose new bytes
	 * in it are the held ones */
	hseg(c, RCV_NXT, SND_NXT + (__u32)rl, F_ACK | F_PSH, 10, first, n1);
	t = tcp_of(&c->o);
	CHECK(c->o.ret == XDP_PASS && rd32(t + 4) == RCV_NXT - (__u32)(n1 - cut) && !get_flow(c->flows, &c->k, &f) &&
	      f.held == 0,
	      "%s: held: a copy of the answered segment, its reply acknowledged, goes to the kernel (ret %d, "
	      "seq %u, want %u), which has the held bytes from it: none held (%u)", c->L, c->o.ret,
	      rd32(t + 4), RCV_NXT - (__u32)(n1 - cut), f.held);
	bpf_map_delete_elem(c->flows, &c->k);
}

/* No room before the segment after held bytes (a device's headroom
 * shrunk since they were held; here metadata takes it): the held bytes go
 * to the kernel alone in its place, no FIN, at its rcv_nxt; the client's
 * copy of the segment then follows them there.  A next segment shorter
 * than they are (the frame grown) and one longer (cut). */
static void hold_noroom(struct pctx *c, int fin, size_t more)
{
	static char first[512], next[1024];
	size_t cut = 195; /* within the room of a frame alone, not of one after 32 bytes of metadata */
	int n1 = snprintf(first, sizeof(first), "get a\r\nset x 0 0 190 noreply\r\n%0172d", 5);
	int n2 = snprintf(next, sizeof(next), "%018d\r\n", 6);
	for (size_t i = 0; i < more; i++)
		n2 += snprintf(next + n2, sizeof(next) - (size_t)n2, "get x\r\n");
	static struct view before, after;
	struct xkv_tcpx_flow f;
	size_t got;

	reset_store(c->s);
	bpf_map_delete_elem(c->flows, &c->k);
	look(c->s, &before);
	hseg(c, RCV_NXT, SND_NXT, F_ACK | F_PSH, 9, first, (size_t)n1);
	CHECK(c->o.ret == XDP_TX && !get_flow(c->flows, &c->k, &f) && f.held == cut,
	      "%s: no room (%zu after): the get answered, the cut set held (ret %d, held %u, want %zu)", c->L, more,
	      c->o.ret, f.held, cut);
	htext(c, &got);
	__u32 seq2 = RCV_NXT + (__u32)n1, ack2 = SND_NXT + (__u32)got;
	__u8 fl = F_ACK | F_PSH | (fin ? F_FIN : 0);
	__u64 a0 = counter(c->s, XKV_STAT_tcpx_held_alone);
	c->meta = 32;
	hseg(c, seq2, ack2, fl, 10, next, (size_t)n2);
	c->meta = 0;
	const __u8 *txt = htext(c, &got), *t = tcp_of(&c->o);
	look(c->s, &after);
	CHECK(c->o.ret == XDP_PASS && rd32(t + 4) == RCV_NXT && got == cut && !memcmp(txt, first + n1 - cut, cut) &&
	      !(t[13] & F_FIN) && csum_ok(c->o.f, c->o.len) && same(&after, &before) &&
	      !get_flow(c->flows, &c->k, &f) && f.held == 0 && counter(c->s, XKV_STAT_tcpx_held_alone) == a0 + 1,
	      "%s: no room before the next segment (%d bytes%s): the %zu held bytes go alone in its place at the "
	      "kernel's rcv_nxt (ret %d, seq %u, want %u; %zu bytes; flags %#x), checksums right, nothing "
	      "applied, none held, counted", c->L, n2, fin ? ", FIN" : "", cut, c->o.ret, rd32(t + 4), RCV_NXT,
	      got, t[13]);
	hseg(c, seq2, ack2, fl, 11, next, (size_t)n2); /* the client's copy, sent again */
	txt = htext(c, &got), t = tcp_of(&c->o);
	look(c->s, &after);
	CHECK(c->o.ret == XDP_PASS && rd32(t + 4) == RCV_NXT + cut && got == (size_t)n2 &&
	      !memcmp(txt, next, got) && (t[13] & F_FIN) == (fin ? F_FIN : 0) && csum_ok(c->o.f, c->o.len) &&
	      same(&after, &before),
	      "%s: no room: the segment sent again follows them to the kernel (ret %d, seq %u, want %u; %zu "
	      "bytes, want %d), nothing applied", c->L, c->o.ret, rd32(t + 4), RCV_NXT + (__u32)cut, got, n2);
	bpf_map_delete_elem(c->flows, &c->k);
}

static void hold_cases(struct pctx *c)
{
	__u8 b[256];
	size_t nb = 0;
	bin(b, &nb, XKV_BIN_GETKQ, "a", 1);
	size_t c1 = nb + 10, c2 = nb + XKV_BIN_HDR_LEN; /* cuts in the getk's header, in its key */
	bin(b, &nb, XKV_BIN_GETK, "zz", 2);
	bin(b, &nb, XKV_BIN_NOOP, NULL, 3);
	/* a cut of 150 bytes held, then one of 150 again: the second
	 * frame's own room is what the first took of it, plus the second's */
	static char lc1[512], lc2[512];
	snprintf(lc1, sizeof(lc1), "get a\r\nset x 0 0 140 noreply\r\n%0120d", 1);
	snprintf(lc2, sizeof(lc2), "%020d\r\nset y 0 0 140 noreply\r\n%0120d", 2, 3);
	/* tcppipeclient.py's stream: noreply sets (values of 1 to 150
	 * bytes) and deletes, in MSS-sized segments */
	static char wr[4096];
	size_t nw = 0;
	for (int i = 0; nw < 3000; i++) {
		if (i % 7 == 6) {
			nw += (size_t)snprintf(wr + nw, sizeof(wr) - nw, "delete st-%d noreply\r\n", i % 40);
			continue;
		}
		int vl = 1 + (i * 37) % 150;
		nw += (size_t)snprintf(wr + nw, sizeof(wr) - nw, "set st-%d %d 0 %d noreply\r\n%0*d\r\n", i % 40,
				       i % 5, vl, vl, i);
	}
	const struct hrow rows[] = {
		{ "gets, a get cut in its key", "get a\r\nget b\r\nget c", "\r\nget zz\r\n", 0 },
		{ "noreply writes, a set cut in its line", "set x 0 0 1 noreply\r\nq\r\nset y 0 0",
		  " 2 noreply\r\nyy\r\ndelete a noreply\r\n", 0 },
		{ "a get, a set cut in its data", "get a\r\nset x 0 0 10\r\nabc", "defghij\r\ndelete b\r\n", 0 },
		{ "a get cut in its command word alone", "ge", "t a b\r\n", 0 },
		{ "a cut set completed by a read after it", "get a\r\nset x 0 0 3\r\nab", "c\r\nget x\r\n", 1 },
		{ "a cut get completed by a command serve answers", "get a\r\nincr", " n 1\r\n", 1 },
		{ "noreply writes of a stream, cut at 1448 bytes", wr, wr + 1448, 0, 1448, 1448 },
		{ "a long cut request, then another (the frame's room counted once)", lc1, lc2, 0 },
		{ "binary: getkq, a getk cut in its header", (const char *)b, (const char *)b + c1, 0, c1, nb - c1 },
		{ "binary: getkq, a getk cut in its key", (const char *)b, (const char *)b + c2, 0, c2, nb - c2 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		hold_row(c, &rows[i]);
	hold_edges(c);
	hold_noroom(c, 0, 0);
	hold_noroom(c, 1, 40);
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

	char gets31[512] = "", gets32[512];
	for (int i = 0; i < XKV_TCPX_PIPE_MAX; i++)
		strcat(gets31, i % 3 ? "get zz\r\n" : "get a\r\n"); /* replies within the MSS */
	snprintf(gets32, sizeof(gets32), "%sget b\r\n", gets31);
	char gets31cut[512], longcut[512];
	snprintf(gets31cut, sizeof(gets31cut), "%sget b", gets31);
	snprintf(longcut, sizeof(longcut), "get a\r\nset x 0 0 300\r\n%0*d", XKV_TCPX_HOLD_MAX, 7);
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
		{ "31 gets (XKV_TCPX_PIPE_MAX)", gets31, NULL, 0, ANSWERED, 0 },
		{ "32 gets", gets32, NULL, 0, WHOLE, 0 },
		{ "gets, then a set and a delete", "get a\r\nget b\r\nset x 5 0 3\r\nxyz\r\ndelete b\r\n", NULL, 0,
		  ANSWERED, 0 },
		{ "sets and deletes (a miss among them)", "set x 0 0 1\r\nq\r\nset y 1 0 2\r\nyy\r\ndelete zz\r\n"
		  "delete a\r\n", NULL, 0, ANSWERED, 0 },
		{ "noreply writes alone", "set x 0 0 1 noreply\r\nq\r\ndelete a noreply\r\nset y 3 0 0 noreply\r\n\r\n",
		  NULL, 0, ACKED, 0 },
		{ "noreply and replied writes", "set x 0 0 1 noreply\r\nq\r\nset y 0 0 2\r\nyy\r\ndelete c noreply\r\n",
		  NULL, 0, ANSWERED, 0 },
		{ "a read after a write", "set x 0 0 1\r\nq\r\nget x\r\n", NULL, 0, WHOLE, 0 },
		{ "31 gets and a cut one", gets31cut, NULL, 0, WHOLE, 0 },
		{ "a request cut after a bare newline (memcached answers it)", "get a\nget b", NULL, 0, WHOLE, 0 },
		{ "a cut request over XKV_TCPX_HOLD_MAX bytes", longcut, NULL, 0, WHOLE, 0 },
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
	hold_cases(c);
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
