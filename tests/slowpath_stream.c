// SPDX-License-Identifier: MIT
/* Slow path tests: the stream entry (xkv_slow_stream, what the TCP server
 * calls): splits, pipelines, pieces, oversize lines and values, bounds, threads. */
#include "slowpath_test.h"

/* ---- the stream entry (xkv_slow_stream, what the TCP server calls) -------- */

/* Every split point of one pipeline: the first part, then the rest; the
 * replies are the same, and the first part consumes only whole requests. */
static void st_split(struct env *e)
{
	static const char *const reqs[] = {
		"set k 5 0 7\r\nhe\r\nllo\r\n", "get k\r\n", "add k 0 0 1\r\nx\r\n", "incr n 1\r\n",
		"set n 0 0 2 noreply\r\n41\r\n", "incr n 1\r\n", "get k n nope\r\n", "delete k\r\n",
		"get k\r\n", "version\r\n",
	};
	static const char want[] =
		"STORED\r\nVALUE k 5 7\r\nhe\r\nllo\r\nEND\r\nNOT_STORED\r\nNOT_FOUND\r\n"
		"42\r\nVALUE k 5 7\r\nhe\r\nllo\r\nVALUE n 0 2\r\n42\r\nEND\r\nDELETED\r\nEND\r\n"
		XKV_VERSION_LINE;
	enum { NREQ = sizeof(reqs) / sizeof(reqs[0]) };
	char req[512] = "";
	size_t ends[NREQ], bad = 0, badpart = 0;

	for (int k = 0; k < NREQ; k++) {
		strcat(req, reqs[k]);
		ends[k] = strlen(req);
	}
	size_t n = strlen(req);
	for (size_t i = 0; i <= n; i++) {
		struct conn c = {};
		clear(e);
		feed(e, &c, req, i);
		size_t consumed = i - c.in.len, whole = 0;
		for (int k = 0; k < NREQ && ends[k] <= i; k++)
			whole = ends[k];
		if (consumed != whole)
			badpart++;
		feed(e, &c, req + i, n - i);
		if (!same(&c.out, want, sizeof(want) - 1) || c.in.len || c.closed) {
			if (!bad)
				print_escaped("got", c.out.p, c.out.len, 300);
			bad++;
		}
		conn_free(&c);
	}
	report(!bad && !badpart, "%s: a pipeline of %d requests split at each of its %zu byte boundaries "
	       "(%zu wrong replies, %zu partial consumptions)", e->layout, NREQ, n + 1, bad, badpart);

	/* one byte at a time */
	struct conn c = {};
	clear(e);
	for (size_t i = 0; i < n; i++)
		feed(e, &c, req + i, 1);
	report(same(&c.out, want, sizeof(want) - 1) && !c.in.len && c.max_in <= 29,
	       "%s: the same, one byte per call (input held at most %zu bytes)", e->layout, c.max_in);
	conn_free(&c);
}

static void st_pipeline(struct env *e)
{
	struct xkv_buf req = {}, want = {};
	struct conn c = {};
	const int N = 2000;

	clear(e);
	for (int i = 0; i < N; i++) { /* each get right after its set (array_fnv collides) */
		int len = 6 + (i > 9) + (i > 99) + (i > 999) + 1;
		tprintf(&req, "set key%d %d 0 %d\r\nvalue-%d\r\nget key%d\r\n", i, i, len, i, i);
		tprintf(&want, "STORED\r\nVALUE key%d %d %d\r\nvalue-%d\r\nEND\r\n", i, i, len, i);
	}
	feed(e, &c, req.p, req.len);
	int ok = same(&c.out, want.p, want.len) && !c.in.len;
	report(ok, "%s: %d pipelined requests in one buffer (%zu bytes)", e->layout, 2 * N, req.len);
	if (!ok)
		print_escaped("got", c.out.p, c.out.len, 300);
	conn_free(&c);
	xkv_buf_free(&req);
	xkv_buf_free(&want);
}

/* A value with \r\n and every byte value in it, its block in three pieces. */
static void st_pieces(struct env *e)
{
	__u8 val[600];
	struct xkv_buf want = {};
	struct conn c = {};
	char line[64];

	for (size_t i = 0; i < sizeof(val); i++)
		val[i] = (__u8)(i * 7);
	memcpy(val + 100, "\r\nEND\r\n", 7);
	int ll = snprintf(line, sizeof(line), "set bin 9 0 %zu\r\n", sizeof(val));
	feed(e, &c, line, (size_t)ll);
	int r1 = c.out.len == 0 && c.in.len == (size_t)ll;
	feed(e, &c, val, 250);
	feed(e, &c, val + 250, sizeof(val) - 250);
	int r2 = c.out.len == 0;
	feed(e, &c, "\r\nget bin\r\n", 11);
	tprintf(&want, "STORED\r\nVALUE bin 9 %zu\r\n", sizeof(val));
	tput(&want, val, sizeof(val));
	tprintf(&want, "\r\nEND\r\n");
	report(r1 && r2 && same(&c.out, want.p, want.len) && !c.in.len,
	       "%s: a binary value whose block arrives in three pieces (nothing runs before its \\r\\n)",
	       e->layout);
	conn_free(&c);
	xkv_buf_free(&want);
}

static void st_noreply(struct env *e)
{
	clear(e);
	expect(e, "noreply on set, add, replace, delete, incr: only the get answers",
	       "set a 0 0 1 noreply\r\n1\r\nadd a 0 0 1 noreply\r\n2\r\nreplace a 0 0 1 noreply\r\n3\r\n"
	       "incr a 4 noreply\r\ndelete nope noreply\r\nget a\r\n",
	       "VALUE a 0 1\r\n7\r\nEND\r\n", 0);
}

/* A value over the cap: the error, its block swallowed as it arrives. */
static void st_too_large(struct env *e)
{
	struct conn c = {};
	static __u8 junk[10000];
	size_t big = 3 * sizeof(junk) + 5;
	char line[64];

	clear(e);
	memset(junk, 'x', sizeof(junk));
	memcpy(junk + 10, "\r\nget a\r\n", 9); /* in the block: not a command */
	int ll = snprintf(line, sizeof(line), "set a 0 0 %zu\r\n", big);
	feed(e, &c, line, (size_t)ll);
	int r1 = !strncmp((const char *)c.out.p, "SERVER_ERROR object too large for cache\r\n", c.out.len) &&
		 c.out.len == 41;
	for (int i = 0; i < 3; i++)
		feed(e, &c, junk, sizeof(junk));
	feed(e, &c, "12345\r", 6);
	feed(e, &c, "\nget a\r\n", 8);
	static const char want[] = "SERVER_ERROR object too large for cache\r\nEND\r\n";
	report(r1 && same(&c.out, want, sizeof(want) - 1) && !c.in.len && c.max_in <= sizeof(junk) + 8 &&
	       !c.closed, "%s: set of %zu bytes over a %u-byte cap: SERVER_ERROR, block swallowed as it "
	       "arrives (input held at most %zu bytes), next command served", e->layout, big, VAL_CAP,
	       c.max_in);
	if (!same(&c.out, want, sizeof(want) - 1))
		print_escaped("got", c.out.p, c.out.len, 300);
	conn_free(&c);
}

/* The server cannot hold a block (serve_tcp's --max-buffer-mib): need says
 * how much the first request takes; told no_room, the request gets memcached's
 * answer to a set it cannot allocate, the old item goes, the block is
 * swallowed as it arrives and the stream stays in step. */
static void st_no_room(struct env *e)
{
	struct conn c = {};
	static __u8 blk[3000];

	clear(e);
	memset(blk, 'q', sizeof(blk));
	feed(e, &c, "set nr 0 0 3\r\nold\r\nset nr 0 0 3000\r\n", 36);
	feed(e, &c, blk, 100);
	size_t line = 17; /* "set nr 0 0 3000\r\n"; 100 data bytes are held too */
	int waits = same(&c.out, "STORED\r\n", 8) && c.in.len == line + 100 &&
		    c.st.need == line + 3000 + 2;
	report(waits, "%s: a block not in yet: need %zu bytes (want %zu), %zu held", e->layout, c.st.need,
	       line + 3002, c.in.len);
	c.st.no_room = true;
	feed(e, &c, blk + 100, 0);
	int refused = c.in.len == 0 && c.st.swallow == 3002 - 100 && !c.st.no_room && !c.closed;
	if (!refused)
		printf("    held %zu, swallow %llu, no_room %d, closed %d\n", c.in.len,
		       (unsigned long long)c.st.swallow, c.st.no_room, c.closed);
	feed(e, &c, blk + 100, sizeof(blk) - 100);
	feed(e, &c, "\r\nget nr\r\nset nr 0 0 1\r\nz\r\nget nr\r\n", 35);
	static const char want[] = "STORED\r\nSERVER_ERROR out of memory storing object\r\nEND\r\n"
				   "STORED\r\nVALUE nr 0 1\r\nz\r\nEND\r\n";
	report(refused && same(&c.out, want, sizeof(want) - 1) && !c.in.len && !c.closed,
	       "%s: no room for a 3000-byte block: SERVER_ERROR out of memory storing object, the old "
	       "item gone, the block swallowed, the stream in step", e->layout);
	if (!same(&c.out, want, sizeof(want) - 1))
		print_escaped("got", c.out.p, c.out.len, 300);
	conn_free(&c);
}

static void st_line_long(struct env *e)
{
	struct conn c = {};
	static __u8 junk[XKV_STREAM_MGET_LINE_MAX + 2];

	memset(junk, 'a', sizeof(junk));
	memcpy(junk, "get ", 4);
	feed(e, &c, junk, sizeof(junk) - 1);
	int waits = c.out.len == 0 && !c.closed && c.in.len == sizeof(junk) - 1;
	feed(e, &c, "a", 1);
	static const char want[] = "CLIENT_ERROR line too long\r\n";
	report(waits && same(&c.out, want, sizeof(want) - 1) && c.closed,
	       "%s: a multi-get line with no \\n in %u bytes waits; one byte more: CLIENT_ERROR line "
	       "too long, close", e->layout, XKV_STREAM_MGET_LINE_MAX + 1);
	conn_free(&c);

	/* the longest line that is allowed is served */
	struct xkv_buf req = {}, want2 = {};
	char key[251];
	memset(key, 'n', 250);
	key[250] = 0;
	tprintf(&req, "get");
	while (req.len + 251 <= XKV_STREAM_LINE_MAX)
		tprintf(&req, " %s", key);
	tprintf(&req, "\r\n");
	tprintf(&want2, "END\r\n");
	struct conn c2 = {};
	feed(e, &c2, req.p, req.len);
	report(same(&c2.out, want2.p, want2.len) && !c2.closed, "%s: a get line of %zu bytes is served",
	       e->layout, req.len);
	conn_free(&c2);
	xkv_buf_free(&req);
	xkv_buf_free(&want2);
}

static void st_errors(struct env *e)
{
	clear(e);
	expect(e, "quit: what came before is answered, nothing after, close",
	       "set q 0 0 1\r\nv\r\nquit\r\nget q\r\n", "STORED\r\n", 1);
	expect(e, "quit with words after it: close all the same (memcached 1.6.18)",
	       "quit now please\r\nget q\r\n", "", 1);
	/* a bare \n ends a command line, as memcached reads it */
	expect(e, "a line ended by a bare \\n is a command line", "get nq\nget nq\r\n", "END\r\nEND\r\n", 0);
	expect(e, "bad data chunk: the block is read as its length says, the rest goes on",
	       "set k 0 0 2\r\nabc\r\nget k\r\n", "CLIENT_ERROR bad data chunk\r\nERROR\r\nEND\r\n", 0);
	expect(e, "a storage line refused before its data block: answered, the block read as commands",
	       "set k x 0 7\r\nversion\r\nget k\r\n",
	       "CLIENT_ERROR bad command line format\r\n" XKV_VERSION_LINE "END\r\n", 0);
	static char longline[2200];
	memset(longline, 'a', sizeof(longline) - 1);
	memcpy(longline, "verbosity ", 10);
	expect(e, "2048 bytes and more of a line that is no multi-get, no newline: closed without a word",
	       longline, "", 1);
	/* memcached 1.6.18 (try_read_command_ascii): a line is judged long
	 * only while its newline has not come; one that came whole with it is
	 * read as any other, if it fits the 16 KiB read buffer */
	static char setline[3100];
	memset(setline, ' ', sizeof(setline) - 1);
	memcpy(setline, "set sl 0 0 1", 12);
	memcpy(setline + sizeof(setline) - 15, "\r\nz\r\nget sl\r\n", 14);
	expect(e, "a set line of 3,084 bytes that came whole with its newline is served", setline,
	       "STORED\r\nVALUE sl 0 1\r\nz\r\nEND\r\n", 0);
	static char big[20000];
	for (size_t i = 0; i < sizeof(big) - 1; i++)
		big[i] = i % 8 == 7 ? ' ' : 'k';
	memcpy(big + sizeof(big) - 3, "\r\n", 2);
	memcpy(big, "gat 0 ", 6);
	expect(e, "a gat line over 16 KiB: closed without a word (only get and gets read on)", big, "", 1);
	memset(big, ' ', 101);
	memcpy(big + 101, "get ", 4);
	expect(e, "101 spaces before get on a line over 16 KiB: closed without a word", big, "", 1);
	memcpy(big + 100, "get  ", 5);
	expect(e, "100 spaces before get on a line over 16 KiB: the multi-get is served", big, "END\r\n", 0);
	expect(e, "append, prepend, cas, touch pipelined with their data blocks",
	       "append q 0 0 2\r\nab\r\nprepend q 0 0 1 noreply\r\nx\r\ncas q 0 0 2 7\r\nzz\r\n"
	       "touch q 10\r\nget q\r\n",
	       "STORED\r\nEXISTS\r\nTOUCHED\r\nVALUE q 0 4\r\nxvab\r\nEND\r\n", 0);
	expect(e, "unknown command, bad format, then a good one",
	       "bogus\r\nincr\r\nversion\r\n",
	       "ERROR\r\nERROR\r\n" XKV_VERSION_LINE, 0);
	expect(e, "a reply-shaped line (loop guard): silence and close", "version\r\nEND\r\nversion\r\n",
	       XKV_VERSION_LINE, 1);
}

/* A source that may read but not write. */
static void st_write_list(struct env *e)
{
	struct xkv_acl_key any, ten, k;
	struct xkv_slow_src rd = {}, wr = {};
	char err[256];

	for (int l = 0; l < XKV_ACL__N; l++)
		while (!bpf_map_get_next_key(e->s.acl_fd[l], NULL, &k) && !bpf_map_delete_elem(e->s.acl_fd[l], &k))
			;
	xkv_acl_changed(&e->s);
	xkv_cidr_parse("any", &any, err, sizeof(err));
	xkv_cidr_parse("10.0.0.0/8", &ten, err, sizeof(err));
	xkv_cidr_parse("192.0.2.1", &k, err, sizeof(err));
	memcpy(rd.addr, k.addr, 16);
	xkv_cidr_parse("10.1.2.3", &k, err, sizeof(err));
	memcpy(wr.addr, k.addr, 16);
	if (xkv_acl_add(&e->s, XKV_ACL_ALLOW, &any, XKV_ACL_USER) ||
	    xkv_acl_add(&e->s, XKV_ACL_WRITE, &ten, XKV_ACL_USER))
		report(0, "%s: acl setup", e->layout);
	clear(e);

	struct conn c = { .src = &wr };
	feed(e, &c, "set w 0 0 2\r\nok\r\n", 17);
	report(same(&c.out, "STORED\r\n", 8) && !c.closed, "%s: a writer in the write list stores", e->layout);
	conn_free(&c);

	__u64 refused = e->delta.v[XKV_STAT_drop_write_acl];
	struct conn r = { .src = &rd };
	static const char req[] = "get w\r\nset w 0 0 2\r\nno\r\nget w\r\n";
	feed(e, &r, req, sizeof(req) - 1);
	static const char want[] = "VALUE w 0 2\r\nok\r\nEND\r\n";
	struct conn chk = {};
	feed(e, &chk, "get w\r\n", 7);
	report(same(&r.out, want, sizeof(want) - 1) && r.closed &&
	       e->delta.v[XKV_STAT_drop_write_acl] == refused + 1 && same(&chk.out, want, sizeof(want) - 1),
	       "%s: a reader's get is answered, its set refused without a reply (drop_write_acl), the "
	       "connection ends, the store is unchanged", e->layout);
	conn_free(&r);
	conn_free(&chk);

	/* out of the allow list while connected: cut off at the next request,
	 * on a connection served before (its rights kept) as on a new one */
	struct conn kept = { .src = &rd };
	feed(e, &kept, "get w\r\n", 7);
	feed(e, &kept, "get w\r\n", 7);
	bool served = same(&kept.out, "VALUE w 0 2\r\nok\r\nEND\r\nVALUE w 0 2\r\nok\r\nEND\r\n", 44) &&
		      !kept.closed;
	xkv_acl_del(&e->s, XKV_ACL_ALLOW, &any, XKV_ACL_USER);
	xkv_acl_add(&e->s, XKV_ACL_ALLOW, &ten, XKV_ACL_USER);
	__u64 acl0 = e->delta.v[XKV_STAT_drop_acl];
	feed(e, &kept, "get w\r\n", 7);
	report(served && kept.out.len == 44 && kept.closed && e->delta.v[XKV_STAT_drop_acl] == acl0 + 1,
	       "%s: a connection served before leaves the allow list: its next request closes it "
	       "with nothing (the kept rights follow the acl_gen token)", e->layout);
	conn_free(&kept);
	acl0 = e->delta.v[XKV_STAT_drop_acl];
	struct conn o = { .src = &rd };
	feed(e, &o, "get w\r\n", 7);
	report(o.out.len == 0 && o.closed && e->delta.v[XKV_STAT_drop_acl] == acl0 + 1 &&
	       !xkv_slow_tcp_admit(e->sl, rd.addr, &e->delta) && xkv_slow_tcp_admit(e->sl, wr.addr, &e->delta),
	       "%s: a source outside the allow list: closed with nothing, refused at connect", e->layout);
	conn_free(&o);

	/* a trusted client cut off in the middle of a reply in parts: closed,
	 * the reply not left waiting to go on */
	xkv_acl_add(&e->s, XKV_ACL_TRUST, &ten, XKV_ACL_USER);
	struct conn big = { .src = &wr, .st.out_max = 40 };
	feed(e, &big, "get w w w w w w w w w w\r\n", 25);
	bool parts = xkv_slow_stream_busy(&big.st) && !big.closed && big.out.len < 10 * 17;
	xkv_acl_del(&e->s, XKV_ACL_ALLOW, &ten, XKV_ACL_USER);
	big.out.len = 0;
	feed(e, &big, NULL, 0);
	report(parts && big.closed && !big.out.len && !xkv_slow_stream_busy(&big.st),
	       "%s: a trusted client leaves the allow list in the middle of a reply in parts: closed "
	       "with nothing more, no part left to run", e->layout);
	conn_free(&big);
	xkv_acl_del(&e->s, XKV_ACL_TRUST, &ten, XKV_ACL_USER);
	xkv_acl_add(&e->s, XKV_ACL_ALLOW, &ten, XKV_ACL_USER);
	xkv_acl_add(&e->s, XKV_ACL_ALLOW, &any, XKV_ACL_USER);
}

/* out_max: a reader that does not drain gets no more than the bound plus
 * one reply; the rest waits. */
static void st_bound(struct env *e)
{
	struct xkv_buf req = {}, val = {};
	struct conn c = { .st.out_max = 3000 };

	clear(e);
	for (int i = 0; i < 1000; i++)
		tprintf(&val, "%c", 'a' + i % 26);
	tprintf(&req, "set v 0 0 1000\r\n%.*s\r\n", (int)val.len, (const char *)val.p);
	for (int i = 0; i < 20; i++)
		tprintf(&req, "get v\r\n");
	feed(e, &c, req.p, req.len);
	size_t per = strlen("VALUE v 0 1000\r\n") + 1000 + strlen("\r\nEND\r\n");
	int held = c.out.len == 8 + 3 * per && c.in.len == 17 * 7;
	c.out.len = 0; /* the client read it */
	feed(e, &c, NULL, 0);
	feed(e, &c, NULL, 0);
	c.out.len = 0;
	for (int i = 0; i < 10 && c.in.len; i++) {
		feed(e, &c, NULL, 0);
		c.out.len = 0;
	}
	report(held && !c.in.len, "%s: with out_max 3000 a pipeline of 20 gets of 1 KB stops after 3 "
	       "replies and goes on as out drains", e->layout);
	conn_free(&c);
	xkv_buf_free(&req);
	xkv_buf_free(&val);
}

struct racer {
	struct env *e;
	int id;
	struct xkv_stats delta;
};

static void *race_main(void *arg)
{
	struct racer *r = arg;
	struct xkv_buf req = {}, out = {};
	struct xkv_slow_stream st = {};
	size_t used;

	for (int i = 0; i < 500; i++)
		tprintf(&req, "set r%d-%d 0 0 1\r\nx\r\n", r->id, i);
	xkv_slow_stream(r->e->sl, NULL, &st, req.p, req.len, &used, &out, &r->delta);
	xkv_buf_free(&req);
	xkv_buf_free(&out);
	return NULL;
}

/* Two threads at once: each counts its own new items (the accessors count
 * them in the store handle, which each thread has its own copy of). */
static void st_threads(struct env *e)
{
	struct racer r[2] = { { e, 0, {} }, { e, 1, {} } };
	pthread_t th[2];

	clear(e);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, race_main, &r[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	__u64 stores = r[0].delta.v[XKV_STAT_stores] + r[1].delta.v[XKV_STAT_stores];
	__u64 fresh = r[0].delta.v[XKV_STAT_store_new] + r[1].delta.v[XKV_STAT_store_new];
	bool lru = !strcmp(e->layout, "lru");
	report(stores == 1000 && (!lru || fresh == 1000) && e->s.new_items == 0,
	       "%s: two threads storing 500 new keys each: %llu stores, %llu counted new (lru: 1000), "
	       "none left in the shared handle", e->layout, (unsigned long long)stores,
	       (unsigned long long)fresh);
}

static void st_stats(struct env *e)
{
	struct conn c = {};
	xkv_slow_tcp_event(e->sl, XKV_TCP_LISTEN, 77);
	xkv_slow_tcp_event(e->sl, XKV_TCP_OPEN, 0);
	xkv_slow_tcp_event(e->sl, XKV_TCP_OPEN, 0);
	xkv_slow_tcp_event(e->sl, XKV_TCP_CLOSE, 0);
	xkv_slow_tcp_event(e->sl, XKV_TCP_REJECT, 0);
	feed(e, &c, "stats\r\n", 7);
	tput(&c.out, "", 1);
	const char *t = (const char *)c.out.p;
	report(strstr(t, "STAT curr_connections 1\r\n") && strstr(t, "STAT total_connections 2\r\n") &&
	       strstr(t, "STAT rejected_connections 1\r\n") && strstr(t, "STAT max_connections 77\r\n") &&
	       strstr(t, "END\r\n"), "%s: stats over a stream reports the connections", e->layout);
	conn_free(&c);
}

static void st_all(struct env *e)
{
	st_split(e);
	st_pipeline(e);
	st_pieces(e);
	st_noreply(e);
	st_too_large(e);
	st_no_room(e);
	st_line_long(e);
	st_errors(e);
	st_bound(e);
	st_threads(e);
	st_stats(e);
	st_write_list(e);
	st_mget(e);
}

int run_stream(void)
{
	each_layout(st_all);
	return 0;
}
