// SPDX-License-Identifier: MIT
/* Binary protocol tests, the connection: malformed frames (0x04 and the end,
 * bad magic the end without a word, a frame not all in), a value over the
 * limit swallowed and the stream kept in step, no room for a body, binary
 * requests over UDP, SASL PLAIN. */
#include "binproto_test.h"

/* Malformed frames: the wrong shape gets 0x04 and the end; bad magic the
 * end without a word; a value over the limit 0x03, its bytes skipped. */
void t_malformed(struct env *e)
{
	struct xkv_buf b = {}, out = {};
	struct xkv_slow_stream st = {};
	struct res r;
	size_t off = 0, used;
	__u8 ex[4] = {};

	req(&b, XKV_BIN_GET, 1, 0, ex, 4, "k", NULL, 0);
	req(&b, XKV_BIN_NOOP, 2, 0, NULL, 0, NULL, NULL, 0);
	int rc = run(e, &st, &b, &out, NULL);
	report(rc == XKV_STREAM_CLOSE && next_res(&out, &off, &r) == 1 && r.status == XKV_BIN_EINVAL &&
	       off == out.len, "get with extras: 0x04, closed");
	b.len = 0;
	req(&b, XKV_BIN_NOOP, 2, 0, NULL, 0, NULL, NULL, 0);
	xkv_buf_put(&b, "\x81garbage-after-a-frame..", 24);
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, NULL);
	off = 0;
	report(rc == XKV_STREAM_CLOSE && next_res(&out, &off, &r) == 1 && r.op == XKV_BIN_NOOP &&
	       off == out.len, "bad magic mid-stream: closed without a reply");
	/* a key of 251 bytes */
	char longkey[252];
	memset(longkey, 'a', 251);
	longkey[251] = 0;
	b.len = 0;
	req(&b, XKV_BIN_GET, 1, 0, NULL, 0, longkey, NULL, 0);
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, NULL);
	off = 0;
	report(rc == XKV_STREAM_CLOSE && next_res(&out, &off, &r) == 1 && r.status == XKV_BIN_EINVAL,
	       "a 251-byte key: 0x04, closed");
	/* memcached reads header, extras and key before it checks them: a
	 * head still coming gets nothing yet, whatever it says */
	size_t whole = b.len;
	b.len = 24 + 10;
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, &used);
	report(rc == XKV_STREAM_MORE && !out.len && !used && st.need == whole,
	       "a 251-byte key not all in: nothing yet, need %zu (want %zu)", st.need, whole);
	b.len = 0;
	xkv_buf_put(&b, "\x80GET /index.html HTTP/1.0\r\n", 28); /* keylen 'ET' = 17748 */
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, &used);
	report(rc == XKV_STREAM_MORE && !out.len && !used && st.need == 24 + 0x4554 + ' ',
	       "0x80 then text: waits for the head its bytes say (need %zu)", st.need);
	/* a stat with a value: the body would never be used */
	b.len = 0;
	req(&b, XKV_BIN_STAT, 1, 0, NULL, 0, NULL, "xyz", 3);
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, NULL);
	off = 0;
	report(rc == XKV_STREAM_CLOSE && next_res(&out, &off, &r) == 1 && r.status == XKV_BIN_EINVAL,
	       "stat with a value: 0x04, closed");
	/* keylen + extlen over the body */
	b.len = 0;
	req(&b, XKV_BIN_GET, 1, 0, NULL, 0, "abc", NULL, 0);
	b.p[11] = 1; /* bodylen 1 < keylen 3 */
	b.len = 26;
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, NULL);
	report(rc == XKV_STREAM_MORE && !out.len, "key longer than the body, the key not all in: nothing yet");
	b.len = 27;
	rc = run(e, &st, &b, &out, NULL);
	off = 0;
	report(rc == XKV_STREAM_CLOSE && next_res(&out, &off, &r) == 1 && r.status == XKV_BIN_UNKNOWN,
	       "key longer than the body, once the key is in: 0x81, closed");
	/* a value over the limit, then a noop: the value's bytes are skipped */
	size_t big = xkv_val_max(&e->s) + 1;
	char *v = malloc(big + 1);
	memset(v, 'v', big);
	v[big] = 0;
	b.len = 0;
	req_set(&b, XKV_BIN_SET, 1, 0, "t", "old", 0, 0);
	req_set(&b, XKV_BIN_SET, 2, 0, "t", v, 0, 0);
	req(&b, XKV_BIN_GET, 3, 0, NULL, 0, "t", NULL, 0);
	memset(&st, 0, sizeof(st));
	struct xkv_buf got = {}, in = {};
	/* in pieces of 64 KiB, as a socket hands them over */
	for (size_t at = 0; at < b.len;) {
		size_t n = b.len - at < 65536 ? b.len - at : 65536;
		xkv_buf_put(&in, b.p + at, n);
		at += n;
		out.len = 0;
		rc = xkv_slow_stream(e->sl, NULL, &st, in.p, in.len, &used, &out, &e->delta);
		xkv_buf_put(&got, out.p, out.len);
		memmove(in.p, in.p + used, in.len - used);
		in.len -= used;
	}
	off = 0;
	bool ok = next_res(&got, &off, &r) == 1 && r.status == 0 &&
		  next_res(&got, &off, &r) == 1 && r.status == XKV_BIN_E2BIG && val_is(&r, "Too large.") &&
		  next_res(&got, &off, &r) == 1 && r.opaque == 3 && r.status == XKV_BIN_ENOENT &&
		  off == got.len && rc == XKV_STREAM_MORE;
	report(ok, "set of %zu bytes: 0x03, the old value removed (as memcached), the stream in step", big);
	/* the largest value round trips */
	v[big - 1] = 0;
	b.len = 0;
	req_set(&b, XKV_BIN_SET, 1, 0, "big", v, 0, 0);
	report(one(e, &b, &r) && r.status == 0, "set of %zu bytes", big - 1);
	b.len = 0;
	req(&b, XKV_BIN_GET, 1, 0, NULL, 0, "big", NULL, 0);
	memset(&r, 0, sizeof(r));
	bool one_ok = one(e, &b, &r);
	report(one_ok && r.status == 0 && r.vlen == big - 1 && !memcmp(r.val, v, big - 1),
	       "get of %zu bytes (%s, status 0x%x, %u bytes)", big - 1, one_ok ? "one reply" : "not one reply",
	       r.status, (unsigned)r.vlen);
	/* serve has no room for a body (--max-buffer-mib): need says how much
	 * the frame takes; told no_room, 0x82, the old value removed, the body
	 * swallowed as it arrives, the stream in step */
	b.len = 0;
	req_set(&b, XKV_BIN_SET, 1, 0, "nr", "old", 0, 0);
	req_set(&b, XKV_BIN_SET, 2, 0, "nr", v, 0, 0);
	size_t first = 24 + 8 + 2 + 3, frame2 = b.len - first;
	memset(&st, 0, sizeof(st));
	in.len = 0;
	got.len = 0;
	xkv_buf_put(&in, b.p, first + 1000);
	out.len = 0;
	rc = xkv_slow_stream(e->sl, NULL, &st, in.p, in.len, &used, &out, &e->delta);
	bool waits = rc == XKV_STREAM_MORE && used == first && st.need == frame2;
	report(waits, "a body not in yet: need %zu bytes (want %zu)", st.need, frame2);
	xkv_buf_put(&got, out.p, out.len);
	memmove(in.p, in.p + used, in.len - used);
	in.len -= used;
	st.no_room = true;
	out.len = 0;
	rc = xkv_slow_stream(e->sl, NULL, &st, in.p, in.len, &used, &out, &e->delta);
	xkv_buf_put(&got, out.p, out.len);
	bool refused = used == in.len && st.swallow == frame2 - 1000 && !st.no_room;
	if (!refused)
		printf("    used %zu of %zu, swallow %llu (want %zu), no_room %d\n", used, in.len,
		       (unsigned long long)st.swallow, frame2 - 1000, st.no_room);
	in.len = 0;
	xkv_buf_put(&in, b.p + first + 1000, b.len - first - 1000);
	req(&in, XKV_BIN_GET, 3, 0, NULL, 0, "nr", NULL, 0);
	out.len = 0;
	rc = xkv_slow_stream(e->sl, NULL, &st, in.p, in.len, &used, &out, &e->delta);
	xkv_buf_put(&got, out.p, out.len);
	off = 0;
	ok = refused && used == in.len && next_res(&got, &off, &r) == 1 && r.status == 0 &&
	     next_res(&got, &off, &r) == 1 && r.opaque == 2 && r.status == XKV_BIN_ENOMEM &&
	     next_res(&got, &off, &r) == 1 && r.opaque == 3 && r.status == XKV_BIN_ENOENT && off == got.len &&
	     rc == XKV_STREAM_MORE;
	if (!ok) {
		off = 0;
		printf("    used %zu of %zu, rc %d, replies:", used, in.len, rc);
		while (next_res(&got, &off, &r) == 1)
			printf(" [op %u status 0x%x]", r.opaque, r.status);
		printf("\n");
	}
	report(ok, "no room for a %zu-byte body: 0x82, the old value removed, the body swallowed, in step",
	       big - 1);
	free(v);
	xkv_buf_free(&got);
	xkv_buf_free(&in);
	xkv_buf_free(&b);
	xkv_buf_free(&out);
}

/* A binary request over UDP: the 8-byte frame header, then frames. */
void t_udp(struct env *e)
{
	struct xkv_buf b = {}, out = {};
	struct xkv_udp_hdr h = { .req_id = htons(77), .total = htons(1) };
	struct res r;

	xkv_buf_put(&b, &h, sizeof(h));
	req_set(&b, XKV_BIN_SET, 1, 0, "u", "uv", 0, 0);
	req(&b, XKV_BIN_GETK, 2, 0, NULL, 0, "u", NULL, 0);
	struct xkv_udp_hdr got;
	int rc = xkv_slow_handle(e->sl, NULL, b.p, b.len, &got, &out, &e->delta);
	size_t off = 0;
	report(rc == 1 && got.req_id == htons(77) && next_res(&out, &off, &r) == 1 && r.status == 0 &&
	       next_res(&out, &off, &r) == 1 && val_is(&r, "uv") && off == out.len,
	       "udp: set and getk in one datagram");
	b.len = 0;
	xkv_buf_put(&b, &h, sizeof(h));
	req(&b, XKV_BIN_GET, 1, 0, NULL, 0, "u", NULL, 0);
	b.len -= 1; /* a frame cut short */
	out.len = 0;
	rc = xkv_slow_handle(e->sl, NULL, b.p, b.len, &got, &out, &e->delta);
	report(rc == 0 && out.len == 0, "udp: a frame cut short gets nothing");
	xkv_buf_free(&b);
	xkv_buf_free(&out);
}

/* SASL PLAIN: the password file's checks; unauthenticated commands
 * refused (0x20, closed), text refused, UDP dropped; then served. */
void t_sasl(struct env *e)
{
	char path[] = "/tmp/xkvbin-pwdb-XXXXXX", err[256];
	int fd = mkstemp(path);
	const char *text = "# users\nalice:s3cret\nbob:pw:with:colons\n";
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		report(false, "sasl: write the password file");
		return;
	}
	fchmod(fd, 0644);
	struct xkv_sasl *db = xkv_sasl_load(path, err, sizeof(err));
	report(!db && strstr(err, "owned by root"), "sasl: a file readable by others refused: %s", err);
	xkv_sasl_free(db);
	fchmod(fd, 0600);
	close(fd);
	db = xkv_sasl_load(path, err, sizeof(err));
	unlink(path);
	report(db && xkv_sasl_users(db) == 2, "sasl: mode 0600 read, 2 users");
	if (!db)
		return;
	xkv_slow_set_sasl(e->sl, db);

	struct xkv_buf b = {}, out = {};
	struct xkv_slow_stream st = {};
	struct res r;
	size_t off = 0;
	req(&b, XKV_BIN_GET, 1, 0, NULL, 0, "k", NULL, 0);
	req(&b, XKV_BIN_NOOP, 2, 0, NULL, 0, NULL, NULL, 0);
	int rc = run(e, &st, &b, &out, NULL);
	report(rc == XKV_STREAM_CLOSE && next_res(&out, &off, &r) == 1 && r.status == XKV_BIN_AUTH_ERROR &&
	       off == out.len, "sasl: get before auth: 0x20, closed");
	b.len = 0;
	xkv_buf_put(&b, "get k\r\n", 7);
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, NULL);
	report(rc == XKV_STREAM_CLOSE && out.len == 0, "sasl: a text connection closed without a reply");
	b.len = 0;
	struct xkv_udp_hdr h = { .total = htons(1) }, got;
	xkv_buf_put(&b, &h, 8);
	xkv_buf_put(&b, "get k\r\n", 7);
	out.len = 0;
	rc = xkv_slow_handle(e->sl, NULL, b.p, b.len, &got, &out, &e->delta);
	report(rc == 0 && out.len == 0, "sasl: a datagram gets nothing");

	memset(&st, 0, sizeof(st));
	const char bad[] = "\0alice\0wrong", good[] = "\0alice\0s3cret";
	b.len = 0;
	req(&b, XKV_BIN_SASL_LIST, 1, 0, NULL, 0, NULL, NULL, 0);
	req(&b, XKV_BIN_VERSION, 2, 0, NULL, 0, NULL, NULL, 0);
	req(&b, XKV_BIN_SASL_AUTH, 3, 0, NULL, 0, "PLAIN", bad, sizeof(bad) - 1);
	rc = run(e, &st, &b, &out, NULL);
	off = 0;
	bool ok = next_res(&out, &off, &r) == 1 && r.status == 0 && val_is(&r, "PLAIN") &&
		  next_res(&out, &off, &r) == 1 && r.status == 0 && r.op == XKV_BIN_VERSION &&
		  next_res(&out, &off, &r) == 1 && r.status == XKV_BIN_AUTH_ERROR && off == out.len &&
		  rc == XKV_STREAM_MORE;
	report(ok, "sasl: list mechs PLAIN, version free, a wrong password 0x20 (connection stays)");
	b.len = 0;
	req(&b, XKV_BIN_SASL_AUTH, 4, 0, NULL, 0, "PLAIN", good, sizeof(good) - 1);
	req_set(&b, XKV_BIN_SET, 5, 0, "k", "authed", 0, 0);
	req(&b, XKV_BIN_GET, 6, 0, NULL, 0, "k", NULL, 0);
	rc = run(e, &st, &b, &out, NULL);
	off = 0;
	ok = next_res(&out, &off, &r) == 1 && r.status == 0 && val_is(&r, "Authenticated") &&
	     next_res(&out, &off, &r) == 1 && r.status == 0 && next_res(&out, &off, &r) == 1 &&
	     val_is(&r, "authed") && rc == XKV_STREAM_MORE;
	report(ok, "sasl: authenticated, then served");
	xkv_slow_set_sasl(e->sl, NULL);
	xkv_sasl_free(db);
	xkv_buf_free(&b);
	xkv_buf_free(&out);
}
