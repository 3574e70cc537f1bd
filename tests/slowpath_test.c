// SPDX-License-Identifier: MIT
/* Slow path tests, the shared helpers: pass/fail reporting, text buffers,
 * the store loaded in-process (env), one request through the slow path and
 * its expected reply, framing and reassembly, the stream connection. */
#include "slowpath_test.h"
#include "layout_skip.h"

int n_pass, n_fail;

void report(int ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s ", ok ? "PASS" : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	if (ok)
		n_pass++;
	else
		n_fail++;
}

/* ---- text helpers --------------------------------------------------------- */

void tprintf(struct xkv_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *tmp = malloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(tmp, (size_t)n + 1, fmt, ap);
	va_end(ap);
	xkv_buf_put(b, tmp, (size_t)n);
	free(tmp);
}

void tput(struct xkv_buf *b, const void *p, size_t n)
{
	xkv_buf_put(b, p, n);
}

/* Print up to max bytes of p, escaping \r \n and non-printables. */
void print_escaped(const char *label, const __u8 *p, size_t n, size_t max)
{
	printf("    %s (%zu bytes): \"", label, n);
	for (size_t i = 0; i < n && i < max; i++) {
		if (p[i] == '\r')
			printf("\\r");
		else if (p[i] == '\n')
			printf("\\n");
		else if (p[i] < 0x20 || p[i] >= 0x7f)
			printf("\\x%02x", p[i]);
		else
			putchar(p[i]);
	}
	printf(n > max ? "\"...\n" : "\"\n");
}

/* Show where two texts part. */
void show_diff(const __u8 *got, size_t gl, const __u8 *want, size_t wl)
{
	size_t i = 0;
	while (i < gl && i < wl && got[i] == want[i])
		i++;
	size_t from = i > 40 ? i - 40 : 0;
	printf("    first difference at byte %zu\n", i);
	print_escaped("want", want + from, wl - from, 160);
	print_escaped("got ", got + from, gl - from, 160);
}

void short_name(char *dst, size_t n, const void *src, size_t len)
{
	const __u8 *p = src;
	size_t o = 0;
	for (size_t i = 0; i < len && o + 4 < n; i++) {
		if (p[i] == '\r' || p[i] == '\n') {
			dst[o++] = '\\';
			dst[o++] = p[i] == '\r' ? 'r' : 'n';
		} else {
			dst[o++] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
		}
	}
	if (o + 4 >= n)
		memcpy(dst + o - 3, "...", 3);
	dst[o] = 0;
}

/* ---- store in-process ------------------------------------------------------ */

/* The big map's size for the next env_open (chunks; 0: no values above
 * val_cap, which the tests written before it assume). */
__u32 env_big_chunks;
__u32 env_key_cap; /* 0: XKV_KEY_MAX */
__u32 env_rate_limit, env_rate_burst; /* --rate-limit, --rate-burst */

/* cfg_flags, max_amp: as attach would set them at load. */
int env_open_cfg(struct env *e, const char *layout, __u32 entries, __u32 val_cap,
			__u32 cfg_flags, __u32 max_amp)
{
	char err[XKV_ERRLEN];
	struct xkv_config cfg;

	memset(e, 0, sizeof(*e));
	e->layout = layout;
	if (xkv_config_defaults(&cfg, layout)) {
		printf("FAIL %s: xkv_config_defaults\n", layout);
		return -1;
	}
	cfg.entries = entries;
	cfg.val_cap = val_cap;
	cfg.key_cap = env_key_cap ? env_key_cap : XKV_KEY_MAX;
	cfg.flags |= cfg_flags;
	cfg.max_amp = max_amp;
	cfg.big_chunks = env_big_chunks;
	cfg.rate_limit = env_rate_limit;
	cfg.rate_burst = env_rate_burst;
	if (xkv_inproc_load(&cfg, NULL, &e->obj, &e->s, err, sizeof(err))) {
		printf("FAIL %s: %s\n", layout, err);
		return -1;
	}
	e->sl = xkv_slow_new(&e->s, NULL);
	if (!e->sl) {
		printf("FAIL %s: xkv_slow_new\n", layout);
		xkv_store_close(&e->s);
		bpf_object__close(e->obj);
		return -1;
	}
	return 0;
}

int env_open(struct env *e, const char *layout, __u32 entries, __u32 val_cap)
{
	return env_open_cfg(e, layout, entries, val_cap, 0, 0);
}

void env_close(struct env *e)
{
	xkv_slow_free(e->sl);
	e->sl = NULL;
	xkv_store_close(&e->s);
	bpf_object__close(e->obj);
	e->obj = NULL;
}

static __u8 dgram_buf[70000];

size_t mkdgram(__u8 *d, __u16 id, __u16 seq, __u16 total, const void *text, size_t len)
{
	struct xkv_udp_hdr h = { htons(id), htons(seq), htons(total), 0 };
	memcpy(d, &h, sizeof(h));
	memcpy(d + 8, text, len);
	return len + 8;
}

/* One request datagram (frame header added) through the slow path. */
static int ask_hdr(struct env *e, __u16 seq, __u16 total, const void *req, size_t len,
		   struct xkv_buf *out, struct xkv_udp_hdr *h)
{
	size_t dl = mkdgram(dgram_buf, REQ_ID, seq, total, req, len);
	out->len = 0;
	return xkv_slow_handle(e->sl, e->src, dgram_buf, dl, h, out, &e->delta);
}

int ask(struct env *e, const void *req, size_t len, struct xkv_buf *out)
{
	struct xkv_udp_hdr h;
	return ask_hdr(e, 0, 1, req, len, out, &h);
}

void expect_hdr(struct env *e, const char *what, __u16 seq, __u16 total, const void *req,
		       size_t rl, const void *want, size_t wl)
{
	struct xkv_buf out = {};
	struct xkv_udp_hdr h = {};
	char name[72];
	int ret = ask_hdr(e, seq, total, req, rl, &out, &h);
	int ok = out.len == wl && (!wl || !memcmp(out.p, want, wl)) && ret == (wl > 0) &&
		 h.req_id == htons(REQ_ID);

	if (!what) {
		short_name(name, sizeof(name), req, rl);
		what = name;
	}
	report(ok, "%s: %s", e->layout, what);
	if (!ok) {
		printf("    handle returned %d, req_id %#x\n", ret, ntohs(h.req_id));
		show_diff(out.p ? out.p : (const __u8 *)"", out.len, want, wl);
	}
	xkv_buf_free(&out);
}

void expect_n(struct env *e, const char *what, const void *req, size_t rl,
		     const void *want, size_t wl)
{
	expect_hdr(e, what, 0, 1, req, rl, want, wl);
}

/* flush_all runs on a thread: wait for it (0 once idle). */
int flush_wait(struct env *e, int timeout_ms)
{
	for (int i = 0; i < timeout_ms && xkv_slow_flush_busy(e->sl); i++)
		usleep(1000);
	return xkv_slow_flush_busy(e->sl) ? -1 : 0;
}

void flush_store(struct env *e)
{
	if (flush_wait(e, 10000))
		report(0, "%s: a flush_all still running", e->layout);
	int r = e->s.L->flush(&e->s, XKV_FLUSH_ALL);
	if (r)
		report(0, "%s: flush accessor returned %d", e->layout, r);
}

/* ---- framing -------------------------------------------------------------- */

int collect(void *arg, const __u8 *dgram, size_t dlen)
{
	struct frames *f = arg;
	if (f->n >= MAX_FRAMES || dlen > sizeof(f->d[0]))
		return -E2BIG;
	memcpy(f->d[f->n], dgram, dlen);
	f->len[f->n++] = dlen;
	return 0;
}

/* Put frames together by sequence number (they are walked backwards, so the
 * order they came in does not matter).  Checks sizes, ids and totals;
 * 0 and the text in *text, or -1 with the reason in why. */
int reassemble(const struct frames *f, __u16 req_id_be, struct xkv_buf *text, char *why, size_t wl)
{
	static const __u8 *by_seq[MAX_FRAMES];
	static size_t len_seq[MAX_FRAMES];
	int total = -1;

	memset(by_seq, 0, sizeof(by_seq));
	if (f->n == 0)
		return snprintf(why, wl, "no datagrams"), -1;
	for (int i = f->n - 1; i >= 0; i--) {
		struct xkv_udp_hdr h;
		if (f->len[i] < 8 || f->len[i] > XKV_DGRAM_MAX)
			return snprintf(why, wl, "datagram %d has %zu bytes", i, f->len[i]), -1;
		memcpy(&h, f->d[i], 8);
		int seq = ntohs(h.seq), tot = ntohs(h.total);
		if (h.req_id != req_id_be || h.reserved)
			return snprintf(why, wl, "datagram %d: req_id %#x reserved %u", i,
					ntohs(h.req_id), ntohs(h.reserved)), -1;
		if (total < 0)
			total = tot;
		if (tot != total || seq >= tot || by_seq[seq])
			return snprintf(why, wl, "datagram %d: seq %d total %d (first total %d)", i, seq,
					tot, total), -1;
		by_seq[seq] = f->d[i] + 8;
		len_seq[seq] = f->len[i] - 8;
	}
	if (total != f->n)
		return snprintf(why, wl, "total %d but %d datagrams", total, f->n), -1;
	text->len = 0;
	for (int s = 0; s < total; s++) {
		if (s < total - 1 && len_seq[s] != XKV_DGRAM_TEXT)
			return snprintf(why, wl, "datagram seq %d not full: %zu text bytes", s, len_seq[s]), -1;
		tput(text, by_seq[s], len_seq[s]);
	}
	return 0;
}

/* The reply of req, framed, must reassemble to want in ndgrams datagrams. */
void expect_framed(struct env *e, const char *what, const struct xkv_buf *req,
			  const struct xkv_buf *want, int ndgrams)
{
	static struct frames f;
	struct xkv_buf out = {}, text = {};
	struct xkv_udp_hdr h;
	char why[200] = "";

	ask_hdr(e, 0, 1, req->p, req->len, &out, &h);
	f.n = 0;
	int n = xkv_slow_frame(h.req_id, out.p, out.len, collect, &f);
	int ok = n == ndgrams && n == f.n && !reassemble(&f, htons(REQ_ID), &text, why, sizeof(why)) &&
		 text.len == want->len && !memcmp(text.p, want->p, want->len);
	report(ok, "%s: %s: %d datagrams reassemble by seq", e->layout, what, ndgrams);
	if (!ok) {
		printf("    frame returned %d (want %d), %d collected; %s\n", n, ndgrams, f.n, why);
		show_diff(text.p ? text.p : (const __u8 *)"", text.len, want->p, want->len);
	}
	xkv_buf_free(&out);
	xkv_buf_free(&text);
}

void fill(__u8 *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (__u8)('!' + (i * 7 + seed * 13) % 90);
}

/* Value of "STAT name v" in a stats reply; -1 if missing or twice. */
int stat_field(const struct xkv_buf *b, const char *name, char *val, size_t vl)
{
	char pat[96];
	int found = 0;
	snprintf(pat, sizeof(pat), "STAT %s ", name);
	size_t pl = strlen(pat);
	for (size_t i = 0; i + pl <= b->len; i++) {
		if ((i == 0 || b->p[i - 1] == '\n') && !memcmp(b->p + i, pat, pl)) {
			size_t j = i + pl, k = 0;
			while (j < b->len && b->p[j] != '\r' && k + 1 < vl)
				val[k++] = (char)b->p[j++];
			val[k] = 0;
			found++;
		}
	}
	return found == 1 ? 0 : -1;
}

/* The item as the accessor reads it; 0 with *it filled, -1 when absent. */
int item_of(struct env *e, const char *key, struct xkv_item *it)
{
	return e->s.L->get(&e->s, key, (__u32)strlen(key), it) == 1 ? 0 : -1;
}

__u64 cas_of(struct env *e, const char *key)
{
	static struct xkv_item it;
	return item_of(e, key, &it) ? 0 : it.wtime_ns;
}

/* Bytes arrive; run what is complete.  Returns the stream's verdict. */
int feed(struct env *e, struct conn *c, const void *p, size_t n)
{
	size_t used = 0;
	tput(&c->in, p, n);
	if (c->in.len > c->max_in)
		c->max_in = c->in.len;
	int rc = xkv_slow_stream(e->sl, c->src, &c->st, c->in.p, c->in.len, &used, &c->out, &e->delta);
	if (used > c->in.len) {
		report(0, "%s: consumed %zu of %zu bytes", e->layout, used, c->in.len);
		used = c->in.len;
	}
	memmove(c->in.p, c->in.p + used, c->in.len - used);
	c->in.len -= used;
	if (rc == XKV_STREAM_CLOSE)
		c->closed = 1;
	return rc;
}

void conn_free(struct conn *c)
{
	xkv_buf_free(&c->in);
	xkv_buf_free(&c->out);
}

int same(const struct xkv_buf *got, const void *want, size_t wl)
{
	return got->len == wl && (!wl || !memcmp(got->p, want, wl));
}

/* One request text fed whole: the replies must be want, in full. */
void expect(struct env *e, const char *what, const char *req, const char *want, int closes)
{
	struct conn c = {};
	feed(e, &c, req, strlen(req));
	int ok = same(&c.out, want, strlen(want)) && c.closed == closes && (closes || c.in.len == 0);
	report(ok, "%s: %s", e->layout, what);
	if (!ok) {
		printf("    closed %d, %zu bytes left unconsumed\n", c.closed, c.in.len);
		print_escaped("got ", c.out.p ? c.out.p : (const __u8 *)"", c.out.len, 300);
		print_escaped("want", (const __u8 *)want, strlen(want), 300);
	}
	conn_free(&c);
}

void clear(struct env *e)
{
	expect(e, "flush_all", "flush_all\r\n", "OK\r\n", 0);
	for (int i = 0; i < 5000 && xkv_slow_flush_busy(e->sl); i++)
		usleep(1000);
}

/* fn on a fresh store of every layout */
const char *env_only;

void each_layout(void (*fn)(struct env *e))
{
	for (int i = 0; xkv_layouts[i]; i++) {
		struct env e;
		if (env_only && strcmp(env_only, xkv_layouts[i]->name))
			continue;
		printf("== %s\n", xkv_layouts[i]->name);
		if (layout_unavailable(xkv_layouts[i]->name))
			continue;
		if (env_open(&e, xkv_layouts[i]->name, ENTRIES, VAL_CAP)) {
			n_fail++;
			continue;
		}
		fn(&e);
		env_close(&e);
	}
}
