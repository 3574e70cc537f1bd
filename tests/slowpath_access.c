// SPDX-License-Identifier: MIT
/* Slow path tests: the access rules (allow, write and trust lists), silence,
 * the amplification cap, the rate limit, reply budgets and request limits. */
#include "slowpath_test.h"

/* ---- issue 6: access rules, amplification, limits -------------------------- */

static void src_set(struct xkv_slow_src *src, const char *addr, __u16 port)
{
	struct xkv_acl_key k;
	char err[256];

	memset(src, 0, sizeof(*src));
	if (xkv_cidr_parse(addr, &k, err, sizeof(err)))
		report(0, "source %s: %s", addr, err);
	memcpy(src->addr, k.addr, 16);
	src->port = port;
}

static void acl(struct env *e, int list, const char *cidr)
{
	struct xkv_acl_key k;
	char err[256];
	int r = xkv_cidr_parse(cidr, &k, err, sizeof(err));
	if (!r)
		r = xkv_acl_add(&e->s, list, &k, XKV_ACL_USER);
	if (r)
		report(0, "%s: acl add %s %s: %d %s", e->layout, xkv_acl_list_names[list], cidr, r, err);
}

static void acl_clear(struct env *e)
{
	for (int l = 0; l < XKV_ACL__N; l++) {
		struct xkv_acl_key k, next;
		while (!bpf_map_get_next_key(e->s.acl_fd[l], NULL, &next)) {
			k = next;
			if (bpf_map_delete_elem(e->s.acl_fd[l], &k))
				break;
		}
	}
	xkv_acl_changed(&e->s);
}

/* The item's value through the accessor ("" when absent). */
static const char *peek(struct env *e, const char *key)
{
	static struct xkv_item it;
	static char v[64];
	if (e->s.L->get(&e->s, key, (__u32)strlen(key), &it) != 1)
		return "";
	snprintf(v, sizeof(v), "%.*s", (int)(it.len < 60 ? it.len : 60), it.data);
	return v;
}

/* req from src: want (a literal; "" = no reply) and one more of counter. */
static void expect_from(struct env *e, const struct xkv_slow_src *src, const char *what,
			const char *req, const char *want, int counter)
{
	__u64 before = counter >= 0 ? e->delta.v[counter] : 0;
	const struct xkv_slow_src *keep = e->src;
	e->src = src;
	expect_n(e, what, req, strlen(req), want, strlen(want));
	e->src = keep;
	if (counter >= 0)
		report(e->delta.v[counter] == before + 1, "%s: %s: %s counted (%llu -> %llu)", e->layout,
		       what, xkv_stat_names[counter], (unsigned long long)before,
		       (unsigned long long)e->delta.v[counter]);
}

/* Allow 10/8 and fd00::/8, write 10.1/16, trust 10.1.2.3. */
void t_access(struct env *e)
{
	struct xkv_slow_src rd, wr, out, rd6, p;

	flush_store(e);
	acl_clear(e);
	acl(e, XKV_ACL_ALLOW, "10.0.0.0/8");
	acl(e, XKV_ACL_ALLOW, "fd00::/8");
	acl(e, XKV_ACL_WRITE, "10.1.0.0/16");
	acl(e, XKV_ACL_TRUST, "10.1.2.3");
	src_set(&rd, "10.2.0.5", 40000);
	src_set(&wr, "10.1.0.9", 40000);
	src_set(&out, "192.0.2.1", 40000);
	src_set(&rd6, "fd00::5", 40000);

	/* no source (a local caller) is trusted; a writer writes */
	EXPECT(e, "set k 0 0 3\r\nold\r\n", "STORED\r\n");
	expect_from(e, &wr, "writer: set", "set w 0 0 1\r\nw\r\n", "STORED\r\n", XKV_STAT_requests);
	expect_from(e, &rd, "reader: get", "get k\r\n", "VALUE k 0 3\r\nold\r\nEND\r\n", XKV_STAT_requests);
	expect_from(e, &rd6, "IPv6 reader: get", "get k\r\n", "VALUE k 0 3\r\nold\r\nEND\r\n", XKV_STAT_requests);
	/* a stale item: a reader sees X but never takes the win token (it could
	 * not refill the item); the next writer to read it does */
	EXPECT(e, "set st 0 0 1\r\nx\r\nmd st I\r\n", "STORED\r\nHD\r\n");
	expect_from(e, &rd, "reader: mg of a stale item, X but no W", "mg st R100\r\n", "HD X\r\n", XKV_STAT_requests);
	expect_from(e, &wr, "writer: mg of it, the token", "mg st\r\n", "HD X W\r\n", XKV_STAT_requests);
	expect_from(e, &rd, "reader: then Z", "mg st\r\n", "HD Z X\r\n", XKV_STAT_requests);

	/* refused sources: no reply, nothing changes, not a request */
	__u64 reqs = e->delta.v[XKV_STAT_requests];
	expect_from(e, &out, "outsider: get", "get k\r\n", "", XKV_STAT_drop_acl);
	expect_from(e, &out, "outsider: set", "set k 0 0 3\r\nnew\r\n", "", XKV_STAT_drop_acl);
	expect_from(e, &out, "outsider: bogus", "bogus\r\n", "", XKV_STAT_drop_acl);
	src_set(&p, "fe80::1", 40000);
	expect_from(e, &p, "IPv6 outsider: version", "version\r\n", "", XKV_STAT_drop_acl);
	report(!strcmp(peek(e, "k"), "old") && e->delta.v[XKV_STAT_requests] == reqs,
	       "%s: refused sources changed nothing and are not requests", e->layout);

	/* source ports: 0, the service port, below 1024 */
	__u16 ports[] = { 0, e->s.cfg.port, 1023, 53, 1 };
	for (size_t i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
		char what[64];
		src_set(&p, "10.1.2.3", ports[i]);
		snprintf(what, sizeof(what), "trusted source port %u refused", ports[i]);
		expect_from(e, &p, what, "version\r\n", "", XKV_STAT_drop_port);
	}
	src_set(&p, "10.1.2.3", 1024);
	expect_from(e, &p, "source port 1024 served", "version\r\n", XKV_VERSION_LINE, -1);

	/* writes from a reader: silence, and nothing of the datagram runs */
	static const char *const writes[] = {
		"set k 0 0 3\r\nnew\r\n", "add n 0 0 1\r\nx\r\n", "replace k 0 0 1\r\nx\r\n",
		"incr k 1\r\n", "decr k 1\r\n", "delete k\r\n", "flush_all\r\n",
		"set k 0 0 3 noreply\r\nnew\r\n",
		"get k\r\nset k 0 0 1\r\nx\r\n",
		"version\r\nget k\r\ndelete k noreply\r\n",
		"set k 0 0 3\r\nnew\r\nbogus\r\n",
	};
	for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
		char what[96], name[64];
		short_name(name, sizeof(name), writes[i], strlen(writes[i]));
		snprintf(what, sizeof(what), "reader: %s", name);
		expect_from(e, &rd, what, writes[i], "", XKV_STAT_drop_write_acl);
		expect_from(e, &rd6, what, writes[i], "", XKV_STAT_drop_write_acl);
	}
	report(!strcmp(peek(e, "k"), "old") && !strcmp(peek(e, "n"), "") && !xkv_slow_flush_busy(e->sl),
	       "%s: refused writes left the store unchanged (k '%s')", e->layout, peek(e, "k"));
	/* a line in error does not end the datagram (memcached goes on): the
	 * set after it is a write */
	expect_from(e, &rd, "reader: bogus line before a set", "get k\r\nbogus\r\nset k 0 0 1\r\nx\r\n",
		    "", XKV_STAT_drop_write_acl);

	/* sent to this host?  With XKV_HOST_CHECK_IP only to local_addrs */
	struct xkv_host h = { .flags = XKV_HOST_CHECK_IP };
	__u32 zero = 0;
	__u8 a16[16], plen = 120;
	src_set(&p, "10.0.0.1", 0);
	memcpy(a16, p.addr, 16);
	bpf_map_update_elem(e->s.host_fd, &zero, &h, BPF_ANY);
	bpf_map_update_elem(e->s.local_fd, a16, &plen, BPF_ANY);
	struct xkv_slow_src to = wr;
	to.has_dst = 1;
	memcpy(to.dst, a16, 16);
	expect_from(e, &to, "sent to a local address", "version\r\n", XKV_VERSION_LINE, -1);
	src_set(&p, "10.0.0.255", 0);
	memcpy(to.dst, p.addr, 16);
	expect_from(e, &to, "sent to a subnet broadcast: silence", "version\r\n", "", -1);
	h.flags = 0;
	bpf_map_update_elem(e->s.host_fd, &zero, &h, BPF_ANY);
	bpf_map_delete_elem(e->s.local_fd, a16);
	expect_from(e, &to, "no IP check: the broadcast is answered", "version\r\n", XKV_VERSION_LINE, -1);
	acl_clear(e);
}

/* Silence for what memcached would not answer either. */
void t_silence(struct env *e)
{
	struct xkv_slow_src wr;

	flush_store(e);
	EXPECT(e, "set k 0 0 1\r\nv\r\n", "STORED\r\n");
	e->delta.v[XKV_STAT_drop_frame] = 0;
	expect_hdr(e, "frame seq 1 total 2: silence", 1, 2, "get k\r\n", 7, "", 0);
	expect_hdr(e, "frame seq 0 total 3: silence", 0, 3, "set k 0 0 1\r\nx\r\n", 16, "", 0);
	report(e->delta.v[XKV_STAT_drop_frame] == 2 && !strcmp(peek(e, "k"), "v"),
	       "%s: drop_frame counted (%llu), store unchanged", e->layout,
	       (unsigned long long)e->delta.v[XKV_STAT_drop_frame]);

	static const char *const replies[] = {
		"ERROR\r\n", "VALUE k 0 1\r\nx\r\nEND\r\n", "42\r\n", "STORED\r\n", "END\r\n",
		"SERVER_ERROR busy\r\n", "CLIENT_ERROR bad data chunk\r\n", "STAT pid 1\r\n",
		"VERSION 1.6.9\r\n", "HD\r\n", "get k\r\nEND\r\n", "set k 0 0 1\r\nx\r\nNOT_FOUND\r\n",
	};
	for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
		char what[96], name[64];
		short_name(name, sizeof(name), replies[i], strlen(replies[i]));
		snprintf(what, sizeof(what), "reply-shaped %s: silence", name);
		expect_from(e, NULL, what, replies[i], "", XKV_STAT_drop_reply);
	}
	report(!strcmp(peek(e, "k"), "v"), "%s: a reply-shaped datagram ran none of its commands", e->layout);
	EXPECT(e, "GET k\r\n", "ERROR\r\n");
	EXPECT(e, "bogus\r\n", "ERROR\r\n");
	EXPECT(e, "Stored\r\n", "ERROR\r\n");
	EXPECT(e, "-1\r\n", "ERROR\r\n");
	/* the same from a source the lists allow */
	acl(e, XKV_ACL_ALLOW, "any");
	acl(e, XKV_ACL_WRITE, "any");
	src_set(&wr, "10.1.0.9", 40000);
	expect_from(e, &wr, "from a source: ERROR is silence", "ERROR\r\n", "", XKV_STAT_drop_reply);
	expect_from(e, &wr, "from a source: GET is ERROR", "GET k\r\n", "ERROR\r\n", XKV_STAT_err_unknown);
	acl_clear(e);
}

/* max_amp 10: an untrusted source gets 10 bytes per request byte. */
void t_amp(void)
{
	struct env e;
	struct xkv_slow_src rd, tr;
	static __u8 val[2000];
	struct xkv_buf req = {}, want = {};

	printf("== hash_map, max_amp 10\n");
	if (env_open_cfg(&e, "hash_map", 1024, VAL_CAP, 0, 10))
		return (void)n_fail++;
	acl(&e, XKV_ACL_ALLOW, "any");
	acl(&e, XKV_ACL_TRUST, "10.1.2.3");
	src_set(&rd, "10.2.0.5", 40000);
	src_set(&tr, "10.1.2.3", 40000);
	fill(val, sizeof(val), 9);
	tprintf(&req, "set big 0 0 2000\r\n");
	tput(&req, val, 2000);
	tprintf(&req, "\r\nset small 0 0 5\r\nhello\r\n");
	ask(&e, req.p, req.len, &want);

	/* "get big big\r\n": 21 bytes with the frame header, cap 210 */
	want.len = 0;
	for (int i = 0; i < 2; i++) {
		tprintf(&want, "VALUE big 0 2000\r\n");
		tput(&want, val, 2000);
		tprintf(&want, "\r\n");
	}
	tprintf(&want, "END\r\n");
	expect_from(&e, &rd, "untrusted multi-get of a big value", "get big big\r\n", XKV_R_AMP, XKV_STAT_amp_capped);
	e.src = &tr;
	expect_n(&e, "trusted multi-get of a big value: all of it", "get big big\r\n", 13, want.p, want.len);
	/* an open TCP connection from rd's address (tcp_peers, counted: two
	 * connections count twice) lifts no cap: a UDP source address can be
	 * spoofed (issue 17, item 4) */
	int tp = xkv_tcp_peer(&e.s, rd.addr, 1) | xkv_tcp_peer(&e.s, rd.addr, 1) |
		 xkv_tcp_peer(&e.s, rd.addr, -1);
	report(tp == 0, "tcp_peers: two connections opened and one closed (%d)", tp);
	e.src = &rd;
	expect_from(&e, &rd, "untrusted source with an open TCP connection: still capped",
		    "get big big\r\n", XKV_R_AMP, XKV_STAT_amp_capped);
	xkv_tcp_peer(&e.s, rd.addr, -1);
	e.src = NULL;
	expect_n(&e, "no source (local caller): all of it", "get big big\r\n", 13, want.p, want.len);
	expect_from(&e, &rd, "untrusted small reply under the cap", "get small\r\n",
		    "VALUE small 0 5\r\nhello\r\nEND\r\n", -1);
	/* "get edge\r\n" + its frame header: 18 bytes, 180 allowed on the wire:
	 * "VALUE edge 0 NNN\r\n" (18) + NNN + "\r\nEND\r\n" (7) + 8 */
	for (int extra = 0; extra < 2; extra++) {
		int n = 180 - 8 - 18 - 7 + extra;
		req.len = 0;
		tprintf(&req, "set edge 0 0 %d\r\n", n);
		tput(&req, val, (size_t)n);
		tprintf(&req, "\r\n");
		ask(&e, req.p, req.len, &want);
		want.len = 0;
		tprintf(&want, "VALUE edge 0 %d\r\n", n);
		tput(&want, val, (size_t)n);
		tprintf(&want, "\r\nEND\r\n");
		e.src = &rd;
		if (extra)
			expect_n(&e, "untrusted reply one byte over max_amp x request: capped", "get edge\r\n",
				 10, XKV_R_AMP, strlen(XKV_R_AMP));
		else
			expect_n(&e, "untrusted reply of exactly max_amp x request", "get edge\r\n", 10,
				 want.p, want.len);
		e.src = NULL;
	}
	env_close(&e);

	printf("== hash_map, max_amp 10, --strict, --allow-low-ports\n");
	if (env_open_cfg(&e, "hash_map", 1024, VAL_CAP, XKV_CFG_STRICT | XKV_CFG_LOW_PORTS, 10))
		return (void)n_fail++;
	acl(&e, XKV_ACL_ALLOW, "any");
	acl(&e, XKV_ACL_TRUST, "10.1.2.3");
	req.len = 0;
	tprintf(&req, "set big 0 0 2000\r\n");
	tput(&req, val, 2000);
	tprintf(&req, "\r\n");
	ask(&e, req.p, req.len, &want);
	expect_from(&e, &tr, "strict: a trusted source is capped too", "get big big\r\n", XKV_R_AMP,
		    XKV_STAT_amp_capped);
	struct xkv_slow_src p;
	src_set(&p, "10.1.2.3", 53);
	expect_from(&e, &p, "--allow-low-ports: source port 53 served", "version\r\n",
		    XKV_VERSION_LINE, XKV_STAT_requests);
	src_set(&p, "10.1.2.3", 0);
	expect_from(&e, &p, "--allow-low-ports: source port 0 still refused", "version\r\n", "",
		    XKV_STAT_drop_port);
	src_set(&p, "10.1.2.3", e.s.cfg.port);
	expect_from(&e, &p, "--allow-low-ports: the service port still refused", "version\r\n", "",
		    XKV_STAT_drop_port);
	env_close(&e);

	printf("== hash_map, max_amp 1\n");
	if (env_open_cfg(&e, "hash_map", 1024, VAL_CAP, 0, 1))
		return (void)n_fail++;
	acl(&e, XKV_ACL_ALLOW, "any");
	ask(&e, req.p, req.len, &want);
	expect_from(&e, &rd, "max_amp 1: not even the SERVER_ERROR fits: nothing", "get big\r\n", "",
		    XKV_STAT_drop_amp);
	expect_from(&e, &rd, "max_amp 1: a longer request, still nothing", "get big nothere\r\n",
		    "", XKV_STAT_drop_amp);
	expect_from(&e, &rd, "max_amp 1: END for a long miss fits", "get nothere_but_a_long_key\r\n",
		    "END\r\n", -1);
	env_close(&e);
	xkv_buf_free(&req);
	xkv_buf_free(&want);
}

/* --rate-limit in the slow path (ratelimit.h): what reaches serve's socket
 * past the XDP program (fragments, options, VLAN tags) is limited per /24 or
 * /64 as the program limits the rest. */
void t_ratelimit(void)
{
	struct env e;
	struct xkv_slow_src a, a2, b, c6, c6b, d6;
	char what[96];

	printf("== hash_map, --rate-limit 2 --rate-burst 3\n");
	env_rate_limit = 2;
	env_rate_burst = 3;
	int r = env_open(&e, "hash_map", 1024, VAL_CAP);
	env_rate_limit = env_rate_burst = 0;
	if (r)
		return (void)n_fail++;
	acl(&e, XKV_ACL_ALLOW, "any");
	src_set(&a, "10.1.2.3", 40000);
	src_set(&a2, "10.1.2.77", 40001);
	src_set(&b, "10.1.3.3", 40000);
	src_set(&c6, "fd00::1", 40000);
	src_set(&c6b, "fd00::2", 40000);
	src_set(&d6, "fd00:0:0:1::1", 40000);
	for (int i = 1; i <= 3; i++) {
		snprintf(what, sizeof(what), "IPv4 request %d of a burst of 3: served", i);
		expect_from(&e, &a, what, "version\r\n", XKV_VERSION_LINE, XKV_STAT_requests);
	}
	expect_from(&e, &a, "the 4th at once: nothing", "version\r\n", "", XKV_STAT_drop_ratelimit);
	expect_from(&e, &a2, "another address of the same /24: nothing", "version\r\n", "",
		    XKV_STAT_drop_ratelimit);
	expect_from(&e, &b, "another /24: served", "version\r\n", XKV_VERSION_LINE, XKV_STAT_requests);
	for (int i = 1; i <= 3; i++) {
		snprintf(what, sizeof(what), "IPv6 request %d of a burst of 3: served", i);
		expect_from(&e, &c6, what, "version\r\n", XKV_VERSION_LINE, XKV_STAT_requests);
	}
	expect_from(&e, &c6b, "another address of the same /64: nothing", "version\r\n", "",
		    XKV_STAT_drop_ratelimit);
	expect_from(&e, &d6, "another /64: served", "version\r\n", XKV_VERSION_LINE, XKV_STAT_requests);
	usleep(600 * 1000); /* 2/s: one more request's worth after 0.5 s */
	expect_from(&e, &a, "0.6 s later: one more served", "version\r\n", XKV_VERSION_LINE,
		    XKV_STAT_requests);
	expect_from(&e, &a, "... and only one", "version\r\n", "", XKV_STAT_drop_ratelimit);
	env_close(&e);

	printf("== hash_map, no --rate-limit\n");
	if (env_open(&e, "hash_map", 1024, VAL_CAP))
		return (void)n_fail++;
	acl(&e, XKV_ACL_ALLOW, "any");
	for (int i = 1; i <= 20; i++)
		expect_from(&e, &a, "no limit: 20 at once served", "version\r\n", XKV_VERSION_LINE,
			    XKV_STAT_requests);
	env_close(&e);
}

/* A value above --value-size asked by a source whose reply budget it would
 * pass (the amplification cap): refused before its chunks are read (they
 * are removed here, so a read would show as a miss or busy); mg without v
 * needs none of them at all. */
void t_big_budget(void)
{
	struct env e;
	struct xkv_slow_src rd;
	static __u8 val[20000];
	struct xkv_buf req = {}, want = {};

	printf("== hash_map, max_amp 10, a big map\n");
	env_big_chunks = 64;
	int r = env_open_cfg(&e, "hash_map", 1024, VAL_CAP, 0, 10);
	env_big_chunks = 0;
	if (r)
		return (void)n_fail++;
	acl(&e, XKV_ACL_ALLOW, "any");
	src_set(&rd, "10.2.0.5", 40000);
	fill(val, sizeof(val), 5);
	tprintf(&req, "set bv 0 0 20000\r\n");
	tput(&req, val, sizeof(val));
	tprintf(&req, "\r\n");
	ask(&e, req.p, req.len, &want);
	long gone = 0;
	struct xkv_big_key k;
	while (!bpf_map_get_next_key(e.s.big_fd, NULL, &k) && !bpf_map_delete_elem(e.s.big_fd, &k))
		gone++;
	report(gone == 6, "big budget: the value's 6 chunks removed behind the store's back (%ld)", gone);
	expect_from(&e, &rd, "get of a 20000-byte value over the cap: refused unread", "get bv\r\n", XKV_R_AMP,
		    XKV_STAT_amp_capped);
	expect_from(&e, &rd, "mg v of it: the same", "mg bv v\r\n", XKV_R_AMP, XKV_STAT_amp_capped);
	expect_from(&e, &rd, "mg s of it: the head only, no chunk read", "mg bv s\r\n", "HD s20000\r\n", -1);
	env_close(&e);
	xkv_buf_free(&req);
	xkv_buf_free(&want);
}

/* max_keys and max_reply, the defaults and set ones. */
void t_limits(void)
{
	struct env e;
	struct xkv_buf req = {}, out = {};
	static __u8 val[VAL_CAP];
	char err[64];

	printf("== hash_map, request limits\n");
	if (env_open(&e, "hash_map", 1024, VAL_CAP))
		return (void)n_fail++;
	struct xkv_slow_limits dl = xkv_slow_limits_of(e.sl);
	report(dl.max_keys == 256 && dl.max_reply == 2u << 20, "defaults: max_keys %u max_reply %u",
	       dl.max_keys, dl.max_reply);
	fill(val, sizeof(val), 4);
	tprintf(&req, "set v 0 0 %d\r\n", VAL_CAP);
	tput(&req, val, VAL_CAP);
	tprintf(&req, "\r\nset s 0 0 1\r\ns\r\n");
	ask(&e, req.p, req.len, &out);

	/* 256 keys: served; 257: refused before anything runs */
	for (int n = 256; n <= 257; n++) {
		req.len = 0;
		tprintf(&req, "get");
		for (int i = 0; i < n; i++)
			tprintf(&req, " s");
		tprintf(&req, "\r\n");
		__u64 before = e.delta.v[XKV_STAT_drop_oversize];
		ask(&e, req.p, req.len, &out);
		int ok = n == 256 ? out.len == 256 * 16 + 5 && e.delta.v[XKV_STAT_drop_oversize] == before
				  : out.len == strlen(XKV_R_TOO_MANY_KEYS) &&
					    !memcmp(out.p, XKV_R_TOO_MANY_KEYS, out.len) &&
					    e.delta.v[XKV_STAT_drop_oversize] == before + 1;
		report(ok, "hash_map: get of %d keys: %s (%zu bytes)", n, n == 256 ? "served" : "too many keys",
		       out.len);
	}
	req.len = 0;
	tprintf(&req, "set z 0 0 1\r\nz\r\nget");
	for (int i = 0; i < 300; i++)
		tprintf(&req, " s");
	tprintf(&req, "\r\n");
	EXPECTL(&e, "a set before a get of 300 keys does not run", &req, XKV_R_TOO_MANY_KEYS);
	report(!strcmp(peek(&e, "z"), ""), "hash_map: z not stored ('%s')", peek(&e, "z"));

	/* 2 MiB: 240 copies of 8192 bytes fit, 256 do not */
	for (int n = 240; n <= 256; n += 16) {
		req.len = 0;
		tprintf(&req, "get");
		for (int i = 0; i < n; i++)
			tprintf(&req, " v");
		tprintf(&req, "\r\n");
		__u64 before = e.delta.v[XKV_STAT_drop_oversize];
		ask(&e, req.p, req.len, &out);
		size_t full = (size_t)n * (sizeof("VALUE v 0 8192\r\n") - 1 + VAL_CAP + 2) + 5;
		int ok = n == 240 ? out.len == full
				  : out.len == strlen(XKV_R_REPLY_LARGE) &&
					    !memcmp(out.p, XKV_R_REPLY_LARGE, out.len) &&
					    e.delta.v[XKV_STAT_drop_oversize] == before + 1;
		report(ok, "hash_map: get of %d x %d bytes (%zu bytes): %s (%zu bytes)", n, VAL_CAP, full,
		       n == 240 ? "served" : "reply too large", out.len);
	}
	/* the buffer stays bounded: 9000 stats in one datagram */
	req.len = 0;
	for (int i = 0; i < 9000; i++)
		tprintf(&req, "stats\r\n");
	xkv_buf_free(&out);
	ask(&e, req.p, req.len, &out);
	report(out.len == strlen(XKV_R_REPLY_LARGE) && out.cap <= (4u << 20),
	       "hash_map: 9000 stats in a datagram: reply too large, buffer %zu bytes", out.cap);

	/* set limits (as --max-keys 3 --max-reply 4000) */
	struct xkv_slow_limits lim = { .max_keys = 3, .max_reply = 4000 };
	struct xkv_slow *def = e.sl;
	e.sl = xkv_slow_new(&e.s, &lim);
	EXPECT(&e, "get s s s\r\n", "VALUE s 0 1\r\ns\r\nVALUE s 0 1\r\ns\r\nVALUE s 0 1\r\ns\r\nEND\r\n");
	EXPECT(&e, "get s s s s\r\n", XKV_R_TOO_MANY_KEYS);
	EXPECT(&e, "get v\r\n", XKV_R_REPLY_LARGE);
	EXPECT(&e, "set v 0 0 3\r\nabc\r\nget v\r\n", "STORED\r\nVALUE v 0 3\r\nabc\r\nEND\r\n");
	snprintf(err, sizeof(err), "%s", peek(&e, "v"));
	report(!strcmp(err, "abc"), "hash_map: what ran before the reply grew too large stays (v '%s')", err);
	xkv_slow_free(e.sl);
	lim.max_keys = 100000; /* above what the parser holds: capped */
	lim.max_reply = 0xffffffffu;
	e.sl = xkv_slow_new(&e.s, &lim);
	dl = xkv_slow_limits_of(e.sl);
	report(dl.max_keys == XKV_SLOW_MAX_KEYS_CAP && dl.max_reply == 0xffffu * XKV_DGRAM_MAX,
	       "limits capped to what a request can hold: max_keys %u max_reply %u", dl.max_keys,
	       dl.max_reply);
	xkv_slow_free(e.sl);
	e.sl = def;
	env_close(&e);
	xkv_buf_free(&req);
	xkv_buf_free(&out);
}
