// SPDX-License-Identifier: MIT
/* Fixtures for TCP in the driver hook, through BPF_PROG_TEST_RUN: the TC
 * egress program (xdpkv_tcpx_egress, here) and the XDP responder
 * (xdpkv_tcpx, tcpx_ingress.c: on a real socket) over a flow state written
 * into tcpx_flows, each case an input segment and the segment that must
 * come out (sequence, acknowledgement, SACK blocks, payload, a valid
 * checksum) or the verdict and counter that must move.  Needs root; per
 * layout given (default hash_map and lru). */
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
#include "tcpx_test.h"


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
int csum_ok(const __u8 *f, size_t n)
{
	const __u8 *ip = f + 14;
	size_t l4 = n - 34;
	__u64 s = sum16(ip + 12, 8) + 6 + l4 + sum16(ip + 20, l4);
	return fold(s) == 0xffff;
}

/* Eth + IPv4 + TCP (+ NOP NOP TS, + NOP NOP SACK) + payload into f: its length. */
size_t build(const struct seg *g, __u8 *f)
{
	__u8 opt[40];
	size_t ol = 0;
	int ts = g->tsval || g->tsecr;
	for (int pass = 0; pass < 2; pass++) {
		if (ts && pass == !!g->ts_last) {
			__u32 v = htonl(g->tsval), e = htonl(g->tsecr);
			opt[ol++] = 1, opt[ol++] = 1, opt[ol++] = 8, opt[ol++] = 10;
			memcpy(opt + ol, &v, 4), memcpy(opt + ol + 4, &e, 4), ol += 8;
		}
		if (g->nsack && pass == !g->ts_last) {
			opt[ol++] = 1, opt[ol++] = 1, opt[ol++] = 5, opt[ol++] = (__u8)(2 + 8 * g->nsack);
			for (int i = 0; i < g->nsack; i++) {
				__u32 a = htonl(g->sack[i][0]), b = htonl(g->sack[i][1]);
				memcpy(opt + ol, &a, 4), memcpy(opt + ol + 4, &b, 4), ol += 8;
			}
		}
	}
	size_t pl = g->payload ? (g->plen ? g->plen : strlen(g->payload)) : 0, th = 20 + ol, tot = 20 + th + pl;
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
	__u16 win = htons(g->win ? g->win : 4096);
	t[12] = (__u8)((th / 4) << 4), t[13] = g->flags;
	memcpy(t + 14, &win, 2);
	memcpy(t + 20, opt, ol);
	if (pl)
		memcpy(t + th, g->payload, pl);
	__u64 s = sum16(ip + 12, 8) + 6 + th + pl + sum16(t, th + pl);
	__u16 c = (__u16)~fold(s) ^ (g->bad_csum ? 0x0101 : 0);
	t[16] = (__u8)(c >> 8), t[17] = (__u8)c;
	if (g->bad_ipsum)
		ip[10] ^= 0x01;
	return 14 + tot;
}

__u32 rd32(const __u8 *p) { return (__u32)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]; }

void run(int prog, const __u8 *in, size_t n, struct out *o) { run_meta(prog, in, n, 0, o); }

/* With meta bytes of metadata before the frame (at most 32): they take
 * that much of its headroom.  o holds the frame alone. */
void run_meta(int prog, const __u8 *in, size_t n, __u32 meta, struct out *o)
{
	static __u8 buf[4096 + 32];
	struct xdp_md md = { .data = meta, .data_end = (__u32)(meta + n) };
	memset(buf, 0, meta);
	memcpy(buf + meta, in, n < 4096 ? n : 4096);
	DECLARE_LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = buf, .data_size_in = (__u32)(meta + n),
			    .data_out = buf, .data_size_out = sizeof(buf), .repeat = 1);
	if (meta)
		t.ctx_in = &md, t.ctx_size_in = sizeof(md), t.ctx_out = &md, t.ctx_size_out = sizeof(md);
	memset(o, 0, sizeof(*o));
	int e = bpf_prog_test_run_opts(prog, &t);
	__u32 m = meta ? md.data - md.data_meta : 0; /* the output starts at the metadata */
	o->ret = e ? -1 : (int)t.retval;
	o->len = t.data_size_out > m ? t.data_size_out - m : 0;
	memcpy(o->f, buf + m, o->len < sizeof(o->f) ? o->len : sizeof(o->f));
}

/* the TCP header of an output frame */
const __u8 *tcp_of(const struct out *o) { return o->f + 34; }

__u64 counter(const struct xkv_store *s, enum xkv_stat i)
{
	struct xkv_stats st;
	return xkv_stats_read(s, XKV_STATS_FAST, &st, NULL) ? 0 : st.v[i];
}

struct xkv_tcpx_key key_of(__u32 client, __u16 cport, __u32 server)
{
	struct xkv_tcpx_key k;
	memset(&k, 0, sizeof(k));
	xkv_addr_from_v4(k.peer, &client);
	xkv_addr_from_v4(k.local, &server);
	k.pport = htons(cport);
	k.lport = htons(PORT);
	return k;
}

void put_flow(int fd, const struct xkv_tcpx_key *k, __u32 flags, const char *reply)
{
	struct xkv_tcpx_flow f;
	memset(&f, 0, sizeof(f));
	f.flags = XKV_TCPX_F_ANSWERED | flags;
	f.dc_prev = 5, f.dc = 15;
	f.ds_prev = 20, f.ds = 50;
	f.c_start = 1000, f.c_end = 1010;
	f.s_k = 4980, f.s_wire = 5000, f.r_len = 30;
	f.passed_end = 1000;
	f.proto = XKV_TCPX_PROTO_TEXT;
	if (reply) {
		f.r_len = (__u32)strlen(reply);
		f.ds = f.ds_prev + f.r_len;
		memcpy(f.r, reply, f.r_len);
	}
	CHECK(!bpf_map_update_elem(fd, k, &f, BPF_ANY), "flow written: %s", strerror(errno));
}

int get_flow(int fd, const struct xkv_tcpx_key *k, struct xkv_tcpx_flow *f)
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
	/* 7 bytes of a cut request held after c_end: the kernel's rcv_nxt is
	 * their end to the client; what the kernel acknowledges past it (they
	 * and more, handed over) goes on in its numbering */
	struct xkv_tcpx_flow hf;
	if (!get_flow(flows, &k, &hf)) {
		hf.held = 7;
		bpf_map_update_elem(flows, &k, &hf, BPF_EXIST);
	}
	g.seq = 4980, g.ack = 995, g.flags = F_ACK;
	run(tc, in, build(&g, in), &o);
	CHECK(rd32(tcp_of(&o) + 8) == 1017 && csum_ok(o.f, o.len),
	      "%s: egress, bytes held: the kernel's rcv_nxt acknowledges them (%u, want 1017)", L,
	      rd32(tcp_of(&o) + 8));
	g.ack = 1002;
	run(tc, in, build(&g, in), &o);
	CHECK(rd32(tcp_of(&o) + 8) == 1017, "%s: ... and past them, as before (%u, want 1017)", L,
	      rd32(tcp_of(&o) + 8));

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
	CHECK(o.len == n - 12 + wl && hl == 32 && rd32(tcp_of(&o) + 4) == 5000 && rd32(tcp_of(&o) + 8) == 1010 &&
	      tcp_of(&o)[13] == (F_ACK | F_PSH) && !memcmp(tcp_of(&o) + hl, want, wl) &&
	      (size_t)(o.f[16] << 8 | o.f[17]) == 20 + hl + wl,
	      "%s: the kept reply on the kernel's pure ACK, its SACK option cut (no longer than the MSS "
	      "it was sized for): len %u (want %zu), header %zu (want 32), seq %u, ack %u", L, o.len,
	      n - 12 + wl, hl, rd32(tcp_of(&o) + 4), rd32(tcp_of(&o) + 8));
	CHECK(tcp_of(&o)[20] == 1 && tcp_of(&o)[21] == 1 && tcp_of(&o)[22] == 8,
	      "%s: ... its timestamps kept", L);
	CHECK(!get_flow(flows, &k, &f) && !(f.flags & XKV_TCPX_F_ON_ACK), "%s: ... once", L);
	run(tc, in, n, &o);
	CHECK(o.len == n, "%s: the next pure ACK carries nothing", L);
	g.nsack = 0;

	/* FIN recorded; RST ends the flow */
	put_flow(flows, &k, XKV_TCPX_F_ACKED, NULL);
	g.flags = F_ACK | F_FIN, g.seq = 4980, g.payload = NULL;
	run(tc, in, build(&g, in), &o);
	CHECK(!get_flow(flows, &k, &f) && (f.flags & XKV_TCPX_F_FIN_K) && f.fin_k == 5031 &&
	      !(f.flags & XKV_TCPX_F_PASSIVE),
	      "%s: the kernel's FIN recorded at 5031 (%u), first: an active close", L, f.fin_k);
	put_flow(flows, &k, XKV_TCPX_F_ACKED | XKV_TCPX_F_FIN_C, NULL);
	run(tc, in, build(&g, in), &o);
	CHECK(!get_flow(flows, &k, &f) && (f.flags & XKV_TCPX_F_FIN_K) && (f.flags & XKV_TCPX_F_PASSIVE),
	      "%s: the kernel's FIN after the client's: a passive close (flags %#x)", L, f.flags);
	put_flow(flows, &k, XKV_TCPX_F_ACKED, NULL);
	run(tc, in, build(&g, in), &o);
	/* the close acknowledged both ways keeps the flow (TIME-WAIT answers a
	 * retransmitted FIN in the kernel's numbering: translated still) */
	get_flow(flows, &k, &f);
	f.flags |= XKV_TCPX_F_FIN_C;
	bpf_map_update_elem(flows, &k, &f, BPF_ANY);
	g.flags = F_ACK, g.seq = 4981;
	run(tc, in, build(&g, in), &o);
	CHECK(!get_flow(flows, &k, &f) && rd32(tcp_of(&o) + 4) == 5031,
	      "%s: the last ACK of a close: translated, the flow kept for TIME-WAIT", L);
	g.flags = F_RST;
	run(tc, in, build(&g, in), &o);
	CHECK(get_flow(flows, &k, &f) && errno == ENOENT, "%s: the kernel's RST ends the flow", L);
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
		unit_fails += tcpx_ingress_cases(L, obj, &s);
		unit_fails += tcpx_pipe_cases(L, obj, &s);
	}
	xkv_store_close(&s);
	bpf_object__close(obj);
}

/* serve's sweep decision (tcpx.h), without root: each row a flow's flags,
 * when it was last seen against the sweep's clock, and the answer. */
static void sweep_cases(void)
{
	const __u64 now = 1000 * XKV_TCPX_LINGER_NS, fin = XKV_TCPX_LINGER_NS, S = XKV_TCPX_F_SERVED;
	const struct {
		const char *what;
		__u32 flags;
		__s64 ago; /* now - seen_ns */
		int keep;
	} rows[] = {
		{ "served, left serve's hands: at once", S | XKV_TCPX_F_ANSWERED, 1, 0 },
		{ "served, stamped after the sweep's clock", S, -5, 1 },
		{ "never served (before the accept), just answered", XKV_TCPX_F_ANSWERED, 1000, 1 },
		/* the stall: the responder stamps a flow answered before serve's
		 * accept while the sweep runs; now - seen_ns wrapped */
		{ "never served, stamped after the sweep's clock", XKV_TCPX_F_ANSWERED | XKV_TCPX_F_ACKED, -1000, 1 },
		{ "never served, silent for TIME-WAIT's length", XKV_TCPX_F_ANSWERED, (__s64)XKV_TCPX_LINGER_NS, 0 },
		{ "closing, within the FIN linger", S | XKV_TCPX_F_FIN_C, (__s64)fin - 1, 1 },
		{ "closing, past the FIN linger", S | XKV_TCPX_F_FIN_K, (__s64)fin, 0 },
		{ "closing, stamped after the sweep's clock", XKV_TCPX_F_FIN_C, -1, 1 },
		/* the client closed first: no TIME-WAIT on this side */
		{ "passive close, within LAST-ACK's retries", S | XKV_TCPX_F_FIN_C | XKV_TCPX_F_FIN_K | XKV_TCPX_F_PASSIVE,
		  (__s64)XKV_TCPX_PASSIVE_NS - 1, 1 },
		{ "passive close, past them", S | XKV_TCPX_F_FIN_C | XKV_TCPX_F_FIN_K | XKV_TCPX_F_PASSIVE,
		  (__s64)XKV_TCPX_PASSIVE_NS, 0 },
		{ "active close, past them: TIME-WAIT's length", S | XKV_TCPX_F_FIN_C | XKV_TCPX_F_FIN_K,
		  (__s64)XKV_TCPX_PASSIVE_NS, 1 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int got = xkv_tcpx_sweep_keep(rows[i].flags, now - (__u64)rows[i].ago, now, fin);
		CHECK(got == rows[i].keep, "sweep: %s: %s, want %s", rows[i].what, got ? "kept" : "removed",
		      rows[i].keep ? "kept" : "removed");
	}
}

int main(int argc, char **argv)
{
	sweep_cases();
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
