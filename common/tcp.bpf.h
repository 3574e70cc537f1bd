/* SPDX-License-Identifier: MIT */
/* The TCP fast path: an sk_skb stream verdict program on the accepted
 * connections of `xdpkv serve` (a sockhash), in the same object as the XDP
 * program, so both share the store and the counters, and the one get, set
 * and delete (ops.bpf.h); this file adds the stream's framing.  Expects
 * prelude.bpf.h and the variant's store (ops.bpf.h says what) before it.
 *
 * What this kernel (6.18) allows, found by probes (docs/architecture.md,
 * "TCP in the kernel"), and what the design makes of it:
 *  - no stream parser: with one, the parser and the verdict see the skb from
 *    the start of its segment, not of the message (the strparser offset is
 *    not visible to BPF), and an egress redirect sends the message's length
 *    whatever the program made of the skb.  Without one, the verdict sees
 *    each received skb whole and a redirect sends skb->len bytes.
 *  - a skb (a segment: one request or several) is answered whole in the
 *    kernel, or handed to userspace with SK_PASS: whole, or without its
 *    first run of noreply writes when the kernel did those (trimmed off
 *    with bpf_skb_adjust_room; tcp_one says which requests it serves).
 *  - a redirect advances the socket's copied_seq by the skb's length *after*
 *    the program resized it: a reply longer than its request puts copied_seq
 *    ahead of what was received and the socket stops waking the verdict.  So
 *    a reply may be longer than its request only by what earlier, shorter
 *    replies left behind (tcp_conns.credit); copied_seq then lags, which
 *    makes the socket look readable: serve polls it edge-triggered.
 *  - an ingress redirect to the socket itself counts its bytes twice in
 *    copied_seq: requests go to userspace by SK_PASS.
 *  - ordering: userspace owes replies from the first SK_PASS until it says
 *    it has consumed and answered every passed byte (tcp_paid == passed);
 *    meanwhile every skb goes to userspace.  In the other direction
 *    userspace writes only once the kernel's earlier replies (tcp_conns.kq
 *    bytes) are in the socket (serve_tcp.c, conn_may_write). */
#ifndef XDPKV_TCP_BPF_H
#define XDPKV_TCP_BPF_H

#include "tcpfast.h"
#include "acl.bpf.h"
#include "reply.bpf.h"
#include "ops.bpf.h"

/* The connections: socket cookie -> socket (serve adds them at accept). */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, XKV_TCP_CONNS_MAX);
	__type(key, __u64);
	__type(value, __u64);
} tcp_socks SEC(".maps");

/* A connection's slot in the two arrays below: socket cookie -> slot (only
 * userspace writes; tcpfast.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XKV_TCP_CONNS_MAX);
	__type(key, __u64);
	__type(value, __u32);
} tcp_slots SEC(".maps");

/* What this program did on a connection (only it writes), by slot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XKV_TCP_CONNS_MAX);
	__type(key, __u32);
	__type(value, struct xkv_tcp_conn);
} tcp_conns SEC(".maps");

/* Bytes userspace has read, consumed and answered in full (only it
 * writes, into its mapping), by slot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XKV_TCP_CONNS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} tcp_paid SEC(".maps");

/* Working memory of its own: a verdict run in process context (release_sock)
 * can be interrupted by XDP on the same CPU; and a flag per CPU, for a
 * verdict interrupted by another (softirq on another connection). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct xkv_scratch)); /* + entry data, set at load */
} tcp_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tcp_busy SEC(".maps");

/* To userspace, counted as owed (verdicts on one socket do not run at once:
 * the socket lock serialises them). */
static __always_inline int tcp_to_user(struct __sk_buff *skb, struct xkv_tcp_conn *c,
				       struct xkv_stats *st)
{
	if (c)
		c->passed += skb->len;
	if (st)
		stat_inc(st, XKV_STAT_tcp_pass);
	return SK_PASS;
}

/* The peer's address in policy.h's 16-byte form, into sc->addr.src16. */
static __always_inline void tcp_peer(struct __sk_buff *skb, struct xkv_scratch *sc)
{
	if (skb->family == 2 /* AF_INET */) {
		__u32 a = skb->remote_ip4;
		xkv_addr_from_v4(sc->addr.src16, &a);
	} else {
		__u32 *w = (__u32 *)sc->addr.src16;
		w[0] = skb->remote_ip6[0];
		w[1] = skb->remote_ip6[1];
		w[2] = skb->remote_ip6[2];
		w[3] = skb->remote_ip6[3];
	}
}

/* The counters of a segment's gets, added to the CPU's once the segment is
 * answered here: a get whose segment goes to userspace is counted there,
 * once (get_hits, cmd_get ... as memcached counts them). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xkv_stats);
} tcp_pending SEC(".maps");

/* delete <key>: the one delete (ops.bpf.h); its reply appended at *o.  0:
 * the lock was not taken, nothing changed (userspace retries). */
static __always_inline int tcp_delete(struct xkv_scratch *sc, struct xkv_stats *st, __u64 now,
				      __u32 *o)
{
	int found = xkv_op_delete(sc, st, now);

	if (found < 0)
		return 0;
	stat_inc(st, XKV_STAT_cmd_delete);
	if (found)
		PUT_LIT(sc, o, XKV_R_DELETED);
	else
		PUT_LIT(sc, o, XKV_R_NOT_FOUND);
	return 1;
}

/* set <key> <flags> <exptime> <bytes>: the one set (ops.bpf.h), the value
 * from the skb (the request starts at off); STORED appended at *o.  0: the
 * store failed, nothing stored (userspace answers, and says why). */
static __always_inline int tcp_set(struct __sk_buff *skb, struct xkv_scratch *sc,
				   struct xkv_stats *st, __u64 now, __u32 off, __u32 *o)
{
	struct xkv_req *r = &sc->pr;
	struct xkv_entry *e = &sc->entry;
	__u32 bytes = r->bytes;

	if (bytes > cfg.val_cap) /* the parser checked; this tells the verifier */
		return 0;
	xkv_entry_head(sc, now);
	if (bytes && bpf_skb_load_bytes(skb, (off + r->data_off) & (XKV_REQ_MAX * 2 - 1),
					&e->data[XKV_VOFF], XKV_LEN(bytes, cfg.val_cap)))
		return 0;
	if (xkv_op_set(sc, st))
		return 0;
	stat_inc(st, XKV_STAT_cmd_set);
	PUT_LIT(sc, o, XKV_R_STORED);
	return 1;
}

/* What tcp_one did with a request: its kind, its length and where the
 * replies end now, in one word. */
enum { TCP_ONE_PASS, TCP_ONE_NOREPLY, TCP_ONE_GET, TCP_ONE_WRITE };
#define TCP_ONE(kind, next, o) ((int)((kind) | (next) << 4 | (o) << 16))
#define TCP_ONE_KIND(a) ((__u32)(a) & 15)
#define TCP_ONE_NEXT(a) (((__u32)(a) >> 4) & 0xfff)
#define TCP_ONE_END(a) (((__u32)(a) >> 16) & 0xffff)
#define TCP_DELETE_REPLY_MAX (sizeof(XKV_R_NOT_FOUND) - 1)

/* Answer the request at byte `off` of the skb, its reply (if any) appended
 * to the replies in the scratch's reply[XKV_TEXT .. o).  TCP_ONE_PASS when the kernel
 * does not serve it, nothing changed; else TCP_ONE(kind, length, new end).
 *  - get: read only, counted in tcp_pending (added once the segment is
 *    answered here);
 *  - a noreply set or delete: only in the segment's first run of them
 *    (TCP_ONE_PREFIX: before any get), so that what follows can still go to
 *    userspace without it (tcp_pass_rest);
 *  - a set or delete with a reply: only as the segment's last request, and
 *    only when the replies stay within the request bytes: a write is done
 *    once, so the segment's reply must not fail to go out (a skb that does
 *    not grow is resized without allocating), and within one datagram.
 * Global: the verifier checks it once, not once per request of a
 * segment. */
/* The set or delete in sc->pr done: the end of its reply in sc->reply (o:
 * where it starts), or 0 to hand the request to userspace.  A frame of its
 * own: its locals are off the get path's call chain, whose stack 6.1
 * counts against 512 bytes. */
static __attribute__((noinline)) __u32 tcp_write(struct __sk_buff *skb, struct xkv_scratch *sc,
						 struct xkv_stats *st, __u32 off, __u32 o)
{
	struct xkv_req *r = &sc->pr;

	xkv_load_key_words(sc, 1); /* inline: a frame less again */
	__u64 now = bpf_ktime_get_ns();
	__u32 w = o;
	barrier_var(w); /* keeps put_lit's mask: o's bound is lost on the stack */
	if (!(r->op == XKV_OP_DELETE ? tcp_delete(sc, st, now, &w) : tcp_set(skb, sc, st, now, off, &w)))
		return 0;
	return w & 0xffff;
}

#define TCP_ONE_PREFIX 1 /* still in the segment's first run of noreply writes */
#define TCP_ONE_WRITES 2 /* writes allowed (the credit has room for what they add) */

__attribute__((noinline)) int tcp_one(struct __sk_buff *skb, __u32 off, __u32 o, __u32 flags)
{
	__u32 zero = 0;
	/* used, whatever the layout: where flags decides nothing (a per-CPU
	 * store never writes here) clang 19 otherwise leaves its register
	 * unset at the call, and the verifier refuses the call */
	barrier_var(flags);
	/* the scratch from its map: with the entry's data after it (a pointer
	 * argument would cover the struct alone) */
	struct xkv_scratch *sc = bpf_map_lookup_elem(&tcp_scratch, &zero);
	struct xkv_stats *st = bpf_map_lookup_elem(&stats, &zero);
	struct xkv_stats *pend = bpf_map_lookup_elem(&tcp_pending, &zero);
	if (!skb || !sc || !st || !pend)
		return TCP_ONE_PASS;
	__u32 len = skb->len;
	if (len > XKV_REQ_MAX || off >= len || o < XKV_TEXT || o > XKV_TEXT + XKV_DGRAM_TEXT)
		return TCP_ONE_PASS;
	__u32 n = len - off;
	if (n == 0 || n > XKV_REQ_MAX)
		return TCP_ONE_PASS;
	/* n as it is, in a form whose bounds the verifier sees (1 .. 2048) */
	n = ((n - 1) & (XKV_REQ_MAX - 1)) + 1;
	if (bpf_skb_load_bytes(skb, off, sc->req, XKV_LEN(n, XKV_REQ_MAX)))
		return TCP_ONE_PASS;
	struct xkv_req *r = &sc->pr;
	/* a whole request the kernel serves; errors, other commands and a
	 * request cut off at the segment's end go to userspace */
	if (xkv_parse_sc(sc, n) || !r->next || r->next > n || r->too_many ||
	    r->op > XKV_OP_FAST_LAST)
		return TCP_ONE_PASS;
	/* the lists may change while a client is connected (acl del): a
	 * source that left the allow list goes to userspace, which closes
	 * the connection at its next request, as it does for its own */
	if (XKV_GUARDED && !acl_allowed(sc))
		return TCP_ONE_PASS;
	/* a flush_all under way, stats detail on: userspace answers (as XDP) */
	struct xkv_host *h = bpf_map_lookup_elem(&host, &zero);
	if (!h || (h->flags & XKV_HOST_SLOW_ALL))
		return TCP_ONE_PASS;
	__u32 next = r->next;
	if (r->op == XKV_OP_GET) {
		struct get_ctx g = { .sc = sc, .st = st, .o = o };
		xkv_op_get(&g);
		if (g.full || g.o > XKV_TEXT + XKV_DGRAM_TEXT - 5)
			return TCP_ONE_PASS;
		o = xkv_get_end(&g);
		get_count(&g, pend);
		return TCP_ONE(TCP_ONE_GET, next, o);
	}
	if (!(flags & TCP_ONE_WRITES))
		return TCP_ONE_PASS;
	if (r->noreply ? !(flags & TCP_ONE_PREFIX) :
	    (off + next != len ||
	     o - XKV_TEXT + (r->op == XKV_OP_DELETE ? TCP_DELETE_REPLY_MAX : sizeof(XKV_R_STORED) - 1) >
		     (len < XKV_DGRAM_TEXT ? len : XKV_DGRAM_TEXT)))
		return TCP_ONE_PASS;
#ifdef XKV_PERCPU
	/* a per-CPU store: XDP's set writes the copy of the CPU a flow's
	 * packets land on; a connection's verdicts run on whatever CPU takes
	 * its softirq or its reader's release_sock, so a set here could hide
	 * from the next get.  Userspace writes every CPU's copy. */
	return TCP_ONE_PASS;
#endif
	/* set, delete: userspace closes on a write from outside the write
	 * list and refuses writes under snapshot --pause-writes */
	if ((h->flags & XKV_HOST_PAUSE_WRITES) || !acl_has(sc, &acl_write))
		return TCP_ONE_PASS;
	__u32 w = tcp_write(skb, sc, st, off, o);
	if (!w)
		return TCP_ONE_PASS;
	if (r->noreply) {
		stat_inc(st, XKV_STAT_noreply);
		return TCP_ONE(TCP_ONE_NOREPLY, next, o);
	}
	return TCP_ONE(TCP_ONE_WRITE, next, w);
}

/* The bytes after the segment's first `done` (its noreply writes, done
 * here) to userspace.  They never move the socket's copied_seq (only what
 * userspace reads does): credit. */
static __always_inline int tcp_pass_rest(struct __sk_buff *skb, struct xkv_tcp_conn *c,
					 struct xkv_stats *st, __u32 done)
{
	if (done && bpf_skb_adjust_room(skb, -(__s32)done, 0, 0)) {
		/* not seen: the skb is linear (pulled whole) */
		stat_inc(st, XKV_STAT_tcp_lost);
		return SK_DROP;
	}
	c->credit += done;
	return tcp_to_user(skb, c, st);
}

#define TCP_SEG_REQS 16 /* requests of one segment the kernel looks at */
/* The credit's ceiling: the socket tests rcv_nxt - copied_seq as a signed
 * 32-bit number (tcp_epollin_ready), so a lag of 2^31 bytes or more would
 * read as nothing to read and its data_ready (the verdict) would never be
 * called again: a connection that wrote ~2 GiB of sets would stall.  At the
 * ceiling the kernel answers only what does not add to it. */
#define TCP_CREDIT_MAX (1ll << 30)

/* A segment's requests, as far as the kernel serves them: off, where the
 * next starts; done, the end of its first run of noreply writes (dreqs of
 * them); o, the end of the replies in sc->reply; reqs served, of them gets
 * and writes with a reply. */
struct tcp_seg {
	struct __sk_buff *skb;
	__u32 len, off, done, o, reqs, dreqs, gets, wrote;
	__u32 writes; /* TCP_ONE_WRITES or 0 */
};

/* bpf_loop's step: the next request (1 stops). */
static long tcp_seg_one(__u32 i, void *vctx)
{
	struct tcp_seg *g = vctx;

	if (g->off >= g->len)
		return 1;
	int a = tcp_one(g->skb, g->off, g->o,
			(!g->gets && g->done == g->off ? TCP_ONE_PREFIX : 0) | g->writes);
	__u32 kind = TCP_ONE_KIND(a);
	if (kind == TCP_ONE_PASS)
		return 1;
	g->off += TCP_ONE_NEXT(a);
	g->o = TCP_ONE_END(a);
	g->reqs++;
	if (kind == TCP_ONE_NOREPLY) { /* only in the first run (tcp_one) */
		g->done = g->off;
		g->dreqs++;
	}
	g->gets += kind == TCP_ONE_GET;
	g->wrote += kind == TCP_ONE_WRITE;
	return 0;
}

SEC("sk_skb/stream_verdict")
int xdpkv_tcp(struct __sk_buff *skb)
{
	__u32 zero = 0;
	__u64 ck = bpf_get_socket_cookie(skb);
	__u32 *slot = bpf_map_lookup_elem(&tcp_slots, &ck);
	struct xkv_tcp_conn *c = slot ? bpf_map_lookup_elem(&tcp_conns, slot) : NULL;
	struct xkv_stats *st = bpf_map_lookup_elem(&stats, &zero);
	__u64 *paid = slot ? bpf_map_lookup_elem(&tcp_paid, slot) : NULL;

	/* paid: written by serve through its mapping, read once */
	if (!c || !st || !paid || READ_ONCE_U64(*paid) != c->passed)
		return tcp_to_user(skb, c, st);
	__u32 *busy = bpf_map_lookup_elem(&tcp_busy, &zero);
	struct xkv_scratch *sc = bpf_map_lookup_elem(&tcp_scratch, &zero);
	struct xkv_stats *pend = bpf_map_lookup_elem(&tcp_pending, &zero);
	__u32 len = skb->len;
	if (!busy || *busy || !sc || !pend || len == 0 || len > XKV_REQ_MAX)
		return tcp_to_user(skb, c, st);
	/* the skb linear and writable: the psock sends page fragments by
	 * splicing them, which fails for the page_pool pages a veth with XDP
	 * receives into (the connection then breaks); linear bytes are copied.
	 * Pulling leaves the bytes as they were */
	if (bpf_skb_pull_data(skb, len))
		return tcp_to_user(skb, c, st);
	*busy = 1;
	__builtin_memset(pend, 0, sizeof(*pend));
	tcp_peer(skb, sc);
	/* the segment's requests in order, as far as the kernel serves them */
	struct tcp_seg g = { .skb = skb, .len = len, .o = XKV_TEXT };
	/* a segment's writes add at most its length to the credit */
	if (c->credit <= TCP_CREDIT_MAX - XKV_REQ_MAX)
		g.writes = TCP_ONE_WRITES;
	bpf_loop(TCP_SEG_REQS, tcp_seg_one, &g, 0);
	__u32 off = g.off, done = g.done, o = g.o, reqs = g.reqs, dreqs = g.dreqs;
	__u32 gets = g.gets, wrote = g.wrote;
	__u32 rlen = o - XKV_TEXT;
	int act;
	/* All of it here, or what follows the first noreply writes to
	 * userspace (with the gets after them: looked up here, read only,
	 * looked up and counted again there).  A reply longer than the request
	 * only within the credit (above); a write's never is (tcp_one). */
	if (off != len || rlen > XKV_DGRAM_TEXT || (__s64)rlen > (__s64)len + c->credit ||
	    (!g.writes && c->credit + (__s64)len - (__s64)rlen > TCP_CREDIT_MAX))
		goto rest;
	if (!rlen) {
		/* noreply writes alone: done, nothing to send.  Dropped, the skb
		 * moves copied_seq by its length; emptied first but for one byte,
		 * by one: the rest is credit, and the byte keeps the socket's
		 * read-side work (a quick ACK a client may wait for) */
		st->v[XKV_STAT_tcp_fast] += reqs;
		if (len > 1 && !bpf_skb_adjust_room(skb, -(__s32)(len - 1), 0, 0))
			c->credit += len - 1;
		act = SK_DROP;
		goto out;
	}
	/* the segment becomes its reply.  A resize that fails leaves the skb as
	 * it was: only gets' replies grow it, and whatever they follow goes to
	 * userspace with them (a set or delete with a reply keeps the skb from
	 * growing, and a skb that shrinks is not reallocated) */
	if (bpf_skb_change_tail(skb, rlen, 0)) {
		if (!wrote)
			goto rest;
		stat_inc(st, XKV_STAT_tcp_lost);
		act = SK_DROP;
		goto out;
	}
	if (bpf_skb_store_bytes(skb, 0, &sc->reply[XKV_TEXT], XKV_LEN(rlen, 2047), 0)) {
		/* not seen: change_tail made the skb writable and this long;
		 * the request is half overwritten and cannot go anywhere */
		stat_inc(st, XKV_STAT_tcp_lost);
		act = SK_DROP;
		goto out;
	}
	if (gets)
		for (int i = 0; i < XKV_STAT__MAX; i++)
			st->v[i] += pend->v[i];
	st->v[XKV_STAT_tcp_fast] += reqs;
	act = bpf_sk_redirect_hash(skb, &tcp_socks, &ck, 0);
	if (act == SK_PASS) {
		c->credit += (__s64)len - (__s64)rlen;
		c->kq += rlen;
	}
	goto out;
rest:
	st->v[XKV_STAT_tcp_fast] += dreqs;
	act = tcp_pass_rest(skb, c, st, done);
out:
	*busy = 0;
	return act;
}

#endif
