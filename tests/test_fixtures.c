// SPDX-License-Identifier: MIT
/* Packet fixtures through BPF_PROG_TEST_RUN, on every layout.
 *
 * Each fixture seeds the store, sends one or more request frames (built with
 * pktbuild) to the real XDP program, and checks against the reference model
 * (refmodel) and the table: the XDP action, the whole output frame (the
 * reply the model's text makes, or the request unchanged on XDP_PASS), the
 * fast-path counter deltas, and the store contents afterwards.  The tables
 * run under a realistic access policy (this host's MAC and addresses
 * checked, allow/write/trust lists, an amplification cap); a table per
 * load-time setting that changes the rules.  Then a few layout-specific
 * scenarios: array_fnv collisions, lru eviction (and its per-CPU lists with
 * --no-common-lru), percpu per-CPU copies, lru_percpu both, hash_map full;
 * and which layouts accept which load-time map option.
 *
 *     test_fixtures [--layout NAME] [-v]
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "inproc.h"
#include "xdpkv.h"
#include "fnv.h"
#include "pktbuild.h"
#include "refmodel.h"
#include "array_fnv/slot.h"
#include "set_assoc/bucket.h"
#include "arena/table.h"

#define FAM4 1
#define FAM6 2
#define BOTH (FAM4 | FAM6)
#define PASS RM_XDP_PASS
#define TX RM_XDP_TX
#define DROP RM_XDP_DROP

#define KEY_CAP 32
#define VAL_CAP 1024
#define CLIENT_PORT 40000

/* ---- the table ------------------------------------------------------------------ */

struct seed {
	const char *key;
	__u32 flags;
	int64_t exptime;
	const char *val;   /* NULL: vlen bytes of a pattern */
	__u32 vlen;
};

struct step {
	const char *text;  /* request text; NULL: the fixture's gen() writes it */
	int act;           /* expected XDP action */
	const char *reply; /* expected reply text when act is TX (NULL: the model's) */
	void (*mod)(struct pb *b); /* applied to this step's frame, after the fixture's */
	int why;           /* W(counter): the counter the table expects to go up; 0 none */
	int sleep_ms;      /* wait before sending (the rate limit refills) */
};
#define W(c) (XKV_STAT_##c + 1)

struct fixture {
	const char *name;
	unsigned fams;
	struct seed seeds[3];
	struct step steps[8];
	void (*gen)(struct pb *b, int64_t now);  /* payload for a step without text */
	void (*mod)(struct pb *b);               /* applied to every request frame */
	int keep;                                /* store must equal the seeds after */
};

static const struct seed K = { "k", 7, 0, "orig", 0 }; /* the key errors must not hurt */

/* payload generators */
static void gen_get23(struct pb *b, int64_t now)
{
	pb_text(b, "get");
	for (int i = 0; i < 23; i++)
		pb_text(b, i % 2 ? " a" : " b");
	pb_text(b, "\r\n");
}

static void gen_get24(struct pb *b, int64_t now)
{
	pb_text(b, "get");
	for (int i = 0; i < 24; i++)
		pb_text(b, " a");
	pb_text(b, "\r\n");
}

/* "<cmd> k k ... k" with n keys */
static void gen_keys(struct pb *b, const char *cmd, int n)
{
	pb_text(b, cmd);
	for (int i = 0; i < n; i++)
		pb_text(b, " k");
	pb_text(b, "\r\n");
}

static void gen_gets23(struct pb *b, int64_t now) { gen_keys(b, "gets", 23); }
static void gen_gets30(struct pb *b, int64_t now) { gen_keys(b, "gets", 30); }

static void gen_set25(struct pb *b, int64_t now)
{
	pb_text(b, "set k 0 0 1");
	for (int i = 0; i < 20; i++)
		pb_text(b, " x");
	pb_text(b, "\r\nx\r\n");
}

static void gen_long_key(struct pb *b, __u32 n, const char *cmd, const char *tail)
{
	pb_text(b, cmd);
	for (__u32 i = 0; i < n; i++)
		pb_text(b, "q");
	pb_text(b, tail);
}

static void gen_get_key33(struct pb *b, int64_t now)
{
	gen_long_key(b, KEY_CAP + 1, "get ", "\r\n");
}

static void gen_get_key251(struct pb *b, int64_t now)
{
	gen_long_key(b, 251, "get ", "\r\n");
}

static void gen_set_key33(struct pb *b, int64_t now)
{
	gen_long_key(b, KEY_CAP + 1, "set ", " 0 0 1\r\nx\r\n");
}

static void gen_set_key32(struct pb *b, int64_t now)
{
	gen_long_key(b, KEY_CAP, "set ", " 0 0 1\r\nx\r\n");
}

static void gen_del_key33(struct pb *b, int64_t now)
{
	gen_long_key(b, KEY_CAP + 1, "delete ", "\r\n");
}

static void gen_value(struct pb *b, __u32 n)
{
	char line[64];
	snprintf(line, sizeof(line), "set v 0 0 %u\r\n", n);
	pb_text(b, line);
	for (__u32 i = 0; i < n; i++)
		pb_bytes(b, &(char){ (char)('A' + i % 26) }, 1);
	pb_text(b, "\r\n");
}

static void gen_set_valcap(struct pb *b, int64_t now)
{
	gen_value(b, VAL_CAP);
}

static void gen_set_toolarge(struct pb *b, int64_t now)
{
	gen_value(b, VAL_CAP + 1);
}

static void gen_too_long(struct pb *b, int64_t now)
{
	pb_text(b, "get k");
	for (int i = 0; i < XKV_REQ_MAX; i++)
		pb_text(b, " ");
	pb_text(b, "\r\n");
}

static void gen_abs_future(struct pb *b, int64_t now)
{
	char line[64];
	snprintf(line, sizeof(line), "set k 1 %lld 2\r\nhi\r\n", (long long)now + 3600);
	pb_text(b, line);
}

static void gen_bytes_ctl(struct pb *b, int64_t now)
{
	pb_bytes(b, "get a\x01" "b\r\n", 9);
}

static void gen_empty(struct pb *b, int64_t now)
{
}

/* frame modifiers */
static void mod_seq1(struct pb *b) { b->seq = 1; b->total = 2; }
static void mod_total2(struct pb *b) { b->total = 2; }
static void mod_total0(struct pb *b) { b->total = 0; }
static void mod_df(struct pb *b) { pb_ipv4_frag(b, 0x4000); }
static void mod_mf(struct pb *b) { pb_ipv4_frag(b, 0x2000); }
static void mod_frag_off(struct pb *b) { pb_ipv4_frag(b, 0x0003); }
static void mod_opts(struct pb *b) { pb_ipv4_opts(b, (const __u8 *)"\x01\x01\x01\x00", 4); }
static void mod_v6_ext(struct pb *b) { pb_ipv6_ext(b, 0); }
static void mod_other_port(struct pb *b) { b->dport = XKV_DEFAULT_PORT + 1; }
static void mod_tcp(struct pb *b) { pb_tcp(b, CLIENT_PORT, XKV_DEFAULT_PORT); }
static void mod_arp(struct pb *b) { pb_arp(b); b->l4 = PB_L4_NONE; }
static void mod_not_ip(struct pb *b) { b->l3 = PB_L3_NONE; b->l4 = PB_L4_NONE; }
static void mod_ip_long(struct pb *b)
{
	if (b->l3 == PB_L3_IPV4)
		pb_tot_len(b, 20 + 8 + 8 + (int)b->payload_len_bytes + 10);
	else
		pb_payload_len(b, 8 + 8 + (int)b->payload_len_bytes + 10);
}
static void mod_chop_udp(struct pb *b) { pb_chop(b, 8 + 8 + b->payload_len_bytes - 4); }
static void mod_udp_long(struct pb *b) { pb_udp_len(b, 8 + 8 + (int)b->payload_len_bytes + 1); }
static void mod_udp_short(struct pb *b) { pb_udp_len(b, 8 + 4); }
static void mod_udp_trunc_text(struct pb *b) { pb_udp_len(b, 8 + 8 + (int)b->payload_len_bytes - 4); }
static void mod_trailer(struct pb *b) { b->trailer = 6; }
static void mod_csum0(struct pb *b) { pb_udp_csum(b, PB_CSUM_ZERO); }

/* ---- who is who: the policy every table runs under ----
 * pktbuild's default frame goes from the client 10.0.0.1 / fd00::1 to this
 * host 10.0.0.2 / fd00::2 at MAC 02:00:00:00:00:02.  The client's subnet may
 * read, write and is trusted; the reader's may only read, and its replies
 * are capped; the stranger may do nothing. */
static const char *const host_addrs[] = { "10.0.0.2", "fd00::2", NULL };
static const char *const allow_nets[] = { "10.0.0.0/24", "fd00::/64", "10.0.1.0/24",
					  "fd00:0:0:1::/64", NULL };
static const char *const write_nets[] = { "10.0.0.0/24", "fd00::/64", NULL };
static const char *const trust_nets[] = { "10.0.0.0/24", "fd00::/64", NULL };
#define MAX_AMP 10

static void from_reader(struct pb *b) { pb_src(b, "10.0.1.1", "fd00:0:0:1::1"); }
/* a reader with an open TCP connection to the slow path (tcp_peers) */
static const char *const tcp_peer_addrs[] = { "10.0.1.7", "fd00:0:0:1::7", NULL };
static void from_tcp_peer(struct pb *b) { pb_src(b, "10.0.1.7", "fd00:0:0:1::7"); }
static void from_stranger(struct pb *b) { pb_src(b, "192.0.2.1", "2001:db8::1"); }
static void from_neighbour(struct pb *b) { pb_src(b, "10.0.0.9", "fd00::9"); } /* client's /24 */
static void to_other_mac(struct pb *b) { memcpy(b->eth_dst, (__u8[6]){ 2, 0, 0, 0, 0, 3 }, 6); }
static void to_broadcast(struct pb *b) { memset(b->eth_dst, 0xff, 6); }
static void to_multicast(struct pb *b)
{
	static const __u8 m4[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb };
	static const __u8 m6[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0xfb };
	memcpy(b->eth_dst, b->l3 == PB_L3_IPV4 ? m4 : m6, 6);
	pb_dst(b, "224.0.0.251", "ff02::fb");
}
static void to_multicast_ip(struct pb *b) { pb_dst(b, "224.0.0.251", "ff02::fb"); }
static void to_other_ip(struct pb *b) { pb_dst(b, "10.0.0.3", "fd00::3"); }
/* equal to this host's address but in one 32-bit word (the first, for IPv6) */
static void to_near_ip(struct pb *b) { pb_dst(b, "10.0.1.2", "fd01::2"); }
static void from_multicast(struct pb *b) { pb_src(b, "224.0.0.1", "ff02::1"); }
static void from_broadcast(struct pb *b) { pb_src(b, "255.255.255.255", "ff05::1"); }
static void from_loopback(struct pb *b) { pb_src(b, "127.0.0.1", "::1"); }
static void from_unspecified(struct pb *b) { pb_src(b, "0.0.0.0", "::"); }
static void from_mapped(struct pb *b) { pb_src(b, "10.0.0.1", "::ffff:10.0.0.1"); }
static void sport0(struct pb *b) { b->sport = 0; }
static void sport_service(struct pb *b) { b->sport = XKV_DEFAULT_PORT; }
static void sport1(struct pb *b) { b->sport = 1; }
static void sport53(struct pb *b) { b->sport = 53; }
static void sport1023(struct pb *b) { b->sport = 1023; }
static void sport1024(struct pb *b) { b->sport = 1024; }
static void ip_csum_bad(struct pb *b) { pb_ip_csum(b, 0xbad); }
static void udp_csum_bad(struct pb *b) { pb_udp_csum(b, PB_CSUM_BAD); }
static void udp_csum_partial(struct pb *b) { pb_udp_csum(b, PB_CSUM_PARTIAL); }
static void stranger_bad_csum(struct pb *b) { from_stranger(b); udp_csum_bad(b); }
static void reader_sport53(struct pb *b) { from_reader(b); sport53(b); }
/* congestion experienced, DSCP EF, a short TTL: none of it goes back */
static void mod_ecn(struct pb *b)
{
	b->tos = 0xbb;
	b->v6_flow = 0x6bb12345;
	b->ttl = 3;
	b->hop_limit = 3;
}

/* "get big", padded with spaces to n bytes of text (the amplification
 * cap's boundary: the SERVER_ERROR reply is 8 + 55 bytes of UDP payload) */
static void gen_get_big(struct pb *b, __u32 n)
{
	pb_text(b, "get big");
	for (__u32 i = 7; i + 2 < n; i++)
		pb_text(b, " ");
	pb_text(b, "\r\n");
}
static void gen_get_big55(struct pb *b, int64_t now) { gen_get_big(b, 55); }
static void gen_get_big54(struct pb *b, int64_t now) { gen_get_big(b, 54); }

#define S(k, f, e, v) { k, f, e, v, 0 }
#define SBIG(k, n) { k, 0, 0, NULL, n }
#define ST(t, a, r) { t, a, r }
#define SM(t, mod, a, r) { t, a, r, mod }                /* with a step modifier */
#define SX(t, mod, a, r, c) { t, a, r, mod, W(c) }       /* ... and the counter it moves */

static const struct fixture fixtures[] = {
	/* ---- served by the fast path ---- */
	{ "get miss", BOTH, {}, { ST("get nokey\r\n", TX, "END\r\n") } },
	{ "get hit", BOTH, { S("foo", 5, 0, "bar") },
	  { ST("get foo\r\n", TX, "VALUE foo 5 3\r\nbar\r\nEND\r\n") } },
	{ "multi-get hit miss hit", BOTH, { S("a", 1, 0, "A"), S("b", 2, 0, "BB") },
	  { ST("get a zz b\r\n", TX, "VALUE a 1 1\r\nA\r\nVALUE b 2 2\r\nBB\r\nEND\r\n") } },
	{ "get with extra spaces", BOTH, { S("a", 1, 0, "A") },
	  { ST("get  a   \r\n", TX, "VALUE a 1 1\r\nA\r\nEND\r\n") } },
	{ "get 23 keys", BOTH, { S("a", 0, 0, "1"), S("b", 0, 0, "2") },
	  { ST(NULL, TX, NULL) }, gen_get23 },
	{ "get 24 keys is passed on", BOTH, { S("a", 0, 0, "1") },
	  { ST(NULL, PASS, NULL) }, gen_get24, NULL, 1 },
	{ "get reply of exactly one datagram", BOTH, { SBIG("k1", 1000), SBIG("k2", 350) },
	  { ST("get k1 k2\r\n", TX, NULL) } },
	{ "get reply one byte over a datagram is passed on", BOTH,
	  { SBIG("k1", 1000), SBIG("k2", 351) }, { ST("get k1 k2\r\n", PASS, NULL) }, NULL, NULL, 1 },
	{ "get value of val_cap bytes", BOTH, { SBIG("k1", VAL_CAP) },
	  { ST("get k1\r\n", TX, NULL) } },
	{ "set new", BOTH, {}, { ST("set k 3 0 5\r\nhello\r\n", TX, "STORED\r\n"),
				 ST("get k\r\n", TX, "VALUE k 3 5\r\nhello\r\nEND\r\n") } },
	{ "set overwrites", BOTH, { K }, { ST("set k 9 0 3\r\nnew\r\n", TX, "STORED\r\n") } },
	{ "set noreply drops", BOTH, {}, { ST("set k 1 0 2 noreply\r\nhi\r\n", DROP, NULL),
					   ST("get k\r\n", TX, "VALUE k 1 2\r\nhi\r\nEND\r\n") } },
	{ "set flags 4294967295", BOTH, {},
	  { ST("set k 4294967295 0 1\r\nx\r\n", TX, "STORED\r\n"),
	    ST("get k\r\n", TX, "VALUE k 4294967295 1\r\nx\r\nEND\r\n") } },
	{ "set empty value", BOTH, {}, { ST("set k 0 0 0\r\n\r\n", TX, "STORED\r\n"),
					 ST("get k\r\n", TX, "VALUE k 0 0\r\n\r\nEND\r\n") } },
	{ "set value of val_cap bytes", BOTH, {}, { ST(NULL, TX, "STORED\r\n"), ST("get v\r\n", TX, NULL) },
	  gen_set_valcap },
	{ "set key of key_cap bytes", BOTH, {}, { ST(NULL, TX, "STORED\r\n") }, gen_set_key32 },
	{ "set value with \\r\\n inside", BOTH, {},
	  { ST("set k 0 0 4\r\n\r\n\r\n\r\n", TX, "STORED\r\n"),
	    ST("get k\r\n", TX, "VALUE k 0 4\r\n\r\n\r\n\r\nEND\r\n") } },
	{ "delete hit", BOTH, { K }, { ST("delete k\r\n", TX, "DELETED\r\n"),
				       ST("get k\r\n", TX, "END\r\n") } },
	{ "delete miss", BOTH, { K }, { ST("delete x\r\n", TX, "NOT_FOUND\r\n") } },
	{ "delete k 0", BOTH, { K }, { ST("delete k 0\r\n", TX, "DELETED\r\n") } },
	{ "delete noreply", BOTH, { K }, { ST("delete k noreply\r\n", DROP, NULL) } },
	{ "delete k 0 noreply", BOTH, { K }, { ST("delete k 0 noreply\r\n", DROP, NULL) } },
	{ "set exptime -1 then get misses", BOTH, {},
	  { ST("set k 0 -1 1\r\nx\r\n", TX, "STORED\r\n"), ST("get k\r\n", TX, "END\r\n") } },
	{ "set exptime 100 then get hits", BOTH, {},
	  { ST("set k 0 100 1\r\nx\r\n", TX, "STORED\r\n"),
	    ST("get k\r\n", TX, "VALUE k 0 1\r\nx\r\nEND\r\n") } },
	{ "set absolute past exptime then get misses", BOTH, {},
	  { ST("set k 0 2592001 1\r\nx\r\n", TX, "STORED\r\n"), ST("get k\r\n", TX, "END\r\n") } },
	{ "set absolute future exptime then get hits", BOTH, {},
	  { ST(NULL, TX, "STORED\r\n"), ST("get k\r\n", TX, "VALUE k 1 2\r\nhi\r\nEND\r\n") },
	  gen_abs_future },
	{ "seeded expired item misses", BOTH, { S("k", 0, -1, "x") },
	  { ST("get k\r\n", TX, "END\r\n"), ST("delete k\r\n", TX, "NOT_FOUND\r\n") } },
	{ "IPv4 DF set is served", FAM4, { K }, { ST("get k\r\n", TX, NULL) }, NULL, mod_df },
	{ "IPv4 UDP checksum 0 is served", FAM4, { K }, { ST("get k\r\n", TX, NULL) }, NULL, mod_csum0 },
	{ "Ethernet trailer after the IP packet", BOTH, { K }, { ST("get k\r\n", TX, NULL) },
	  NULL, mod_trailer },
	{ "UDP length shorter than the IP payload", BOTH, { K },
	  { ST("get k\r\nJUNK", TX, "VALUE k 7 4\r\norig\r\nEND\r\n") }, NULL, mod_udp_trunc_text },

	/* ---- handed to the slow path ---- */
	{ "add", BOTH, { K }, { ST("add x 0 0 1\r\nx\r\n", PASS, NULL) }, NULL, NULL, 1 },
	{ "replace", BOTH, { K }, { ST("replace k 0 0 1\r\nx\r\n", PASS, NULL) }, NULL, NULL, 1 },
	{ "incr", BOTH, { K }, { ST("incr k 1\r\n", PASS, NULL) }, NULL, NULL, 1 },
	{ "decr noreply", BOTH, { K }, { ST("decr k 1 noreply\r\n", PASS, NULL) }, NULL, NULL, 1 },
	{ "version", BOTH, { K }, { ST("version\r\n", PASS, NULL) }, NULL, NULL, 1 },
	{ "stats", BOTH, { K }, { ST("stats\r\n", PASS, NULL) }, NULL, NULL, 1 },
	{ "stats items", BOTH, { K }, { ST("stats items\r\n", PASS, NULL) }, NULL, NULL, 1 },
	{ "flush_all", BOTH, { K }, { ST("flush_all\r\n", PASS, NULL) }, NULL, NULL, 1 },
	{ "flush_all 0 noreply", BOTH, { K }, { ST("flush_all 0 noreply\r\n", PASS, NULL) },
	  NULL, NULL, 1 },
	/* issue 7: the rest of the text protocol, all on the slow path */
	{ "append", BOTH, { K }, { SX("append k 0 0 1\r\nx\r\n", NULL, PASS, NULL, pass_cmd) },
	  NULL, NULL, 1 },
	{ "prepend noreply", BOTH, { K },
	  { SX("prepend k 0 0 1 noreply\r\nx\r\n", NULL, PASS, NULL, pass_cmd) }, NULL, NULL, 1 },
	{ "cas", BOTH, { K }, { SX("cas k 0 0 1 12345\r\nx\r\n", NULL, PASS, NULL, pass_cmd) },
	  NULL, NULL, 1 },
	{ "cas noreply, largest unique", BOTH, { K },
	  { SX("cas k 0 0 1 18446744073709551615 noreply\r\nx\r\n", NULL, PASS, NULL, pass_cmd) },
	  NULL, NULL, 1 },
	{ "gets", BOTH, { K }, { SX("gets k\r\n", NULL, PASS, NULL, pass_cmd) }, NULL, NULL, 1 },
	{ "gets of 23 keys", BOTH, { K }, { SX(NULL, NULL, PASS, NULL, pass_cmd) }, gen_gets23,
	  NULL, 1 },
	{ "gets of 30 keys", BOTH, { K }, { SX(NULL, NULL, PASS, NULL, pass_cmd) }, gen_gets30,
	  NULL, 1 },
	{ "gat", BOTH, { K }, { SX("gat 100 k x\r\n", NULL, PASS, NULL, pass_cmd) }, NULL, NULL, 1 },
	{ "gats, negative exptime", BOTH, { K }, { SX("gats -1 k\r\n", NULL, PASS, NULL, pass_cmd) },
	  NULL, NULL, 1 },
	{ "touch", BOTH, { K }, { SX("touch k 10\r\n", NULL, PASS, NULL, pass_cmd) }, NULL, NULL, 1 },
	{ "touch noreply", BOTH, { K }, { SX("touch k 0 noreply\r\n", NULL, PASS, NULL, pass_cmd) },
	  NULL, NULL, 1 },
	{ "verbosity", BOTH, { K }, { SX("verbosity 1\r\n", NULL, PASS, NULL, pass_cmd) },
	  NULL, NULL, 1 },
	{ "verbosity noreply", BOTH, { K },
	  { SX("verbosity 0 noreply\r\n", NULL, PASS, NULL, pass_cmd) }, NULL, NULL, 1 },
	{ "mn", BOTH, { K }, { SX("mn\r\n", NULL, PASS, NULL, pass_cmd) }, NULL, NULL, 1 },
	{ "mg with flags", BOTH, { K }, { SX("mg k v f t c k s O1 q\r\n", NULL, PASS, NULL, pass_cmd) },
	  NULL, NULL, 1 },
	{ "reader may mg", BOTH, { K }, { SX("mg k v\r\n", from_reader, PASS, NULL, pass_cmd) },
	  NULL, NULL, 1 },
	{ "bad mg lines are answered here", BOTH, { K },
	  { ST("mg\r\n", TX, XKV_R_FORMAT), ST("mg a\tb v\r\n", TX, XKV_R_KEY_BAD) }, NULL, NULL, 1 },
	{ "ms, md, ma, me pass to the slow path", BOTH, { K },
	  { SX("ms k 1 T0 F5 c\r\nx\r\n", NULL, PASS, NULL, pass_cmd),
	    SX("md k q\r\n", NULL, PASS, NULL, pass_cmd), SX("ma k D2 v\r\n", NULL, PASS, NULL, pass_cmd),
	    SX("me k\r\n", NULL, PASS, NULL, pass_cmd), SX("me k\r\n", from_reader, PASS, NULL, pass_cmd) },
	  NULL, NULL, 1 },
	{ "a reader may not ms, md, ma", BOTH, { K },
	  { SX("ms k 1\r\nx\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SX("md k\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SX("ma k\r\n", from_reader, DROP, NULL, drop_write_acl) }, NULL, NULL, 1 },
	{ "bad issue-7 lines are answered here", BOTH, { K },
	  { ST("gets\r\n", TX, XKV_R_ERROR), ST("gat 10\r\n", TX, XKV_R_ERROR),
	    ST("gat x k\r\n", TX, XKV_R_EXPTIME), ST("gats 1x k\r\n", TX, XKV_R_EXPTIME),
	    ST("touch k\r\n", TX, XKV_R_ERROR), ST("touch k 1 2\r\n", TX, XKV_R_ERROR),
	    ST("touch k abc\r\n", TX, XKV_R_EXPTIME), ST("verbosity\r\n", TX, XKV_R_ERROR) },
	  NULL, NULL, 1 },
	{ "bad issue-7 storage lines are answered here", BOTH, { K },
	  { ST("cas k 0 0 1\r\nx\r\n", TX, XKV_R_FORMAT), ST("cas k 0 0 1 x\r\nx\r\n", TX, XKV_R_FORMAT),
	    ST("cas k 0 0 1 -1\r\nx\r\n", TX, XKV_R_FORMAT),
	    ST("append k 0 0 2\r\nabc\r\n", TX, XKV_R_DATA), ST("prepend k x 0 1\r\nx\r\n", TX, XKV_R_FORMAT),
	    ST("verbosity noreply\r\n", TX, XKV_R_ERROR), ST("gets a\tb\r\n", TX, XKV_R_KEY_BAD) },
	  NULL, NULL, 1 },
	{ "two gets in one datagram", BOTH, { K }, { ST("get k\r\nget k\r\n", PASS, NULL) },
	  NULL, NULL, 1 },
	{ "set then get in one datagram", BOTH, { K },
	  { ST("set k 0 0 1\r\nx\r\nget k\r\n", PASS, NULL) }, NULL, NULL, 1 },
	{ "delete then junk", BOTH, { K }, { ST("delete k\r\nxx", PASS, NULL) }, NULL, NULL, 1 },
	{ "request text over XKV_REQ_MAX", BOTH, { K }, { ST(NULL, PASS, NULL) }, gen_too_long,
	  NULL, 1 },

	/* ---- errors: exact reply, store unchanged ---- */
	{ "unknown command", BOTH, { K }, { ST("bogus k\r\n", TX, XKV_R_ERROR) }, NULL, NULL, 1 },
	{ "empty line", BOTH, { K }, { ST("\r\n", TX, XKV_R_ERROR) }, NULL, NULL, 1 },
	{ "blank line", BOTH, { K }, { ST("   \r\n", TX, XKV_R_ERROR) }, NULL, NULL, 1 },
	{ "bare get", BOTH, { K }, { ST("get\r\n", TX, XKV_R_ERROR) }, NULL, NULL, 1 },
	{ "upper-case GET", BOTH, { K }, { ST("GET k\r\n", TX, XKV_R_ERROR) }, NULL, NULL, 1 },
	{ "tab is not a separator", BOTH, { K }, { ST("get\tk\r\n", TX, XKV_R_ERROR) }, NULL, NULL, 1 },
	{ "no line end", BOTH, { K }, { ST("get k", TX, XKV_R_NO_CRLF) }, NULL, NULL, 1 },
	{ "bare \\n", BOTH, { K }, { ST("get k\n", TX, XKV_R_NO_CRLF) }, NULL, NULL, 1 },
	{ "set with bare \\n", BOTH, { K }, { ST("set k 0 0 1\nx\r\n", TX, XKV_R_NO_CRLF) },
	  NULL, NULL, 1 },
	{ "frame header only", BOTH, { K }, { ST(NULL, TX, XKV_R_NO_CRLF) }, gen_empty, NULL, 1 },
	{ "set missing a field", BOTH, { K }, { ST("set k 0 0\r\nx\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "set extra field", BOTH, { K }, { ST("set k 0 0 1 x\r\nx\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "set 25 tokens", BOTH, { K }, { ST(NULL, TX, XKV_R_FORMAT) }, gen_set25, NULL, 1 },
	{ "set flags not numeric", BOTH, { K }, { ST("set k x 0 1\r\nx\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "set flags negative", BOTH, { K }, { ST("set k -1 0 1\r\nx\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "set flags overflow", BOTH, { K },
	  { ST("set k 4294967296 0 1\r\nx\r\n", TX, XKV_R_FORMAT) }, NULL, NULL, 1 },
	{ "set exptime not numeric", BOTH, { K }, { ST("set k 0 1x 1\r\nx\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "set exptime lone minus", BOTH, { K }, { ST("set k 0 - 1\r\nx\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "set exptime overflow", BOTH, { K },
	  { ST("set k 0 9223372036854775808 1\r\nx\r\n", TX, XKV_R_FORMAT) }, NULL, NULL, 1 },
	{ "set bytes overflow", BOTH, { K },
	  { ST("set k 0 0 4294967300\r\nxxxx\r\n", TX, XKV_R_FORMAT) }, NULL, NULL, 1 },
	{ "set bytes negative", BOTH, { K }, { ST("set k 0 0 -1\r\nx\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "delete with a time", BOTH, { K }, { ST("delete k 10\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "delete without key", BOTH, { K }, { ST("delete\r\n", TX, XKV_R_FORMAT) }, NULL, NULL, 1 },
	{ "delete too many fields", BOTH, { K }, { ST("delete k 0 0\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "incr without value", BOTH, { K }, { ST("incr k\r\n", TX, XKV_R_FORMAT) }, NULL, NULL, 1 },
	{ "incr value not numeric", BOTH, { K }, { ST("incr k abc\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "version with argument", BOTH, { K }, { ST("version x\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "flush_all not numeric", BOTH, { K }, { ST("flush_all x\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "get key over key_cap", BOTH, { K }, { ST(NULL, TX, XKV_R_KEY_LONG) }, gen_get_key33,
	  NULL, 1 },
	{ "get key over 250", BOTH, { K }, { ST(NULL, TX, XKV_R_KEY_LONG) }, gen_get_key251,
	  NULL, 1 },
	{ "set key over key_cap", BOTH, { K }, { ST(NULL, TX, XKV_R_KEY_LONG) }, gen_set_key33,
	  NULL, 1 },
	{ "delete key over key_cap", BOTH, { K }, { ST(NULL, TX, XKV_R_KEY_LONG) }, gen_del_key33,
	  NULL, 1 },
	{ "get key with control byte", BOTH, { K }, { ST(NULL, TX, XKV_R_KEY_BAD) }, gen_bytes_ctl,
	  NULL, 1 },
	{ "get key with \\r", BOTH, { K }, { ST("get k\rx\r\n", TX, XKV_R_KEY_BAD) }, NULL, NULL, 1 },
	{ "set key with DEL", BOTH, { K }, { ST("set k\x7f 0 0 1\r\nx\r\n", TX, XKV_R_KEY_BAD) },
	  NULL, NULL, 1 },
	{ "delete key with tab", BOTH, { K }, { ST("delete k\t\r\n", TX, XKV_R_KEY_BAD) },
	  NULL, NULL, 1 },
	{ "set data longer than bytes", BOTH, { K }, { ST("set k 0 0 3\r\nabcd\r\n", TX, XKV_R_DATA) },
	  NULL, NULL, 1 },
	{ "set data shorter than bytes", BOTH, { K }, { ST("set k 0 0 5\r\nabc\r\n", TX, XKV_R_DATA) },
	  NULL, NULL, 1 },
	{ "set data without \\r\\n", BOTH, { K }, { ST("set k 0 0 3\r\nabc", TX, XKV_R_DATA) },
	  NULL, NULL, 1 },
	{ "set data ending in \\n\\n", BOTH, { K }, { ST("set k 0 0 3\r\nabc\n\n", TX, XKV_R_DATA) },
	  NULL, NULL, 1 },
	/* an error of a noreply command: the slow path drops its line (memcached) */
	{ "set noreply bad data goes to the slow path", BOTH, { K },
	  { SX("set k 0 0 3 noreply\r\nabcd\r\n", NULL, PASS, NULL, pass_cmd) }, NULL, NULL, 1 },
	/* above --value-size: the big map's, which the slow path stores
	 * (docs/protocol.md, "Large values"); above 1 MiB: refused here */
	{ "set over val_cap", BOTH, { K }, { SX(NULL, NULL, PASS, NULL, pass_cmd) }, gen_set_toolarge,
	  NULL, 1 },
	{ "set over val_cap without data", BOTH, { K },
	  { SX("set k 0 0 100000\r\n", NULL, PASS, NULL, pass_cmd) }, NULL, NULL, 1 },
	{ "set over 1 MiB", BOTH, { K }, { ST("set k 0 0 1048577\r\n", TX, XKV_R_TOO_LARGE) }, NULL,
	  NULL, 1 },
	/* memcached stays silent: a reply could start a loop with another server */
	{ "frame seq 1 of 2", BOTH, { K }, { SX("get k\r\n", NULL, DROP, NULL, drop_frame) }, NULL,
	  mod_seq1, 1 },
	{ "frame total 2", BOTH, { K }, { SX("get k\r\n", NULL, DROP, NULL, drop_frame) }, NULL,
	  mod_total2, 1 },
	{ "frame total 0", BOTH, { K }, { SX("get k\r\n", NULL, DROP, NULL, drop_frame) }, NULL,
	  mod_total0, 1 },

	/* ---- not for us, or malformed: XDP_PASS, frame untouched ---- */
	{ "ARP", FAM4, { K }, { ST("get k\r\n", PASS, NULL) }, NULL, mod_arp, 1 },
	{ "not IP", FAM4, { K }, { ST("get k\r\n", PASS, NULL) }, NULL, mod_not_ip, 1 },
	{ "TCP to the port", BOTH, { K }, { ST("get k\r\n", PASS, NULL) }, NULL, mod_tcp, 1 },
	{ "UDP to another port", BOTH, { K }, { ST("get k\r\n", PASS, NULL) }, NULL, mod_other_port, 1 },
	{ "IPv4 more-fragments", FAM4, { K }, { ST("get k\r\n", PASS, NULL) }, NULL, mod_mf, 1 },
	{ "IPv4 fragment offset", FAM4, { K }, { ST("get k\r\n", PASS, NULL) }, NULL, mod_frag_off, 1 },
	{ "IPv4 options", FAM4, { K }, { ST("get k\r\n", PASS, NULL) }, NULL, mod_opts, 1 },
	{ "IPv6 extension header", FAM6, { K }, { ST("get k\r\n", PASS, NULL) }, NULL, mod_v6_ext, 1 },
	{ "IP length beyond the frame", BOTH, { K }, { ST("get k\r\n", PASS, NULL) }, NULL,
	  mod_ip_long, 1 },
	{ "frame cut inside the UDP header", BOTH, { K }, { ST("get k\r\n", PASS, NULL) }, NULL,
	  mod_chop_udp, 1 },
	{ "UDP length beyond the IP payload", BOTH, { K }, { ST("get k\r\n", PASS, NULL) }, NULL,
	  mod_udp_long, 1 },
	{ "UDP payload shorter than 8", BOTH, { K }, { ST("get k\r\n", PASS, NULL) }, NULL,
	  mod_udp_short, 1 },

	/* ---- the reply's own headers ---- */
	{ "reply: TTL 64, DF, no ECN bits, whatever the request had", BOTH, { K },
	  { ST("get k\r\n", TX, NULL) }, NULL, mod_ecn },
	{ "two replies, two IPv4 ids", BOTH, { K },
	  { ST("get k\r\n", TX, NULL), ST("get k\r\n", TX, NULL), ST("get x\r\n", TX, NULL) } },

	/* ---- access: allow list, write list ---- */
	{ "allowed read from an untrusted reader", BOTH, { K },
	  { SM("get k\r\n", from_reader, TX, "VALUE k 7 4\r\norig\r\nEND\r\n") } },
	{ "read from outside the allow list", BOTH, { K },
	  { SX("get k\r\n", from_stranger, DROP, NULL, drop_acl) }, NULL, NULL, 1 },
	{ "write from outside the allow list", BOTH, { K },
	  { SX("set k 0 0 1\r\nx\r\n", from_stranger, DROP, NULL, drop_acl),
	    SX("delete k\r\n", from_stranger, DROP, NULL, drop_acl) }, NULL, NULL, 1 },
	{ "reader may not set", BOTH, { K },
	  { SX("set k 0 0 1\r\nx\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SM("get k\r\n", from_reader, TX, "VALUE k 7 4\r\norig\r\nEND\r\n") }, NULL, NULL, 1 },
	{ "reader may not set, noreply", BOTH, { K },
	  { SX("set k 0 0 1 noreply\r\nx\r\n", from_reader, DROP, NULL, drop_write_acl) },
	  NULL, NULL, 1 },
	{ "reader may not set a new key", BOTH, { K },
	  { SX("set n 0 0 1\r\nx\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SM("get n\r\n", from_reader, TX, "END\r\n") }, NULL, NULL, 1 },
	{ "reader may not delete", BOTH, { K },
	  { SX("delete k\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SM("get k\r\n", from_reader, TX, "VALUE k 7 4\r\norig\r\nEND\r\n") }, NULL, NULL, 1 },
	{ "reader may not flush_all", BOTH, { K },
	  { SX("flush_all\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SM("get k\r\n", from_reader, TX, "VALUE k 7 4\r\norig\r\nEND\r\n") }, NULL, NULL, 1 },
	{ "reader may not incr", BOTH, { S("k", 0, 0, "5") },
	  { SX("incr k 1\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SM("get k\r\n", from_reader, TX, "VALUE k 0 1\r\n5\r\nEND\r\n") }, NULL, NULL, 1 },
	{ "reader may not decr, add, replace", BOTH, { S("k", 0, 0, "5") },
	  { SX("decr k 1\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SX("add n 0 0 1\r\nx\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SX("replace k 0 0 1\r\nx\r\n", from_reader, DROP, NULL, drop_write_acl) },
	  NULL, NULL, 1 },
	{ "reader's set followed by a get in one datagram", BOTH, { K },
	  { SX("set k 0 0 1\r\nx\r\nget k\r\n", from_reader, DROP, NULL, drop_write_acl) },
	  NULL, NULL, 1 },
	{ "reader's malformed set is answered", BOTH, { K },
	  { SM("set k 0 0\r\nx\r\n", from_reader, TX, XKV_R_FORMAT) }, NULL, NULL, 1 },
	{ "reader may not append, prepend, cas", BOTH, { K },
	  { SX("append k 0 0 1\r\nx\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SX("prepend k 0 0 1\r\nx\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SX("cas k 0 0 1 1\r\nx\r\n", from_reader, DROP, NULL, drop_write_acl) },
	  NULL, NULL, 1 },
	{ "reader may not touch, gat, gats (they change expiries)", BOTH, { K },
	  { SX("touch k 1\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SX("gat 1 k\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SX("gats 1 k\r\n", from_reader, DROP, NULL, drop_write_acl) },
	  NULL, NULL, 1 },
	{ "reader may gets and verbosity", BOTH, { K },
	  { SX("gets k\r\n", from_reader, PASS, NULL, pass_cmd),
	    SX("verbosity 1\r\n", from_reader, PASS, NULL, pass_cmd) }, NULL, NULL, 1 },
	{ "reader may ask for version and stats", BOTH, { K },
	  { SX("version\r\n", from_reader, PASS, NULL, pass_cmd),
	    SX("stats\r\n", from_reader, PASS, NULL, pass_cmd) }, NULL, NULL, 1 },

	/* ---- not addressed to this host: the kernel's, untouched ---- */
	{ "another host's MAC", BOTH, { K }, { SX("get k\r\n", to_other_mac, PASS, NULL, pass_not_local) },
	  NULL, NULL, 1 },
	{ "broadcast MAC", BOTH, { K }, { SX("get k\r\n", to_broadcast, PASS, NULL, pass_not_local) },
	  NULL, NULL, 1 },
	{ "multicast MAC and IP", BOTH, { K },
	  { SX("get k\r\n", to_multicast, PASS, NULL, pass_not_local) }, NULL, NULL, 1 },
	{ "multicast IP to this host's MAC", BOTH, { K },
	  { SX("get k\r\n", to_multicast_ip, PASS, NULL, pass_not_local) }, NULL, NULL, 1 },
	{ "another host's IP to this host's MAC", BOTH, { K },
	  { SX("get k\r\n", to_other_ip, PASS, NULL, pass_not_local),
	    SX("set k 0 0 1\r\nx\r\n", to_other_ip, PASS, NULL, pass_not_local) }, NULL, NULL, 1 },
	{ "an IP that differs from this host's in its first word", BOTH, { K },
	  { SX("get k\r\n", to_near_ip, PASS, NULL, pass_not_local) }, NULL, NULL, 1 },

	/* ---- source addresses no host has (allowed by 'any' in the unguarded and
	 * open tables; here they would have to pass the allow list too) ---- */
	{ "source multicast", BOTH, { K }, { SX("get k\r\n", from_multicast, DROP, NULL, drop_src) },
	  NULL, NULL, 1 },
	{ "source broadcast", BOTH, { K }, { SX("get k\r\n", from_broadcast, DROP, NULL, drop_src) },
	  NULL, NULL, 1 },
	{ "source loopback", BOTH, { K }, { SX("get k\r\n", from_loopback, DROP, NULL, drop_src) },
	  NULL, NULL, 1 },
	{ "source unspecified", BOTH, { K },
	  { SX("set k 0 0 1\r\nx\r\n", from_unspecified, DROP, NULL, drop_src) }, NULL, NULL, 1 },
	{ "IPv6 source v4-mapped", FAM6, { K },
	  { SX("get k\r\n", from_mapped, DROP, NULL, drop_src) }, NULL, NULL, 1 },

	/* ---- source ports that are no client's ---- */
	{ "source port 0", BOTH, { K }, { SX("get k\r\n", sport0, DROP, NULL, drop_port) }, NULL, NULL, 1 },
	{ "source port 11211 (the service's)", BOTH, { K },
	  { SX("get k\r\n", sport_service, DROP, NULL, drop_port) }, NULL, NULL, 1 },
	{ "source port 53", BOTH, { K }, { SX("get k\r\n", sport53, DROP, NULL, drop_port) },
	  NULL, NULL, 1 },
	{ "source port 1023", BOTH, { K }, { SX("get k\r\n", sport1023, DROP, NULL, drop_port) },
	  NULL, NULL, 1 },
	{ "source port 1024 is served", BOTH, { K }, { SM("get k\r\n", sport1024, TX, NULL) } },

	/* ---- datagrams that read as replies: dropped, never answered ---- */
	{ "reply ERROR", BOTH, { K }, { SX("ERROR\r\n", NULL, DROP, NULL, drop_reply) }, NULL, NULL, 1 },
	{ "reply END", BOTH, { K }, { SX("END\r\n", NULL, DROP, NULL, drop_reply) }, NULL, NULL, 1 },
	{ "reply VALUE", BOTH, { K },
	  { SX("VALUE k 0 1\r\nx\r\nEND\r\n", NULL, DROP, NULL, drop_reply) }, NULL, NULL, 1 },
	{ "reply STORED", BOTH, { K }, { SX("STORED\r\n", NULL, DROP, NULL, drop_reply) },
	  NULL, NULL, 1 },
	{ "reply SERVER_ERROR", BOTH, { K }, { SX("SERVER_ERROR x\r\n", NULL, DROP, NULL, drop_reply) },
	  NULL, NULL, 1 },
	{ "reply CLIENT_ERROR", BOTH, { K },
	  { SX(XKV_R_FORMAT, NULL, DROP, NULL, drop_reply) }, NULL, NULL, 1 },
	{ "reply NOT_FOUND", BOTH, { K }, { SX("NOT_FOUND\r\n", NULL, DROP, NULL, drop_reply) },
	  NULL, NULL, 1 },
	{ "reply of incr: 42", BOTH, { K }, { SX("42\r\n", NULL, DROP, NULL, drop_reply) }, NULL, NULL, 1 },
	{ "reply of incr: 20 digits", BOTH, { K },
	  { SX("18446744073709551615\r\n", NULL, DROP, NULL, drop_reply) }, NULL, NULL, 1 },
	{ "reply of incr: 13 digits", BOTH, { K },
	  { SX("1234567890123\r\n", NULL, DROP, NULL, drop_reply) }, NULL, NULL, 1 },
	{ "meta reply HD", BOTH, { K }, { SX("HD\r\n", NULL, DROP, NULL, drop_reply) }, NULL, NULL, 1 },
	{ "meta reply EN", BOTH, { K }, { SX("EN\r\n", NULL, DROP, NULL, drop_reply) }, NULL, NULL, 1 },
	{ "a number over 2^64 is no reply", BOTH, { K },
	  { ST("18446744073709551616\r\n", TX, XKV_R_ERROR) }, NULL, NULL, 1 },
	{ "a negative number is no reply", BOTH, { K }, { ST("-1\r\n", TX, XKV_R_ERROR) },
	  NULL, NULL, 1 },
	{ "lower-case error is no reply", BOTH, { K }, { ST("error\r\n", TX, XKV_R_ERROR) },
	  NULL, NULL, 1 },
	{ "ENDS is no reply", BOTH, { K }, { ST("ENDS\r\n", TX, XKV_R_ERROR) }, NULL, NULL, 1 },

	/* ---- checksums: a corrupted datagram is the kernel's to drop ---- */
	{ "bad IPv4 header checksum", FAM4, { K },
	  { SX("get k\r\n", ip_csum_bad, PASS, NULL, pass_csum) }, NULL, NULL, 1 },
	{ "bad UDP checksum", BOTH, { K }, { SX("get k\r\n", udp_csum_bad, PASS, NULL, pass_csum),
					    SX("set k 0 0 1\r\nx\r\n", udp_csum_bad, PASS, NULL,
					       pass_csum) }, NULL, NULL, 1 },
	{ "IPv6 UDP checksum 0", FAM6, { K }, { SX("get k\r\n", mod_csum0, PASS, NULL, pass_csum) },
	  NULL, NULL, 1 },
	{ "pseudo-header-only UDP checksum", BOTH, { K },
	  { SX("get k\r\n", udp_csum_partial, PASS, NULL, pass_csum) }, NULL, NULL, 1 },

	/* ---- amplification: max_amp 10 for untrusted sources ---- */
	{ "large value to an untrusted source", BOTH, { SBIG("big", 500), K },
	  { SX("get big\r\n", from_reader, TX, XKV_R_AMP, amp_capped),
	    SM("get k\r\n", from_reader, TX, "VALUE k 7 4\r\norig\r\nEND\r\n") } },
	{ "large value to a trusted source", BOTH, { SBIG("big", 500) },
	  { ST("get big\r\n", TX, NULL) } },
	{ "reply of exactly max_amp times the request", BOTH, { SBIG("b", 120) },
	  { SM("get b\r\n", from_reader, TX, NULL) } },
	{ "reply one byte over max_amp times the request", BOTH, { SBIG("b", 121) },
	  { SX("get b\r\n", from_reader, TX, XKV_R_AMP, amp_capped) } },
};

/* --allow-low-ports */
static const struct fixture low_ports_rows[] = {
	{ "source port 53 is served", BOTH, { K }, { SM("get k\r\n", sport53, TX, NULL) } },
	{ "source port 1 is served", BOTH, { K }, { SM("get k\r\n", sport1, TX, NULL) } },
	{ "source port 0 still", BOTH, { K }, { SX("get k\r\n", sport0, DROP, NULL, drop_port) },
	  NULL, NULL, 1 },
	{ "source port 11211 still", BOTH, { K },
	  { SX("get k\r\n", sport_service, DROP, NULL, drop_port) }, NULL, NULL, 1 },
	{ "the allow list still", BOTH, { K },
	  { SX("get k\r\n", from_stranger, DROP, NULL, drop_acl) }, NULL, NULL, 1 },
};

/* XKV_CFG_CSUM_PARTIAL: a veth peer's CHECKSUM_PARTIAL frames */
static const struct fixture csum_partial_rows[] = {
	{ "pseudo-header-only UDP checksum is served", BOTH, {},
	  { SM("set k 0 0 1\r\nx\r\n", udp_csum_partial, TX, XKV_R_STORED),
	    SM("get k\r\n", udp_csum_partial, TX, "VALUE k 0 1\r\nx\r\nEND\r\n") } },
	{ "bad UDP checksum still", BOTH, { K },
	  { SX("get k\r\n", udp_csum_bad, PASS, NULL, pass_csum) }, NULL, NULL, 1 },
	{ "IPv6 UDP checksum 0 still", FAM6, { K },
	  { SX("get k\r\n", mod_csum0, PASS, NULL, pass_csum) }, NULL, NULL, 1 },
	{ "full UDP checksum", BOTH, { K }, { ST("get k\r\n", TX, NULL) } },
};

/* --strict: trust lifts no cap */
static const struct fixture strict_rows[] = {
	{ "large value to a trusted source", BOTH, { SBIG("big", 500) },
	  { SX("get big\r\n", NULL, TX, XKV_R_AMP, amp_capped) } },
	{ "large value to a source with an open TCP connection", BOTH, { SBIG("big", 500) },
	  { SX("get big\r\n", from_tcp_peer, TX, XKV_R_AMP, amp_capped) } },
	{ "short reply to a trusted source", BOTH, { K }, { ST("get k\r\n", TX, NULL) } },
};

/* --max-amplification 1: even the SERVER_ERROR line may be too long */
static const struct fixture amp1_rows[] = {
	{ "large value to an untrusted source", BOTH, { SBIG("big", 500) },
	  { SX("get big\r\n", from_reader, DROP, NULL, drop_amp) } },
	{ "SERVER_ERROR of exactly the request's size", BOTH, { SBIG("big", 500) },
	  { SX(NULL, from_reader, TX, XKV_R_AMP, amp_capped) }, gen_get_big55 },
	{ "SERVER_ERROR one byte over the request's size", BOTH, { SBIG("big", 500) },
	  { SX(NULL, from_reader, DROP, NULL, drop_amp) }, gen_get_big54 },
	{ "error reply longer than the request", BOTH, { K },
	  { SX("x\r\n", from_reader, DROP, NULL, drop_amp) }, NULL, NULL, 1 },
	{ "short reply to an untrusted source", BOTH, { K },
	  { SM("get nokey\r\n", from_reader, TX, "END\r\n") } },
	/* a TCP connection from the address lifts no cap: UDP sources can be spoofed */
	{ "large value to a reader with an open TCP connection", BOTH, { SBIG("big", 500) },
	  { SX("get big\r\n", from_tcp_peer, DROP, NULL, drop_amp) } },
	{ "large value to a trusted source", BOTH, { SBIG("big", 500) },
	  { ST("get big\r\n", TX, NULL) } },
};

/* snapshot --pause-writes: every write passes to the slow path (which
 * refuses it), reads are served; the write list still comes first */
static const struct fixture paused_rows[] = {
	{ "get served", BOTH, { K }, { ST("get k\r\n", TX, NULL) } },
	{ "set, delete, incr, add pass on", BOTH, { K },
	  { SX("set k 0 0 1\r\nx\r\n", NULL, PASS, NULL, pass_paused),
	    SX("delete k\r\n", NULL, PASS, NULL, pass_paused),
	    SX("incr k 1\r\n", NULL, PASS, NULL, pass_paused),
	    SX("add n 0 0 1\r\nx\r\n", NULL, PASS, NULL, pass_paused),
	    ST("get k\r\n", TX, NULL) } },
	{ "a reader's write is still dropped", BOTH, { K },
	  { SX("set k 0 0 1\r\nx\r\n", from_reader, DROP, NULL, drop_write_acl) } },
};

/* --rate-limit 2 --rate-burst 3 */
static const struct fixture rate_rows[] = {
	{ "burst of 3, then the /24 or /64 waits", BOTH, { K },
	  { ST("get k\r\n", TX, NULL), ST("get k\r\n", TX, NULL), ST("get k\r\n", TX, NULL),
	    SX("get k\r\n", NULL, DROP, NULL, drop_ratelimit),
	    SX("get k\r\n", from_neighbour, DROP, NULL, drop_ratelimit),
	    SM("get k\r\n", from_reader, TX, NULL),
	    /* 600 ms later the /24 or /64 has earned one more */
	    { "get k\r\n", TX, NULL, NULL, 0, 600 } } },
	{ "refused writes count against the rate", BOTH, { K },
	  { SX("set k 0 0 1\r\nx\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SX("set k 0 0 1\r\nx\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SX("set k 0 0 1\r\nx\r\n", from_reader, DROP, NULL, drop_write_acl),
	    SX("get k\r\n", from_reader, DROP, NULL, drop_ratelimit) }, NULL, NULL, 1 },
	{ "sources outside the allow list do not", BOTH, { K },
	  { SX("get k\r\n", from_stranger, DROP, NULL, drop_acl),
	    SX("get k\r\n", from_stranger, DROP, NULL, drop_acl),
	    SX("get k\r\n", from_stranger, DROP, NULL, drop_acl),
	    SX("get k\r\n", from_stranger, DROP, NULL, drop_acl) }, NULL, NULL, 1 },
};

/* XKV_CFG_UNGUARDED (benchmarks): no access or hygiene check; the silence
 * rules stay */
static const struct fixture unguarded_rows[] = {
	{ "a stranger reads and writes", BOTH, { K },
	  { SM("get k\r\n", from_stranger, TX, "VALUE k 7 4\r\norig\r\nEND\r\n"),
	    SM("set k 1 0 1\r\nx\r\n", from_stranger, TX, XKV_R_STORED),
	    SM("delete k\r\n", from_reader, TX, XKV_R_DELETED) } },
	{ "another host's MAC and IP", BOTH, { K },
	  { SM("get k\r\n", to_other_mac, TX, NULL), SM("get k\r\n", to_other_ip, TX, NULL) } },
	{ "source port 53", BOTH, { K }, { SM("get k\r\n", reader_sport53, TX, NULL) } },
	{ "bad checksums", BOTH, { K }, { SM("get k\r\n", stranger_bad_csum, TX, NULL),
					 SM("get k\r\n", ip_csum_bad, TX, NULL) } },
	{ "large value to an untrusted source", BOTH, { SBIG("big", 500) },
	  { SM("get big\r\n", from_stranger, TX, NULL) } },
	{ "bad frame header still", BOTH, { K },
	  { SX("get k\r\n", NULL, DROP, NULL, drop_frame) }, NULL, mod_seq1, 1 },
	{ "reply-shaped still", BOTH, { K }, { SX("END\r\n", from_stranger, DROP, NULL, drop_reply) },
	  NULL, NULL, 1 },
};

/* One load of the program per table: the settings that are rodata. */
struct table {
	const char *name;
	__u32 flags;             /* XKV_CFG_* */
	__u32 max_amp, rate_limit, rate_burst;
	const struct fixture *rows;
	int nrows;
	int addrs_in_map;        /* local addresses only in local_addrs, not inline */
	int pause_writes;        /* the host entry says snapshot --pause-writes is running */
};
#define ROWS(a) a, (int)(sizeof(a) / sizeof(a[0]))

static const struct table tables[] = {
	{ "", 0, MAX_AMP, 0, 0, ROWS(fixtures) },
	{ "addresses in local_addrs", 0, MAX_AMP, 0, 0, ROWS(fixtures), 1 },
	{ "writes paused", 0, MAX_AMP, 0, 0, ROWS(paused_rows), 0, 1 },
	{ "low ports", XKV_CFG_LOW_PORTS, MAX_AMP, 0, 0, ROWS(low_ports_rows) },
	{ "csum partial", XKV_CFG_CSUM_PARTIAL, MAX_AMP, 0, 0, ROWS(csum_partial_rows) },
	{ "strict", XKV_CFG_STRICT, MAX_AMP, 0, 0, ROWS(strict_rows) },
	{ "max amp 1", 0, 1, 0, 0, ROWS(amp1_rows) },
	{ "rate 2/s burst 3", 0, MAX_AMP, 2, 3, ROWS(rate_rows) },
	{ "unguarded", XKV_CFG_UNGUARDED, MAX_AMP, 0, 0, ROWS(unguarded_rows) },
};

/* ---- running ---------------------------------------------------------------------- */

struct run {
	const struct xkv_layout *L;
	const char *table;      /* the table's name, "" for the default policy */
	struct bpf_object *obj;
	int prog_fd;
	struct xkv_store st;
	struct rm_config mc;
	__u64 seed;             /* --hash-seed for the layouts that take one (0: unseeded) */
	int verbose;
	int passed, failed, skipped;
};

/* The seed the tables run array_fnv and set_assoc with (keyed placement, as
 * attach does by default; the model computes the same placement). */
#define FIXTURE_SEED 0x9b1d5eedc0ffee01ull

static const char *fam_name(int fam)
{
	return fam == FAM4 ? "IPv4" : "IPv6";
}

static int64_t unix_now(void)
{
	return (int64_t)time(NULL);
}

static void hexdiff(const __u8 *exp, size_t elen, const __u8 *act, size_t alen)
{
	size_t n = elen > alen ? elen : alen;

	fprintf(stderr, "    expected %zu bytes, got %zu; differing bytes marked ^^\n", elen, alen);
	for (size_t row = 0; row < n; row += 16) {
		char e[64] = "", a[64] = "", m[64] = "";
		int diff = 0;
		for (size_t i = row; i < row + 16 && i < n; i++) {
			int he = i < elen, ha = i < alen;
			int d = he != ha || (he && exp[i] != act[i]);
			diff |= d;
			snprintf(e + strlen(e), sizeof(e) - strlen(e), he ? "%02x " : "-- ", he ? exp[i] : 0);
			snprintf(a + strlen(a), sizeof(a) - strlen(a), ha ? "%02x " : "-- ", ha ? act[i] : 0);
			strcat(m, d ? "^^ " : "   ");
		}
		fprintf(stderr, "    %04zx exp %s\n", row, e);
		fprintf(stderr, "    %04zx act %s\n", row, a);
		if (diff)
			fprintf(stderr, "             %s\n", m);
	}
}

static const char *act_name(int a)
{
	return a == TX ? "XDP_TX" : a == PASS ? "XDP_PASS" : a == DROP ? "XDP_DROP" :
	       a == 0 ? "XDP_ABORTED" : "?";
}

/* failure reporting: the first line names the fixture and the layout */
struct where {
	struct run *r;
	const char *name;
	int fam;
	int step;
	int bad;
	int ids;           /* IPv4 replies seen, and the last one's id */
	__u16 last_id;
};

static void fail(struct where *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct where *w, const char *fmt, ...)
{
	va_list ap;
	if (!w->bad)
		fprintf(stderr, "FAIL [%s%s%s] %s (%s)\n", w->r->L->name, *w->r->table ? "/" : "",
			w->r->table, w->name, fam_name(w->fam));
	w->bad = 1;
	if (w->step > 0)
		fprintf(stderr, "  step %d: ", w->step);
	else
		fprintf(stderr, w->step < 0 ? "  setup: " : "  store after: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void print_text(const char *what, const __u8 *t, size_t n)
{
	fprintf(stderr, "    %s: \"", what);
	for (size_t i = 0; i < n && i < 200; i++)
		fprintf(stderr, t[i] >= 0x20 && t[i] < 0x7f && t[i] != '"' ? "%c" : "\\x%02x", t[i]);
	fprintf(stderr, "%s\"\n", n > 200 ? "..." : "");
}

static void request_frame(struct pb *b, int fam, int idx)
{
	pb_init(b);
	if (fam == FAM4)
		pb_ipv4(b);
	else
		pb_ipv6(b);
	pb_udp(b, (__u16)(CLIENT_PORT + idx), XKV_DEFAULT_PORT);
	pb_frame(b, (__u16)(0x4200 + idx), 0, 1);
}

static int stats_now(struct run *r, struct xkv_stats *s)
{
	int e = xkv_stats_read(&r->st, XKV_STATS_FAST, s, NULL);
	if (e)
		fprintf(stderr, "xkv_stats_read: %s\n", strerror(-e));
	return e;
}

/* Send one frame; compare action, output frame and counters with the model.
 * want_act/want_reply/why: the table's expectation (want_act < 0: none;
 * why: W(counter) the model must move, 0: none).
 * Returns the XDP action (or -1) and the output in out/outlen. */
static int send_frame(struct where *w, struct rm_store *m, const struct pb *req, int want_act,
		      const char *want_reply, int why, __u8 *out, __u32 *outlen,
		      struct xkv_stats *delta)
{
	struct run *r = w->r;
	static __u8 in[PB_MAX + 64], exp[PB_MAX + 64];
	static struct rm_result res;
	struct xkv_stats before, after;
	size_t inlen = pb_build(req, in, sizeof(in));

	if (!inlen) {
		fail(w, "test bug: the request frame does not build");
		return -1;
	}
	rm_handle_frame(m, in, inlen, unix_now(), &res);
	if (want_act >= 0 && res.action != want_act)
		fail(w, "test bug: the model says %s, the table %s", act_name(res.action),
		     act_name(want_act));
	if (want_reply && (res.action != TX || res.text_len != strlen(want_reply) ||
			   memcmp(res.text, want_reply, res.text_len))) {
		fail(w, "test bug: the model's reply differs from the table's");
		print_text("table", (const __u8 *)want_reply, strlen(want_reply));
		print_text("model", res.text, res.text_len);
	}
	if (why && !res.delta.v[why - 1])
		fail(w, "test bug: the model does not count %s", xkv_stat_names[why - 1]);
	if (stats_now(r, &before))
		return -1;

	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (__u32)inlen,
		    .data_out = out, .data_size_out = PB_MAX, .repeat = 1);
	int e = bpf_prog_test_run_opts(r->prog_fd, &opts);
	if (e) {
		fail(w, "bpf_prog_test_run_opts: %s", strerror(-e));
		return -1;
	}
	*outlen = opts.data_size_out;
	if (stats_now(r, &after))
		return -1;

	int act = (int)opts.retval;
	if (act != res.action)
		fail(w, "action %s, expected %s", act_name(act), act_name(res.action));
	if (res.action == TX && act == TX) {
		static struct pb rep;
		pb_reply_of(req, &rep, res.text, res.text_len);
		/* the IPv4 id is the program's counter: take it, but it must move */
		if (req->l3 == PB_L3_IPV4 && *outlen >= 14 + 20) {
			rep.ip_id = (__u16)(out[18] << 8 | out[19]);
			if (w->ids++ && rep.ip_id == w->last_id)
				fail(w, "IPv4 id 0x%04x again", rep.ip_id);
			w->last_id = rep.ip_id;
		}
		size_t elen = pb_build(&rep, exp, sizeof(exp));
		const char *why = pb_check_csums(out, *outlen);
		if (why)
			fail(w, "reply checksums: %s", why);
		if (elen != *outlen || memcmp(exp, out, elen)) {
			fail(w, "reply frame differs");
			print_text("expected text", res.text, res.text_len);
			hexdiff(exp, elen, out, *outlen);
		}
	} else if (res.action == PASS && act == PASS) {
		if (inlen != *outlen || memcmp(in, out, inlen)) {
			fail(w, "XDP_PASS changed the frame");
			hexdiff(in, inlen, out, *outlen);
		}
	}
	for (int i = 0; i < XKV_STAT__MAX; i++) {
		__u64 d = after.v[i] - before.v[i];
		if (delta)
			delta->v[i] = d;
		if (d != res.delta.v[i])
			fail(w, "counter %s went up by %llu, expected %llu", xkv_stat_names[i],
			     (unsigned long long)d, (unsigned long long)res.delta.v[i]);
	}
	return act;
}

/* The real store holds exactly what the model holds, for `keys`. */
static void check_store(struct where *w, const struct rm_store *m, const __u8 (*keys)[XKV_KEY_MAX],
			const __u32 *klens, __u32 nkeys)
{
	struct run *r = w->r;
	static struct xkv_item it;
	int64_t now = unix_now();

	for (__u32 i = 0; i < nkeys; i++) {
		if (klens[i] > r->st.cfg.key_cap)
			continue;
		const struct rm_item *mi = rm_store_get(m, keys[i], klens[i], now);
		int e = r->L->get(&r->st, keys[i], klens[i], &it);
		if (e < 0) {
			fail(w, "get '%.*s': %s", (int)klens[i], keys[i], strerror(-e));
			continue;
		}
		if (!mi && e == 1)
			fail(w, "'%.*s' is there, expected absent", (int)klens[i], keys[i]);
		else if (mi && e == 0)
			fail(w, "'%.*s' is absent, expected present", (int)klens[i], keys[i]);
		else if (mi && (it.flags != mi->flags || it.len != mi->len ||
				memcmp(it.data, mi->val, mi->len))) {
			fail(w, "'%.*s' holds flags %u len %u, expected flags %u len %u",
			     (int)klens[i], keys[i], it.flags, it.len, mi->flags, mi->len);
			hexdiff(mi->val, mi->len, it.data, it.len);
		} else if (mi && (mi->expire == RM_NEVER) != (it.expire_ns == 0)) {
			fail(w, "'%.*s' expire_ns %llu, expected %s", (int)klens[i], keys[i],
			     (unsigned long long)it.expire_ns, mi->expire == RM_NEVER ? "0" : "a time");
		} else if (mi && mi->expire != RM_NEVER) {
			double left = ((double)it.expire_ns - (double)xkv_now_ns()) / 1e9;
			double want = (double)(mi->expire - now);
			if (left < want - 2 || left > want + 2)
				fail(w, "'%.*s' expires in %.1f s, expected %.0f s",
				     (int)klens[i], keys[i], left, want);
		}
	}
	long n = r->L->count(&r->st);
	if (n != rm_store_live(m, now))
		fail(w, "store count %ld, expected %ld", n, rm_store_live(m, now));
}

struct keyset {
	__u8 k[128][XKV_KEY_MAX];
	__u32 len[128];
	__u32 n;
};

static void keyset_add(struct keyset *ks, const void *k, __u32 len)
{
	for (__u32 i = 0; i < ks->n; i++)
		if (ks->len[i] == len && !memcmp(ks->k[i], k, len))
			return;
	if (ks->n < 128 && len <= XKV_KEY_MAX) {
		memcpy(ks->k[ks->n], k, len);
		ks->len[ks->n++] = len;
	}
}

static void seed_value(const struct seed *sd, __u8 *buf, __u32 *len)
{
	if (sd->val) {
		*len = (__u32)strlen(sd->val);
		memcpy(buf, sd->val, *len);
		return;
	}
	*len = sd->vlen;
	for (__u32 i = 0; i < sd->vlen; i++)
		buf[i] = (__u8)('a' + i % 26);
}

/* Put an item both in the real store (userspace accessor) and the model. */
static int seed_one(struct where *w, struct rm_store *m, const char *key, __u32 flags,
		    int64_t exptime, const __u8 *val, __u32 len)
{
	struct run *r = w->r;
	__u8 pk[XKV_KEY_MAX + 8] = { 0 };
	struct xkv_entry *e = xkv_entry_make(&r->st, flags, exptime, val, len);
	int err;

	if (!e) {
		fail(w, "xkv_entry_make failed");
		return -1;
	}
	err = xkv_key_pack(&r->st.cfg, key, (__u32)strlen(key), pk);
	if (!err)
		err = r->L->set(&r->st, key, (__u32)strlen(key), e);
	free(e);
	if (err) {
		fail(w, "seeding '%s': %s", key, strerror(-err));
		return -1;
	}
	rm_store_put(m, key, (__u32)strlen(key), flags, exptime, val, len, unix_now());
	return 0;
}

/* Forget every source's rate: the map outlives a fixture, the model's
 * buckets do not. */
static void rate_forget(struct run *r)
{
	struct xkv_rl_key k;

	if (r->st.rl_fd < 0)
		return;
	while (!bpf_map_get_next_key(r->st.rl_fd, NULL, &k))
		if (bpf_map_delete_elem(r->st.rl_fd, &k))
			break;
}

static int flush_store(struct run *r)
{
	int e = r->L->flush(&r->st);
	if (e)
		fprintf(stderr, "[%s] flush: %s\n", r->L->name, strerror(-e));
	return e;
}

/* The keys request b names (the model parses it on a scratch store), so
 * the store can be checked on them afterwards. */
static void add_named_keys(struct run *r, const struct pb *b, struct keyset *ks)
{
	static __u8 frame[PB_MAX + 64];
	static struct rm_result res;
	static struct rm_store scratch;
	struct rm_config c = r->mc;
	size_t n = pb_build(b, frame, sizeof(frame));

	c.pol.unguarded = 1; /* what it names, whoever sent it */
	rm_store_init(&scratch, &c);
	rm_handle_frame(&scratch, frame, n, unix_now(), &res);
	rm_store_free(&scratch);
	for (__u32 i = 0; i < res.ntouched; i++)
		keyset_add(ks, res.touched[i].key, res.touched[i].klen);
}

static void run_fixture(struct run *r, const struct fixture *fx, int fam, int idx)
{
	struct where w = { .r = r, .name = fx->name, .fam = fam, .step = -1 };
	static struct keyset ks;
	static __u8 out[PB_MAX + 64], val[XKV_VAL_MAX];
	struct rm_store m, seeded;
	__u32 outlen, vlen;

	ks.n = 0;
	rm_store_init(&m, &r->mc);
	rm_store_init(&seeded, &r->mc);
	rate_forget(r);
	if (flush_store(r)) {
		fail(&w, "cannot flush the store");
		goto out;
	}
	for (int i = 0; i < 3 && fx->seeds[i].key; i++) {
		const struct seed *sd = &fx->seeds[i];
		seed_value(sd, val, &vlen);
		if (seed_one(&w, &m, sd->key, sd->flags, sd->exptime, val, vlen))
			goto out;
		rm_store_put(&seeded, sd->key, (__u32)strlen(sd->key), sd->flags, sd->exptime, val,
			     vlen, unix_now());
		keyset_add(&ks, sd->key, (__u32)strlen(sd->key));
	}
	int nsteps = (int)(sizeof(fx->steps) / sizeof(fx->steps[0]));
	for (int s = 0; s < nsteps && (fx->steps[s].text || (s == 0 && fx->gen)); s++) {
		const struct step *st = &fx->steps[s];
		struct pb *b = malloc(sizeof(*b));
		w.step = s + 1;
		if (st->sleep_ms)
			nanosleep(&(struct timespec){ st->sleep_ms / 1000,
						      (long)(st->sleep_ms % 1000) * 1000000 }, NULL);
		request_frame(b, fam, idx);
		if (st->text)
			pb_text(b, st->text);
		else
			fx->gen(b, unix_now());
		if (fx->mod)
			fx->mod(b);
		if (st->mod)
			st->mod(b);
		add_named_keys(r, b, &ks);
		send_frame(&w, &m, b, st->act, st->act == TX ? st->reply : NULL, st->why, out,
			   &outlen, NULL);
		free(b);
	}
	w.step = 0;
	check_store(&w, &m, ks.k, ks.len, ks.n);
	if (fx->keep)
		check_store(&w, &seeded, ks.k, ks.len, ks.n);
out:
	rm_store_free(&m);
	rm_store_free(&seeded);
	if (w.bad)
		r->failed++;
	else
		r->passed++;
	if (r->verbose && !w.bad)
		printf("ok   [%s%s%s] %s (%s)\n", r->L->name, *r->table ? "/" : "", r->table, fx->name,
		       fam_name(fam));
}

/* ---- loading ------------------------------------------------------------------------ */

static void layout_close(struct run *r);

/* The policy in the loaded object's maps, and the same in the model: each
 * side parses the addresses itself. */
static int policy_install(struct run *r, const struct table *t)
{
	const char *const *nets[XKV_ACL__N] = { allow_nets, write_nets, trust_nets };
	struct rm_policy *p = &r->mc.pol;
	struct rm_nets *mnets[XKV_ACL__N] = { &p->allow, &p->write, &p->trust };
	struct xkv_host h = { .flags = XKV_HOST_CHECK_MAC | XKV_HOST_CHECK_IP };
	struct xkv_acl_key k;
	char err[XKV_ERRLEN] = "";
	struct pb b;
	__u32 zero = 0;

	pb_init(&b); /* this host is where pktbuild sends by default */
	memcpy(h.mac, b.eth_dst, 6);
	memset(p, 0, sizeof(*p));
	p->check_mac = p->check_ip = 1;
	memcpy(p->mac, b.eth_dst, 6);
	p->unguarded = !!(t->flags & XKV_CFG_UNGUARDED);
	p->low_ports = !!(t->flags & XKV_CFG_LOW_PORTS);
	p->strict = !!(t->flags & XKV_CFG_STRICT);
	p->csum_partial = !!(t->flags & XKV_CFG_CSUM_PARTIAL);
	p->pause_writes = t->pause_writes;
	if (t->pause_writes)
		h.flags |= XKV_HOST_PAUSE_WRITES;
	p->max_amp = t->max_amp;
	p->rate_limit = t->rate_limit;
	p->rate_burst = t->rate_burst;
	__u8 inl[8][16];
	int n = 0;
	for (int i = 0; host_addrs[i]; i++, n++) {
		__u8 plen;
		if (xkv_cidr_parse(host_addrs[i], &k, err, sizeof(err)) ||
		    rm_nets_add(&p->local, host_addrs[i])) {
			fprintf(stderr, "local address %s: %s\n", host_addrs[i], err);
			return -1;
		}
		plen = (__u8)k.prefixlen;
		if (bpf_map_update_elem(r->st.local_fd, k.addr, &plen, 0)) {
			fprintf(stderr, "[%s] local_addrs: %s\n", r->L->name, strerror(errno));
			return -1;
		}
		memcpy(inl[n & 7], k.addr, 16);
	}
	/* the addresses in the host entry itself (as xkv_host_sync leaves
	 * them), or only in local_addrs */
	if (!t->addrs_in_map)
		xkv_host_set_inline(&h, (const __u8 (*)[16])inl, n);
	if (bpf_map_update_elem(r->st.host_fd, &zero, &h, 0)) {
		fprintf(stderr, "[%s] host map: %s\n", r->L->name, strerror(errno));
		return -1;
	}
	for (int l = 0; l < XKV_ACL__N; l++) {
		for (int i = 0; nets[l][i]; i++) {
			int e = xkv_cidr_parse(nets[l][i], &k, err, sizeof(err));
			if (!e)
				e = xkv_acl_add(&r->st, l, &k, XKV_ACL_USER);
			if (e || rm_nets_add(mnets[l], nets[l][i])) {
				fprintf(stderr, "[%s] %s list, %s: %s\n", r->L->name,
					xkv_acl_list_names[l], nets[l][i], *err ? err : strerror(-e));
				return -1;
			}
		}
	}
	for (int i = 0; tcp_peer_addrs[i]; i++) {
		int e = xkv_cidr_parse(tcp_peer_addrs[i], &k, err, sizeof(err));
		if (!e)
			e = xkv_tcp_peer(&r->st, k.addr, 1);
		if (e || rm_nets_add(&p->tcp, tcp_peer_addrs[i])) {
			fprintf(stderr, "[%s] tcp_peers, %s: %s\n", r->L->name, tcp_peer_addrs[i],
				*err ? err : strerror(-e));
			return -1;
		}
	}
	return 0;
}

/* Load the layout with table t's settings (and `flags` on top), under the
 * policy. */
static int layout_open(struct run *r, const char *name, __u32 entries, const struct table *t,
		       __u32 flags)
{
	struct xkv_config cfg;
	char err[XKV_ERRLEN] = "";

	r->table = t->name;
	r->L = xkv_layout_find(name);
	if (!r->L || xkv_config_defaults(&cfg, name)) {
		fprintf(stderr, "unknown layout %s\n", name);
		return -1;
	}
	cfg.entries = entries;
	cfg.key_cap = KEY_CAP;
	cfg.val_cap = VAL_CAP;
	cfg.mode = XKV_MODE_TEST;
	cfg.flags |= flags | t->flags;
	cfg.max_amp = t->max_amp;
	cfg.rate_limit = t->rate_limit;
	cfg.rate_burst = t->rate_burst;
	if (r->L->hash_seeded)
		cfg.hash_seed = r->seed;
	if (xkv_inproc_load(&cfg, r->L, &r->obj, &r->st, err, sizeof(err))) {
		fprintf(stderr, "[%s] %s\n", name, err);
		return -1;
	}
	r->prog_fd = bpf_program__fd(xkv_object_prog(r->obj));
	r->mc = (struct rm_config){
		.kind = !strcmp(name, "array_fnv") ? RM_ARRAY : !strcmp(name, "lru") ? RM_LRU :
			!strcmp(name, "percpu") ? RM_PERCPU :
			!strcmp(name, "lru_percpu") ? RM_LRU_PERCPU :
			xkv_sa_layout(name) ? RM_SET_ASSOC : !strcmp(name, "arena") ? RM_PROBE : RM_HASH,
		.policy = !strcmp(name, "sieve") ? RM_SIEVE : !strcmp(name, "s3fifo") ? RM_S3FIFO : RM_CLOCK,
		.hash_seed = r->st.cfg.hash_seed,
		.ways = xkv_sa_ways(r->st.cfg.entry_size),
		.key_cap = r->st.cfg.key_cap,
		.val_cap = r->st.cfg.val_cap,
		.entries = r->st.cfg.entries,
		.port = r->st.cfg.port,
		.counts_new = !strcmp(name, "array_fnv") || !strcmp(name, "lru") ||
			      !strcmp(name, "lru_percpu") || xkv_sa_layout(name) || !strcmp(name, "arena"),
		.binary_keys = !!(flags & XKV_CFG_BINARY_KEYS),
		.big_max = r->st.cfg.big_chunks ? XKV_BIG_MAX : 0,
	};
	if (policy_install(r, t)) {
		layout_close(r);
		return -1;
	}
	return 0;
}

static void layout_close(struct run *r)
{
	xkv_store_close(&r->st);
	bpf_object__close(r->obj);
	r->obj = NULL;
}

static int pin_cpu(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "sched_setaffinity(cpu %d): %s\n", cpu, strerror(errno));
		return -1;
	}
	return 0;
}


/* ---- layout-specific scenarios ------------------------------------------------------- */

/* One request to the XDP program, checked against model m. */
static int xdp_req(struct where *w, struct rm_store *m, const char *text, int want_act,
		   const char *want_reply, struct xkv_stats *delta)
{
	static __u8 out[PB_MAX + 64];
	struct pb *b = malloc(sizeof(*b));
	__u32 outlen;
	int act;

	w->step++;
	request_frame(b, w->fam, w->step);
	pb_text(b, text);
	act = send_frame(w, m, b, want_act, want_reply, 0, out, &outlen, delta);
	free(b);
	return act;
}

static void case_done(struct run *r, struct where *w)
{
	if (w->bad)
		r->failed++;
	else
		r->passed++;
	if (r->verbose && !w->bad)
		printf("ok   [%s] %s\n", r->L->name, w->name);
}

/* The per-CPU scenarios need CPUs 0 and 1.  With one CPU online the case is
 * skipped, said so and counted as a skip, not a pass (returns -1). */
static int two_cpus(struct run *r, struct where *w)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2)
		return 0;
	printf("SKIP [%s] %s: needs 2 online CPUs, this machine has 1\n", r->L->name, w->name);
	r->skipped++;
	return -1;
}

/* Run on `cpu` from now on (BPF_PROG_TEST_RUN runs the program there); a CPU
 * this process may not use fails the case rather than testing the wrong one. */
static int run_on(struct where *w, int cpu)
{
	if (!pin_cpu(cpu))
		return 0;
	fail(w, "cannot run on CPU %d", cpu);
	return -1;
}

/* array_fnv, 8 slots: two keys in one slot; the second store overwrites.
 * Run unseeded (plain FNV-1a, BMC's placement, requested explicitly with
 * hash_seed 0) and seeded (the keys that collide are others). */
static void case_array_collision(struct run *r)
{
	struct where w = { .r = r, .fam = FAM4,
			   .name = r->seed ? "array_fnv collision overwrites (seeded)" :
					     "array_fnv collision overwrites (unseeded FNV-1a)" };
	struct rm_store m;
	struct xkv_stats d;
	char a[16] = "", b[16] = "", line[64];
	__u32 slot_a = 0;

	for (int i = 0; i < 100 && !b[0]; i++) {
		char k[16];
		snprintf(k, sizeof(k), "c%d", i);
		__u8 pk[XKV_KEY_MAX + 8];
		xkv_key_pack(&r->st.cfg, k, (__u32)strlen(k), pk);
		__u32 slot = slot_index(r->st.cfg.hash_seed, pk, (__u32)strlen(k), r->st.cfg.entries);
		if (!a[0]) {
			strcpy(a, k);
			slot_a = slot;
		} else if (slot == slot_a) {
			strcpy(b, k);
		}
	}
	rm_store_init(&m, &r->mc);
	if (!b[0]) {
		fail(&w, "test bug: no collision among 100 keys");
		goto out;
	}
	flush_store(r);
	snprintf(line, sizeof(line), "set %s 1 0 1\r\nA\r\n", a);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	if (d.v[XKV_STAT_store_new] != 1 || d.v[XKV_STAT_overwrites] != 0)
		fail(&w, "first store: store_new +%llu overwrites +%llu, expected +1 +0",
		     (unsigned long long)d.v[XKV_STAT_store_new],
		     (unsigned long long)d.v[XKV_STAT_overwrites]);
	snprintf(line, sizeof(line), "set %s 2 0 1\r\nB\r\n", b);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	if (d.v[XKV_STAT_overwrites] != 1)
		fail(&w, "colliding store: overwrites +%llu, expected +1",
		     (unsigned long long)d.v[XKV_STAT_overwrites]);
	snprintf(line, sizeof(line), "get %s\r\n", a);
	xdp_req(&w, &m, line, TX, XKV_R_END, NULL);
	snprintf(line, sizeof(line), "get %s %s\r\n", b, a);
	char want[64];
	snprintf(want, sizeof(want), "VALUE %s 2 1\r\nB\r\nEND\r\n", b);
	xdp_req(&w, &m, line, TX, want, NULL);
	/* a store through the userspace accessor lands in the same slot */
	__u8 v = 'C';
	if (!seed_one(&w, &m, a, 3, 0, &v, 1)) {
		snprintf(line, sizeof(line), "get %s %s\r\n", a, b);
		snprintf(want, sizeof(want), "VALUE %s 3 1\r\nC\r\nEND\r\n", a);
		xdp_req(&w, &m, line, TX, want, NULL);
	}
	snprintf(line, sizeof(line), "delete %s\r\n", b);
	xdp_req(&w, &m, line, TX, XKV_R_NOT_FOUND, NULL);
	w.step = 0;
	__u8 keys[2][XKV_KEY_MAX];
	__u32 kl[2] = { (__u32)strlen(a), (__u32)strlen(b) };
	memcpy(keys[0], a, kl[0]);
	memcpy(keys[1], b, kl[1]);
	check_store(&w, &m, keys, kl, 2);
out:
	rm_store_free(&m);
	case_done(r, &w);
}

/* arena, 4 slots (one window holds the whole table, from each key's home
 * on): a full window takes a new key only by replacing the item written
 * longest ago; a deleted slot is taken first (no tombstones: the keys
 * stored past it are still found); a key stored again stays where it is
 * and counts as written now; the accessor stores by the same rule.  Every
 * step is checked against the model (refmodel.c, RM_PROBE), the counters
 * also by hand. */
/* A store counted store_new +nw and overwrites +ov (d: the counters' change). */
static void counted(struct where *w, const struct xkv_stats *d, __u64 nw, __u64 ov, const char *what)
{
	if (d->v[XKV_STAT_store_new] != nw || d->v[XKV_STAT_overwrites] != ov)
		fail(w, "%s: store_new +%llu overwrites +%llu, expected +%llu +%llu", what,
		     (unsigned long long)d->v[XKV_STAT_store_new], (unsigned long long)d->v[XKV_STAT_overwrites],
		     (unsigned long long)nw, (unsigned long long)ov);
}

static void case_arena_window(struct run *r)
{
	struct where w = { .r = r, .name = "arena window: first free slot, else the oldest write", .fam = FAM4 };
	struct rm_store m;
	struct xkv_stats d;
	char key[8][16], line[160], want[160];
	__u8 keys[8][XKV_KEY_MAX];
	__u32 kl[8];

	rm_store_init(&m, &r->mc);
	for (__u32 i = 0; i < 8; i++) {
		snprintf(key[i], sizeof(key[i]), "win%u", i);
		kl[i] = (__u32)strlen(key[i]);
		memcpy(keys[i], key[i], kl[i]);
	}
	flush_store(r);
	for (__u32 i = 0; i < 4; i++) { /* fill: every store new */
		snprintf(line, sizeof(line), "set %s %u 0 1\r\nv\r\n", key[i], i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
		counted(&w, &d, 1, 0, "filling the table");
	}
	/* a hole: the other three are still found */
	snprintf(line, sizeof(line), "delete %s\r\n", key[1]);
	xdp_req(&w, &m, line, TX, XKV_R_DELETED, NULL);
	snprintf(line, sizeof(line), "get %s %s %s %s\r\n", key[0], key[1], key[2], key[3]);
	snprintf(want, sizeof(want), "VALUE %s 0 1\r\nv\r\nVALUE %s 2 1\r\nv\r\nVALUE %s 3 1\r\nv\r\nEND\r\n",
		 key[0], key[2], key[3]);
	xdp_req(&w, &m, line, TX, want, NULL);
	/* the hole is taken: new, nothing replaced */
	snprintf(line, sizeof(line), "set %s 4 0 1\r\nn\r\n", key[4]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	counted(&w, &d, 1, 0, "store into the hole");
	/* key 0 written again in place: neither new nor a replacement */
	snprintf(line, sizeof(line), "set %s 10 0 1\r\nw\r\n", key[0]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	counted(&w, &d, 0, 0, "store of a present key");
	/* full: key 2, now the oldest write, is replaced */
	snprintf(line, sizeof(line), "set %s 5 0 1\r\nf\r\n", key[5]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	counted(&w, &d, 0, 1, "store into a full window");
	snprintf(line, sizeof(line), "get %s %s %s\r\n", key[2], key[0], key[5]);
	snprintf(want, sizeof(want), "VALUE %s 10 1\r\nw\r\nVALUE %s 5 1\r\nf\r\nEND\r\n", key[0], key[5]);
	xdp_req(&w, &m, line, TX, want, NULL);
	/* the accessor: key 3 is the oldest now */
	__u8 v = 'u';
	seed_one(&w, &m, key[6], 6, 0, &v, 1);
	snprintf(line, sizeof(line), "get %s %s\r\n", key[3], key[6]);
	snprintf(want, sizeof(want), "VALUE %s 6 1\r\nu\r\nEND\r\n", key[6]);
	xdp_req(&w, &m, line, TX, want, NULL);
	w.step = 0;
	check_store(&w, &m, keys, kl, 8);
	rm_store_free(&m);
	case_done(r, &w);
}

/* arena: every process maps the arena at the address in cfg.arena_base.  A
 * second open in this process shares the mapping; an open at an address
 * something else occupies fails, naming the address. */
static void case_arena_address(struct run *r)
{
	struct where w = { .r = r, .name = "arena address: shared in a process, occupied refused by name", .fam = FAM4 };
	struct xkv_store s2;
	char err[XKV_ERRLEN] = "", want[32];
	int e = xkv_store_adopt(&s2, &r->st, dup(r->st.store_fd), &r->st.cfg, err, sizeof(err));
	if (e || s2.mm != r->st.mm)
		fail(&w, "second open of the same arena: %s, mapped at %p, first at %p", e ? err : "ok", s2.mm,
		     r->st.mm);
	if (!e)
		xkv_store_drop(&s2); /* the first mapping stays */
	if (*(volatile __u64 *)r->st.mm != XKV_AR_READY)
		fail(&w, "the first mapping went with the second");
	/* another window, occupied by an anonymous mapping */
	__u64 other = r->st.cfg.arena_base - XKV_AR_WINDOW_BYTES * (XKV_AR_BASES - 1);
	void *p = mmap((void *)(uintptr_t)other, XKV_AR_PAGE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != (void *)(uintptr_t)other) {
		fail(&w, "test bug: cannot occupy %#llx", (unsigned long long)other);
	} else {
		struct xkv_config c = r->st.cfg;
		c.arena_base = other;
		snprintf(want, sizeof(want), "%#llx", (unsigned long long)other);
		err[0] = 0;
		e = xkv_store_adopt(&s2, &r->st, dup(r->st.store_fd), &c, err, sizeof(err));
		if (!e || !strstr(err, want))
			fail(&w, "open at occupied %s: %s (%s)", want, e ? "refused" : "accepted", err);
		if (!e)
			xkv_store_drop(&s2);
		else
			close(s2.store_fd);
		munmap(p, XKV_AR_PAGE);
	}
	case_done(r, &w);
}

/* The bucketed layouts' one-bucket cases (entries 1 rounds up to the ways):
 * check that the store is one bucket, name n keys "<prefix><i>" (at most
 * 24, each under 16 bytes), empty the store.  -1 (failed) if it is not one
 * bucket. */
static int one_bucket(struct where *w, const char *prefix, __u32 n, char (*key)[16],
		      __u8 (*keys)[XKV_KEY_MAX], __u32 *kl)
{
	struct run *r = w->r;
	if (r->st.cfg.entries != r->mc.ways || r->mc.ways > 8 || n > 24) {
		fail(w, "entries %u, expected one bucket of %u ways", r->st.cfg.entries, r->mc.ways);
		return -1;
	}
	for (__u32 i = 0; i < n; i++) {
		snprintf(key[i], 16, "%s%u", prefix, i);
		kl[i] = (__u32)strlen(key[i]);
		memcpy(keys[i], key[i], kl[i]);
	}
	flush_store(r);
	return 0;
}

/* set_assoc, one bucket (entries 1 rounds up to the ways): CLOCK.  The
 * bucket fills without evicting; a get hit sets a way's reference bit; a new
 * key then evicts the first way from the hand without one (clearing the bits
 * it passes); a deleted or expired way is taken before anything is evicted;
 * the accessor stores by the same rule.  Every step is checked against the
 * model's CLOCK (refmodel.c), the counters also by hand. */
static void case_set_assoc_clock(struct run *r)
{
	struct where w = { .r = r, .name = "set_assoc CLOCK within a bucket", .fam = FAM4 };
	struct rm_store m;
	struct xkv_stats d;
	const __u32 W = r->mc.ways, nk = W + 5;
	char key[16][16], line[96], want[96];
	__u8 keys[16][XKV_KEY_MAX];
	__u32 kl[16];

	rm_store_init(&m, &r->mc);
	if (one_bucket(&w, "clk", nk, key, keys, kl))
		goto out;
	for (__u32 i = 0; i < W; i++) { /* fill: every store new */
		snprintf(line, sizeof(line), "set %s %u 0 1\r\nv\r\n", key[i], i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
		if (d.v[XKV_STAT_store_new] != 1 || d.v[XKV_STAT_overwrites])
			fail(&w, "filling way %u: store_new +%llu overwrites +%llu, expected +1 +0", i,
			     (unsigned long long)d.v[XKV_STAT_store_new],
			     (unsigned long long)d.v[XKV_STAT_overwrites]);
	}
	/* referenced: way 0 and way 2 */
	snprintf(line, sizeof(line), "get %s %s\r\n", key[0], key[2]);
	snprintf(want, sizeof(want), "VALUE %s 0 1\r\nv\r\nVALUE %s 2 1\r\nv\r\nEND\r\n", key[0], key[2]);
	xdp_req(&w, &m, line, TX, want, NULL);
	/* hand at 0: way 0 loses its bit, way 1 is the victim */
	snprintf(line, sizeof(line), "set %s 9 0 1\r\nn\r\n", key[W]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	if (d.v[XKV_STAT_overwrites] != 1 || d.v[XKV_STAT_store_new])
		fail(&w, "store into a full bucket: overwrites +%llu store_new +%llu, expected +1 +0",
		     (unsigned long long)d.v[XKV_STAT_overwrites], (unsigned long long)d.v[XKV_STAT_store_new]);
	snprintf(line, sizeof(line), "get %s\r\n", key[1]);
	xdp_req(&w, &m, line, TX, XKV_R_END, NULL);
	/* hand at 2: way 2 loses its bit, way 3 goes (from the accessor) */
	__u8 v = 'u';
	seed_one(&w, &m, key[W + 1], 7, 0, &v, 1);
	snprintf(line, sizeof(line), "get %s %s %s\r\n", key[3], key[0], key[W + 1]);
	snprintf(want, sizeof(want), "VALUE %s 0 1\r\nv\r\nVALUE %s 7 1\r\nu\r\nEND\r\n", key[0],
		 key[W + 1]);
	xdp_req(&w, &m, line, TX, want, NULL);
	/* a deleted way is taken first: new, nothing evicted */
	snprintf(line, sizeof(line), "delete %s\r\n", key[W]);
	xdp_req(&w, &m, line, TX, XKV_R_DELETED, NULL);
	snprintf(line, sizeof(line), "set %s 0 0 1\r\nd\r\n", key[W + 2]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	if (d.v[XKV_STAT_store_new] != 1 || d.v[XKV_STAT_overwrites])
		fail(&w, "store after a delete: store_new +%llu overwrites +%llu, expected +1 +0",
		     (unsigned long long)d.v[XKV_STAT_store_new], (unsigned long long)d.v[XKV_STAT_overwrites]);
	/* so is an expired one (key 0 rewritten in place as already expired) */
	snprintf(line, sizeof(line), "set %s 0 -1 1\r\nx\r\n", key[0]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	snprintf(line, sizeof(line), "set %s 0 0 1\r\ne\r\n", key[W + 3]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	if (d.v[XKV_STAT_store_new] != 1 || d.v[XKV_STAT_overwrites])
		fail(&w, "store over an expired way: store_new +%llu overwrites +%llu, expected +1 +0",
		     (unsigned long long)d.v[XKV_STAT_store_new], (unsigned long long)d.v[XKV_STAT_overwrites]);
	/* and one more eviction, from where the hand is now */
	snprintf(line, sizeof(line), "set %s 0 0 1\r\nf\r\n", key[W + 4]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	w.step = 0;
	check_store(&w, &m, keys, kl, nk);
	if (rm_store_live(&m, unix_now()) != (long)W || r->st.L->count(&r->st) != (long)W)
		fail(&w, "live items: model %ld, store %ld, expected %u (a full bucket)",
		     rm_store_live(&m, unix_now()), r->st.L->count(&r->st), W);
out:
	rm_store_free(&m);
	case_done(r, &w);
}

/* A bucketed layout (set_assoc, sieve, s3fifo), one bucket: 600 random
 * requests over 3 x ways keys (get, set, delete through XDP, sets through
 * the accessor, some items already expired), every reply and counter checked
 * against the model's policy (refmodel.c), which picks each victim its own
 * way (insertion times, not the store's order array); at the end the store
 * holds what the model holds.  A wrong victim shows as a get that hits in one
 * and misses in the other. */
static void case_bucket_random(struct run *r)
{
	struct where w = { .r = r, .name = "bucket policy against the model, random requests", .fam = FAM4 };
	struct rm_store m;
	const __u32 W = r->mc.ways, nk = 3 * W;
	char key[24][16], line[128];
	__u8 keys[24][XKV_KEY_MAX];
	__u32 kl[24];
	__u64 x = 0x9e3779b97f4a7c15ull ^ (__u64)W;

	rm_store_init(&m, &r->mc);
	if (one_bucket(&w, "rnd", nk, key, keys, kl))
		goto out;
	for (int step = 0; step < 600 && !w.bad; step++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
		__u32 k = (__u32)(x >> 8) % nk, op = (__u32)(x >> 40) % 100;
		/* skewed: low keys more often, so hits and frequencies build up */
		if (op & 1)
			k = k % (W + 1);
		if (op < 50) {
			snprintf(line, sizeof(line), "get %s\r\n", key[k]);
		} else if (op < 85) {
			snprintf(line, sizeof(line), "set %s %u %d 2\r\nv%u\r\n", key[k], op, op < 53 ? -1 : 0, k % 10);
		} else if (op < 90) {
			snprintf(line, sizeof(line), "delete %s\r\n", key[k]);
		} else {
			__u8 v = (__u8)('a' + k);
			seed_one(&w, &m, key[k], op, 0, &v, 1);
			continue;
		}
		xdp_req(&w, &m, line, -1, NULL, NULL);
	}
	w.step = 0;
	check_store(&w, &m, keys, kl, nk);
out:
	rm_store_free(&m);
	case_done(r, &w);
}

/* sieve, one bucket, by hand (and against the model): where SIEVE and CLOCK
 * part.  Fill k0..k7 (oldest first); get k0; a new key A: the hand passes k0
 * (clearing it) and evicts k1, A is the newest.  Get k2..k7; a new key B:
 * the hand clears k2..k7 and then reaches A before k0 (A is newer than k0 in
 * the insertion order), so A goes.  CLOCK would have put A in k1's way,
 * behind the hand, and evicted k0 instead. */
static void case_sieve_hand(struct run *r)
{
	struct where w = { .r = r, .name = "sieve: a new item is the newest, not behind the hand", .fam = FAM4 };
	struct rm_store m;
	const __u32 W = r->mc.ways, nk = W + 2;
	char key[10][16], line[256];
	__u8 keys[10][XKV_KEY_MAX];
	__u32 kl[10];

	rm_store_init(&m, &r->mc);
	if (one_bucket(&w, "sv", nk, key, keys, kl))
		goto out;
	for (__u32 i = 0; i < W; i++) {
		snprintf(line, sizeof(line), "set %s %u 0 1\r\nv\r\n", key[i], i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
	}
	snprintf(line, sizeof(line), "get %s\r\n", key[0]);
	xdp_req(&w, &m, line, TX, NULL, NULL);
	snprintf(line, sizeof(line), "set %s 0 0 1\r\nA\r\n", key[W]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
	for (__u32 i = 2; i < W; i++) {
		snprintf(line, sizeof(line), "get %s\r\n", key[i]);
		xdp_req(&w, &m, line, TX, NULL, NULL);
	}
	snprintf(line, sizeof(line), "set %s 0 0 1\r\nB\r\n", key[W + 1]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
	/* by hand: k1 and A gone, k0 kept */
	static struct xkv_item it;
	if (r->L->get(&r->st, keys[1], kl[1], &it) != 0 || r->L->get(&r->st, keys[W], kl[W], &it) != 0)
		fail(&w, "%s or %s still there: SIEVE evicts them", key[1], key[W]);
	if (r->L->get(&r->st, keys[0], kl[0], &it) != 1)
		fail(&w, "%s is gone: SIEVE keeps it (the hand passed it, A was newer)", key[0]);
	w.step = 0;
	check_store(&w, &m, keys, kl, nk);
out:
	rm_store_free(&m);
	case_done(r, &w);
}

/* s3fifo, one bucket, by hand (and against the model).  Fill k0..k(W-1):
 * k0 goes to small, the rest (small holds its share) to main.  A new key A:
 * small's k0 (not read twice) is evicted and its tag kept as a ghost; A goes
 * to small.  k0 again: small's A goes (ghost), k0 is a ghost hit and goes to
 * main, as the newest.  B: small is empty, so main's oldest unread way goes:
 * k1.  Read B twice and k2 once; C: small's B was read twice and moves to
 * main, then main's oldest, k2, was read, so it is kept (count down, to
 * main's newest end) and k3 goes. */
static void case_s3fifo_queues(struct run *r)
{
	struct where w = { .r = r, .name = "s3fifo: small, ghost, main", .fam = FAM4 };
	struct rm_store m;
	const __u32 W = r->mc.ways, A = W, B = W + 1, C = W + 2;
	char key[12][16], line[256];
	__u8 keys[12][XKV_KEY_MAX];
	__u32 kl[12];
	static struct xkv_item it;

	rm_store_init(&m, &r->mc);
	if (one_bucket(&w, "s3k", W + 3, key, keys, kl))
		goto out;
#define S3SET(i) (snprintf(line, sizeof(line), "set %s %u 0 1\r\nv\r\n", key[i], i), \
		  xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL))
#define S3GET(i) (snprintf(line, sizeof(line), "get %s\r\n", key[i]), xdp_req(&w, &m, line, TX, NULL, NULL))
#define S3HAS(i, want, why) \
	do { \
		if (r->L->get(&r->st, keys[i], kl[i], &it) != (want)) \
			fail(&w, "%s %s, expected %s (%s)", key[i], (want) ? "absent" : "present", \
			     (want) ? "present" : "absent", why); \
	} while (0)
	for (__u32 i = 0; i < W; i++)
		S3SET(i);
	S3SET(A);
	S3HAS(0, 0, "evicted from small");
	S3SET(0);
	S3HAS(A, 0, "evicted from small");
	S3HAS(0, 1, "a ghost hit: into main");
	S3SET(B);
	S3HAS(1, 0, "small empty: main's oldest");
	S3GET(B);
	S3GET(B);
	S3GET(2);
	S3SET(C);
	S3HAS(B, 1, "read twice in small: moved to main");
	S3HAS(2, 1, "read in main: kept");
	S3HAS(3, 0, "main's oldest unread");
#undef S3SET
#undef S3GET
#undef S3HAS
	/* the accessor's gets above count as reads in the store, not in the
	 * model: compare the contents only */
	w.step = 0;
	check_store(&w, &m, keys, kl, W + 3);
out:
	rm_store_free(&m);
	case_done(r, &w);
}

/* lru, 16 entries (lru_percpu: 15): 48 new keys all store; with one LRU
 * list shared by the CPUs, the first eviction comes with key entries + 1
 * even though they are all stored from CPU 0 (lru_percpu: the kernel counts
 * keys, not per-CPU copies, and does not round 15 to a multiple of the
 * CPUs); some early ones are evicted; what the accessor sees and what XDP
 * answers agree. */
static void case_lru_evict(struct run *r)
{
	struct where w = { .r = r, .name = "lru evicts, stores never fail", .fam = FAM4 };
	struct rm_store m, seen;
	static struct xkv_item it;
	const int n = 48;
	char line[64], key[16];
	int present = 0, last_present = 0, first_evict = 0;

	rm_store_init(&m, &r->mc);
	rm_store_init(&seen, &r->mc);
	seen.cfg.entries = 1u << 30;
	flush_store(r);
	for (int i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "set e%d %d 0 3\r\nv%02d\r\n", i, i, i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
		if (!first_evict && r->L->count(&r->st) < i + 1)
			first_evict = i + 1;
	}
	if (first_evict != (int)r->st.cfg.entries + 1)
		fail(&w, "the first eviction came with new key %d, expected %u (one shared LRU list: "
		     "CPU 0 alone fills every entry)", first_evict, r->st.cfg.entries + 1);
	long cnt = r->L->count(&r->st);
	if (cnt < 1 || cnt > (long)r->st.cfg.entries)
		fail(&w, "count %ld, expected 1..%u", cnt, r->st.cfg.entries);
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "e%d", i);
		int e = r->L->get(&r->st, key, (__u32)strlen(key), &it);
		char want[8];
		snprintf(want, sizeof(want), "v%02d", i);
		if (e < 0) {
			fail(&w, "get %s: %s", key, strerror(-e));
			continue;
		}
		if (e == 1) {
			present++;
			last_present = i == n - 1;
			if (it.flags != (__u32)i || it.len != 3 || memcmp(it.data, want, 3))
				fail(&w, "%s holds a wrong value", key);
			rm_store_put(&seen, key, (__u32)strlen(key), (__u32)i, 0, want, 3,
				     unix_now());
		}
	}
	if (present != cnt)
		fail(&w, "%d keys readable, count says %ld", present, cnt);
	if (present >= n)
		fail(&w, "nothing was evicted from %u entries after %d new keys",
		     r->st.cfg.entries, n);
	if (!last_present)
		fail(&w, "the newest key is gone");
	/* XDP agrees with the accessor on every key, hit or miss */
	for (int i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "get e%d\r\n", i);
		xdp_req(&w, &seen, line, TX, NULL, NULL);
	}
	rm_store_free(&m);
	rm_store_free(&seen);
	case_done(r, &w);
}

/* percpu: an XDP set writes only the serving CPU's copy. */
static void case_percpu(struct run *r)
{
	struct where w = { .r = r, .name = "percpu copies per CPU", .fam = FAM4 };
	struct rm_store cpu0, cpu1;
	static struct xkv_item it;

	if (two_cpus(r, &w))
		return;
	rm_store_init(&cpu0, &r->mc);
	rm_store_init(&cpu1, &r->mc);
	flush_store(r);
	if (run_on(&w, 0))
		goto out;
	xdp_req(&w, &cpu0, "set p 4 0 2\r\nP0\r\n", TX, XKV_R_STORED, NULL);
	xdp_req(&w, &cpu0, "get p\r\n", TX, "VALUE p 4 2\r\nP0\r\nEND\r\n", NULL);
	if (run_on(&w, 1))
		goto out;
	xdp_req(&w, &cpu1, "get p\r\n", TX, XKV_R_END, NULL); /* CPU 1's copy is empty */
	int e = r->L->get(&r->st, "p", 1, &it);
	if (e != 1 || it.len != 2 || memcmp(it.data, "P0", 2) || it.flags != 4)
		fail(&w, "the accessor does not see CPU 0's copy (get -> %d)", e);
	/* a userspace set writes every copy */
	__u8 v[2] = { 'U', 'S' };
	if (!seed_one(&w, &cpu1, "u", 9, 0, v, 2)) {
		rm_store_put(&cpu0, "u", 1, 9, 0, v, 2, unix_now());
		xdp_req(&w, &cpu1, "get u\r\n", TX, "VALUE u 9 2\r\nUS\r\nEND\r\n", NULL);
		if (run_on(&w, 0))
			goto out;
		xdp_req(&w, &cpu0, "get u\r\n", TX, "VALUE u 9 2\r\nUS\r\nEND\r\n", NULL);
	}
	if (r->L->count(&r->st) != 2)
		fail(&w, "count %ld, expected 2", r->L->count(&r->st));
	/* a delete served on CPU 1 removes p from every CPU, and says so although
	 * CPU 1's own copy of p is empty */
	if (run_on(&w, 1))
		goto out;
	rm_store_put(&cpu1, "p", 1, 4, 0, "P0", 2, unix_now());
	xdp_req(&w, &cpu1, "delete p\r\n", TX, XKV_R_DELETED, NULL);
	e = r->L->get(&r->st, "p", 1, &it);
	if (e != 0)
		fail(&w, "p still readable after the delete (get -> %d)", e);
	if (r->L->count(&r->st) != 1)
		fail(&w, "count %ld after the delete, expected 1", r->L->count(&r->st));
out:
	pin_cpu(0);
	rm_store_free(&cpu0);
	rm_store_free(&cpu1);
	case_done(r, &w);
}

/* lru --no-common-lru (BPF_F_NO_COMMON_LRU), asked for 15 entries: an LRU
 * list per possible CPU, each with an equal share of the elements.  The
 * kernel rounds max_entries up to a multiple of the possible CPUs (15 -> 16
 * on 2 CPUs) and xkv_config_finish does the same, so cfg says what the map
 * holds.  New keys stored from CPU 0 start evicting once CPU 0's share is
 * used although the map has room (case_lru_evict: only the entries+1st
 * without the flag); CPU 1 then stores its whole share without evicting
 * anything, and the hash table itself is shared: CPU 1 reads CPU 0's keys. */
static void case_lru_cpu_lists(struct run *r)
{
	struct where w = { .r = r, .name = "lru --no-common-lru: an LRU list per CPU", .fam = FAM4 };
	struct rm_store m;
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info), ncpus = (__u32)r->st.ncpus, n, share;
	char line[64], want[64];
	int first_evict = 0;

	rm_store_init(&m, &r->mc);
	m.cfg.entries = 1u << 30; /* only the replies are the model's here */
	flush_store(r);
	if (bpf_obj_get_info_by_fd(r->st.store_fd, &info, &ilen)) {
		fail(&w, "map info: %s", strerror(errno));
		goto out;
	}
	if (!(info.map_flags & BPF_F_NO_COMMON_LRU))
		fail(&w, "the store map lacks BPF_F_NO_COMMON_LRU (map_flags 0x%x)", info.map_flags);
	if (info.max_entries != r->st.cfg.entries || info.max_entries % ncpus)
		fail(&w, "the kernel made %u entries, cfg says %u (%u possible CPUs): not the same "
		     "multiple of the CPUs", info.max_entries, r->st.cfg.entries, ncpus);
	n = info.max_entries;
	share = n / ncpus;
	if (ncpus < 2)
		fail(&w, "%u possible CPU: one LRU list, nothing per CPU to test", ncpus);
	if (two_cpus(r, &w) || run_on(&w, 0))
		goto out;
	for (__u32 i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "set c0-%u 0 0 1\r\nx\r\n", i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
		if (!first_evict && r->L->count(&r->st) < (long)i + 1)
			first_evict = (int)i + 1;
	}
	if (first_evict != (int)share + 1)
		fail(&w, "CPU 0's first eviction came with its new key %d, expected %u (%u entries / %u "
		     "possible CPUs + 1, while the map had room)", first_evict, share + 1, n, ncpus);
	long on_cpu0 = r->L->count(&r->st);
	if (on_cpu0 > (long)share)
		fail(&w, "%ld items stored from CPU 0, more than its share %u", on_cpu0, share);
	if (run_on(&w, 1))
		goto out;
	for (__u32 i = 0; i < share; i++) {
		snprintf(line, sizeof(line), "set c1-%u 0 0 1\r\nx\r\n", i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
	}
	if (r->L->count(&r->st) != on_cpu0 + (long)share)
		fail(&w, "count %ld after CPU 1 stored its share %u on top of CPU 0's %ld: CPU 1 evicted",
		     r->L->count(&r->st), share, on_cpu0);
	/* CPU 0's newest key, read on CPU 1 */
	snprintf(line, sizeof(line), "get c0-%u\r\n", n - 1);
	snprintf(want, sizeof(want), "VALUE c0-%u 0 1\r\nx\r\nEND\r\n", n - 1);
	xdp_req(&w, &m, line, TX, want, NULL);
out:
	pin_cpu(0);
	rm_store_free(&m);
	case_done(r, &w);
}

/* lru_percpu, 16 entries: 48 new keys set through XDP alternately on CPU 0
 * and CPU 1.  Stores never fail and keys are evicted (as lru); a key's value
 * is in the copy of the CPU that set it only (as percpu): a get there agrees
 * with the accessor, a get on the other CPU misses whether the key is present
 * or evicted. */
static void case_lru_percpu_split(struct run *r)
{
	struct where w = { .r = r, .name = "lru_percpu evicts, copies per CPU", .fam = FAM4 };
	struct rm_store m, seen, none;
	static struct xkv_item it;
	const int n = 48;
	char line[64], key[16], want[8];
	int present = 0;

	if (two_cpus(r, &w))
		return;
	rm_store_init(&m, &r->mc);
	rm_store_init(&seen, &r->mc);
	rm_store_init(&none, &r->mc);
	seen.cfg.entries = 1u << 30;
	flush_store(r);
	for (int i = 0; i < n; i++) {
		if (run_on(&w, i % 2))
			goto out;
		snprintf(line, sizeof(line), "set s%d %d 0 3\r\nv%02d\r\n", i, i, i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
	}
	long cnt = r->L->count(&r->st);
	if (cnt < 1 || cnt > (long)r->st.cfg.entries)
		fail(&w, "count %ld, expected 1..%u", cnt, r->st.cfg.entries);
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "s%d", i);
		snprintf(want, sizeof(want), "v%02d", i);
		int e = r->L->get(&r->st, key, (__u32)strlen(key), &it);
		if (e < 0) {
			fail(&w, "get %s: %s", key, strerror(-e));
		} else if (e == 1) {
			present++;
			if (it.flags != (__u32)i || it.len != 3 || memcmp(it.data, want, 3))
				fail(&w, "%s holds a wrong value", key);
			rm_store_put(&seen, key, (__u32)strlen(key), (__u32)i, 0, want, 3, unix_now());
		}
	}
	if (present != cnt)
		fail(&w, "%d keys readable, count says %ld", present, cnt);
	if (present >= n)
		fail(&w, "nothing was evicted from %u entries after %d new keys", r->st.cfg.entries, n);
	for (int i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "get s%d\r\n", i);
		if (run_on(&w, i % 2))
			goto out;
		xdp_req(&w, &seen, line, TX, NULL, NULL);        /* the setting CPU: as the accessor */
		if (run_on(&w, 1 - i % 2))
			goto out;
		xdp_req(&w, &none, line, TX, XKV_R_END, NULL);   /* the other CPU: its copy is empty */
	}
out:
	pin_cpu(0);
	rm_store_free(&m);
	rm_store_free(&seen);
	rm_store_free(&none);
	case_done(r, &w);
}

/* hash_map, 8 entries: the 9th new key is refused, nothing changes. */
static void case_hash_full(struct run *r)
{
	struct where w = { .r = r, .name = "hash_map full", .fam = FAM4 };
	struct rm_store m;
	static struct keyset ks;
	struct xkv_stats d;
	char line[64], key[16];
	__u32 cap = r->st.cfg.entries;

	ks.n = 0;
	rm_store_init(&m, &r->mc);
	flush_store(r);
	for (__u32 i = 0; i < cap; i++) {
		snprintf(key, sizeof(key), "h%u", i);
		snprintf(line, sizeof(line), "set %s %u 0 2\r\nhv\r\n", key, i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
		keyset_add(&ks, key, (__u32)strlen(key));
	}
	xdp_req(&w, &m, "set extra 0 0 1\r\nx\r\n", TX, XKV_R_OOM, &d);
	if (d.v[XKV_STAT_err_oom] != 1 || d.v[XKV_STAT_stores] != 0)
		fail(&w, "refused store: err_oom +%llu stores +%llu, expected +1 +0",
		     (unsigned long long)d.v[XKV_STAT_err_oom], (unsigned long long)d.v[XKV_STAT_stores]);
	keyset_add(&ks, "extra", 5);
	xdp_req(&w, &m, "get extra\r\n", TX, XKV_R_END, NULL);
	xdp_req(&w, &m, "set h0 77 0 3\r\nnew\r\n", TX, XKV_R_STORED, NULL);
	xdp_req(&w, &m, "get h0\r\n", TX, "VALUE h0 77 3\r\nnew\r\nEND\r\n", NULL);
	w.step = 0;
	check_store(&w, &m, ks.k, ks.len, ks.n);
	if (r->L->count(&r->st) != (long)cap)
		fail(&w, "count %ld, expected %u", r->L->count(&r->st), cap);
	rm_store_free(&m);
	case_done(r, &w);
}

/* --binary-keys: control bytes are key bytes (memaslap's keys need it);
 * NUL is still refused and changes nothing.  Strict mode refusing them is
 * covered by the fixture table. */
static void case_binary_keys(struct run *r)
{
	struct where w = { .r = r, .name = "binary keys", .fam = FAM4 };
	static const char key[] = "\x10\x1f\x01\tk\x7f";
	static const __u8 nul_req[] = "set a\0b 0 0 1\r\nx\r\n";
	struct rm_store m;
	static struct keyset ks;
	struct xkv_item *it = malloc(sizeof(*it));
	char line[64];
	static __u8 out[PB_MAX + 64];
	__u32 outlen;

	ks.n = 0;
	rm_store_init(&m, &r->mc);
	flush_store(r);
	snprintf(line, sizeof(line), "set %s 3 0 2\r\nhi\r\n", key);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
	snprintf(line, sizeof(line), "get %s\r\n", key);
	char want[64];
	snprintf(want, sizeof(want), "VALUE %s 3 2\r\nhi\r\nEND\r\n", key);
	xdp_req(&w, &m, line, TX, want, NULL);
	keyset_add(&ks, key, sizeof(key) - 1);
	/* the userspace accessor follows the same rule */
	if (!it || r->L->get(&r->st, key, sizeof(key) - 1, it) != 1 || it->len != 2)
		fail(&w, "accessor does not find the binary key");
	/* NUL: CLIENT_ERROR bad key, nothing stored */
	struct pb *b = malloc(sizeof(*b));
	w.step++;
	request_frame(b, w.fam, w.step);
	pb_bytes(b, nul_req, sizeof(nul_req) - 1);
	send_frame(&w, &m, b, TX, XKV_R_KEY_BAD, 0, out, &outlen, NULL);
	free(b);
	keyset_add(&ks, "a", 1);
	w.step = 0;
	check_store(&w, &m, ks.k, ks.len, ks.n);
	free(it);
	rm_store_free(&m);
	case_done(r, &w);
}

static void run_binary_keys(struct run *r, const char *name)
{
	static struct run bin;
	memset(&bin, 0, sizeof(bin));
	bin.verbose = r->verbose;
	if (layout_open(&bin, name, 1024, &tables[0], XKV_CFG_BINARY_KEYS)) {
		r->failed++;
		return;
	}
	case_binary_keys(&bin);
	layout_close(&bin);
	r->passed += bin.passed;
	r->failed += bin.failed;
}

/* The scenarios each layout runs, each on a fresh store. */
static const struct {
	const char *layout;
	__u32 entries, flags;
	void (*fn)(struct run *);
	__u64 seed;
} layout_cases[] = {
	{ "array_fnv", 8, 0, case_array_collision, 0 },
	{ "array_fnv", 8, 0, case_array_collision, FIXTURE_SEED },
	{ "set_assoc", 1, 0, case_set_assoc_clock, FIXTURE_SEED },
	{ "set_assoc", 1, 0, case_bucket_random, FIXTURE_SEED },
	{ "sieve", 1, 0, case_bucket_random, FIXTURE_SEED },
	{ "sieve", 1, 0, case_sieve_hand, FIXTURE_SEED },
	{ "s3fifo", 1, 0, case_bucket_random, FIXTURE_SEED },
	{ "s3fifo", 1, 0, case_s3fifo_queues, FIXTURE_SEED },
	{ "arena", 4, 0, case_arena_window, FIXTURE_SEED },
	{ "arena", 64, 0, case_arena_address, FIXTURE_SEED },
	{ "lru", 16, 0, case_lru_evict },
	{ "lru", 15, XKV_CFG_NO_COMMON_LRU, case_lru_cpu_lists },
	{ "percpu", 8, 0, case_percpu },
	{ "lru_percpu", 15, 0, case_lru_evict },
	{ "lru_percpu", 16, 0, case_percpu },
	{ "lru_percpu", 16, 0, case_lru_percpu_split },
	{ "hash_map", 8, 0, case_hash_full },
};

static void run_layout_cases(struct run *r, const char *name)
{
	static struct run small;

	for (size_t i = 0; i < sizeof(layout_cases) / sizeof(layout_cases[0]); i++) {
		if (strcmp(layout_cases[i].layout, name))
			continue;
		memset(&small, 0, sizeof(small));
		small.verbose = r->verbose;
		small.seed = layout_cases[i].seed;
		if (layout_open(&small, name, layout_cases[i].entries, &tables[0], layout_cases[i].flags)) {
			r->failed++;
			continue;
		}
		layout_cases[i].fn(&small);
		layout_close(&small);
		r->passed += small.passed;
		r->failed += small.failed;
		r->skipped += small.skipped;
	}
}

/* The load-time map options: --no-prealloc for hash_map only,
 * --no-common-lru for lru only; xkv_config_finish refuses the rest. */
static void check_map_opts(struct run *r, const char *name)
{
	static const struct {
		__u32 flag;
		const char *opt, *layout;
	} opts[] = {
		{ XKV_CFG_NO_PREALLOC, "--no-prealloc", "hash_map" },
		{ XKV_CFG_NO_COMMON_LRU, "--no-common-lru", "lru" },
	};
	int bad = 0;

	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		struct xkv_config cfg;
		char err[XKV_ERRLEN] = "";
		int want_ok = !strcmp(name, opts[i].layout);

		xkv_config_defaults(&cfg, name);
		cfg.flags |= opts[i].flag;
		int e = xkv_config_finish(&cfg, err, sizeof(err));
		if (want_ok ? e != 0 : (e != -EINVAL || !strstr(err, opts[i].opt))) {
			fprintf(stderr, "FAIL [%s] %s: %s (%s)\n", name, opts[i].opt,
				want_ok ? "refused" : "accepted, or refused without naming it", err);
			bad = 1;
		}
	}
	/* --hash-seed: only where the layout places keys itself */
	struct xkv_config cfg;
	char err[XKV_ERRLEN] = "";
	xkv_config_defaults(&cfg, name);
	cfg.hash_seed = 42;
	int e = xkv_config_finish(&cfg, err, sizeof(err));
	int want_ok = !strcmp(name, "array_fnv") || xkv_sa_layout(name) || !strcmp(name, "arena");
	if (want_ok ? e != 0 : (e != -EINVAL || !strstr(err, "--hash-seed"))) {
		fprintf(stderr, "FAIL [%s] --hash-seed: %s (%s)\n", name,
			want_ok ? "refused" : "accepted, or refused without naming it", err);
		bad = 1;
	}
	if (bad)
		r->failed++;
	else
		r->passed++;
	if (r->verbose && !bad)
		printf("ok   [%s] load-time map options\n", name);
}

static void run_table(struct run *r, const char *name, const struct table *t)
{
	r->seed = FIXTURE_SEED;
	if (layout_open(r, name, 1024, t, 0)) {
		r->failed++;
		return;
	}
	for (int i = 0; i < t->nrows; i++)
		for (int fam = FAM4; fam <= FAM6; fam <<= 1)
			if (t->rows[i].fams & fam)
				run_fixture(r, &t->rows[i], fam, i);
	layout_close(r);
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--layout NAME] [-v]\n", prog);
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	int verbose = 0, total_pass = 0, total_fail = 0, total_skip = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--layout") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "-v"))
			verbose = 1;
		else {
			usage(argv[0]);
			return 2;
		}
	}
	if (only && !xkv_layout_find(only)) {
		fprintf(stderr, "unknown layout %s\n", only);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pin_cpu(0))
		return 1;
	/* hash.h's SipHash against the reference vector of the SipHash paper
	 * (2-4, key 00..0f, message 00..0e); production runs the same code 1-3 */
	__u8 msg[16] = { 0 };
	for (int i = 0; i < 15; i++)
		msg[i] = (__u8)i;
	__u64 sip = xkv_siphash_cd(2, 4, 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull, msg, 15);
	if (sip != 0xa129ca6149be45e5ull) {
		fprintf(stderr, "FAIL hash.h: SipHash-2-4 reference vector: %016llx, expected a129ca6149be45e5\n",
			(unsigned long long)sip);
		total_fail++;
	} else {
		total_pass++;
	}
	for (int li = 0; xkv_layouts[li]; li++) {
		const char *name = xkv_layouts[li]->name;
		static struct run r;
		if (only && strcmp(only, name))
			continue;
		memset(&r, 0, sizeof(r));
		r.verbose = verbose;
		for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
			run_table(&r, name, &tables[t]);
		run_layout_cases(&r, name);
		run_binary_keys(&r, name);
		check_map_opts(&r, name);
		printf("%s: %d passed, %d failed, %d skipped\n", name, r.passed, r.failed, r.skipped);
		total_pass += r.passed;
		total_fail += r.failed;
		total_skip += r.skipped;
	}
	printf("%d passed, %d failed, %d skipped\n", total_pass, total_fail, total_skip);
	return total_fail ? 1 : 0;
}
