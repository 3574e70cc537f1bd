// SPDX-License-Identifier: MIT
/* Packet fixtures: memcached's binary protocol.  One get, getq, getk or
 * getkq frame alone in a datagram is answered by the XDP program, byte for
 * byte as the slow path answers it (send_frame runs every such request
 * through the slow path too, and fills in a hit's cas from the store); the
 * rest is the slow path's.  Tables: the default policy; --max-amplification
 * 1 (a binary response over the cap is dropped, never cut to a text line);
 * writes paused (reads are served); --binary-keys (the key bytes the store
 * takes then). */
#include "fixtures_test.h"

/* Binary requests and responses (memcached's protocol_binary.h), as bytes:
 * BQ(op, kl, key) a request of opcode op with key length kl (one byte
 * each, as "\x0c"), no extras, the body just the key, opaque a1b2c3d4, cas
 * 0; BR(op, status, kl, el, bl) a response's header, opcode, status (low
 * byte), key, extras and body length, the opaque echoed, cas 0 (a hit's is
 * the item's: the harness puts in the one the store holds), its body after
 * it.  SB(request, act, response), SBM with a step modifier, SBX without
 * a response (the model's), with the counter it moves. */
#define BQ(op, kl, key) "\x80" op "\x00" kl "\x00\x00\x00\x00" "\x00\x00\x00" kl "\xa1\xb2\xc3\xd4" \
	"\0\0\0\0\0\0\0\0" key
#define BR(op, st, kl, el, bl) "\x81" op "\x00" kl el "\x00" "\x00" st "\x00\x00\x00" bl \
	"\xa1\xb2\xc3\xd4" "\0\0\0\0\0\0\0\0"
#define SB(q, a, r) { q, a, r, NULL, 0, 0, sizeof(q) - 1, sizeof(r) - 1 }
#define SBM(q, mod, a, r) { q, a, r, mod, 0, 0, sizeof(q) - 1, sizeof(r) - 1 }
#define SBX(q, mod, a, c) { q, a, NULL, mod, W(c), 0, sizeof(q) - 1, 0 }
#define B_FOO_FLAGS "\x00\x00\x00\x05"
#define Q33 "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq" /* KEY_CAP + 1 */

static const struct fixture bin_rows[] = {
	{ "binary get hit", BOTH, { S("foo", 5, 0, "bar") },
	  { SB(BQ("\x00", "\x03", "foo"), TX, BR("\x00", "\x00", "\x00", "\x04", "\x07") B_FOO_FLAGS "bar") } },
	{ "binary getk hit", BOTH, { S("foo", 5, 0, "bar") },
	  { SB(BQ("\x0c", "\x03", "foo"), TX,
	       BR("\x0c", "\x00", "\x03", "\x04", "\x0a") B_FOO_FLAGS "foo" "bar") } },
	{ "binary getq hit", BOTH, { S("foo", 5, 0, "bar") },
	  { SB(BQ("\x09", "\x03", "foo"), TX, BR("\x09", "\x00", "\x00", "\x04", "\x07") B_FOO_FLAGS "bar") } },
	{ "binary getkq hit", BOTH, { S("foo", 5, 0, "bar") },
	  { SB(BQ("\x0d", "\x03", "foo"), TX,
	       BR("\x0d", "\x00", "\x03", "\x04", "\x0a") B_FOO_FLAGS "foo" "bar") } },
	{ "binary get, getk miss", BOTH, { K },
	  { SB(BQ("\x00", "\x02", "no"), TX, BR("\x00", "\x01", "\x00", "\x00", "\x09") "Not found"),
	    SB(BQ("\x0c", "\x02", "no"), TX, BR("\x0c", "\x01", "\x02", "\x00", "\x02") "no") } },
	{ "binary getq, getkq miss: nothing", BOTH, { K },
	  { SBX(BQ("\x09", "\x02", "no"), NULL, DROP, noreply),
	    SBX(BQ("\x0d", "\x02", "no"), NULL, DROP, noreply) } },
	{ "binary get of an empty value", BOTH, { S("e", 0, 0, "") },
	  { SB(BQ("\x00", "\x01", "e"), TX, BR("\x00", "\x00", "\x00", "\x04", "\x04") "\0\0\0\0") } },
	{ "text set, then binary get and getk: flags and cas", BOTH, {},
	  { ST("set k 4294967295 0 3\r\nabc\r\n", TX, XKV_R_STORED),
	    SB(BQ("\x00", "\x01", "k"), TX, BR("\x00", "\x00", "\x00", "\x04", "\x07") "\xff\xff\xff\xff" "abc"),
	    SB(BQ("\x0c", "\x01", "k"), TX,
	       BR("\x0c", "\x00", "\x01", "\x04", "\x08") "\xff\xff\xff\xff" "k" "abc"),
	    ST("delete k\r\n", TX, XKV_R_DELETED),
	    SB(BQ("\x00", "\x01", "k"), TX, BR("\x00", "\x01", "\x00", "\x00", "\x09") "Not found") } },
	{ "binary get of an expired item misses", BOTH, { S("k", 0, -1, "x") },
	  { SB(BQ("\x00", "\x01", "k"), TX, BR("\x00", "\x01", "\x00", "\x00", "\x09") "Not found"),
	    SBX(BQ("\x0d", "\x01", "k"), NULL, DROP, get_expired) } },
	{ "binary key of key_cap bytes", BOTH, {},
	  { SB(BQ("\x0c", "\x20", "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq"), TX,
	       BR("\x0c", "\x01", "\x20", "\x00", "\x20") "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq") } },
	{ "binary key with a space, a control byte, DEL: the store refuses them", BOTH, { K },
	  { SBX(BQ("\x00", "\x03", "a b"), NULL, PASS, pass_cmd),
	    SBX(BQ("\x0c", "\x02", "a\n"), NULL, PASS, pass_cmd),
	    SBX(BQ("\x00", "\x09", "abcdefgh\x01"), NULL, PASS, pass_cmd),
	    SBX(BQ("\x0d", "\x01", "\x7f"), NULL, PASS, pass_cmd) }, NULL, NULL, 1 },
	{ "binary key of bytes above DEL", BOTH, {},
	  { SB(BQ("\x0c", "\x02", "\xc3\xa9"), TX, BR("\x0c", "\x01", "\x02", "\x00", "\x02") "\xc3\xa9") } },
	{ "binary: two frames in one datagram", BOTH, { K },
	  { SBX(BQ("\x00", "\x01", "k") BQ("\x00", "\x01", "k"), NULL, PASS, pass_cmd) }, NULL, NULL, 1 },
	{ "binary: a frame and junk after it", BOTH, { K },
	  { SBX(BQ("\x00", "\x01", "k") "x", NULL, PASS, pass_cmd) }, NULL, NULL, 1 },
	{ "binary: a frame cut short", BOTH, { K },
	  { SBX("\x80\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\xa1\xb2\xc3\xd4\0\0\0\0\0\0\0\0",
		NULL, PASS, pass_cmd) }, NULL, NULL, 1 },
	{ "binary: a header cut short", BOTH, { K },
	  { SBX("\x80\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01", NULL, PASS, pass_cmd) },
	  NULL, NULL, 1 },
	{ "binary get with extras (4 bytes)", BOTH, { K },
	  { SBX("\x80\x00\x00\x01\x04\x00\x00\x00\x00\x00\x00\x05\xa1\xb2\xc3\xd4\0\0\0\0\0\0\0\0"
		"\0\0\0\0" "k", NULL, PASS, pass_cmd) }, NULL, NULL, 1 },
	{ "binary get with a value", BOTH, { K },
	  { SBX("\x80\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\xa1\xb2\xc3\xd4\0\0\0\0\0\0\0\0"
		"kv", NULL, PASS, pass_cmd) }, NULL, NULL, 1 },
	{ "binary get with a data type, with a cas", BOTH, { K },
	  { SBX("\x80\x00\x00\x01\x00\x01\x00\x00\x00\x00\x00\x01\xa1\xb2\xc3\xd4\0\0\0\0\0\0\0\0"
		"k", NULL, PASS, pass_cmd),
	    SBX("\x80\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\xa1\xb2\xc3\xd4\0\0\0\0\0\0\0\1"
		"k", NULL, PASS, pass_cmd) }, NULL, NULL, 1 },
	{ "binary get without a key", BOTH, { K },
	  { SBX("\x80\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xa1\xb2\xc3\xd4\0\0\0\0\0\0\0\0",
		NULL, PASS, pass_cmd) }, NULL, NULL, 1 },
	{ "binary key over key_cap", BOTH, { K },
	  { SBX(BQ("\x00", "\x21", Q33), NULL, PASS, pass_cmd) }, NULL, NULL, 1 },
	{ "binary key with a NUL", BOTH, { K },
	  { SBX(BQ("\x00", "\x03", "k\0x"), NULL, PASS, pass_cmd),
	    SBX(BQ("\x0c", "\x02", "k\0"), NULL, PASS, pass_cmd) }, NULL, NULL, 1 },
	{ "binary set, delete, noop, gat, stat: the slow path's", BOTH, { K },
	  { SBX("\x80\x01\x00\x01\x08\x00\x00\x00\x00\x00\x00\x0a\xa1\xb2\xc3\xd4\0\0\0\0\0\0\0\0"
		"\0\0\0\0\0\0\0\0" "k" "x", NULL, PASS, pass_cmd),
	    SBX(BQ("\x04", "\x01", "k"), NULL, PASS, pass_cmd),
	    SBX("\x80\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xa1\xb2\xc3\xd4\0\0\0\0\0\0\0\0",
		NULL, PASS, pass_cmd),
	    SBX("\x80\x1d\x00\x01\x04\x00\x00\x00\x00\x00\x00\x05\xa1\xb2\xc3\xd4\0\0\0\0\0\0\0\0"
		"\0\0\0\0" "k", NULL, PASS, pass_cmd),
	    SBX(BQ("\x10", "\x00", ""), NULL, PASS, pass_cmd) }, NULL, NULL, 1 },
	{ "binary get from a reader", BOTH, { S("foo", 5, 0, "bar") },
	  { SBM(BQ("\x00", "\x03", "foo"), from_reader, TX,
		BR("\x00", "\x00", "\x00", "\x04", "\x07") B_FOO_FLAGS "bar") } },
	{ "binary get from outside the allow list", BOTH, { K },
	  { SBX(BQ("\x00", "\x01", "k"), from_stranger, DROP, drop_acl) }, NULL, NULL, 1 },
	{ "binary get with a bad UDP checksum", BOTH, { K },
	  { SBX(BQ("\x00", "\x01", "k"), udp_csum_bad, PASS, pass_csum) }, NULL, NULL, 1 },
	{ "binary get, frame total 2", BOTH, { K },
	  { SBX(BQ("\x00", "\x01", "k"), mod_total2, DROP, drop_frame) }, NULL, NULL, 1 },
	/* the slow path sends nothing over the cap either: a text line would
	 * break a binary client */
	{ "binary hit over max_amp to an untrusted source: nothing", BOTH, { SBIG("big", 500) },
	  { SBX(BQ("\x00", "\x03", "big"), from_reader, DROP, drop_amp) } },
	{ "binary hit of a large value to a trusted source", BOTH, { SBIG("big", 500) },
	  { SBX(BQ("\x00", "\x03", "big"), NULL, TX, replies) } },
};

static const struct fixture bin_amp1_rows[] = {
	{ "binary get miss longer than the request, to an untrusted source: nothing", BOTH, { K },
	  { SBX(BQ("\x00", "\x01", "n"), from_reader, DROP, drop_amp) }, NULL, NULL, 1 },
	{ "binary getk miss of the request's size, to an untrusted source", BOTH, { K },
	  { SBM(BQ("\x0c", "\x01", "n"), from_reader, TX, BR("\x0c", "\x01", "\x01", "\x00", "\x01") "n") } },
};

/* --binary-keys: control bytes too (not NUL, space, CR, LF) */
static const struct fixture bin_keys_rows[] = {
	{ "binary key with control bytes and DEL", BOTH, {},
	  { SB(BQ("\x0c", "\x04", "a\x01\t\x7f"), TX,
	       BR("\x0c", "\x01", "\x04", "\x00", "\x04") "a\x01\t\x7f"),
	    ST("set \x01\x02k 3 0 1\r\nx\r\n", TX, XKV_R_STORED),
	    SB(BQ("\x0c", "\x03", "\x01\x02k"), TX,
	       BR("\x0c", "\x00", "\x03", "\x04", "\x08") "\x00\x00\x00\x03" "\x01\x02k" "x") } },
	{ "binary key with a NUL, a space, CR, LF still: the store refuses them", BOTH, {},
	  { SBX(BQ("\x00", "\x03", "k\0x"), NULL, PASS, pass_cmd),
	    SBX(BQ("\x0c", "\x0a", "abcdefgh k"), NULL, PASS, pass_cmd),
	    SBX(BQ("\x00", "\x02", "k\r"), NULL, PASS, pass_cmd),
	    SBX(BQ("\x0d", "\x01", "\n"), NULL, PASS, pass_cmd) } },
};

/* snapshot --pause-writes holds writes, not reads */
static const struct fixture bin_paused_rows[] = {
	{ "binary get served", BOTH, { K },
	  { SB(BQ("\x00", "\x01", "k"), TX, BR("\x00", "\x00", "\x00", "\x04", "\x08") "\x00\x00\x00\x07" "orig") } },
};

const struct table bin_tables[] = {
	{ "binary", 0, MAX_AMP, 0, 0, ROWS(bin_rows) },
	{ "binary, max amp 1", 0, 1, 0, 0, ROWS(bin_amp1_rows) },
	{ "binary, writes paused", 0, MAX_AMP, 0, 0, ROWS(bin_paused_rows), 0, 1 },
	{ "binary, --binary-keys", XKV_CFG_BINARY_KEYS, MAX_AMP, 0, 0, ROWS(bin_keys_rows) },
};
const int n_bin_tables = (int)(sizeof(bin_tables) / sizeof(bin_tables[0]));
