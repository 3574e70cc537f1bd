// SPDX-License-Identifier: MIT
/* Slow path tests: xkv_serve on lo in a thread and in a forked process that
 * drops its privileges; real UDP clients over IPv4 and IPv6. */
#include "slowpath_test.h"

/* ---- daemon --------------------------------------------------------------- */

struct daemon {
	struct xkv_store *s;
	struct xkv_serve_opts o;
	volatile sig_atomic_t stop;
	int rc;
	char err[XKV_ERRLEN];
};

static void *daemon_main(void *arg)
{
	struct daemon *d = arg;
	d->rc = xkv_serve(d->s, &d->o, d->err, sizeof(d->err));
	return NULL;
}

static int wait_ready(int fd);

/* xkv_serve on lo in a thread; 0 once it said ready. */
static int daemon_start(struct daemon *d, pthread_t *th, struct xkv_store *s, __u16 port, unsigned push_ms)
{
	int pfd[2];

	memset(d, 0, sizeof(*d));
	if (pipe(pfd))
		return -1;
	d->s = s;
	d->o = (struct xkv_serve_opts){ .ifname = "lo", .port = port, .stop = &d->stop,
					.ready_fd = pfd[1], .push_ms = push_ms };
	if (pthread_create(th, NULL, daemon_main, d)) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	int ready = wait_ready(pfd[0]);
	close(pfd[0]);
	if (ready) {
		d->stop = 1;
		pthread_join(*th, NULL);
	}
	return ready;
}

static int wait_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[16] = "";
	if (poll(&p, 1, 5000) != 1)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	return n == 6 && !memcmp(buf, "ready\n", 6) ? 0 : -1;
}

/* Send one request, gather datagrams of req_id until the total is in (or
 * timeout); each must come from want_from. */
static int udp_ask(int fd, const struct sockaddr *to, socklen_t tl, __u16 id, __u16 seq, __u16 total,
		   const void *text, size_t len, struct frames *f, int timeout_ms, int *bad_src)
{
	static __u8 d[70000];
	size_t dl = mkdgram(d, id, seq, total, text, len);
	f->n = 0;
	*bad_src = 0;
	if (sendto(fd, d, dl, 0, to, tl) != (ssize_t)dl)
		return -errno;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, timeout_ms) != 1)
			return f->n;
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, d, sizeof(d), 0, (struct sockaddr *)&from, &fl);
		if (n < 8)
			continue;
		struct xkv_udp_hdr h;
		memcpy(&h, d, 8);
		if (ntohs(h.req_id) != id)
			continue; /* a late answer to an earlier request */
		if (fl != tl || memcmp(&from, to, tl) != 0)
			(*bad_src)++;
		collect(f, d, (size_t)n);
		if (f->n >= ntohs(h.total))
			return f->n;
	}
}

static void daemon_check(int fd, const struct sockaddr *to, socklen_t tl, const char *what, __u16 id,
			 const struct xkv_buf *req, const struct xkv_buf *want, int ndgrams)
{
	static struct frames f;
	struct xkv_buf text = {};
	char why[200] = "";
	int bad_src = 0;
	int n = udp_ask(fd, to, tl, id, 0, 1, req->p, req->len, &f, 2000, &bad_src);
	int ok = n == ndgrams && !bad_src && !reassemble(&f, htons(id), &text, why, sizeof(why)) &&
		 text.len == want->len && !memcmp(text.p, want->p, want->len);
	report(ok, "daemon: %s (%d datagrams)", what, ndgrams);
	if (!ok) {
		printf("    got %d datagrams, %d from a wrong source; %s\n", n, bad_src, why);
		show_diff(text.p ? text.p : (const __u8 *)"", text.len, want->p, want->len);
	}
	xkv_buf_free(&text);
}

/* A user without privileges asking for a privileged port is told so. */
static void check_unprivileged(struct xkv_store *s)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_unprivileged_port_start", "r");
	int start = 1024;
	if (f) {
		if (fscanf(f, "%d", &start) != 1)
			start = 1024;
		fclose(f);
	}
	if (start <= 1) {
		printf("SKIP daemon: every port is unprivileged here\n");
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		char err[XKV_ERRLEN] = "";
		volatile sig_atomic_t stop = 0;
		struct xkv_serve_opts o = { .ifname = "lo", .port = (__u16)(start - 1), .stop = &stop,
					    .ready_fd = -1 };
		if (setgid(65534) || setuid(65534))
			_exit(3);
		int rc = xkv_serve(s, &o, err, sizeof(err));
		printf("    as uid 65534, port %d: rc %d: %s\n", start - 1, rc, err);
		fflush(stdout);
		_exit(rc < 0 && strstr(err, "needs root") ? 0 : 1);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	report(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "daemon: a privileged port without privileges is reported as needing root");
}

static volatile sig_atomic_t child_stop;

static void on_term(int sig)
{
	child_stop = sig;
}

/* "Name:\tvalue" of a /proc status file ("" if missing). */
static void status_field(const char *path, const char *name, char *val, size_t vl)
{
	char line[256];
	size_t nl = strlen(name);
	FILE *f = fopen(path, "r");

	val[0] = 0;
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, name, nl) && line[nl] == ':') {
			snprintf(val, vl, "%s", line + nl + 1 + strspn(line + nl + 1, " \t"));
			val[strcspn(val, "\n")] = 0;
		}
	}
	if (f)
		fclose(f);
}

/* A forked server that drops to nobody keeps serving, and keeps the host
 * map current (xkv_host_sync on map fds it opened as root). */
static void check_privdrop(struct xkv_store *s, __u16 port, int fd4)
{
	int pfd[2], efd[2];
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct xkv_buf req = {}, want = {};

	if (pipe(pfd) || pipe(efd))
		return (void)report(0, "daemon: pipe");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = on_term };
		char err[XKV_ERRLEN] = "";
		struct xkv_serve_opts o = { .ifname = "lo", .port = port, .stop = &child_stop,
					    .ready_fd = pfd[1], .drop_user = "nobody", .sync_ms = 100,
					    .verbose = 1 };
		close(pfd[0]);
		close(efd[0]);
		dup2(efd[1], 2);
		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		int rc = xkv_serve(s, &o, err, sizeof(err));
		if (rc)
			fprintf(stderr, "xkv_serve: %s\n", err);
		_exit(rc ? 1 : 0);
	}
	close(pfd[1]);
	close(efd[1]);
	int ready = wait_ready(pfd[0]);
	close(pfd[0]);
	report(pid > 0 && !ready, "daemon: forked server with drop_user \"nobody\" ready on port %u", port);

	/* every thread of it: no uid 0, no capability, no_new_privs */
	char dir[64], path[128], uid[64], eff[64], prm[64], nnp[16];
	int threads = 0, ok = 1;
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	FILE *ls = NULL;
	snprintf(path, sizeof(path), "ls %s", dir);
	ls = popen(path, "r");
	char tid[32];
	while (ls && fgets(tid, sizeof(tid), ls)) {
		tid[strcspn(tid, "\n")] = 0;
		snprintf(path, sizeof(path), "%s/%s/status", dir, tid);
		status_field(path, "Uid", uid, sizeof(uid));
		status_field(path, "CapEff", eff, sizeof(eff));
		status_field(path, "CapPrm", prm, sizeof(prm));
		status_field(path, "NoNewPrivs", nnp, sizeof(nnp));
		int t_ok = !strcmp(uid, "65534\t65534\t65534\t65534") && !strcmp(eff, "0000000000000000") &&
			   !strcmp(prm, "0000000000000000") && !strcmp(nnp, "1");
		printf("    thread %s: Uid %s CapEff %s CapPrm %s NoNewPrivs %s\n", tid, uid, eff, prm, nnp);
		ok &= t_ok;
		threads++;
	}
	if (ls)
		pclose(ls);
	report(ok && threads >= 2, "daemon: after the drop, %d threads run as uid 65534 with no capabilities",
	       threads);

	tprintf(&req, "set priv 5 0 4\r\nkept\r\n");
	tprintf(&want, "STORED\r\n");
	daemon_check(fd4, (void *)&a4, sizeof(a4), "as nobody: set", 301, &req, &want, 1);
	req.len = want.len = 0;
	tprintf(&req, "get priv\r\n");
	tprintf(&want, "VALUE priv 5 4\r\nkept\r\nEND\r\n");
	daemon_check(fd4, (void *)&a4, sizeof(a4), "as nobody: get", 302, &req, &want, 1);
	req.len = want.len = 0;
	tprintf(&req, "flush_all\r\nget priv\r\n");
	tprintf(&want, "OK\r\nEND\r\n");
	daemon_check(fd4, (void *)&a4, sizeof(a4), "as nobody: flush_all", 303, &req, &want, 1);

	/* the host map follows the interface: a stale address goes */
	__u8 stale[16], plen = 120, v;
	struct in_addr sa4 = { htonl(0xc0000263) }; /* 192.0.2.99 */
	xkv_addr_from_v4(stale, &sa4);
	int put = bpf_map_update_elem(s->local_fd, stale, &plen, BPF_ANY);
	int gone = 0;
	for (int i = 0; i < 300 && !gone; i++) {
		usleep(10 * 1000);
		gone = bpf_map_lookup_elem(s->local_fd, stale, &v) && errno == ENOENT;
	}
	__u8 lo16[16];
	struct in_addr lo = { htonl(INADDR_LOOPBACK) };
	xkv_addr_from_v4(lo16, &lo);
	int has_lo = !bpf_map_lookup_elem(s->local_fd, lo16, &v);
	report(!put && gone && has_lo, "daemon: as nobody, host sync removed a stale local address (%d) and keeps 127.0.0.1 (%d)",
	       gone, has_lo);

	kill(pid, SIGTERM);
	int st = -1;
	waitpid(pid, &st, 0);
	char log[4096] = "";
	ssize_t ln = read(efd[0], log, sizeof(log) - 1);
	close(efd[0]);
	if (ln > 0)
		log[ln] = 0;
	printf("    server log:\n%s", log);
	report(WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon: the dropped server stopped cleanly (status %#x)", st);
	report(strstr(log, "dropped privileges: uid 0 -> 65534") != NULL, "daemon: the drop is logged");
	xkv_buf_free(&req);
	xkv_buf_free(&want);
}

int run_daemon(void)
{
	struct env e;
	struct daemon d = {};
	static __u8 val[5000];
	struct xkv_buf req = {}, want = {};
	__u16 port = (__u16)(21000 + getpid() % 1000);
	pthread_t th;
	char err[XKV_ERRLEN];

	if (env_open(&e, "hash_map", 1024, VAL_CAP))
		return n_fail++, 0;
	if (xkv_policy_open_all(&e.s)) /* the lists start empty: nobody would be served */
		report(0, "daemon: xkv_policy_open_all");
	int ready = daemon_start(&d, &th, &e.s, port, 0);
	report(!ready, "daemon: ready on lo UDP port %u%s%s", port, ready ? ": " : "", ready ? d.err : "");
	if (ready) {
		env_close(&e);
		return 0;
	}

	/* a second server on the same port, a missing interface */
	struct xkv_serve_opts o2 = { .ifname = "lo", .port = port, .stop = &d.stop, .ready_fd = -1 };
	int rc = xkv_serve(&e.s, &o2, err, sizeof(err));
	report(rc < 0 && strstr(err, "already in use"), "daemon: port in use reported: %s", err);
	o2.ifname = "xkvnosuch0";
	rc = xkv_serve(&e.s, &o2, err, sizeof(err));
	report(rc < 0 && strstr(err, "no such interface"), "daemon: missing interface reported: %s", err);

	check_unprivileged(&e.s);

	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd4 = socket(AF_INET, SOCK_DGRAM, 0), fd6 = socket(AF_INET6, SOCK_DGRAM, 0);
	int rcvbuf = 8 << 20;
	setsockopt(fd4, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	setsockopt(fd6, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	int sent = 0;

	fill(val, sizeof(val), 5);
	tprintf(&req, "set big 17 0 5000\r\n");
	tput(&req, val, 5000);
	tprintf(&req, "\r\n");
	tprintf(&want, "STORED\r\n");
	daemon_check(fd4, (void *)&a4, sizeof(a4), "IPv4 set of 5000 bytes", 101, &req, &want, 1);
	sent++;

	req.len = want.len = 0;
	tprintf(&req, "get big\r\n");
	tprintf(&want, "VALUE big 17 5000\r\n");
	tput(&want, val, 5000);
	tprintf(&want, "\r\nEND\r\n");
	int nd = (int)((want.len + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT);
	daemon_check(fd4, (void *)&a4, sizeof(a4), "IPv4 get of 5000 bytes from 127.0.0.1", 102, &req, &want, nd);
	daemon_check(fd6, (void *)&a6, sizeof(a6), "IPv6 get of 5000 bytes from ::1", 103, &req, &want, nd);
	sent += 2;

	req.len = want.len = 0;
	tprintf(&req, "version\r\nget nope big\r\ndelete nope\r\n");
	tprintf(&want, XKV_VERSION_LINE "VALUE big 17 5000\r\n");
	tput(&want, val, 5000);
	tprintf(&want, "\r\nEND\r\nNOT_FOUND\r\n");
	nd = (int)((want.len + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT);
	daemon_check(fd6, (void *)&a6, sizeof(a6), "IPv6 three commands in one datagram", 104, &req, &want, nd);
	sent++;

	/* many keys: a long reply */
	req.len = want.len = 0;
	tprintf(&req, "get");
	for (int i = 0; i < 200; i++) {
		tprintf(&req, " big");
		tprintf(&want, "VALUE big 17 5000\r\n");
		tput(&want, val, 5000);
		tprintf(&want, "\r\n");
	}
	tprintf(&req, "\r\n");
	tprintf(&want, "END\r\n");
	nd = (int)((want.len + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT);
	/* sent to 127.0.0.2: the reply must come from there, not from the
	 * address the routing table would pick (127.0.0.1) */
	struct sockaddr_in a4b = a4;
	a4b.sin_addr.s_addr = htonl(0x7f000002);
	daemon_check(fd4, (void *)&a4b, sizeof(a4b), "IPv4 get of 200 x 5000 bytes from 127.0.0.2", 105,
		     &req, &want, nd);
	sent++;

	/* errors: multi-datagram request, too-short datagram */
	static struct frames f;
	int bad = 0;
	struct xkv_buf text = {};
	int n = udp_ask(fd6, (void *)&a6, sizeof(a6), 106, 0, 2, "get big\r\n", 9, &f, 500, &bad);
	report(n == 0, "daemon: IPv6 multi-datagram request: silence (%d datagrams)", n);
	sent++;
	if (sendto(fd4, "\0\1", 2, 0, (void *)&a4, sizeof(a4)) == 2)
		sent++;
	req.len = want.len = 0;
	tprintf(&req, "version\r\n");
	tprintf(&want, XKV_VERSION_LINE);
	n = udp_ask(fd4, (void *)&a4, sizeof(a4), 107, 0, 1, req.p, req.len, &f, 2000, &bad);
	struct xkv_udp_hdr h0 = {};
	if (n >= 1)
		memcpy(&h0, f.d[0], 8);
	report(n == 1 && h0.req_id == htons(107), "daemon: 2-byte datagram unanswered, next one answered");
	sent++;

	/* a source the allow list does not hold gets nothing */
	struct xkv_acl_key any = {}, lo4, lo6;
	xkv_cidr_parse("127.0.0.1", &lo4, err, sizeof(err));
	xkv_cidr_parse("::1", &lo6, err, sizeof(err));
	int acl_ok = !xkv_acl_add(&e.s, XKV_ACL_ALLOW, &lo4, XKV_ACL_USER) &&
		     !xkv_acl_add(&e.s, XKV_ACL_ALLOW, &lo6, XKV_ACL_USER) &&
		     !xkv_acl_del(&e.s, XKV_ACL_ALLOW, &any, XKV_ACL_USER);
	int fd3 = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in from3 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000003) };
	acl_ok &= !bind(fd3, (void *)&from3, sizeof(from3));
	n = udp_ask(fd3, (void *)&a4, sizeof(a4), 109, 0, 1, "version\r\n", 9, &f, 500, &bad);
	report(acl_ok && n == 0, "daemon: a source outside the allow list (127.0.0.3) gets nothing (%d)", n);
	n = udp_ask(fd4, (void *)&a4, sizeof(a4), 110, 0, 1, "version\r\n", 9, &f, 2000, &bad);
	report(n == 1, "daemon: 127.0.0.1, in the list, is answered (%d)", n);
	n = udp_ask(fd6, (void *)&a6, sizeof(a6), 111, 0, 1, "version\r\n", 9, &f, 2000, &bad);
	report(n == 1, "daemon: ::1, in the list, is answered (%d)", n);
	sent += 2;
	xkv_acl_add(&e.s, XKV_ACL_ALLOW, &any, XKV_ACL_USER);
	xkv_acl_del(&e.s, XKV_ACL_ALLOW, &lo4, XKV_ACL_USER);
	xkv_acl_del(&e.s, XKV_ACL_ALLOW, &lo6, XKV_ACL_USER);
	close(fd3);

	/* counters reach the map while serving (pushed every 100 ms) */
	usleep(400 * 1000);
	struct xkv_stats slow;
	xkv_stats_read(&e.s, XKV_STATS_SLOW, &slow, NULL);
	report(slow.v[XKV_STAT_requests] == (__u64)sent && slow.v[XKV_STAT_cmd_get] == 4 &&
	       slow.v[XKV_STAT_get_hits] == 203 && slow.v[XKV_STAT_stores] == 1 &&
	       slow.v[XKV_STAT_drop_acl] == 1 && slow.v[XKV_STAT_drop_frame] == 1,
	       "daemon: counters pushed while serving: requests %llu (want %d) cmd_get %llu hits %llu"
	       " drop_acl %llu drop_frame %llu",
	       (unsigned long long)slow.v[XKV_STAT_requests], sent,
	       (unsigned long long)slow.v[XKV_STAT_cmd_get], (unsigned long long)slow.v[XKV_STAT_get_hits],
	       (unsigned long long)slow.v[XKV_STAT_drop_acl], (unsigned long long)slow.v[XKV_STAT_drop_frame]);

	/* the last counters are pushed on exit */
	udp_ask(fd6, (void *)&a6, sizeof(a6), 108, 0, 1, "version\r\n", 9, &f, 2000, &bad);
	sent++;
	d.stop = 1;
	pthread_join(th, NULL);
	report(d.rc == 0, "daemon: clean stop (rc %d %s)", d.rc, d.rc ? d.err : "");
	xkv_stats_read(&e.s, XKV_STATS_SLOW, &slow, NULL);
	report(slow.v[XKV_STAT_requests] == (__u64)sent, "daemon: counters pushed on exit: requests %llu (want %d)",
	       (unsigned long long)slow.v[XKV_STAT_requests], sent);

	/* counters are batched: with a long interval nothing reaches the map
	 * while serving, everything on exit */
	__u64 before = slow.v[XKV_STAT_requests];
	ready = daemon_start(&d, &th, &e.s, port, 600000);
	report(!ready, "daemon: restarted with a 600 s counter interval%s%s", ready ? ": " : "", ready ? d.err : "");
	if (!ready) {
		for (int i = 0; i < 3; i++)
			udp_ask(fd4, (void *)&a4, sizeof(a4), (__u16)(200 + i), 0, 1, "version\r\n", 9, &f, 2000, &bad);
		usleep(300 * 1000);
		xkv_stats_read(&e.s, XKV_STATS_SLOW, &slow, NULL);
		__u64 mid = slow.v[XKV_STAT_requests];
		d.stop = 1;
		pthread_join(th, NULL);
		xkv_stats_read(&e.s, XKV_STATS_SLOW, &slow, NULL);
		report(mid == before && slow.v[XKV_STAT_requests] == before + 3,
		       "daemon: counters held while serving (%llu, want %llu), pushed on exit (%llu, want %llu)",
		       (unsigned long long)mid, (unsigned long long)before,
		       (unsigned long long)slow.v[XKV_STAT_requests], (unsigned long long)before + 3);
	}

	check_privdrop(&e.s, (__u16)(port + 1), fd4);

	close(fd4);
	close(fd6);
	xkv_buf_free(&req);
	xkv_buf_free(&want);
	xkv_buf_free(&text);
	env_close(&e);
	return 0;
}
