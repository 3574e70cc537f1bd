// SPDX-License-Identifier: MIT
/* Packet fixtures: a table per load-time setting that changes the rules
 * (one load of the program each, after the default policy's tables in
 * test_fixtures.c): --allow-low-ports, CHECKSUM_PARTIAL, --strict,
 * --max-amplification 1, snapshot --pause-writes, the rate limit,
 * unguarded.  The frame modifiers are test_fixtures.c's (who is who). */
#include "fixtures_test.h"

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

const struct table setting_tables[] = {
	{ "writes paused", 0, MAX_AMP, 0, 0, ROWS(paused_rows), 0, 1 },
	{ "low ports", XKV_CFG_LOW_PORTS, MAX_AMP, 0, 0, ROWS(low_ports_rows) },
	{ "csum partial", XKV_CFG_CSUM_PARTIAL, MAX_AMP, 0, 0, ROWS(csum_partial_rows) },
	{ "strict", XKV_CFG_STRICT, MAX_AMP, 0, 0, ROWS(strict_rows) },
	{ "max amp 1", 0, 1, 0, 0, ROWS(amp1_rows) },
	{ "rate 2/s burst 3", 0, MAX_AMP, 2, 3, ROWS(rate_rows) },
	{ "unguarded", XKV_CFG_UNGUARDED, MAX_AMP, 0, 0, ROWS(unguarded_rows) },
};
const int n_setting_tables = (int)(sizeof(setting_tables) / sizeof(setting_tables[0]));
