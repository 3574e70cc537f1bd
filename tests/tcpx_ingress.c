// SPDX-License-Identifier: MIT
/* The XDP responder's rows (xdpkv_tcpx through BPF_PROG_TEST_RUN) on a real
 * socket: a connection made in repair mode (TCP_REPAIR: established, no
 * handshake, its sequence numbers chosen) so that the socket lookup finds
 * it, with the numbers of put_flow's flow (the kernel's rcv_nxt 995,
 * snd_nxt 4980).  Each row: a segment, the verdict, what came out, what
 * the flow and the store hold after.  docs/security.md's conformance table
 * names these rows. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/pkt_cls.h>
#include "unit_check.h"
#include "tcpx_test.h"

#define RCV_NXT 995
#define SND_NXT 4980

int repaired(__u16 cport, __u32 rcv_nxt, __u32 snd_nxt)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, q;
	struct sockaddr_in l = { .sin_family = AF_INET, .sin_port = htons(PORT),
				 .sin_addr.s_addr = htonl(0x7f000001) };
	struct sockaddr_in r = { .sin_family = AF_INET, .sin_port = htons(cport),
				 .sin_addr.s_addr = htonl(0x7f000002) };
	struct tcp_repair_opt opts[] = { { TCPOPT_MAXSEG, 1448 }, { TCPOPT_TIMESTAMP, 0 } };
	struct tcp_repair_window w = { .snd_wl1 = rcv_nxt, .snd_wnd = 65535, .max_window = 65535,
				       .rcv_wnd = 65535, .rcv_wup = rcv_nxt };
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &one, sizeof(one)) ||
	    (q = TCP_RECV_QUEUE, setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q))) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &rcv_nxt, sizeof(rcv_nxt)) ||
	    (q = TCP_SEND_QUEUE, setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q))) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &snd_nxt, sizeof(snd_nxt)) ||
	    bind(fd, (void *)&l, sizeof(l)) || connect(fd, (void *)&r, sizeof(r)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_OPTIONS, opts, sizeof(opts)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_WINDOW, &w, sizeof(w))) {
		fprintf(stderr, "repair-mode socket from port %u: %s\n", cport, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

void serve_it(const struct xkv_store *s, int fd, __u32 slot)
{
	__u64 cookie = 0, zero = 0;
	socklen_t cl = sizeof(cookie);
	getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &cl);
	bpf_map_update_elem(s->tcp_slots_fd, &cookie, &slot, BPF_ANY);
	bpf_map_update_elem(s->tcp_paid_fd, &slot, &zero, BPF_ANY);
}

static __u64 mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (__u64)t.tv_sec * 1000000000ull + (__u64)t.tv_nsec;
}

static void flow_patch(int flows, const struct xkv_tcpx_key *k, __u32 ts_recent, __u64 replay_ns)
{
	struct xkv_tcpx_flow f;
	if (get_flow(flows, k, &f))
		return;
	f.ts_recent = ts_recent;
	f.replay_ns = replay_ns;
	bpf_map_update_elem(flows, k, &f, BPF_ANY);
}

struct ctx {
	const char *L;
	int xdp, flows;
	struct xkv_store *s;
	__u32 cli, srv;
	__u8 in[4096];
	struct out o;
	size_t n;
};

static void go(struct ctx *c, const struct seg *g)
{
	c->n = build(g, c->in);
	run(c->xdp, c->in, c->n, &c->o);
}

static int flags_of(struct ctx *c, const struct xkv_tcpx_key *k)
{
	struct xkv_tcpx_flow f;
	return get_flow(c->flows, k, &f) ? -1 : (int)f.flags;
}

/* Segments the kernel would not take: passed on (translated), the flow
 * unchanged, counted. */
static void rejected_rows(struct ctx *c, const struct xkv_tcpx_key *k, struct seg g)
{
	struct { const char *what; __u32 seq, ack; __u32 tsval; int bad_csum, bad_ipsum; } rows[] = {
		{ "sequence past the window", 1010 + 200000, 5030, 9, 0, 0 },
		{ "sequence before the window (old data)", 1010 - 400000, 5030, 9, 0, 0 },
		{ "acknowledging bytes never sent", 1010, 5030 + 10000, 9, 0, 0 },
		{ "acknowledging before snd_una - max_window", 1010, 5030 - 200000, 9, 0, 0 },
		{ "a wrong TCP checksum", 1010, 5030, 9, 1, 0 },
		{ "a wrong IP header checksum", 1010, 5030, 9, 0, 1 },
		{ "a stale timestamp (PAWS)", 1010, 5030, 50, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		put_flow(c->flows, k, 0, NULL);
		flow_patch(c->flows, k, 100, 0);
		__u64 r0 = counter(c->s, XKV_STAT_tcpx_rejected);
		g.seq = rows[i].seq, g.ack = rows[i].ack, g.tsval = rows[i].tsval;
		g.bad_csum = rows[i].bad_csum, g.bad_ipsum = rows[i].bad_ipsum;
		go(c, &g);
		int fl = flags_of(c, k);
		CHECK(c->o.ret == XDP_PASS && fl >= 0 && !(fl & XKV_TCPX_F_ACKED) &&
		      counter(c->s, XKV_STAT_tcpx_rejected) == r0 + 1,
		      "%s: %s: passed on, the reply not taken as acknowledged, counted rejected (ret %d, flags %d)",
		      c->L, rows[i].what, c->o.ret, fl);
	}
	/* a data segment with any sequence number (a spoofer's guess) moves
	 * nothing: passed_end stays, so the fast path stays on */
	put_flow(c->flows, k, XKV_TCPX_F_ACKED, NULL);
	g.seq = 1010 + 0x30000000, g.ack = 0x12345678, g.tsval = 9, g.bad_csum = g.bad_ipsum = 0;
	g.flags = F_ACK | F_PSH, g.payload = "get k\r\n";
	go(c, &g);
	struct xkv_tcpx_flow pf;
	CHECK(c->o.ret == XDP_PASS && !get_flow(c->flows, k, &pf) && pf.passed_end == 1000,
	      "%s: a data segment with random seq/ack: passed on, passed_end kept at 1000 (%u)", c->L,
	      pf.passed_end);
	g.flags = F_ACK, g.payload = NULL;
	/* the same acknowledgement, acceptable: taken */
	put_flow(c->flows, k, 0, NULL);
	flow_patch(c->flows, k, 100, 0);
	g.seq = 1010, g.ack = 5030, g.tsval = 100, g.bad_csum = g.bad_ipsum = 0;
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && (flags_of(c, k) & XKV_TCPX_F_ACKED) &&
	      rd32(tcp_of(&c->o) + 4) == 995 && rd32(tcp_of(&c->o) + 8) == 4980 && csum_ok(c->o.f, c->o.len),
	      "%s: the acceptable ACK: translated (seq %u, ack %u), the reply acknowledged", c->L,
	      rd32(tcp_of(&c->o) + 4), rd32(tcp_of(&c->o) + 8));
}

/* RST and SYN: the kernel's to judge; the flow goes with the socket only. */
static void rst_syn_rows(struct ctx *c, const struct xkv_tcpx_key *k, struct seg g)
{
	struct { const char *what; __u8 fl; __u32 seq; } rows[] = {
		{ "a RST far from the window", F_RST, 777777 },
		{ "a RST in the window, not at rcv_nxt", F_RST | F_ACK, 1500 },
		{ "a RST at rcv_nxt", F_RST | F_ACK, 1010 },
		{ "a SYN on the live connection", F_SYN, 123456 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		put_flow(c->flows, k, XKV_TCPX_F_ACKED, NULL);
		g.flags = rows[i].fl, g.seq = rows[i].seq, g.ack = 5030, g.payload = NULL;
		go(c, &g);
		CHECK(c->o.ret == XDP_PASS && flags_of(c, k) >= 0,
		      "%s: %s: passed to the kernel, the flow kept (ret %d)", c->L, rows[i].what, c->o.ret);
	}
	CHECK(rd32(tcp_of(&c->o) + 4) == 123456, "%s: ... the SYN untouched", c->L);
	put_flow(c->flows, k, XKV_TCPX_F_ACKED, NULL);
	g.flags = F_RST | F_ACK, g.seq = 1010;
	go(c, &g);
	CHECK(rd32(tcp_of(&c->o) + 4) == 995, "%s: a RST at rcv_nxt reaches the kernel translated (%u, want 995)",
	      c->L, rd32(tcp_of(&c->o) + 4));
}

/* No state for outsiders: a flow only for an established socket (serve's,
 * or waiting for serve's accept), in order; a flow whose socket is gone
 * goes. */
static void outsider_rows(struct ctx *c, struct seg g)
{
	struct xkv_tcpx_flow f;
	g.flags = F_ACK | F_PSH, g.payload = "get k\r\n", g.ack = SND_NXT;
	/* no socket at all (a spoofed source, a port swept) */
	g.sport = CPORT + 2, g.seq = 5555;
	struct xkv_tcpx_key k2 = key_of(c->cli, CPORT + 2, c->srv);
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && get_flow(c->flows, &k2, &f) && errno == ENOENT,
	      "%s: data without a connection: no flow", c->L);
	/* a flow whose socket is gone */
	put_flow(c->flows, &k2, XKV_TCPX_F_ACKED, NULL);
	g.flags = F_ACK, g.payload = NULL, g.seq = 1010, g.ack = 5030;
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && !memcmp(c->o.f, c->in, c->n) && get_flow(c->flows, &k2, &f) &&
	      errno == ENOENT, "%s: a flow whose socket is gone: removed, the segment untouched", c->L);
	/* a SYN on addresses whose socket is gone: a new connection's, the
	 * flow stale */
	put_flow(c->flows, &k2, XKV_TCPX_F_ACKED, NULL);
	g.flags = F_SYN, g.seq = 4242;
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && !memcmp(c->o.f, c->in, c->n) && get_flow(c->flows, &k2, &f) &&
	      errno == ENOENT, "%s: a SYN on addresses whose socket is gone: the flow removed, the SYN untouched",
	      c->L);
	/* a connection serve has not accepted yet (a one-shot client's first
	 * request races serve's accept): out of order, no flow */
	int fd3 = repaired(CPORT + 3, RCV_NXT, SND_NXT);
	struct xkv_tcpx_key k3 = key_of(c->cli, CPORT + 3, c->srv);
	g.sport = CPORT + 3, g.seq = RCV_NXT + 100, g.ack = SND_NXT, g.flags = F_ACK | F_PSH, g.payload = "get k\r\n";
	go(c, &g);
	CHECK(fd3 >= 0 && c->o.ret == XDP_PASS && get_flow(c->flows, &k3, &f) && errno == ENOENT,
	      "%s: first data out of order: no flow", c->L);
	/* in order, the kernel holding nothing unread: a flow, answered, not
	 * yet marked serve's (serve's sweep gives it TIME-WAIT's length) */
	__u64 a0 = counter(c->s, XKV_STAT_tcpx_answered);
	g.seq = RCV_NXT;
	go(c, &g);
	CHECK(c->o.ret == XDP_TX && !get_flow(c->flows, &k3, &f) &&
	      (f.flags & XKV_TCPX_F_ANSWERED) && !(f.flags & XKV_TCPX_F_SERVED) && f.c_start == RCV_NXT &&
	      counter(c->s, XKV_STAT_tcpx_answered) == a0 + 1 && rd32(tcp_of(&c->o) + 4) == SND_NXT &&
	      rd32(tcp_of(&c->o) + 8) == RCV_NXT + 7 && csum_ok(c->o.f, c->o.len),
	      "%s: first data in order before serve's accept: a flow, answered at %u/%u (ret %d)",
	      c->L, rd32(tcp_of(&c->o) + 4), rd32(tcp_of(&c->o) + 8), c->o.ret);
	/* serve accepts it (asking for the cookie, which the kernel makes only
	 * then): the next request answered too, the flow now serve's, with
	 * the cookie serve's sweep looks for */
	__u32 r1 = c->o.len - 34 - 32;
	serve_it(c->s, fd3, 3);
	__u64 cookie = 0;
	socklen_t cl = sizeof(cookie);
	getsockopt(fd3, SOL_SOCKET, SO_COOKIE, &cookie, &cl);
	g.seq = RCV_NXT + 7, g.ack = SND_NXT + r1;
	go(c, &g);
	CHECK(c->o.ret == XDP_TX && !get_flow(c->flows, &k3, &f) && (f.flags & XKV_TCPX_F_SERVED) &&
	      f.cookie == cookie && cookie &&
	      rd32(tcp_of(&c->o) + 4) == SND_NXT + r1 && rd32(tcp_of(&c->o) + 8) == RCV_NXT + 14,
	      "%s: ... serve holding it: the next request answered at %u (want %u), the flow marked serve's, "
	      "its cookie learnt",
	      c->L, rd32(tcp_of(&c->o) + 4), SND_NXT + r1);
	bpf_map_delete_elem(c->flows, &k3);
	close(fd3);
}

/* Exactly once: a write whose reply cannot go out here is not run here. */
static void once_rows(struct ctx *c, struct seg g)
{
	int fd = repaired(CPORT + 5, RCV_NXT, SND_NXT);
	struct xkv_tcpx_key k = key_of(c->cli, CPORT + 5, c->srv);
	struct xkv_store *s = c->s;
	struct xkv_item it;
	struct xkv_entry *e = xkv_entry_make(s, 0, 0, "v", 1);
	CHECK(fd >= 0 && e && !s->L->set(s, "dk", 2, e), "%s: the item to delete stored", c->L);
	free(e);
	serve_it(s, fd, 5);
	g.sport = CPORT + 5, g.seq = RCV_NXT, g.ack = SND_NXT, g.flags = F_ACK | F_PSH;
	g.payload = "delete dk\r\n", g.win = 1; /* a window of 1 byte: no room for the reply */
	__u64 r0 = counter(s, XKV_STAT_tcpx_refused_room);
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && counter(s, XKV_STAT_tcpx_refused_room) == r0 + 1 &&
	      s->L->get(s, "dk", 2, &it) == 1 && !memcmp(c->o.f, c->in, c->n),
	      "%s: a delete whose reply does not fit the window: passed untouched, the item still there "
	      "(ret %d, refused_room +%llu, get %d)", c->L, c->o.ret,
	      (unsigned long long)(counter(s, XKV_STAT_tcpx_refused_room) - r0), s->L->get(s, "dk", 2, &it));
	bpf_map_delete_elem(c->flows, &k); /* the kernel never got it: the flow as new */
	g.win = 4096;
	go(c, &g);
	CHECK(c->o.ret == XDP_TX && s->L->get(s, "dk", 2, &it) == 0 &&
	      !memcmp(tcp_of(&c->o) + 32, "DELETED\r\n", 9),
	      "%s: ... with room: deleted here, DELETED (ret %d: %.12s)", c->L, c->o.ret, tcp_of(&c->o) + 32);
	bpf_map_delete_elem(c->flows, &k);
	close(fd);
}

/* noreply: the write applied here, no reply; the segment goes to the
 * kernel as old data, whose immediate ACK (its D-SACK cut) acknowledges
 * it; a copy of it (that ACK lost) goes the same way, not run again. */
static void noreply_rows(struct ctx *c, struct seg g, int tc)
{
	int fd = repaired(CPORT + 6, RCV_NXT, SND_NXT);
	struct xkv_tcpx_key k = key_of(c->cli, CPORT + 6, c->srv);
	struct xkv_store *s = c->s;
	struct xkv_tcpx_flow f;
	struct xkv_item it;
	const char *req = "set nr 0 0 2 noreply\r\nhi\r\n";
	__u32 n = (__u32)strlen(req);
	serve_it(s, fd, 6);
	g.sport = CPORT + 6, g.seq = RCV_NXT, g.ack = SND_NXT, g.flags = F_ACK | F_PSH, g.payload = req;
	__u64 a0 = counter(s, XKV_STAT_tcpx_answered);
	go(c, &g);
	CHECK(fd >= 0 && c->o.ret == XDP_TX && c->o.len == 14 + 20 + 32 && tcp_of(&c->o)[13] == F_ACK &&
	      rd32(tcp_of(&c->o) + 4) == SND_NXT && rd32(tcp_of(&c->o) + 8) == RCV_NXT + n &&
	      csum_ok(c->o.f, c->o.len) && s->L->get(s, "nr", 2, &it) == 1 &&
	      counter(s, XKV_STAT_tcpx_answered) == a0 + 1 && !get_flow(c->flows, &k, &f) &&
	      (f.flags & XKV_TCPX_F_NOREPLY) && (f.flags & XKV_TCPX_F_ACKED) && !(f.flags & XKV_TCPX_F_ON_ACK) &&
	      f.c_end == RCV_NXT + n,
	      "%s: a noreply set: stored here, acknowledged from here by a pure ACK %u/%u (want %u/%u; ret %d, "
	      "len %u)", c->L, rd32(tcp_of(&c->o) + 4), rd32(tcp_of(&c->o) + 8), SND_NXT, RCV_NXT + n, c->o.ret,
	      c->o.len);
	/* when the segment's ACK is news to the kernel (I5), the segment goes
	 * to it as old data instead, and the kernel's immediate ACK, its
	 * D-SACK cut, acknowledges it: the flow as that answer leaves it */
	f.flags |= XKV_TCPX_F_ON_ACK;
	bpf_map_update_elem(c->flows, &k, &f, BPF_ANY);
	struct seg a = { .saddr = c->srv, .daddr = c->cli, .sport = PORT, .dport = CPORT + 6, .flags = F_ACK,
			 .seq = SND_NXT, .ack = RCV_NXT, .tsval = 7, .tsecr = 9, .nsack = 1 };
	a.sack[0][0] = RCV_NXT - n, a.sack[0][1] = RCV_NXT;
	__u8 in[256];
	struct out o;
	size_t an = build(&a, in);
	run(tc, in, an, &o);
	CHECK(o.ret == TC_ACT_OK && o.len == an - 12 && (tcp_of(&o)[12] >> 4) * 4 == 32 &&
	      tcp_of(&o)[13] == F_ACK && rd32(tcp_of(&o) + 4) == SND_NXT && rd32(tcp_of(&o) + 8) == RCV_NXT + n,
	      "%s: ... the kernel's ACK acknowledges it (ack %u, want %u), its D-SACK cut (len %u, want %zu)",
	      c->L, rd32(tcp_of(&o) + 8), RCV_NXT + n, o.len, an - 12);
	/* that ACK lost: the set again goes to the kernel, not run again */
	s->L->del(s, "nr", 2);
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && s->L->get(s, "nr", 2, &it) == 0,
	      "%s: ... the noreply set again: to the kernel (which acknowledges it), not stored again", c->L);
	bpf_map_delete_elem(c->flows, &k);
	close(fd);
}

/* Repeats of the answered request: a replay at most once in
 * XKV_TCPX_REPLAY_NS; keepalive probes to the kernel; the timestamp option
 * found after three SACK blocks. */
static void repeat_rows(struct ctx *c, const struct xkv_tcpx_key *k, struct seg g)
{
	const char *reply = "VALUE k 0 2\r\nhi\r\nEND\r\n";
	size_t rl = strlen(reply);
	g.flags = F_ACK | F_PSH, g.seq = 1000, g.ack = 5000, g.tsval = 11, g.payload = "get kkkk\r\n";
	put_flow(c->flows, k, 0, reply);
	__u64 r0 = counter(c->s, XKV_STAT_tcpx_replayed), d0 = counter(c->s, XKV_STAT_tcpx_dup_dropped);
	go(c, &g);
	size_t hl = (size_t)(tcp_of(&c->o)[12] >> 4) * 4;
	CHECK(c->o.ret == XDP_TX && rd32(tcp_of(&c->o) + 4) == 5000 && hl == 32 && c->o.len == 34 + hl + rl &&
	      !memcmp(tcp_of(&c->o) + hl, reply, rl) && csum_ok(c->o.f, c->o.len) &&
	      counter(c->s, XKV_STAT_tcpx_replayed) == r0 + 1 && rd32(tcp_of(&c->o) + 20 + 8) == 11,
	      "%s: the answered request again, its reply unacknowledged: the same reply at 5000, TSecr 11 "
	      "(ret %d, seq %u, len %u)", c->L, c->o.ret, rd32(tcp_of(&c->o) + 4), c->o.len);
	go(c, &g);
	CHECK(c->o.ret == XDP_DROP && counter(c->s, XKV_STAT_tcpx_dup_dropped) == d0 + 1 &&
	      counter(c->s, XKV_STAT_tcpx_replayed) == r0 + 1,
	      "%s: ... and again at once: dropped (a replay at most once in 200 ms)", c->L);
	flow_patch(c->flows, k, 0, mono_ns() - 300000000ull);
	g.nsack = 3, g.ts_last = 1, g.tsval = 4242;
	g.sack[0][0] = 5100, g.sack[0][1] = 5200, g.sack[1][0] = 5300, g.sack[1][1] = 5400;
	g.sack[2][0] = 5500, g.sack[2][1] = 5600;
	go(c, &g);
	CHECK(c->o.ret == XDP_TX && rd32(tcp_of(&c->o) + 20 + 8) == 4242,
	      "%s: 300 ms later, timestamps after three SACK blocks (option offset 28): replayed, TSecr %u "
	      "(want 4242)", c->L, rd32(tcp_of(&c->o) + 20 + 8));
	g.nsack = 0, g.ts_last = 0, g.tsval = 11;

	put_flow(c->flows, k, XKV_TCPX_F_ACKED, NULL);
	d0 = counter(c->s, XKV_STAT_tcpx_dup_dropped);
	g.ack = 5030;
	go(c, &g);
	CHECK(c->o.ret == XDP_DROP && counter(c->s, XKV_STAT_tcpx_dup_dropped) == d0 + 1,
	      "%s: the answered request again, its reply acknowledged: dropped", c->L);
	g.seq = 1009, g.payload = "x"; /* the form Windows sends: SND.NXT-1, one byte */
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && rd32(tcp_of(&c->o) + 4) == RCV_NXT - 1 && csum_ok(c->o.f, c->o.len),
	      "%s: a 1-byte keepalive probe at SND.NXT-1: to the kernel as old data at %u (want %u)", c->L,
	      rd32(tcp_of(&c->o) + 4), RCV_NXT - 1);
	g.payload = NULL;
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && rd32(tcp_of(&c->o) + 4) == RCV_NXT - 1,
	      "%s: a 0-byte probe at SND.NXT-1: to the kernel at %u", c->L, rd32(tcp_of(&c->o) + 4));
}

/* A segment after an answer whose reply the client has not acknowledged
 * (libmemcached's getkq, then its noop, on TCP_NODELAY): answered as the
 * answer's extension, one answer from the old request's start, the two
 * replies kept together; a loss of either brings both again. */
static void merge_rows(struct ctx *c, const struct xkv_tcpx_key *k, struct seg g)
{
	const char *old = "VALUE k 0 2\r\nhi\r\nEND\r\n", *want = "VALUE mk 0 3\r\nabc\r\nEND\r\n";
	size_t ol = strlen(old), wl = strlen(want);
	struct xkv_entry *e = xkv_entry_make(c->s, 0, 0, "abc", 3);
	c->s->L->set(c->s, "mk", 2, e);
	free(e);
	put_flow(c->flows, k, 0, old); /* ds 20 + 22: the old reply at 5000 */
	g.seq = 1010, g.ack = 5000, g.payload = "get mk\r\n";
	__u64 a0 = counter(c->s, XKV_STAT_tcpx_answered);
	go(c, &g);
	struct xkv_tcpx_flow f;
	const __u8 *t = tcp_of(&c->o);
	size_t hl = (size_t)(t[12] >> 4) * 4;
	int ok = c->o.ret == XDP_TX && !get_flow(c->flows, k, &f);
	CHECK(ok && rd32(t + 4) == 5000 + ol && rd32(t + 8) == 1018 && c->o.len == 34 + hl + wl &&
	      !memcmp(t + hl, want, wl) && csum_ok(c->o.f, c->o.len) &&
	      counter(c->s, XKV_STAT_tcpx_answered) == a0 + 1,
	      "%s: a get after an answer whose reply is unacknowledged: answered at %u (want %zu), ack %u "
	      "(want 1018; ret %d)", c->L, rd32(t + 4), 5000 + ol, rd32(t + 8), c->o.ret);
	CHECK(ok && f.c_start == 1000 && f.c_end == 1018 && f.s_wire == 5000 && f.s_k == 4980 && f.dc_prev == 5 &&
	      f.dc == 15 + 8 && f.ds_prev == 20 && f.ds == 20 + ol + wl && f.r_len == ol + wl &&
	      !memcmp(f.r, old, ol) && !memcmp(f.r + ol, want, wl) && !(f.flags & XKV_TCPX_F_ACKED),
	      "%s: ... one answer from 1000 to 1018, both replies kept from 5000 (c %u-%u, r_len %u, dc %u, "
	      "ds %u)", c->L, f.c_start, f.c_end, f.r_len, f.dc, f.ds);
	/* the first reply lost: its request again brings both */
	flow_patch(c->flows, k, 0, mono_ns() - 300000000ull);
	g.seq = 1000, g.payload = "get kkkk\r\n";
	go(c, &g);
	t = tcp_of(&c->o);
	hl = (size_t)(t[12] >> 4) * 4;
	CHECK(c->o.ret == XDP_TX && rd32(t + 4) == 5000 && c->o.len == 34 + hl + ol + wl &&
	      !memcmp(t + hl, old, ol) && !memcmp(t + hl + ol, want, wl),
	      "%s: ... the first request again: both replies from 5000 (ret %d, seq %u, len %u)", c->L, c->o.ret,
	      rd32(t + 4), c->o.len);
	/* the client's pure ACK of both: no news to the kernel (nothing in
	 * flight, the window it has: 65535, no scaling), absorbed; the same
	 * ACK again, or one with another window, goes on */
	__u64 b0 = counter(c->s, XKV_STAT_tcpx_acks_absorbed);
	g.seq = 1018, g.ack = (__u32)(5000 + ol + wl), g.payload = NULL, g.flags = F_ACK, g.win = 65535;
	go(c, &g);
	CHECK(c->o.ret == XDP_DROP && counter(c->s, XKV_STAT_tcpx_acks_absorbed) == b0 + 1 &&
	      !get_flow(c->flows, k, &f) && (f.flags & XKV_TCPX_F_ACKED),
	      "%s: the pure ACK of the replies: absorbed, the flow's reply acknowledged (ret %d)", c->L, c->o.ret);
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && counter(c->s, XKV_STAT_tcpx_acks_absorbed) == b0 + 1,
	      "%s: ... the same ACK again (a keepalive's answer acknowledges nothing new): to the kernel (ret %d)",
	      c->L, c->o.ret);
	f.flags &= ~XKV_TCPX_F_ACKED;
	bpf_map_update_elem(c->flows, k, &f, BPF_ANY);
	g.win = 4096;
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && counter(c->s, XKV_STAT_tcpx_acks_absorbed) == b0 + 1,
	      "%s: ... a pure ACK of them with another window (news to the kernel): to it (ret %d)", c->L,
	      c->o.ret);
	c->s->L->del(c->s, "mk", 2);
}

/* The answer's refusals, each passed on translated and counted. */
static void refusal_rows(struct ctx *c, const struct xkv_tcpx_key *k, struct seg g)
{
	put_flow(c->flows, k, XKV_TCPX_F_ACKED, NULL);
	__u64 c0 = counter(c->s, XKV_STAT_tcpx_refused_shape);
	g.seq = 1010, g.ack = 5030, g.payload = "get k\r\n", g.flags = F_ACK | F_PSH | 0x20; /* URG */
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && counter(c->s, XKV_STAT_tcpx_refused_shape) == c0 + 1 &&
	      rd32(tcp_of(&c->o) + 4) == 995, "%s: URG: refused_shape, translated", c->L);
	g.flags = F_ACK | F_PSH;
	put_flow(c->flows, k, 0, NULL);
	c0 = counter(c->s, XKV_STAT_tcpx_refused_unacked);
	g.ack = 4990; /* before the unacknowledged reply (at 5000) */
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && counter(c->s, XKV_STAT_tcpx_refused_unacked) == c0 + 1,
	      "%s: the last reply unacknowledged, nor what came before it: refused_unacked", c->L);
	g.seq = 1012, g.ack = 5000; /* a gap after the answered request (1000-1010) */
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && counter(c->s, XKV_STAT_tcpx_refused_unacked) == c0 + 2,
	      "%s: the last reply unacknowledged, the segment not the next byte after its request: "
	      "refused_unacked", c->L);
	g.seq = 1010;
	merge_rows(c, k, g);
	put_flow(c->flows, k, XKV_TCPX_F_ACKED, NULL);
	struct xkv_tcpx_flow pf;
	get_flow(c->flows, k, &pf);
	pf.passed_end = 1020;
	bpf_map_update_elem(c->flows, k, &pf, BPF_ANY);
	c0 = counter(c->s, XKV_STAT_tcpx_refused_order);
	g.ack = 5030;
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && counter(c->s, XKV_STAT_tcpx_refused_order) == c0 + 1,
	      "%s: bytes of it handed to the kernel already (a copy in GRO): refused_order", c->L);
	/* a flow made after the connection's first byte reached the kernel
	 * (the handshake's last ACK still in GRO when the data came) does not
	 * know its protocol: it learns it from the first request it answers,
	 * which starts where serve stopped (a php-memcached connection stayed
	 * serve's for its life before) */
	put_flow(c->flows, k, XKV_TCPX_F_ACKED, NULL);
	get_flow(c->flows, k, &pf);
	pf.proto = XKV_TCPX_PROTO_UNKNOWN;
	bpf_map_update_elem(c->flows, k, &pf, BPF_ANY);
	c0 = counter(c->s, XKV_STAT_tcpx_answered);
	go(c, &g);
	CHECK(c->o.ret == XDP_TX && counter(c->s, XKV_STAT_tcpx_answered) == c0 + 1 && !get_flow(c->flows, k, &pf) &&
	      pf.proto == XKV_TCPX_PROTO_TEXT,
	      "%s: a flow that does not know the connection's protocol: answered, text learnt (ret %d, proto %u)",
	      c->L, c->o.ret, pf.proto);
}

int tcpx_ingress_cases(const char *L, struct bpf_object *obj, struct xkv_store *s)
{
	static const char *const names[] = XKV_TCPX_PROG_NAMES;
	struct bpf_program *x = bpf_object__find_program_by_name(obj, "xdpkv_tcpx");
	int put = 0; /* the request and answer programs in tcpx_progs, by slot */
	for (__u32 i = XKV_TCPX_PROG_RUN; i < XKV_TCPX_PROGS; i++) {
		struct bpf_program *p = bpf_object__find_program_by_name(obj, names[i]);
		int pfd = p ? bpf_program__fd(p) : -1;
		put += pfd >= 0 && !bpf_map_update_elem(s->tcpx_progs_fd, &i, &pfd, BPF_ANY);
	}
	CHECK(x && put == XKV_TCPX_PROGS - 1,
	      "%s: the responder's request and answer programs (text, binary, meta, answer) in tcpx_progs", L);
	if (!x || put != XKV_TCPX_PROGS - 1)
		return unit_fails;
	struct ctx *c = calloc(1, sizeof(*c));
	c->L = L, c->xdp = bpf_program__fd(x), c->flows = s->tcpx_flows_fd, c->s = s;
	c->cli = htonl(0x7f000002), c->srv = htonl(0x7f000001);
	int fd = repaired(CPORT, RCV_NXT, SND_NXT);
	CHECK(fd >= 0, "%s: a connection in repair mode (TCP_REPAIR)", L);
	if (fd < 0) {
		free(c);
		return unit_fails;
	}
	serve_it(s, fd, 1);
	struct xkv_tcpx_key k = key_of(c->cli, CPORT, c->srv);
	struct seg g = { .saddr = c->cli, .daddr = c->srv, .sport = CPORT, .dport = PORT, .flags = F_ACK,
			 .tsval = 9, .tsecr = 7 };

	/* a pure ACK of the reply: seq past the request -dc, ack past the reply -ds */
	put_flow(c->flows, &k, 0, NULL);
	g.seq = 1010, g.ack = 5030;
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && rd32(tcp_of(&c->o) + 4) == 995 && rd32(tcp_of(&c->o) + 8) == 4980 &&
	      csum_ok(c->o.f, c->o.len) && (flags_of(c, &k) & XKV_TCPX_F_ACKED),
	      "%s: ingress pure ACK: seq %u (want 995), ack %u (want 4980), the reply acknowledged", L,
	      rd32(tcp_of(&c->o) + 4), rd32(tcp_of(&c->o) + 8));
	/* an ack inside the reply means the reply's kernel place; SACK edges the same */
	g.ack = 5010, g.nsack = 1, g.sack[0][0] = 5030, g.sack[0][1] = 5100;
	go(c, &g);
	const __u8 *sb = tcp_of(&c->o) + 20 + 12 + 4;
	CHECK(rd32(tcp_of(&c->o) + 8) == 4980 && rd32(sb) == 4980 && rd32(sb + 4) == 5050 &&
	      csum_ok(c->o.f, c->o.len),
	      "%s: ingress ack inside the reply -> s_k (%u), SACK 5030-5100 -> %u-%u (want 4980-5050)", L,
	      rd32(tcp_of(&c->o) + 8), rd32(sb), rd32(sb + 4));
	g.nsack = 0;
	/* a segment that ends before the window (old data): the offsets before it */
	g.seq = 990, g.ack = 4990, g.payload = "get a\r\n";
	go(c, &g);
	CHECK(c->o.ret == XDP_PASS && rd32(tcp_of(&c->o) + 4) == 985 && rd32(tcp_of(&c->o) + 8) == 4970 &&
	      csum_ok(c->o.f, c->o.len), "%s: ingress before the request: seq %u (want 985), ack %u (want 4970)",
	      L, rd32(tcp_of(&c->o) + 4), rd32(tcp_of(&c->o) + 8));
	g.payload = NULL;

	rejected_rows(c, &k, g);
	rst_syn_rows(c, &k, g);
	refusal_rows(c, &k, g);
	repeat_rows(c, &k, g);
	outsider_rows(c, g);
	once_rows(c, g);
	struct bpf_program *e = bpf_object__find_program_by_name(obj, "xdpkv_tcpx_egress");
	if (e)
		noreply_rows(c, g, bpf_program__fd(e));
	bpf_map_delete_elem(c->flows, &k);
	close(fd);
	free(c);
	return unit_fails;
}
