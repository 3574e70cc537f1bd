// SPDX-License-Identifier: MIT
/* Fixtures for TCP in the driver hook, through BPF_PROG_TEST_RUN: the XDP
 * responder's segment program (xdpkv_tcpx) and the TC egress program
 * (xdpkv_tcpx_egress) over a flow state written into tcpx_flows, each case
 * an input segment and the segment that must come out (sequence,
 * acknowledgement, SACK blocks, payload, a valid checksum) or the verdict
 * and counter that must move.  The replay case answers on a real loopback
 * connection (the socket lookup needs one).  Needs root; per layout given
 * (default hash_map and lru). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>
#include "xdpkv.h"
#include "inproc.h"
#include "policy.h"
#include "tcpx.h"
#include "unit_check.h"

#define PORT 11211
#define CPORT 40001
#define F_ACK 0x10
#define F_PSH 0x08
#define F_RST 0x04
#define F_SYN 0x02
#define F_FIN 0x01

struct seg {
	__u32 saddr, daddr;     /* network order */
	__u16 sport, dport;     /* host order */
	__u32 seq, ack;
	__u8 flags;
	__u32 tsval, tsecr;     /* both 0: no timestamps */
	__u32 sack[4][2];
	int nsack;
	const char *payload;
};

static __u16 fold(__u64 s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

static __u64 sum16(const __u8 *p, size_t n)
{
	__u64 s = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (__u16)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (__u16)(p[n - 1] << 8);
	return s;
}

/* The TCP checksum of an IPv4 frame is right. */
static int csum_ok(const __u8 *f, size_t n)
{
	const __u8 *ip = f + 14;
	size_t l4 = n - 34;
	__u64 s = sum16(ip + 12, 8) + 6 + l4 + sum16(ip + 20, l4);
	return fold(s) == 0xffff;
}

/* Eth + IPv4 + TCP (+ NOP NOP TS, + NOP NOP SACK) + payload into f: its length. */
static size_t build(const struct seg *g, __u8 *f)
{
	__u8 opt[40];
	size_t ol = 0;
	if (g->tsval || g->tsecr) {
		__u32 v = htonl(g->tsval), e = htonl(g->tsecr);
		opt[ol++] = 1, opt[ol++] = 1, opt[ol++] = 8, opt[ol++] = 10;
		memcpy(opt + ol, &v, 4), memcpy(opt + ol + 4, &e, 4), ol += 8;
	}
	if (g->nsack) {
		opt[ol++] = 1, opt[ol++] = 1, opt[ol++] = 5, opt[ol++] = (__u8)(2 + 8 * g->nsack);
		for (int i = 0; i < g->nsack; i++) {
			__u32 a = htonl(g->sack[i][0]), b = htonl(g->sack[i][1]);
			memcpy(opt + ol, &a, 4), memcpy(opt + ol + 4, &b, 4), ol += 8;
		}
	}
	size_t pl = g->payload ? strlen(g->payload) : 0, th = 20 + ol, tot = 20 + th + pl;
	memset(f, 0, 14 + tot);
	f[12] = 0x08, f[13] = 0x00;
	__u8 *ip = f + 14, *t = ip + 20;
	ip[0] = 0x45, ip[2] = (__u8)(tot >> 8), ip[3] = (__u8)tot, ip[6] = 0x40, ip[8] = 64, ip[9] = 6;
	memcpy(ip + 12, &g->saddr, 4), memcpy(ip + 16, &g->daddr, 4);
	__u16 ic = (__u16)~fold(sum16(ip, 20));
	ip[10] = (__u8)(ic >> 8), ip[11] = (__u8)ic;
	__u16 sp = htons(g->sport), dp = htons(g->dport);
	__u32 sq = htonl(g->seq), ak = htonl(g->ack);
	memcpy(t, &sp, 2), memcpy(t + 2, &dp, 2), memcpy(t + 4, &sq, 4), memcpy(t + 8, &ak, 4);
	t[12] = (__u8)((th / 4) << 4), t[13] = g->flags, t[14] = 0x10; /* window 4096 */
	memcpy(t + 20, opt, ol);
	if (pl)
		memcpy(t + th, g->payload, pl);
	__u64 s = sum16(ip + 12, 8) + 6 + th + pl + sum16(t, th + pl);
	__u16 c = (__u16)~fold(s);
	t[16] = (__u8)(c >> 8), t[17] = (__u8)c;
	return 14 + tot;
}

static __u32 rd32(const __u8 *p) { return (__u32)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]; }

struct out {
	int ret;
	__u8 f[4096];
	__u32 len;
};

static void run(int prog, const __u8 *in, size_t n, struct out *o)
{
	DECLARE_LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = in, .data_size_in = (__u32)n,
			    .data_out = o->f, .data_size_out = sizeof(o->f), .repeat = 1);
	memset(o, 0, sizeof(*o));
	int e = bpf_prog_test_run_opts(prog, &t);
	o->ret = e ? -1 : (int)t.retval;
	o->len = t.data_size_out;
}

/* the TCP header of an output frame */
static const __u8 *tcp_of(const struct out *o) { return o->f + 34; }

static __u64 counter(const struct xkv_store *s, enum xkv_stat i)
{
	struct xkv_stats st;
	return xkv_stats_read(s, XKV_STATS_FAST, &st, NULL) ? 0 : st.v[i];
}

static struct xkv_tcpx_key key_of(__u32 client, __u16 cport, __u32 server)
{
	struct xkv_tcpx_key k;
	memset(&k, 0, sizeof(k));
	xkv_addr_from_v4(k.peer, &client);
	xkv_addr_from_v4(k.local, &server);
	k.pport = htons(cport);
	k.lport = htons(PORT);
	return k;
}

/* A flow after one answer: the request [1000, 1010) consumed (dc 10, 5
 * before), its reply [5000, 5030) injected at the kernel's 4980 (ds 20
 * before, 50 after). */
static void put_flow(int fd, const struct xkv_tcpx_key *k, __u32 flags, const char *reply)
{
	struct xkv_tcpx_flow f;
	memset(&f, 0, sizeof(f));
	f.flags = XKV_TCPX_F_ANSWERED | flags;
	f.dc_prev = 5, f.dc = 15;
	f.ds_prev = 20, f.ds = 50;
	f.c_start = 1000, f.c_end = 1010;
	f.s_k = 4980, f.s_wire = 5000, f.r_len = 30;
	f.passed_end = 1000;
	if (reply) {
		f.r_len = (__u32)strlen(reply);
		f.ds = f.ds_prev + f.r_len;
		memcpy(f.r, reply, f.r_len);
	}
	CHECK(!bpf_map_update_elem(fd, k, &f, BPF_ANY), "flow written: %s", strerror(errno));
}

static int get_flow(int fd, const struct xkv_tcpx_key *k, struct xkv_tcpx_flow *f)
{
	return bpf_map_lookup_elem(fd, k, f);
}

static void egress_cases(const char *L, int tc, int flows)
{
	__u32 cli = htonl(0x0a000002), srv = htonl(0x0a000001);
	struct xkv_tcpx_key k = key_of(cli, CPORT, srv);
	__u8 in[4096];
	struct out o;
	struct seg g = { .saddr = srv, .daddr = cli, .sport = PORT, .dport = CPORT, .flags = F_ACK | F_PSH,
			 .tsval = 7, .tsecr = 9, .payload = "END\r\n" };

	/* no flow: untouched */
	bpf_map_delete_elem(flows, &k);
	g.seq = 4980, g.ack = 995;
	size_t n = build(&g, in);
	run(tc, in, n, &o);
	CHECK(o.ret == TC_ACT_OK && o.len == n && !memcmp(o.f, in, n), "%s: egress without a flow: untouched", L);

	/* after the answer, the reply acknowledged: past s_k +ds, past the request +dc */
	put_flow(flows, &k, XKV_TCPX_F_ACKED, NULL);
	g.seq = 4980, g.ack = 995; /* the kernel's rcv_nxt = c_end - dc */
	run(tc, in, build(&g, in), &o);
	CHECK(o.ret == TC_ACT_OK && rd32(tcp_of(&o) + 4) == 5030 && rd32(tcp_of(&o) + 8) == 1010 &&
	      csum_ok(o.f, o.len), "%s: egress at s_k: seq %u (want 5030), ack %u (want 1010), checksum",
	      L, rd32(tcp_of(&o) + 4), rd32(tcp_of(&o) + 8));
	/* before the correction point: the offsets before it */
	g.seq = 4970, g.ack = 990;
	run(tc, in, build(&g, in), &o);
	CHECK(rd32(tcp_of(&o) + 4) == 4990 && rd32(tcp_of(&o) + 8) == 995 && csum_ok(o.f, o.len),
	      "%s: egress before it: seq %u (want 4990), ack %u (want 995)", L, rd32(tcp_of(&o) + 4),
	      rd32(tcp_of(&o) + 8));
	/* the kernel's SACK blocks of the client's stream */
	g.seq = 4980, g.ack = 995, g.payload = NULL, g.flags = F_ACK;
	g.nsack = 2, g.sack[0][0] = 1000, g.sack[0][1] = 1100, g.sack[1][0] = 900, g.sack[1][1] = 980;
	run(tc, in, build(&g, in), &o);
	const __u8 *sb = tcp_of(&o) + 20 + 12 + 4;
	CHECK(rd32(sb) == 1015 && rd32(sb + 4) == 1115 && rd32(sb + 8) == 905 && rd32(sb + 12) == 985 &&
	      csum_ok(o.f, o.len), "%s: egress SACK blocks: %u-%u %u-%u (want 1015-1115 905-985)", L,
	      rd32(sb), rd32(sb + 4), rd32(sb + 8), rd32(sb + 12));
	g.nsack = 0;

	/* the reply not yet acknowledged: the kernel's ack held at the request's start */
	put_flow(flows, &k, 0, NULL);
	g.seq = 4980, g.ack = 995, g.flags = F_ACK | F_PSH, g.payload = "END\r\n";
	run(tc, in, build(&g, in), &o);
	CHECK(rd32(tcp_of(&o) + 8) == 1000 && csum_ok(o.f, o.len),
	      "%s: egress while the reply is unacknowledged: ack %u (want 1000, held)", L, rd32(tcp_of(&o) + 8));

	/* the reply kept for the kernel's ACK: on its pure ACK, at s_wire, acking the request */
	put_flow(flows, &k, XKV_TCPX_F_ON_ACK, "VALUE k 0 1\r\nx\r\nEND\r\n");
	g.seq = 4980, g.ack = 995, g.flags = F_ACK, g.payload = NULL;
	g.nsack = 1, g.sack[0][0] = 985, g.sack[0][1] = 995; /* the duplicate's D-SACK */
	n = build(&g, in);
	run(tc, in, n, &o);
	struct xkv_tcpx_flow f;
	const char *want = "VALUE k 0 1\r\nx\r\nEND\r\n";
	size_t wl = strlen(want), hl = (size_t)(tcp_of(&o)[12] >> 4) * 4;
	CHECK(o.len == n + wl && rd32(tcp_of(&o) + 4) == 5000 && rd32(tcp_of(&o) + 8) == 1010 &&
	      tcp_of(&o)[13] == (F_ACK | F_PSH) && !memcmp(tcp_of(&o) + hl, want, wl) &&
	      (size_t)(o.f[16] << 8 | o.f[17]) == 20 + hl + wl,
	      "%s: the kept reply on the kernel's pure ACK: len %u (want %zu), seq %u, ack %u", L, o.len,
	      n + wl, rd32(tcp_of(&o) + 4), rd32(tcp_of(&o) + 8));
	const __u8 *so = tcp_of(&o) + 20 + 12;
	CHECK(so[0] == 1 && so[1] == 1 && so[2] == 1 && so[3] == 1 && so[4] == 1,
	      "%s: ... its SACK option turned to NOPs", L);
	CHECK(!get_flow(flows, &k, &f) && !(f.flags & XKV_TCPX_F_ON_ACK), "%s: ... once", L);
	run(tc, in, n, &o);
	CHECK(o.len == n, "%s: the next pure ACK carries nothing", L);
	g.nsack = 0;

	/* FIN recorded; RST ends the flow */
	put_flow(flows, &k, XKV_TCPX_F_ACKED, NULL);
	g.flags = F_ACK | F_FIN, g.seq = 4980, g.payload = NULL;
	run(tc, in, build(&g, in), &o);
	CHECK(!get_flow(flows, &k, &f) && (f.flags & XKV_TCPX_F_FIN_K) && f.fin_k == 5031,
	      "%s: the kernel's FIN recorded at 5031 (%u)", L, f.fin_k);
	g.flags = F_RST;
	run(tc, in, build(&g, in), &o);
	CHECK(get_flow(flows, &k, &f) && errno == ENOENT, "%s: the kernel's RST ends the flow", L);
}

static void ingress_cases(const char *L, int xdp, int flows, const struct xkv_store *s)
{
	__u32 cli = htonl(0x0a000002), srv = htonl(0x0a000001);
	struct xkv_tcpx_key k = key_of(cli, CPORT, srv);
	__u8 in[4096];
	struct out o;
	struct xkv_tcpx_flow f;
	struct seg g = { .saddr = cli, .daddr = srv, .sport = CPORT, .dport = PORT, .flags = F_ACK,
			 .tsval = 9, .tsecr = 7 };

	/* a pure ACK of the reply: seq past the request -dc, ack past the reply -ds */
	put_flow(flows, &k, 0, NULL);
	g.seq = 1010, g.ack = 5030;
	run(xdp, in, build(&g, in), &o);
	CHECK(o.ret == XDP_PASS && rd32(tcp_of(&o) + 4) == 995 && rd32(tcp_of(&o) + 8) == 4980 &&
	      csum_ok(o.f, o.len), "%s: ingress pure ACK: seq %u (want 995), ack %u (want 4980)", L,
	      rd32(tcp_of(&o) + 4), rd32(tcp_of(&o) + 8));
	CHECK(!get_flow(flows, &k, &f) && (f.flags & XKV_TCPX_F_ACKED), "%s: ... the reply marked acknowledged", L);
	/* an ack inside the reply means the reply's kernel place; SACK edges the same */
	g.ack = 5010, g.nsack = 1, g.sack[0][0] = 5030, g.sack[0][1] = 5100;
	run(xdp, in, build(&g, in), &o);
	const __u8 *sb = tcp_of(&o) + 20 + 12 + 4;
	CHECK(rd32(tcp_of(&o) + 8) == 4980 && rd32(sb) == 4980 && rd32(sb + 4) == 5050 && csum_ok(o.f, o.len),
	      "%s: ingress ack inside the reply -> s_k (%u), SACK 5030-5100 -> %u-%u (want 4980-5050)", L,
	      rd32(tcp_of(&o) + 8), rd32(sb), rd32(sb + 4));
	g.nsack = 0;
	/* a segment that ends before the answered request: the offsets before it */
	g.seq = 990, g.ack = 4990, g.payload = "get a\r\n";
	run(xdp, in, build(&g, in), &o);
	CHECK(o.ret == XDP_PASS && rd32(tcp_of(&o) + 4) == 985 && rd32(tcp_of(&o) + 8) == 4970 && csum_ok(o.f, o.len),
	      "%s: ingress before the request: seq %u (want 985), ack %u (want 4970)", L,
	      rd32(tcp_of(&o) + 4), rd32(tcp_of(&o) + 8));

	/* refusals, each passed on translated and counted */
	put_flow(flows, &k, XKV_TCPX_F_ACKED, NULL);
	__u64 c0 = counter(s, XKV_STAT_tcpx_refused_socket);
	g.seq = 1010, g.ack = 5030, g.payload = "get k\r\n", g.flags = F_ACK | F_PSH;
	run(xdp, in, build(&g, in), &o);
	CHECK(o.ret == XDP_PASS && rd32(tcp_of(&o) + 4) == 995 && counter(s, XKV_STAT_tcpx_refused_socket) == c0 + 1,
	      "%s: a request with no socket for it: passed, translated, refused_socket", L);
	c0 = counter(s, XKV_STAT_tcpx_refused_shape);
	g.flags = F_ACK | F_PSH | 0x20; /* URG */
	run(xdp, in, build(&g, in), &o);
	CHECK(o.ret == XDP_PASS && counter(s, XKV_STAT_tcpx_refused_shape) == c0 + 1, "%s: URG: refused_shape", L);
	g.flags = F_ACK | F_PSH;
	put_flow(flows, &k, 0, NULL);
	c0 = counter(s, XKV_STAT_tcpx_refused_unacked);
	g.seq = 1010, g.ack = 5000; /* the reply not acknowledged */
	run(xdp, in, build(&g, in), &o);
	CHECK(o.ret == XDP_PASS && counter(s, XKV_STAT_tcpx_refused_unacked) == c0 + 1,
	      "%s: the last reply unacknowledged: refused_unacked", L);
	put_flow(flows, &k, XKV_TCPX_F_ACKED, NULL);
	struct xkv_tcpx_flow pf;
	get_flow(flows, &k, &pf);
	pf.passed_end = 1020;
	bpf_map_update_elem(flows, &k, &pf, BPF_ANY);
	c0 = counter(s, XKV_STAT_tcpx_refused_order);
	g.seq = 1010, g.ack = 5030;
	run(xdp, in, build(&g, in), &o);
	CHECK(o.ret == XDP_PASS && counter(s, XKV_STAT_tcpx_refused_order) == c0 + 1,
	      "%s: bytes of it handed to the kernel already (a copy in GRO): refused_order", L);

	/* a repeat of the answered request once its reply is acknowledged: dropped */
	put_flow(flows, &k, XKV_TCPX_F_ACKED, NULL);
	c0 = counter(s, XKV_STAT_tcpx_dup_dropped);
	g.seq = 1000, g.ack = 5030, g.payload = "get kkkk\r\n";
	run(xdp, in, build(&g, in), &o);
	CHECK(o.ret == XDP_DROP && counter(s, XKV_STAT_tcpx_dup_dropped) == c0 + 1,
	      "%s: the answered request again, its reply acknowledged: dropped", L);
	/* a SYN on the flow's addresses clears it */
	g.flags = F_SYN, g.payload = NULL;
	run(xdp, in, build(&g, in), &o);
	CHECK(o.ret == XDP_PASS && get_flow(flows, &k, &f) && errno == ENOENT, "%s: a new SYN clears the flow", L);
	/* first data of a connection: a flow, nothing translated */
	g.flags = F_ACK | F_PSH, g.seq = 7000, g.ack = 8000, g.payload = "get k\r\n";
	size_t n = build(&g, in);
	run(xdp, in, n, &o);
	CHECK(o.ret == XDP_PASS && !memcmp(o.f, in, n) && !get_flow(flows, &k, &f) &&
	      !(f.flags & XKV_TCPX_F_ANSWERED) && f.passed_end == 7007,
	      "%s: a connection's first data: a flow made (handed over up to %u), the segment untouched", L,
	      f.passed_end);
	bpf_map_delete_elem(flows, &k);
}

/* The replay, on a real loopback connection (the socket lookup needs it):
 * the answered request again, its reply not acknowledged, gets the kept
 * reply back at the same place. */
static void replay_case(const char *L, int xdp, int flows, const struct xkv_store *s)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0), cs = socket(AF_INET, SOCK_STREAM, 0), as = -1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PORT),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (void *)&a, sizeof(a)) || listen(ls, 1) || connect(cs, (void *)&a, sizeof(a)) ||
	    (as = accept(ls, NULL, NULL)) < 0) {
		CHECK(0, "%s: a loopback connection on port %d: %s", L, PORT, strerror(errno));
		goto out;
	}
	struct sockaddr_in c;
	getsockname(cs, (void *)&c, &al);
	__u32 lo = htonl(INADDR_LOOPBACK);
	struct xkv_tcpx_key k = key_of(lo, ntohs(c.sin_port), lo);
	const char *reply = "VALUE k 0 2\r\nhi\r\nEND\r\n";
	put_flow(flows, &k, 0, reply);
	struct seg g = { .saddr = lo, .daddr = lo, .sport = ntohs(c.sin_port), .dport = PORT,
			 .flags = F_ACK | F_PSH, .seq = 1000, .ack = 5000, .tsval = 11, .tsecr = 7,
			 .payload = "get kkkk\r\n" };
	__u8 in[4096];
	struct out o;
	__u64 r0 = counter(s, XKV_STAT_tcpx_replayed);
	run(xdp, in, build(&g, in), &o);
	size_t rl = strlen(reply), hl = (size_t)(tcp_of(&o)[12] >> 4) * 4;
	CHECK(o.ret == XDP_TX && rd32(tcp_of(&o) + 4) == 5000 && hl == 32 && o.len == 34 + hl + rl &&
	      !memcmp(tcp_of(&o) + hl, reply, rl) && csum_ok(o.f, o.len) &&
	      counter(s, XKV_STAT_tcpx_replayed) == r0 + 1,
	      "%s: the answered request again, reply unacknowledged: the same reply at 5000 (ret %d, seq %u, len %u)",
	      L, o.ret, rd32(tcp_of(&o) + 4), o.len);
	CHECK((tcp_of(&o)[0] << 8 | tcp_of(&o)[1]) == PORT && rd32(tcp_of(&o) + 20 + 8) == 11,
	      "%s: ... from the service port, echoing the request's TSval", L);
	bpf_map_delete_elem(flows, &k);
out:
	if (as >= 0)
		close(as);
	close(cs);
	close(ls);
}

static void layout_cases(const char *L)
{
	char err[XKV_ERRLEN] = "";
	struct xkv_config cfg;
	struct bpf_object *obj = NULL;
	struct xkv_store s;

	CHECK(!xkv_config_defaults(&cfg, L), "%s: defaults", L);
	cfg.entries = 256;
	cfg.mode = XKV_MODE_NATIVE; /* loads the responder's programs; never attached here */
	cfg.flags |= XKV_CFG_UNGUARDED; /* no host entry, no lists: the segment checks alone */
	if (xkv_inproc_load(&cfg, NULL, &obj, &s, err, sizeof(err))) {
		CHECK(0, "%s: load: %s", L, err);
		return;
	}
	struct bpf_program *x = bpf_object__find_program_by_name(obj, "xdpkv_tcpx");
	struct bpf_program *t = bpf_object__find_program_by_name(obj, "xdpkv_tcpx_egress");
	CHECK(x && t && s.tcpx_flows_fd >= 0, "%s: the responder's programs and flows", L);
	if (x && t && s.tcpx_flows_fd >= 0) {
		egress_cases(L, bpf_program__fd(t), s.tcpx_flows_fd);
		ingress_cases(L, bpf_program__fd(x), s.tcpx_flows_fd, &s);
		replay_case(L, bpf_program__fd(x), s.tcpx_flows_fd, &s);
	}
	xkv_store_close(&s);
	bpf_object__close(obj);
}

int main(int argc, char **argv)
{
	if (geteuid()) {
		printf("test_tcpx: needs root (BPF_PROG_TEST_RUN): skipped\n");
		return 77;
	}
	if (argc > 1)
		for (int i = 1; i < argc; i++)
			layout_cases(argv[i]);
	else {
		layout_cases("hash_map");
		layout_cases("lru");
	}
	return unit_done("test_tcpx");
}
