// SPDX-License-Identifier: MIT
/* Slow path tests: requests memcached 1.6.18's parser tells apart that the
 * differential tester's old generator never sent, each answered as that
 * memcached answered it (observed with /usr/bin/memcached over TCP and UDP;
 * docs/protocol.md, "Checked against memcached itself").  Every row runs
 * through the UDP entry (one datagram) and the stream entry (TCP). */
#include "slowpath_test.h"

/* The same text over UDP and TCP; closes: the connection ends after it. */
static void row(struct env *e, const char *what, const char *req, const char *want, int closes)
{
	char name[160];
	clear(e);
	snprintf(name, sizeof(name), "%s (UDP)", what);
	expect_n(e, name, req, strlen(req), want, strlen(want));
	clear(e);
	snprintf(name, sizeof(name), "%s (TCP)", what);
	expect(e, name, req, want, closes);
}

#define FMT "CLIENT_ERROR bad command line format\r\n"

static void rows_storage(struct env *e)
{
	/* the word counts memcached takes (WANT_TOKENS_OR): 5 or 6 words,
	 * cas 6 or 7; others ERROR, the data block then read as a command */
	row(e, "cas without its cas unique: ERROR, its data block a command",
	    "cas foo 0 0 6 \r\nbarva2\r\n", "ERROR\r\nERROR\r\n", 0);
	row(e, "set with too few words", "set k 0 0\r\nget k\r\n", "ERROR\r\nEND\r\n", 0);
	row(e, "set with too many words", "set k 0 0 1 2 3\r\nx\r\n", "ERROR\r\nERROR\r\n", 0);
	row(e, "set: the word after <bytes> is noreply or ignored",
	    "set k 0 0 1 xyz\r\nx\r\nget k\r\n", "STORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n", 0);
	row(e, "set k 0 0 -1: the format error, the stream kept", "set k 0 0 -1\r\nget k\r\n",
	    FMT "END\r\n", 0);
	row(e, "set k 0 0 4294967295 (-1 as memcached's int32)", "set k 0 0 4294967295\r\nget k\r\n",
	    FMT "END\r\n", 0);
	row(e, "set k 0 0 2147483647 (over INT_MAX - 2)", "set k 0 0 2147483647\r\nget k\r\n",
	    FMT "END\r\n", 0);
	row(e, "a refused set line: its data block runs as a command",
	    "set k x 0 9\r\nflush_all\r\nget k\r\n", FMT "OK\r\nEND\r\n", 0);
	row(e, "numbers as strtol reads them: a sign, flags cut to 32 bits",
	    "set k +5 0 +1\r\nx\r\nset j 4294967296 0 1\r\ny\r\nget k j\r\n",
	    "STORED\r\nSTORED\r\nVALUE k 5 1\r\nx\r\nVALUE j 0 1\r\ny\r\nEND\r\n", 0);
	row(e, "a negative flag or cas unique is refused", "set k -1 0 1\r\nx\r\ncas k 0 0 1 -1\r\ny\r\n",
	    FMT "ERROR\r\n" FMT "ERROR\r\n", 0);
	row(e, "a cas unique with a plus sign", "set k 0 0 1\r\nx\r\ncas k 0 0 1 +1\r\ny\r\n",
	    "STORED\r\nEXISTS\r\n", 0);
	row(e, "touch and incr read a plus sign", "set k 0 0 1\r\n5\r\ntouch k +100\r\nincr k +2\r\n",
	    "STORED\r\nTOUCHED\r\n7\r\n", 0);
	row(e, "ms quiet (no datalen): the format error, the stream kept", "ms quiet\r\nget x\r\n",
	    FMT "END\r\n", 0);
}

static void rows_other(struct env *e)
{
	row(e, "version: memcached's own", "version\r\n", "VERSION 1.6.18\r\n", 0);
	row(e, "GET / HTTP/1.0: nothing, closed", "GET / HTTP/1.0\r\n", "", 1);
	row(e, "PUT /x HTTP/1.1: nothing, closed", "PUT /x HTTP/1.1\r\n", "", 1);
	row(e, "DELETE HTTP/1.1: nothing, closed", "DELETE HTTP/1.1\r\n", "", 1);
	clear(e);
	EXPECT(e, "mn\r\nHTTP/1.0\r\n", ""); /* the datagram unanswered, as memcached */
	expect(e, "an HTTP line after a command (TCP): that reply, then closed",
	       "mn\r\nHTTP/1.0\r\n", "MN\r\n", 1);
	row(e, "a word memcached's other branches take: ERROR", "gx HTTP/1.0\r\nX HTTP/1.0\r\n",
	    "ERROR\r\nERROR\r\n", 0);
	row(e, "HTTP/ past the 23rd token: ERROR",
	    "foo 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 HTTP/1.0\r\n", "ERROR\r\n", 0);
	row(e, "bget: memcached's old name of get", "set k 0 0 1\r\nx\r\nbget k\r\n",
	    "STORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n", 0);
	row(e, "slabs automove invalid", "slabs automove invalid\r\n", FMT, 0);
	row(e, "slabs automove levels and ratio",
	    "slabs automove 1\r\nslabs automove 3\r\nslabs automove ratio 0.5\r\nslabs automove ratio\r\n"
	    "slabs automove 0 noreply\r\nslabs\r\nslabs foo\r\n",
	    "OK\r\nERROR\r\nOK\r\nERROR\r\nERROR\r\nERROR\r\n", 0);
	row(e, "slabs reassign", "slabs reassign x 2\r\nslabs reassign 1 1\r\nslabs reassign 1\r\n",
	    FMT "SAME src and dst class are identical\r\nERROR\r\n", 0);
	row(e, "delete noreply: a delete of the key noreply, answered", "delete noreply\r\n",
	    "NOT_FOUND\r\n", 0);
	/* memcached 1.6.18 (observed): ma applies T, and N to a new item, as it
	 * meets their tokens; a t shows the ttl at its place */
	row(e, "ma: t before T shows the old ttl, T after it applies",
	    "ma mk1 N100 J13\r\nma mk1 t T30\r\nma mk1 t\r\n", "HD\r\nHD t100\r\nHD t30\r\n", 0);
	row(e, "ma on a miss: T then t then N: t shows T's, the later N stays",
	    "ma nk1 T30 t N50\r\nma nk1 t\r\n", "HD t30\r\nHD t50\r\n", 0);
	row(e, "stats cachedump without its class and limit", "stats cachedump 1\r\n",
	    "CLIENT_ERROR bad command line\r\n", 0);
	row(e, "strtoull's modulo: -9223372036854775809 is a delta", "incr nokey -9223372036854775809\r\n",
	    "NOT_FOUND\r\n", 0);
	row(e, "stats detail without on|off|dump: its usage line", "stats detail\r\nstats detail foo\r\n",
	    "CLIENT_ERROR usage: stats detail on|off|dump\r\nCLIENT_ERROR usage: stats detail on|off|dump\r\n",
	    0);
}

/* A counter of stats, or -1 when the line is missing. */
static long long stat_of(struct env *e, const char *req, const char *name)
{
	struct xkv_buf out = {};
	char v[64];
	ask(e, req, strlen(req), &out);
	long long n = stat_field(&out, name, v, sizeof(v)) ? -1 : atoll(v);
	xkv_buf_free(&out);
	return n;
}

static void rows_stats(struct env *e)
{
	long long f0 = stat_of(e, "stats\r\n", "cmd_flush");
	clear(e); /* a flush_all */
	long long f1 = stat_of(e, "stats\r\n", "cmd_flush");
	report(f0 >= 0 && f1 == f0 + 1, "%s: stats cmd_flush counts flush_all (%lld, %lld)", e->layout,
	       f0, f1);
	report(stat_of(e, "stats\r\n", "idle_kicks") < 0,
	       "%s: no idle_kicks without an idle timeout", e->layout);
	xkv_slow_tcp_event(e->sl, XKV_TCP_IDLE_ON, 0);
	long long k0 = stat_of(e, "stats\r\n", "idle_kicks");
	xkv_slow_tcp_event(e->sl, XKV_TCP_IDLE_KICK, 0);
	long long k1 = stat_of(e, "stats\r\n", "idle_kicks");
	report(k0 >= 0 && k1 == k0 + 1, "%s: stats idle_kicks with an idle timeout (%lld, %lld)",
	       e->layout, k0, k1);
	struct xkv_buf out = {};
	char v[64];
	ask(e, "stats settings\r\n", 16, &out);
	report(!stat_field(&out, "domain_socket", v, sizeof(v)) && !strcmp(v, "NULL"),
	       "%s: stats settings domain_socket NULL", e->layout);
	xkv_buf_free(&out);
	ask(e, "stats\r\n", 7, &out);
	report(!stat_field(&out, "version", v, sizeof(v)) && !strcmp(v, "1.6.18"),
	       "%s: stats version 1.6.18", e->layout);
	xkv_buf_free(&out);
}

void t_exact(struct env *e)
{
	rows_storage(e);
	rows_other(e);
	rows_stats(e);
	clear(e);
}
