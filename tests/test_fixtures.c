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
/* This file: the default policy's table (data) and main; the tables of the
 * load-time settings that change the rules are in fixtures_settings.c. */
#include "fixtures_test.h"
#include "layout_skip.h"

/* ---- the table ------------------------------------------------------------------ */

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

/* a key over 250 after a valid one: memcached reads (gat: touches) the
 * first, then answers the format error: the slow path's */
static void gen_get_late251(struct pb *b, int64_t now)
{
	gen_long_key(b, 251, "get k ", " k\r\n");
}

static void gen_gat_late251(struct pb *b, int64_t now)
{
	gen_long_key(b, 251, "gat 0 k ", "\r\n");
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
void mod_seq1(struct pb *b) { b->seq = 1; b->total = 2; }
void mod_total2(struct pb *b) { b->total = 2; }
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
void mod_csum0(struct pb *b) { pb_udp_csum(b, PB_CSUM_ZERO); }

/* ---- who is who: the policy every table runs under ----
 * pktbuild's default frame goes from the client 10.0.0.1 / fd00::1 to this
 * host 10.0.0.2 / fd00::2 at MAC 02:00:00:00:00:02.  The client's subnet may
 * read, write and is trusted; the reader's may only read, and its replies
 * are capped; the stranger may do nothing. */
const char *const host_addrs[] = { "10.0.0.2", "fd00::2", NULL };
const char *const allow_nets[] = { "10.0.0.0/24", "fd00::/64", "10.0.1.0/24",
					  "fd00:0:0:1::/64", NULL };
const char *const write_nets[] = { "10.0.0.0/24", "fd00::/64", NULL };
const char *const trust_nets[] = { "10.0.0.0/24", "fd00::/64", NULL };

void from_reader(struct pb *b) { pb_src(b, "10.0.1.1", "fd00:0:0:1::1"); }
/* a reader with an open TCP connection to the slow path (tcp_peers) */
const char *const tcp_peer_addrs[] = { "10.0.1.7", "fd00:0:0:1::7", NULL };
void from_tcp_peer(struct pb *b) { pb_src(b, "10.0.1.7", "fd00:0:0:1::7"); }
void from_stranger(struct pb *b) { pb_src(b, "192.0.2.1", "2001:db8::1"); }
void from_neighbour(struct pb *b) { pb_src(b, "10.0.0.9", "fd00::9"); } /* client's /24 */
void to_other_mac(struct pb *b) { memcpy(b->eth_dst, (__u8[6]){ 2, 0, 0, 0, 0, 3 }, 6); }
static void to_broadcast(struct pb *b) { memset(b->eth_dst, 0xff, 6); }
static void to_multicast(struct pb *b)
{
	static const __u8 m4[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb };
	static const __u8 m6[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0xfb };
	memcpy(b->eth_dst, b->l3 == PB_L3_IPV4 ? m4 : m6, 6);
	pb_dst(b, "224.0.0.251", "ff02::fb");
}
static void to_multicast_ip(struct pb *b) { pb_dst(b, "224.0.0.251", "ff02::fb"); }
void to_other_ip(struct pb *b) { pb_dst(b, "10.0.0.3", "fd00::3"); }
/* equal to this host's address but in one 32-bit word (the first, for IPv6) */
static void to_near_ip(struct pb *b) { pb_dst(b, "10.0.1.2", "fd01::2"); }
static void from_multicast(struct pb *b) { pb_src(b, "224.0.0.1", "ff02::1"); }
static void from_broadcast(struct pb *b) { pb_src(b, "255.255.255.255", "ff05::1"); }
static void from_loopback(struct pb *b) { pb_src(b, "127.0.0.1", "::1"); }
static void from_unspecified(struct pb *b) { pb_src(b, "0.0.0.0", "::"); }
static void from_mapped(struct pb *b) { pb_src(b, "10.0.0.1", "::ffff:10.0.0.1"); }
void sport0(struct pb *b) { b->sport = 0; }
void sport_service(struct pb *b) { b->sport = XKV_DEFAULT_PORT; }
void sport1(struct pb *b) { b->sport = 1; }
void sport53(struct pb *b) { b->sport = 53; }
static void sport1023(struct pb *b) { b->sport = 1023; }
static void sport1024(struct pb *b) { b->sport = 1024; }
void ip_csum_bad(struct pb *b) { pb_ip_csum(b, 0xbad); }
void udp_csum_bad(struct pb *b) { pb_udp_csum(b, PB_CSUM_BAD); }
void udp_csum_partial(struct pb *b) { pb_udp_csum(b, PB_CSUM_PARTIAL); }
void stranger_bad_csum(struct pb *b) { from_stranger(b); udp_csum_bad(b); }
void reader_sport53(struct pb *b) { from_reader(b); sport53(b); }
/* congestion experienced, DSCP EF, a short TTL: none of it goes back */
static void mod_ecn(struct pb *b)
{
	b->tos = 0xbb;
	b->v6_flow = 0x6bb12345;
	b->ttl = 3;
	b->hop_limit = 3;
}

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
	  { ST("gets\r\n", TX, XKV_R_ERROR), ST("gat 10\r\n", PASS, NULL),
	    ST("gat x k\r\n", TX, XKV_R_EXPTIME), ST("gats 1x k\r\n", TX, XKV_R_EXPTIME),
	    ST("touch k\r\n", TX, XKV_R_ERROR), ST("touch k 1 2 3\r\n", TX, XKV_R_ERROR),
	    ST("touch k abc\r\n", TX, XKV_R_EXPTIME), ST("verbosity\r\n", TX, XKV_R_ERROR) },
	  NULL, NULL, 1 },
	{ "bad issue-7 storage lines are answered here", BOTH, { K },
	  { ST("cas k 0 0 1\r\n", TX, XKV_R_ERROR), ST("cas k 0 0 1 x\r\n", TX, XKV_R_FORMAT),
	    ST("cas k 0 0 1 -1\r\nx\r\n", PASS, NULL),
	    ST("append k 0 0 2\r\nabc\r\n", TX, XKV_R_DATA), ST("prepend k x 0 1\r\n", TX, XKV_R_FORMAT),
	    ST("verbosity noreply\r\n", PASS, NULL), ST("gets a\tb\r\n", TX, XKV_R_KEY_BAD) },
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
	{ "set missing a field", BOTH, { K }, { ST("set k 0 0\r\n", TX, XKV_R_ERROR) },
	  NULL, NULL, 1 },
	{ "set extra field", BOTH, { K }, { ST("set k 0 0 1 x y\r\n", TX, XKV_R_ERROR) },
	  NULL, NULL, 1 },
	{ "set 25 tokens", BOTH, { K }, { ST(NULL, PASS, NULL) }, gen_set25, NULL, 1 },
	{ "set flags not numeric", BOTH, { K }, { ST("set k x 0 1\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "set flags negative", BOTH, { K }, { ST("set k -1 0 1\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "set flags overflow", BOTH, { K },
	  { ST("set k 18446744073709551616 0 1\r\n", TX, XKV_R_FORMAT) }, NULL, NULL, 1 },
	{ "set exptime not numeric", BOTH, { K }, { ST("set k 0 1x 1\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "set exptime lone minus", BOTH, { K }, { ST("set k 0 - 1\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "set exptime overflow", BOTH, { K },
	  { ST("set k 0 9223372036854775808 1\r\n", TX, XKV_R_FORMAT) }, NULL, NULL, 1 },
	{ "set bytes overflow", BOTH, { K },
	  { ST("set k 0 0 4294967300\r\n", TX, XKV_R_FORMAT) }, NULL, NULL, 1 },
	{ "set bytes negative", BOTH, { K }, { ST("set k 0 0 -1\r\n", TX, XKV_R_FORMAT) },
	  NULL, NULL, 1 },
	{ "delete with a time: memcached's usage line", BOTH, { K }, { ST("delete k 10\r\n", TX, XKV_R_DEL_USAGE) },
	  NULL, NULL, 1 },
	{ "delete without key: ERROR", BOTH, { K }, { ST("delete\r\n", TX, XKV_R_ERROR) }, NULL, NULL, 1 },
	{ "delete with five words: ERROR", BOTH, { K }, { ST("delete k 0 0 0\r\n", TX, XKV_R_ERROR) },
	  NULL, NULL, 1 },
	{ "delete k 0 0: the usage line", BOTH, { K }, { ST("delete k 0 0\r\n", TX, XKV_R_DEL_USAGE) },
	  NULL, NULL, 1 },
	{ "incr without value", BOTH, { K }, { ST("incr k\r\n", TX, XKV_R_ERROR) }, NULL, NULL, 1 },
	{ "incr value not numeric", BOTH, { K }, { ST("incr k abc\r\n", TX, XKV_R_DELTA) },
	  NULL, NULL, 1 },
	{ "version with argument", BOTH, { K }, { ST("version x\r\n", PASS, NULL) },
	  NULL, NULL, 1 },
	{ "flush_all not numeric", BOTH, { K }, { ST("flush_all x\r\n", TX, XKV_R_EXPTIME) },
	  NULL, NULL, 1 },
	{ "get key over key_cap (not 250): the slow path's miss", BOTH, { K }, { ST(NULL, PASS, NULL) }, gen_get_key33,
	  NULL, 1 },
	{ "get key over 250: memcached's format error", BOTH, { K }, { ST(NULL, TX, XKV_R_FORMAT) }, gen_get_key251,
	  NULL, 1 },
	{ "get with a key over 250 after a valid one: the slow path's", BOTH, { K }, { ST(NULL, PASS, NULL) },
	  gen_get_late251, NULL, 1 },
	{ "gat with a key over 250 after a valid one: the slow path's", BOTH, { K }, { ST(NULL, PASS, NULL) },
	  gen_gat_late251, NULL, 1 },
	{ "set key over key_cap: the slow path refuses it", BOTH, { K }, { ST(NULL, PASS, NULL) }, gen_set_key33,
	  NULL, 1 },
	{ "delete key over key_cap: the slow path's NOT_FOUND", BOTH, { K }, { ST(NULL, PASS, NULL) }, gen_del_key33,
	  NULL, 1 },
	{ "get key with control byte", BOTH, { K }, { ST(NULL, TX, XKV_R_KEY_BAD) }, gen_bytes_ctl,
	  NULL, 1 },
	{ "get key with \\r", BOTH, { K }, { ST("get k\rx\r\n", TX, XKV_R_KEY_BAD) }, NULL, NULL, 1 },
	{ "set key with DEL", BOTH, { K }, { ST("set k\x7f 0 0 1\r\n", TX, XKV_R_KEY_BAD) },
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
	  { SM("set k 0 0\r\n", from_reader, TX, XKV_R_ERROR) }, NULL, NULL, 1 },
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
	{ "reply of shutdown", BOTH, { K },
	  { SX("ERROR: shutdown not enabled\r\n", NULL, DROP, NULL, drop_reply) }, NULL, NULL, 1 },
	{ "reply BADCLASS", BOTH, { K },
	  { SX("BADCLASS invalid class id\r\n", NULL, DROP, NULL, drop_reply) }, NULL, NULL, 1 },
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

const struct table tables[] = {
	{ "", 0, MAX_AMP, 0, 0, ROWS(fixtures) },
	{ "addresses in local_addrs", 0, MAX_AMP, 0, 0, ROWS(fixtures), 1 },
};

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
		if (layout_unavailable(name)) {
			if (only)
				return XKV_TEST_SKIPPED;
			continue;
		}
		memset(&r, 0, sizeof(r));
		r.verbose = verbose;
		for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
			run_table(&r, name, &tables[t]);
		for (int t = 0; t < n_setting_tables; t++)
			run_table(&r, name, &setting_tables[t]);
		for (int t = 0; t < n_bin_tables; t++)
			run_table(&r, name, &bin_tables[t]);
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
