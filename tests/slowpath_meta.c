// SPDX-License-Identifier: MIT
/* Slow path tests: the meta protocol's fixture table (also read by
 * tests/meta_vs_memcached.py) and its runner. */
#include "slowpath_test.h"

/* ---- the meta protocol (issue 7): fixture table -------------------------- */

/* Copy tpl to out, each "{c:KEY}" replaced by KEY's cas unique as the
 * accessor reads it now (0 when absent). */
static void expand(struct env *e, const char *tpl, char *out, size_t n)
{
	size_t o = 0;
	while (*tpl && o + 24 < n) {
		if (!strncmp(tpl, "{c:", 3)) {
			char key[64];
			const char *end = strchr(tpl, '}');
			size_t kl = (size_t)(end - tpl - 3);
			memcpy(key, tpl + 3, kl);
			key[kl] = 0;
			o += (size_t)snprintf(out + o, n - o, "%llu", (unsigned long long)cas_of(e, key));
			tpl = end + 1;
		} else {
			out[o++] = *tpl++;
		}
	}
	out[o] = 0;
}

/* A request and the exact reply memcached 1.6 gives (doc/protocol.txt,
 * proto_text.c, shared/memcached-tcp-facts.md), run in order on every
 * layout.  {c:KEY} in the request: KEY's cas before it runs; in the reply:
 * after. */
struct meta_fixture {
	const char *req, *want;
};
static const struct meta_fixture meta_fixtures[] = {
	/* mg (v f t c k s O q, as before) */
	{ "set foo 5 0 3\r\nbar\r\n", "STORED\r\n" },
	{ "mg foo v f t c k s\r\n", "VA 3 f5 t-1 c{c:foo} kfoo s3\r\nbar\r\n" },
	{ "mg missing v\r\n", "EN\r\n" },
	{ "mg missing v q\r\nmn\r\n", "MN\r\n" },
	{ "mg foo v q O123\r\nmn\r\n", "VA 3 O123\r\nbar\r\nMN\r\n" },
	{ "mg foo\r\n", "HD\r\n" },
	{ "mg foo s k f\r\n", "HD s3 kfoo f5\r\n" },
	{ "mn\r\n", "MN\r\n" },
	{ "set ttl 0 100 1\r\nx\r\n", "STORED\r\n" },
	{ "mg ttl t v\r\n", "VA 1 t100\r\nx\r\n" },
	{ "set old 0 -1 1\r\nx\r\n", "STORED\r\n" },
	{ "mg old v\r\n", "EN\r\n" },
	{ "mg\r\n", "CLIENT_ERROR bad command line format\r\n" },
	{ "mg foo v x\r\n", "CLIENT_ERROR invalid flag\r\n" },
	{ "mg foo vf\r\n", "VA 3\r\nbar\r\n" }, /* a flag is its first byte */
	{ "mg foo v v\r\n", "CLIENT_ERROR duplicate flag\r\n" },
	{ "mg foo R30\r\n", "HD\r\n" }, /* no ttl: R never wins */
	{ "mg foo Rx\r\n", "CLIENT_ERROR bad token in command line format\r\n" },
	{ "mg foo R\r\n", "CLIENT_ERROR bad token in command line format\r\n" },
	{ "mg foo O123456789012345678901234567890123\r\n", "CLIENT_ERROR opaque token too long\r\n" },
	{ "mg a\tb v\r\n", "CLIENT_ERROR bad key\r\n" },
	/* mg T: new ttl, cas kept; N: a miss creates an empty item, W */
	{ "mg foo T50 t c\r\n", "HD t50 c{c:foo}\r\n" },
	{ "mg foo Tx\r\n", "CLIENT_ERROR bad token in command line format\r\n" },
	{ "mg nope T50 v\r\n", "EN\r\n" },
	{ "mg viv N30 v t\r\n", "VA 0 t30 W\r\n\r\n" },
	{ "mg viv N30 s\r\n", "HD s0 Z\r\n" }, /* the token went out: Z */
	{ "mg foo N30 v\r\n", "VA 3\r\nbar\r\n" },
	/* ms: set, flags, ttl, return flags, modes */
	{ "ms foo 3 T0 F5\r\nbaz\r\n", "HD\r\n" },
	{ "mg foo v f t\r\n", "VA 3 f5 t-1\r\nbaz\r\n" },
	{ "ms foo 2 MA\r\nzz\r\n", "HD\r\n" },
	{ "mg foo v\r\n", "VA 5\r\nbazzz\r\n" },
	{ "ms foo 1 MP O9 k\r\n<\r\n", "HD O9 kfoo\r\n" },
	{ "mg foo v\r\n", "VA 6\r\n<bazzz\r\n" },
	{ "ms foo 1 ME\r\nx\r\n", "NS\r\n" },
	{ "ms new 1 ME c\r\nx\r\n", "HD c{c:new}\r\n" },
	{ "ms gone 1 MR\r\nx\r\n", "NS\r\n" },
	{ "ms new 1 MR T100\r\ny\r\n", "HD\r\n" },
	{ "mg new v t\r\n", "VA 1 t100\r\ny\r\n" },
	{ "ms gone 1 MA\r\nx\r\n", "NS\r\n" },
	{ "ms viv2 1 MA N40\r\nx\r\n", "HD\r\n" },
	{ "mg viv2 v t\r\n", "VA 1 t40\r\nx\r\n" },
	/* N vivifies in append/prepend mode only: a set ignores its ttl */
	{ "ms nset 1 N-1\r\nx\r\nmg nset v\r\n", "HD\r\nVA 1\r\nx\r\n" },
	{ "ms nset 1 MR N-1 T0\r\ny\r\nmg nset v t\r\n", "HD\r\nVA 1 t-1\r\ny\r\n" },
	{ "ms foo 1 MS q\r\nq\r\nmn\r\n", "MN\r\n" },
	{ "ms foo 1 Mz\r\nq\r\n", "CLIENT_ERROR invalid mode for ms M token\r\n" },
	{ "ms foo 1 MSS\r\nq\r\n", "CLIENT_ERROR incorrect length for M token\r\n" },
	{ "ms foo 1 I\r\nq\r\n", "HD\r\n" }, /* I without C: a plain set */
	{ "ms foo 1 Fx\r\nq\r\n", "CLIENT_ERROR bad command line format\r\n" },
	/* ms C: compare and swap */
	{ "ms foo 1 C1\r\nz\r\n", "EX\r\n" },
	{ "ms foo 1 C{c:foo} c\r\nz\r\n", "HD c{c:foo}\r\n" },
	{ "mg foo v\r\n", "VA 1\r\nz\r\n" },
	{ "ms gone 1 C5 O1\r\nz\r\n", "NF O1\r\n" },
	{ "ms gone 1 C5 q\r\nz\r\nmn\r\n", "NF\r\nMN\r\n" },
	/* b: the key base64-encoded; k answers it encoded again, then b */
	{ "mg Zm9v b v k f\r\n", "VA 1 kZm9v b f0\r\nz\r\n" },
	{ "mg Zm9v v b\r\n", "VA 1\r\nz\r\n" },
	{ "mg Zm9v b\r\n", "HD\r\n" },
	{ "ms YmluMQ== 2 b k T0 c\r\nb1\r\n", "HD kYmluMQ== b c{c:bin1}\r\n" },
	{ "mg bin1 v\r\n", "VA 2\r\nb1\r\n" },
	{ "ma YmluMQ== b\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n" },
	{ "ma YmluMg== b N0 J7 v k\r\n", "VA 1 kYmluMg== b\r\n7\r\n" },
	{ "md YmluMQ== b q k\r\nmn\r\n", "MN\r\n" },
	{ "md YmluMQ== b k O1\r\n", "NF kYmluMQ== b O1\r\n" },
	{ "mg bin1 v\r\n", "EN\r\n" },
	{ "me Zm9v b\r\n", "ME Zm9v exp=-1 la=0 cas={c:foo} fetch=yes cls=0 size=1\r\n" },
	{ "me Zm9v x\r\n", "EN\r\n" }, /* me reads b alone as its third word */
	{ "mg Zm9v= b\r\n", "CLIENT_ERROR error decoding key\r\n" },
	{ "mg Zm$v b\r\n", "CLIENT_ERROR error decoding key\r\n" },
	{ "mg Z=9v b\r\n", "CLIENT_ERROR error decoding key\r\n" },
	{ "ms Zm9 1 b\r\nx\r\n", "CLIENT_ERROR error decoding key\r\n" },
	{ "md Zm9 b\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n" },
	{ "mg YQk= b v\r\n", "CLIENT_ERROR bad key\r\n" },
	{ "mg Zm9v b b\r\n", "CLIENT_ERROR duplicate flag\r\n" },
	/* a flag another meta command takes: each of the four accepts every
	 * letter of any of them and ignores those it has no use for; bad
	 * arguments are still errors (the last message stands, F's is the
	 * command's own), an unknown letter ends the reading */
	{ "ms oth 1 v t f s u R30 J5 D2 P L\r\nx\r\n", "HD\r\n" },
	{ "mg oth F5 C1 I MS J5 D2 P L s v\r\n", "VA 1 s1\r\nx\r\n" },
	{ "ma oth f s u R30 F5 I P L\r\n",
	  "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n" },
	{ "mg oth Fx\r\n", "CLIENT_ERROR bad command line format\r\n" },
	{ "mg oth Fx Tx\r\n", "CLIENT_ERROR bad token in command line format\r\n" },
	{ "mg oth Tx Fx\r\n", "CLIENT_ERROR bad token in command line format\r\n" },
	{ "mg oth Tx x\r\n", "CLIENT_ERROR invalid flag\r\n" },
	{ "ms oth 1 Oxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx Mx\r\nz\r\n", "CLIENT_ERROR invalid mode for ms M token\r\n" },
	{ "md oth Oxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n", "CLIENT_ERROR opaque token too long\r\n" },
	{ "md oth v t f s c u N30 R30 J5 D2 F5 MS P L\r\n", "HD\r\n" },
	{ "md oth Mx\r\n", "NF\r\n" },
	{ "mg oth v\r\n", "EN\r\n" },
	/* not served: E (explicit cas) */
	{ "mg foo E5\r\n", "CLIENT_ERROR invalid flag\r\n" },
	{ "ms foo 1 E5\r\nq\r\n", "CLIENT_ERROR invalid flag\r\n" },
	{ "md foo E5\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n" },
	{ "ma foo E5\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n" },
	/* h (read before this one), l (seconds since the last access): the
	 * state before the mg; u leaves it; every read marks it (get, gets,
	 * gat, touch, mg), ma and a write do not; a new item has none (set,
	 * append, an incr that grows), one that stays keeps it (md I, an incr
	 * that fits) */
	{ "set hk 0 100 3\r\nbar\r\n", "STORED\r\n" },
	{ "mg hk s t h\r\n", "HD s3 t100 h0\r\n" },
	{ "mg hk s t h l\r\n", "HD s3 t100 h1 l0\r\n" },
	{ "mg hk v h q\r\nmn\r\n", "VA 3 h1\r\nbar\r\nMN\r\n" },
	{ "mg hk h h\r\n", "CLIENT_ERROR duplicate flag\r\n" },
	{ "mg hmiss h l\r\n", "EN\r\n" },
	{ "set hu 0 0 1\r\nx\r\n", "STORED\r\n" },
	{ "mg hu u h\r\n", "HD h0\r\n" },
	{ "mg hu h l\r\n", "HD h0 l0\r\n" },
	{ "mg hu h\r\n", "HD h1\r\n" },
	{ "set hg 0 0 1\r\n1\r\n", "STORED\r\n" },
	{ "get hg\r\n", "VALUE hg 0 1\r\n1\r\nEND\r\n" },
	{ "mg hg h\r\n", "HD h1\r\n" },
	{ "incr hg 5\r\n", "6\r\n" },
	{ "mg hg h\r\n", "HD h1\r\n" },
	{ "incr hg 5\r\n", "11\r\n" },
	{ "mg hg h\r\n", "HD h0\r\n" },
	{ "set hm 0 0 1\r\n1\r\n", "STORED\r\n" },
	{ "ma hm\r\n", "HD\r\n" },
	{ "touch hm 100\r\n", "TOUCHED\r\n" },
	{ "mg hm h\r\n", "HD h1\r\n" },
	{ "append hm 0 0 1\r\n1\r\n", "STORED\r\n" },
	{ "mg hm h\r\n", "HD h0\r\n" },
	{ "gats 100 hm\r\n", "VALUE hm 0 2 {c:hm}\r\n21\r\nEND\r\n" },
	{ "md hm I\r\n", "HD\r\n" },
	{ "mg hm h\r\n", "HD h1 X W\r\n" },
	{ "mg hn N30 h\r\n", "HD h0 W\r\n" },
	{ "mg hn h\r\n", "HD h1 Z\r\n" },
	{ "set ht 0 0 1\r\n1\r\n", "STORED\r\n" },
	{ "mg ht T30 u h\r\n", "HD h0\r\n" },
	{ "mg ht T30 h\r\n", "HD h0\r\n" },
	{ "mg ht h\r\n", "HD h1\r\n" },
	{ "set he 0 0 1\r\n1\r\n", "STORED\r\n" },
	{ "me he\r\n", "ME he exp=-1 la=0 cas={c:he} fetch=no cls=0 size=1\r\n" },
	{ "mg he\r\n", "HD\r\n" },
	{ "me he\r\n", "ME he exp=-1 la=0 cas={c:he} fetch=yes cls=0 size=1\r\n" },
	/* ms framing */
	{ "ms foo 2\r\nabc\r\n", "CLIENT_ERROR bad data chunk\r\n" },
	{ "ms foo x\r\nab\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n" },
	{ "ms foo\r\n", "CLIENT_ERROR bad command line format\r\n" },
	{ "ms big9 99999\r\nab\r\n", "SERVER_ERROR object too large for cache\r\n" },
	/* md */
	{ "md foo C1\r\n", "EX\r\n" },
	{ "md foo q\r\nmn\r\n", "MN\r\n" },
	{ "md foo\r\n", "NF\r\n" },
	{ "md foo q\r\nmn\r\n", "NF\r\nMN\r\n" }, /* memcached 1.6.18: q hides HD only */
	{ "md new O7 k C{c:new}\r\n", "HD O7 knew\r\n" },
	{ "md new\r\n", "NF\r\n" },
	{ "md foo x\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n" },
	/* ma */
	{ "ms cnt 1\r\n5\r\nma cnt D10 v\r\n", "HD\r\nVA 2\r\n15\r\n" },
	{ "ma cnt\r\n", "HD\r\n" },
	{ "ma cnt MD D20 v\r\n", "VA 1\r\n0\r\n" },
	{ "ma cnt M- v t c\r\n", "VA 1 t-1 c{c:cnt}\r\n0\r\n" },
	{ "ma cnt q\r\nmn\r\n", "MN\r\n" },
	{ "mg cnt v\r\n", "VA 2\r\n1 \r\n" }, /* decr in place: padded (memcached) */
	{ "ma none\r\n", "NF\r\n" },
	{ "ma none O5 k\r\n", "NF O5 knone\r\n" },
	{ "ma none N0 J42 v\r\n", "VA 2\r\n42\r\n" },
	{ "ma none N0 J42 v\r\n", "VA 2\r\n43\r\n" },
	{ "ma cnt C1\r\n", "EX\r\n" },
	{ "ma cnt C{c:cnt} v\r\n", "VA 1\r\n2\r\n" },
	{ "ma cnt T100 t\r\n", "HD t100\r\n" },
	{ "ma viv2\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n" },
	{ "ma cnt Dx\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n" },
	{ "ma cnt MX\r\n", "CLIENT_ERROR invalid mode for ma M token\r\n" },
	/* me */
	{ "set dbg 0 0 2\r\nhi\r\n", "STORED\r\n" },
	{ "me dbg\r\n", "ME dbg exp=-1 la=0 cas={c:dbg} fetch=no cls=0 size=2\r\n" },
	{ "me nokey\r\n", "EN\r\n" },
	{ "me\r\n", "CLIENT_ERROR bad command line format\r\n" },
	/* quiet mode across a pipeline: only what is not nominal, then MN */
	{ "ms p 1 q\r\n1\r\nmg p v q\r\nmg px v q\r\nmd px q\r\nma p q\r\nmg p v q\r\nmn\r\n",
	  "VA 1\r\n1\r\nNF\r\nVA 1\r\n2\r\nMN\r\n" },
	/* invalidation and the win token (memcached 1.6.18's replies): md I
	 * keeps the item, stale, with a new cas; the first mg wins (W), the
	 * next see Z; classic get still answers it */
	{ "set st 3 100 2\r\nhi\r\n", "STORED\r\n" },
	{ "md st I T30 q\r\nmn\r\n", "MN\r\n" },
	{ "get st\r\n", "VALUE st 3 2\r\nhi\r\nEND\r\n" },
	{ "mg st v t f c\r\n", "VA 2 t30 f3 c{c:st} X W\r\nhi\r\n" },
	{ "mg st v c\r\n", "VA 2 c{c:st} Z X\r\nhi\r\n" },
	{ "mg st q k O1\r\n", "HD kst O1 Z X\r\n" },
	{ "md st I C1\r\n", "EX\r\n" },
	{ "md gone I\r\n", "NF\r\n" },
	{ "md gone I q\r\nmn\r\n", "NF\r\nMN\r\n" },
	{ "md st I T0\r\nmg st t s\r\n", "HD\r\nHD t-1 s2 X W\r\n" },
	/* touch and incr keep the state; append makes a new item, and so does
	 * an incr whose number outgrows the value (memcached 1.6.18: a new
	 * item, then not stale; checked against it) */
	{ "touch st 50\r\nmg st t\r\n", "TOUCHED\r\nHD t50 Z X\r\n" },
	{ "set num 0 0 2\r\n10\r\nmd num I\r\nincr num 1\r\nmg num v\r\n",
	  "STORED\r\nHD\r\n11\r\nVA 2 X W\r\n11\r\n" },
	{ "md num I\r\nma num v\r\nmg num s\r\n", "HD\r\nVA 2\r\n12\r\nHD s2 X W\r\n" },
	{ "set grow 0 0 1\r\n5\r\nmd grow I\r\nincr grow 100\r\nmg grow v\r\n",
	  "STORED\r\nHD\r\n105\r\nVA 3\r\n105\r\n" },
	{ "md grow I\r\ndecr grow 95\r\nmg grow v\r\n", "HD\r\n10\r\nVA 3 X W\r\n10 \r\n" },
	{ "md num I\r\nappend num 0 0 1\r\nx\r\nmg num v\r\n", "HD\r\nSTORED\r\nVA 3\r\n12x\r\n" },
	/* ms I: a cas older than the item's stores anyway, stale, the item's
	 * ttl and token kept (set and replace modes; append answers EX); a
	 * newer one is EX; without C, I does nothing */
	{ "ms st 1 I C1 T99 F7\r\nz\r\nmg st v t f\r\n", "HD\r\nVA 1 t50 f7 Z X\r\nz\r\n" },
	{ "ms st 1 I C{c:st}0\r\ny\r\n", "EX\r\n" },
	{ "ms st 1 I C1 MR\r\ny\r\nmg st v\r\n", "HD\r\nVA 1 Z X\r\ny\r\n" },
	{ "ms st 1 I C1 MA\r\nw\r\n", "EX\r\n" },
	{ "ms st 1 I\r\nw\r\nmg st v\r\n", "HD\r\nVA 1\r\nw\r\n" },
	{ "set fresh 0 0 1\r\na\r\nms fresh 1 I C1\r\nb\r\nmg fresh v\r\nmg fresh v\r\n",
	  "STORED\r\nHD\r\nVA 1 X W\r\nb\r\nVA 1 Z X\r\nb\r\n" },
	{ "set plain 0 0 1\r\na\r\nmd fresh I\r\nset fresh 0 0 1\r\nc\r\nmg fresh v\r\n",
	  "STORED\r\nHD\r\nSTORED\r\nVA 1\r\nc\r\n" },
	/* R: less ttl left than R wins the token, once */
	{ "set r 0 100 1\r\na\r\nmg r R30 s\r\nmg r R200 s\r\nmg r R200 s\r\n",
	  "STORED\r\nHD s1\r\nHD s1 W\r\nHD s1 Z\r\n" },
	{ "mg nn N30 R10\r\nmg nn v\r\nmd nn I\r\nmg nn v\r\n",
	  "HD W\r\nVA 0 Z\r\n\r\nHD\r\nVA 0 X W\r\n\r\n" },
};

void t_meta(struct env *e)
{
	char req[512], want[512];

	flush_store(e);
	for (size_t i = 0; i < sizeof(meta_fixtures) / sizeof(meta_fixtures[0]); i++) {
		expand(e, meta_fixtures[i].req, req, sizeof(req));
		struct xkv_buf out = {};
		struct xkv_udp_hdr h;
		__u8 d[600];
		size_t dl = mkdgram(d, REQ_ID, 0, 1, req, strlen(req));
		xkv_slow_handle(e->sl, e->src, d, dl, &h, &out, &e->delta);
		expand(e, meta_fixtures[i].want, want, sizeof(want));
		bool ok = out.len == strlen(want) && !memcmp(out.p, want, out.len);
		report(ok, "%s: meta fixture %zu", e->layout, i);
		if (!ok) {
			print_escaped("request", (const __u8 *)req, strlen(req), 300);
			show_diff(out.p, out.len, (const __u8 *)want, strlen(want));
		}
		xkv_buf_free(&out);
	}
}
