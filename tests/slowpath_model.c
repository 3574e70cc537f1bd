// SPDX-License-Identifier: MIT
/* Slow path tests: random request streams on every layout, each reply
 * checked against the reference model (tests/refmodel.c). */
#include "slowpath_test.h"

/* ---- random command streams against the reference model -------------------
 *
 * Seeded random requests in batches of 1 to 4, on keys from a small set (so
 * that hits, misses, cas conflicts, non-numeric values and expired items all
 * come up), each batch one write to the stream entry (TCP) or one datagram
 * (UDP); each reply must be the model's (tests/refmodel.c), byte for byte.  The slow
 * path has no clock to inject, so the requests avoid what depends on it:
 * relative ttls are 0 (never), -1 (expired at once) or 1000 s (longer than
 * the run), and "t" or "me" are asked only of items without an expiry.
 * After flush_all the walk is waited for (on the hash layouts it may remove
 * an item written between its re-read and its delete: docs/protocol.md). */

struct mrun {
	struct env *e;
	struct rm_store m;
	__u64 rng;
	bool udp;
	struct conn c;
	int64_t now;
};

static __u64 mrand(struct mrun *r)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return r->rng;
}

static unsigned pick(struct mrun *r, unsigned n)
{
	return (unsigned)(mrand(r) % n);
}

static const char *const m_keys[] = { "a", "k1", "num", "zz9", "x" };
/* the same keys base64-encoded (mg/ms/md/ma/me b) */
static const char *const m_keys_b64[] = { "YQ==", "azE=", "bnVt", "eno5", "eA==" };
/* the last: over half the value cap, so that appends outgrow it */
static char m_big[VAL_CAP / 2 + 5];
static const char *const m_vals[] = { "0", "7", "42", "18446744073709551615", "18446744073709551614",
				      "abc", "", "x y", "100", m_big };
static const char *const m_ttls[] = { "0", "-1", "1000" };

/* the real store's cas for key (the model's rm_cas_fn) */
static __u64 real_cas(void *arg, const __u8 *key, __u32 klen)
{
	struct env *e = arg;
	static struct xkv_item it;
	return e->s.L->get(&e->s, key, klen, &it) == 1 ? it.wtime_ns : 0;
}

/* may a reply report key's seconds left?  only without a finite expiry */
static bool m_timeless(struct mrun *r, const char *key)
{
	const struct rm_item *it = rm_store_get(&r->m, key, (__u32)strlen(key), r->now);
	return !it || it->expire == RM_NEVER;
}

/* may the request with flags fl ask t of key?  its item has no expiry,
 * and fl sets none but 0 */
static bool m_t_ok(struct mrun *r, const char *key, const struct xkv_buf *fl)
{
	const char *p = fl->p ? (const char *)fl->p : "";
	const char *T = memmem(p, fl->len, " T", 2), *N = memmem(p, fl->len, " N", 2);
	return m_timeless(r, key) && (!T || T[2] == '0') && (!N || N[2] == '0');
}

/* a cas for key: mostly its own (from the model), else a wrong one */
static unsigned long long m_cas(struct mrun *r, const char *key)
{
	const struct rm_item *it = rm_store_get(&r->m, key, (__u32)strlen(key), r->now);
	unsigned w = pick(r, 4);
	if (it && w < 3)
		return it->cas;
	return w == 3 ? 1 : (it ? it->cas + 1 : 12345);
}

/* Append the meta flags: each of opts (a string of letters) with chance 1/3;
 * letters that take an argument get one.  No c with a ttl of -1: an item
 * stored already expired shows its cas to nobody, real_cas included. */
/* The seconds since an item's last access (mg's l<n>, me's la=<n>) as 0
 * in the meta reply lines of b: the model keeps no clock for them (the
 * fixtures and e2e_meta_age check their values against memcached). */
static void mask_ages(struct xkv_buf *b)
{
	size_t o = 0;
	for (size_t i = 0; i < b->len;) {
		const __u8 *p = b->p + i, *nl = memchr(p, '\n', b->len - i);
		size_t n = nl ? (size_t)(nl - p) + 1 : b->len - i;
		bool meta = n > 3 && (!memcmp(p, "HD ", 3) || !memcmp(p, "VA ", 3) || !memcmp(p, "ME ", 3));
		for (size_t j = 0; j < n;) {
			bool l = meta && j + 2 < n && p[j] == ' ' && p[j + 1] == 'l' &&
				 p[j + 2] >= '0' && p[j + 2] <= '9';
			bool la = meta && j + 3 < n && !memcmp(p + j, "la=", 3) && p[j + 3] >= '0' &&
				  p[j + 3] <= '9';
			if (l || la) {
				size_t k = j + (l ? 2 : 3);
				memmove(b->p + o, p + j, k - j);
				o += k - j;
				b->p[o++] = '0';
				for (j = k; j < n && p[j] >= '0' && p[j] <= '9'; j++)
					;
				continue;
			}
			b->p[o++] = p[j++];
		}
		i += n;
	}
	b->len = o;
}

static void m_flags(struct mrun *r, struct xkv_buf *b, const char *opts, const char *key, bool *b64)
{
	const char *ttl[2] = { m_ttls[pick(r, 3)], m_ttls[pick(r, 3)] };
	bool born_dead = !strcmp(ttl[0], "-1") || !strcmp(ttl[1], "-1");

	for (const char *o = opts; *o; o++) {
		if (pick(r, 3) || (*o == 'c' && born_dead))
			continue;
		switch (*o) {
		case 'T': case 'N': tprintf(b, " %c%s", *o, ttl[*o == 'N']); break;
		case 'R': tprintf(b, " R%s", pick(r, 2) ? "10" : "2000"); break; /* ttls: none or ~1000 s */
		case 'C': tprintf(b, " C%llu", m_cas(r, key)); break;
		case 'F': tprintf(b, " F%u", pick(r, 3) ? pick(r, 100) : 4294967295u); break;
		case 'D': tprintf(b, " D%s", m_vals[pick(r, 5)]); break;
		case 'J': tprintf(b, " J%u", pick(r, 1000)); break;
		case 'O': tprintf(b, " O%u", pick(r, 100000)); break;
		case 'b': *b64 = true; tprintf(b, " b"); break;
		default: tprintf(b, " %c", *o); break;
		}
	}
}

/* One random request appended to req, on a key not in *used (a bit per
 * key; the key is added), so that a batch writes each key at most once
 * and real_cas reads the stamp of that one write.  flush_all only when
 * alone.  Leaves out what the model cannot answer without a clock (see
 * above). */
static void m_request(struct mrun *r, struct xkv_buf *req, unsigned *used, bool alone)
{
	unsigned ki = pick(r, 5);
	while (*used & (1u << ki))
		ki = (ki + 1) % 5;
	*used |= 1u << ki;
	const char *k = m_keys[ki], *k2 = m_keys[pick(r, 5)];
	const char *v = pick(r, 4) ? m_vals[pick(r, 9)] : m_big;
	const char *nr = pick(r, 8) ? "" : " noreply";
	const char *ttl = m_ttls[pick(r, 3)];
	unsigned op = pick(r, 22);
	static const char *const stores[] = { "set", "add", "replace", "append", "prepend" };

	switch (op) {
	case 0: case 1:
		tprintf(req, "%s %s %s\r\n", pick(r, 2) ? "get" : "gets", k, k2);
		break;
	case 2:
		tprintf(req, "%s %s %s\r\n", pick(r, 2) ? "gat" : "gats", pick(r, 2) ? "0" : ttl, k);
		break;
	case 3: case 4: case 5:
		tprintf(req, "%s %s %u %s %zu%s\r\n%s\r\n", stores[pick(r, 5)], k, pick(r, 3),
			pick(r, 2) ? "0" : ttl, strlen(v), nr, v);
		break;
	case 6:
		tprintf(req, "cas %s %u 0 %zu %llu%s\r\n%s\r\n", k, pick(r, 3), strlen(v), m_cas(r, k), nr, v);
		break;
	case 7:
		tprintf(req, "%s %s %s%s\r\n", pick(r, 2) ? "incr" : "decr", k, m_vals[pick(r, 5)], nr);
		break;
	case 8:
		tprintf(req, "touch %s %s%s\r\n", k, ttl, nr);
		break;
	case 9:
		tprintf(req, "delete %s%s\r\n", k, nr);
		break;
	case 10:
		if (alone && pick(r, 4) == 0)
			tprintf(req, "flush_all%s\r\n", nr);
		else if (pick(r, 2))
			tprintf(req, "verbosity %u%s\r\n", pick(r, 3), nr);
		else
			tprintf(req, "mn\r\n");
		break;
	case 11: case 12: case 13: { /* mg */
		bool b = false;
		struct xkv_buf fl = {};
		m_flags(r, &fl, "bvfcksOqTNuRhl", k, &b);
		bool timeless = m_t_ok(r, k, &fl);
		tprintf(req, "mg %s", b ? m_keys_b64[ki] : k);
		tput(req, fl.p, fl.len);
		tprintf(req, "%s\r\n", timeless && pick(r, 2) ? " t" : "");
		xkv_buf_free(&fl);
		break;
	}
	case 14: case 15: case 16: { /* ms */
		static const char *const modes[] = { "", " MS", " ME", " MA", " MP", " MR", " Ma", " Ms" };
		bool b = false;
		struct xkv_buf fl = {};
		m_flags(r, &fl, "bFTCNqOkcI", k, &b);
		tprintf(req, "ms %s %zu%s", b ? m_keys_b64[ki] : k, strlen(v), modes[pick(r, 8)]);
		tput(req, fl.p, fl.len);
		tprintf(req, "\r\n%s\r\n", v);
		xkv_buf_free(&fl);
		break;
	}
	case 17: { /* md */
		bool b = false;
		struct xkv_buf fl = {};
		m_flags(r, &fl, "bCqOkIT", k, &b);
		tprintf(req, "md %s", b ? m_keys_b64[ki] : k);
		tput(req, fl.p, fl.len);
		tprintf(req, "\r\n");
		xkv_buf_free(&fl);
		break;
	}
	case 18: case 19: { /* ma */
		static const char *const modes[] = { "", " MI", " MD", " M+", " M-", " Md" };
		bool b = false;
		struct xkv_buf fl = {};
		m_flags(r, &fl, "bDNJTCqvcOk", k, &b);
		bool timeless = m_t_ok(r, k, &fl);
		tprintf(req, "ma %s%s", b ? m_keys_b64[ki] : k, modes[pick(r, 6)]);
		tput(req, fl.p, fl.len);
		tprintf(req, "%s\r\n", timeless && pick(r, 2) ? " t" : "");
		xkv_buf_free(&fl);
		break;
	}
	case 20:
		if (m_timeless(r, k))
			tprintf(req, pick(r, 2) ? "me %s\r\n" : "me %s b\r\n",
				pick(r, 2) ? k : m_keys_b64[ki]);
		else
			tprintf(req, "mn\r\n");
		break;
	default: { /* a flag error or a bad key encoding */
		static const char *const bad[] = {
			"mg %s v v\r\n", "mg %s h h\r\n", "mg %s hl\r\n", "mg %s E5\r\n", "md %s x\r\n",
			"ma %s MX\r\n", "mg %s= b\r\n", "md %s= b\r\n", "ms %s 1 I I\r\nx\r\n",
			"ms %s 1 E9\r\nx\r\n", "ma %s D-1\r\n", "mg %s Tx\r\n",
		};
		tprintf(req, bad[pick(r, sizeof(bad) / sizeof(bad[0]))], k);
		break;
	}
	}
}

/* The real slow path's reply to req: the stream entry, or one datagram. */
static void m_real(struct mrun *r, const struct xkv_buf *req, struct xkv_buf *out)
{
	if (r->udp) {
		ask(r->e, req->p, req->len, out);
		return;
	}
	r->c.out.len = 0;
	feed(r->e, &r->c, req->p, req->len);
	out->len = 0;
	tput(out, r->c.out.p, r->c.out.len);
}

/* Outcomes the random requests must reach (reply text that shows them),
 * or the run proves little. */
static const char *const m_outcomes[] = {
	"VALUE ", "END\r\n", "NOT_STORED", "EXISTS", "NOT_FOUND", "TOUCHED", "DELETED",
	"CLIENT_ERROR cannot increment", "SERVER_ERROR", "VA ", "HD", "EN\r\n", "NS", "EX", "NF",
	" W", " Z", " X", " b", "ME ", "CLIENT_ERROR invalid flag", "CLIENT_ERROR error decoding key",
	"18446744073709551615\r\n",
};
enum { M_OUTCOMES = sizeof(m_outcomes) / sizeof(m_outcomes[0]) };

static void t_model_run(struct env *e, __u64 seed, int steps, bool udp)
{
	int seen[M_OUTCOMES] = {};
	struct mrun r = { .e = e, .rng = seed * 2654435761u + 1, .udp = udp };
	struct rm_config cfg = {
		.kind = !strcmp(e->layout, "array_fnv") ? RM_ARRAY : !strcmp(e->layout, "arena") ? RM_PROBE : RM_HASH,
		.hash_seed = e->s.cfg.hash_seed,
		.key_cap = XKV_KEY_MAX, .val_cap = VAL_CAP, .entries = ENTRIES, .port = 11211,
	};
	struct xkv_buf req = {}, got = {};
	struct rm_text want = {};
	int step = 0, bad = 0, nreq = 0;

	memset(m_big, 'L', sizeof(m_big) - 1);

	flush_store(e);
	rm_store_init(&r.m, &cfg);
	/* a step: 1 to 4 requests on distinct keys, in one datagram or one
	 * write of the stream; the model answers them one after the other */
	for (; nreq < steps && !bad; step++) {
		unsigned n = 1 + pick(&r, 4), used = 0, mf = 0;
		size_t ends[4];
		req.len = 0;
		for (unsigned i = 0; i < n; i++) {
			m_request(&r, &req, &used, n == 1);
			ends[i] = req.len;
		}
		nreq += (int)n;
		r.now = (int64_t)time(NULL);
		m_real(&r, &req, &got);
		want.len = 0;
		for (unsigned i = 0; i < n && !mf; i++) {
			size_t from = i ? ends[i - 1] : 0;
			mf = rm_slow_request(&r.m, req.p + from, ends[i] - from, r.now, real_cas, e, &want) != 0;
		}
		mask_ages(&got);
		bad = mf || got.len != want.len || (got.len && memcmp(got.p, want.p, got.len));
		if (bad) {
			printf("    step %d of seed %llu (%s): %s\n", step, (unsigned long long)seed,
			       udp ? "udp" : "stream", mf ? want.fault : "replies differ");
			print_escaped("request", req.p, req.len, 300);
			show_diff(got.p ? got.p : (const __u8 *)"", got.len,
				  want.p ? want.p : (const __u8 *)"", want.len);
		}
		if (req.len > 9 && !memcmp(req.p, "flush_all", 9))
			flush_wait(e, 5000);
		for (int i = 0; i < M_OUTCOMES && got.len; i++)
			seen[i] += memmem(got.p, got.len, m_outcomes[i], strlen(m_outcomes[i])) != NULL;
	}
	report(!bad, "%s: %d random requests in %d batches of 1-4 over %s, seed %llu, each reply the "
	       "model's", e->layout, nreq, step, udp ? "UDP (a datagram per batch)" : "the stream entry",
	       (unsigned long long)seed);
	if (bad)
		goto out;
	int missing = 0;
	for (int i = 0; i < M_OUTCOMES; i++)
		if (!seen[i])
			printf("    never answered: \"%s\"\n", m_outcomes[i]);
	for (int i = 0; i < M_OUTCOMES; i++)
		missing += !seen[i];
	report(!missing, "%s: the requests reached every outcome (%d of %d; EXISTS %d, NOT_FOUND %d, "
	       "EX %d, W %d)", e->layout, M_OUTCOMES - missing, M_OUTCOMES, seen[3], seen[4], seen[13],
	       seen[15]);
out:
	rm_store_free(&r.m);
	conn_free(&r.c);
	xkv_buf_free(&req);
	xkv_buf_free(&got);
	rm_text_free(&want);
}

static __u64 model_seed;
static int model_steps = 3000;

static void t_model(struct env *e)
{
	t_model_run(e, model_seed, model_steps, false);
	t_model_run(e, model_seed + 1, model_steps, true);
}

/* Every layout, both entries, against the model.  seed 0: a new one (from
 * the clock; printed, so that a failure can be run again). */
int run_model(__u64 seed, int steps)
{
	if (!seed) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (__u64)ts.tv_sec * 1000003u + (__u64)ts.tv_nsec % 1000003u;
	}
	model_seed = seed;
	if (steps > 0)
		model_steps = steps;
	printf("seed %llu (run again: test_slowpath model %llu %d)\n", (unsigned long long)seed,
	       (unsigned long long)seed, model_steps);
	each_layout(t_model);
	return 0;
}
