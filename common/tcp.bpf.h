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
 *  - an skb is answered whole in the kernel (one complete request the
 *    kernel serves) or handed whole to userspace with SK_PASS.
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

/* One constant line as the reply; its length. */
#define TCP_LINE(s) reply_line_text(sc, s, sizeof(s) - 1)

/* delete <key>: the one delete (ops.bpf.h). */
static __always_inline __u32 tcp_delete(struct xkv_scratch *sc, struct xkv_stats *st, __u64 now)
{
	int found = xkv_op_delete(sc, st, now);

	if (found < 0)
		return 0; /* the lock was not taken: nothing changed, userspace retries */
	stat_inc(st, XKV_STAT_cmd_delete);
	return found ? TCP_LINE(XKV_R_DELETED) : TCP_LINE(XKV_R_NOT_FOUND);
}

/* set <key> <flags> <exptime> <bytes>: the one set (ops.bpf.h), the value
 * from the skb.  0 (to userspace, nothing stored) on a store
 * that failed. */
static __always_inline __u32 tcp_set(struct __sk_buff *skb, struct xkv_scratch *sc,
				     struct xkv_stats *st, __u64 now)
{
	struct xkv_req *r = &sc->pr;
	struct xkv_entry *e = &sc->entry;
	__u32 bytes = r->bytes;

	if (bytes > cfg.val_cap) /* the parser checked; this tells the verifier */
		return 0;
	xkv_entry_head(sc, now);
	if (bytes && bpf_skb_load_bytes(skb, r->data_off & (XKV_REQ_MAX - 1), &e->data[XKV_VOFF], bytes))
		return 0;
	if (xkv_op_set(sc, st))
		return 0; /* busy or full: userspace answers (and says why) */
	stat_inc(st, XKV_STAT_cmd_set);
	return TCP_LINE(XKV_R_STORED);
}

/* Answer the one request in sc->req (len bytes); returns the reply length
 * in sc->reply[XKV_TEXT ..], TCP_NOREPLY for a noreply command done, or 0
 * to hand the skb to userspace. */
#define TCP_NOREPLY 0xffffffffu
static __always_inline __u32 tcp_answer(struct __sk_buff *skb, struct xkv_scratch *sc,
					struct xkv_stats *st, __u32 len)
{
	struct xkv_req *r = &sc->pr;
	__u32 zero = 0;

	/* one whole request the kernel serves, nothing else; errors, other
	 * commands, pipelines and partial requests go to userspace */
	if (xkv_parse_req(sc, len) || r->next != len || r->too_many || r->op > XKV_OP_FAST_LAST)
		return 0;
	/* the lists may change while a client is connected (acl del): a
	 * source that left the allow list goes to userspace, which closes
	 * the connection at its next request, as it does for its own */
	tcp_peer(skb, sc);
	if (XKV_GUARDED && !acl_allowed(sc))
		return 0;
	if (r->op == XKV_OP_GET) {
		struct get_ctx g = { .sc = sc, .st = st, .o = XKV_TEXT };
		xkv_op_get(&g);
		if (g.full)
			return 0;
		__u32 o = xkv_get_end(&g);
		stat_inc(st, XKV_STAT_cmd_get);
		return o - XKV_TEXT;
	}
	/* A write is done once: its reply must go out from here, so it may not
	 * be longer than the request (the skb is linear and writable already,
	 * a shorter reply cannot fail).  set's STORED always is shorter; a
	 * delete of a one-byte key could get the longer NOT_FOUND. */
	if (r->op == XKV_OP_DELETE && len < sizeof(XKV_R_NOT_FOUND) - 1)
		return 0;
#ifdef XKV_PERCPU
	/* a per-CPU store: XDP's set writes the copy of the CPU a flow's
	 * packets land on; a connection's verdicts run on whatever CPU takes
	 * its softirq or its reader's release_sock, so a set here could hide
	 * from the next get.  Userspace writes every CPU's copy. */
	return 0;
#endif
	/* set, delete: userspace closes on a write from outside the write
	 * list and refuses writes under snapshot --pause-writes */
	struct xkv_host *h = bpf_map_lookup_elem(&host, &zero);
	if (!h || (h->flags & XKV_HOST_PAUSE_WRITES) || !acl_has(sc, &acl_write))
		return 0;
	xkv_load_key(sc, 1);
	__u64 now = bpf_ktime_get_ns();
	__u32 n = r->op == XKV_OP_DELETE ? tcp_delete(sc, st, now) : tcp_set(skb, sc, st, now);
	if (n && r->noreply) {
		stat_inc(st, XKV_STAT_noreply);
		return TCP_NOREPLY;
	}
	return n;
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
	__u32 len = skb->len;
	if (!busy || *busy || !sc || len == 0 || len > XKV_REQ_MAX)
		return tcp_to_user(skb, c, st);
	*busy = 1;
	__u32 rlen = 0;
	/* the request's bytes, then the skb linear and writable: the psock
	 * sends page fragments by splicing them, which fails for the page_pool
	 * pages a veth with XDP receives into (the connection then breaks);
	 * linear bytes are copied.  Pulling leaves the bytes as they were */
	if (!bpf_skb_load_bytes(skb, 0, sc->req, len & (XKV_REQ_MAX * 2 - 1) & 4095) &&
	    !bpf_skb_pull_data(skb, len))
		rlen = tcp_answer(skb, sc, st, len);
	if (rlen == TCP_NOREPLY) {
		/* done, nothing to send: a dropped skb advances copied_seq by
		 * its length (no credit) */
		*busy = 0;
		stat_inc(st, XKV_STAT_tcp_fast);
		return SK_DROP;
	}
	/* a reply longer than the request only within the credit (above) */
	if (!rlen || rlen > XKV_DGRAM_TEXT || (__s64)rlen > (__s64)len + c->credit) {
		*busy = 0;
		return tcp_to_user(skb, c, st);
	}
	/* the request becomes its reply; a resize that fails leaves the skb as
	 * it was (only a get's reply grows: nothing was written yet) */
	if (bpf_skb_change_tail(skb, rlen, 0)) {
		*busy = 0;
		return tcp_to_user(skb, c, st);
	}
	long e = bpf_skb_store_bytes(skb, 0, &sc->reply[XKV_TEXT], rlen, 0);
	*busy = 0;
	if (e) {
		/* not seen: change_tail made the skb writable and this long;
		 * the request is half overwritten and cannot go anywhere */
		stat_inc(st, XKV_STAT_tcp_lost);
		return SK_DROP;
	}
	long act = bpf_sk_redirect_hash(skb, &tcp_socks, &ck, 0);
	if (act == SK_PASS) {
		c->credit += (__s64)len - (__s64)rlen;
		c->kq += rlen;
		stat_inc(st, XKV_STAT_tcp_fast);
	}
	return act;
}

#endif
