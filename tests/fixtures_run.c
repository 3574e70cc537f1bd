// SPDX-License-Identifier: MIT
/* Packet fixtures: running a table row (frames through BPF_PROG_TEST_RUN,
 * checks against the model), loading a layout with its policy. */
#include "fixtures_test.h"

/* ---- running ---------------------------------------------------------------------- */

static const char *fam_name(int fam)
{
	return fam == FAM4 ? "IPv4" : "IPv6";
}

int64_t unix_now(void)
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

void fail(struct where *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fail(struct where *w, const char *fmt, ...)
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

void request_frame(struct pb *b, int fam, int idx)
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

/* The model's binary hit holds no cas (refmodel.h, cas_at): put in the one
 * the store holds for the item, which the slow path reports too. */
static void fill_cas(struct where *w, struct rm_result *res)
{
	static struct xkv_item it;

	if (!res->cas_at)
		return;
	int e = res->ntouched ? w->r->L->get(&w->r->st, res->touched[0].key,
					     res->touched[0].klen, &it) : -ENOENT;
	if (e != 1 || !it.wtime_ns) {
		fail(w, "test bug: no item (or cas 0) in the store for the model's hit (get: %d)", e);
		return;
	}
	for (int i = 0; i < 8; i++)
		res->text[res->cas_at + i] = (__u8)(it.wtime_ns >> (56 - 8 * i));
}

/* A binary request the program answered, or left silent as a quiet miss
 * or over the amplification cap: the slow path, on the same datagram, the
 * same source and the same store, must send exactly that payload, or
 * nothing (docs/protocol.md, "Binary protocol": the XDP answer is the slow
 * path's). */
static void check_slow_binary(struct where *w, const struct pb *req, const __u8 *in, int act,
			      const struct rm_result *res, const __u8 *out, __u32 outlen)
{
	size_t l3 = req->l3 == PB_L3_IPV4 ? (size_t)(in[14] & 0xf) * 4 : 40, udp = 14 + l3;
	size_t plen = (size_t)(in[udp + 4] << 8 | in[udp + 5]) - 8;
	const __u8 *payload = in + udp + 8;
	struct xkv_slow_src src = { .port = req->sport };
	struct xkv_udp_hdr hdr;
	struct xkv_buf got = {};
	struct xkv_stats delta = {};

	if (plen <= XKV_UDP_HDR_LEN || payload[XKV_UDP_HDR_LEN] != XKV_BIN_REQ || !w->r->sl)
		return;
	if (act != TX && !(act == DROP && (res->delta.v[XKV_STAT_noreply] ||
					   res->delta.v[XKV_STAT_drop_amp])))
		return;
	if (req->l3 == PB_L3_IPV4)
		xkv_addr_from_v4(src.addr, req->v4_src);
	else
		memcpy(src.addr, req->v6_src, 16);
	int rc = xkv_slow_handle(w->r->sl, &src, payload, plen, &hdr, &got, &delta);
	size_t off = 14 + (req->l3 == PB_L3_IPV4 ? 20 : 40) + 8 + XKV_UDP_HDR_LEN; /* the reply's */
	if (act == TX && (rc != 1 || outlen < off || got.len != outlen - off ||
			  memcmp(got.p, out + off, got.len))) {
		fail(w, "the slow path answers the binary request otherwise (rc %d)", rc);
		hexdiff(got.p, got.len, out + (outlen < off ? outlen : off), outlen < off ? 0 : outlen - off);
	} else if (act == DROP && got.len) {
		fail(w, "the slow path answers what the program left silent");
		hexdiff(NULL, 0, got.p, got.len);
	}
	xkv_buf_free(&got);
}

/* Send one frame; compare action, output frame and counters with the model.
 * want_act/want_reply/why: the table's expectation (want_act < 0: none;
 * want_len: the reply's bytes, 0: strlen; why: W(counter) the model must
 * move, 0: none).  A binary request is also run through the slow path
 * (check_slow_binary).  Returns the XDP action (or -1) and the output in
 * out/outlen. */
int send_frame(struct where *w, struct rm_store *m, const struct pb *req, int want_act,
		      const char *want_reply, size_t want_len, int why, __u8 *out, __u32 *outlen,
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
	if (want_reply && !want_len)
		want_len = strlen(want_reply);
	if (want_reply && (res.action != TX || res.text_len != want_len ||
			   memcmp(res.text, want_reply, res.text_len))) {
		fail(w, "test bug: the model's reply differs from the table's");
		print_text("table", (const __u8 *)want_reply, want_len);
		print_text("model", res.text, res.text_len);
	}
	if (why && !res.delta.v[why - 1])
		fail(w, "test bug: the model does not count %s", xkv_stat_names[why - 1]);
	fill_cas(w, &res);
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
	if (act == res.action)
		check_slow_binary(w, req, in, act, &res, out, *outlen);
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
void check_store(struct where *w, const struct rm_store *m, const __u8 (*keys)[XKV_KEY_MAX],
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

void keyset_add(struct keyset *ks, const void *k, __u32 len)
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
int seed_one(struct where *w, struct rm_store *m, const char *key, __u32 flags,
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

int flush_store(struct run *r)
{
	int e = r->L->flush(&r->st, XKV_FLUSH_ALL);
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
		if (st->text_len)
			pb_bytes(b, st->text, st->text_len);
		else if (st->text)
			pb_text(b, st->text);
		else
			fx->gen(b, unix_now());
		if (fx->mod)
			fx->mod(b);
		if (st->mod)
			st->mod(b);
		add_named_keys(r, b, &ks);
		send_frame(&w, &m, b, st->act, st->act == TX ? st->reply : NULL, st->reply_len,
			   st->why, out, &outlen, NULL);
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

void layout_close(struct run *r);

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
int layout_open(struct run *r, const char *name, __u32 entries, const struct table *t,
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
		.binary_keys = !!((flags | t->flags) & XKV_CFG_BINARY_KEYS),
		.big_max = r->st.cfg.big_chunks ? XKV_BIG_MAX : 0,
	};
	r->sl = xkv_slow_new(&r->st, NULL);
	if (!r->sl || policy_install(r, t)) {
		layout_close(r);
		return -1;
	}
	return 0;
}

void layout_close(struct run *r)
{
	xkv_slow_free(r->sl);
	r->sl = NULL;
	xkv_store_close(&r->st);
	bpf_object__close(r->obj);
	r->obj = NULL;
}

int pin_cpu(int cpu)
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

/* One request to the XDP program, checked against model m. */
int xdp_req(struct where *w, struct rm_store *m, const char *text, int want_act,
		   const char *want_reply, struct xkv_stats *delta)
{
	static __u8 out[PB_MAX + 64];
	struct pb *b = malloc(sizeof(*b));
	__u32 outlen;
	int act;

	w->step++;
	request_frame(b, w->fam, w->step);
	pb_text(b, text);
	act = send_frame(w, m, b, want_act, want_reply, 0, 0, out, &outlen, delta);
	free(b);
	return act;
}

void case_done(struct run *r, struct where *w)
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
int two_cpus(struct run *r, struct where *w)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2)
		return 0;
	printf("SKIP [%s] %s: needs 2 online CPUs, this machine has 1\n", r->L->name, w->name);
	r->skipped++;
	return -1;
}

/* Run on `cpu` from now on (BPF_PROG_TEST_RUN runs the program there); a CPU
 * this process may not use fails the case rather than testing the wrong one. */
int run_on(struct where *w, int cpu)
{
	if (!pin_cpu(cpu))
		return 0;
	fail(w, "cannot run on CPU %d", cpu);
	return -1;
}

/* array_fnv, 8 slots: two keys in one slot; the second store overwrites.
 * Run unseeded (plain FNV-1a, BMC's placement, requested explicitly with
 * hash_seed 0) and seeded (the keys that collide are others). */
void case_array_collision(struct run *r)
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

void run_table(struct run *r, const char *name, const struct table *t)
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
