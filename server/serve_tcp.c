// SPDX-License-Identifier: MIT
/* xdpkv serve over TCP: memcached's text protocol on a stream, answered by
 * the slow path's own protocol code (xkv_slow_stream) from the same maps.
 * This file only moves bytes: N worker threads, each with its own epoll
 * set, its own connections and its own listening socket, the N sockets one
 * SO_REUSEPORT group: the kernel spreads new connections over them by a
 * hash of their addresses.  (One socket shared by all, EPOLLEXCLUSIVE
 * waking one worker per connection, gave every connection of a burst to
 * the first worker woken: 128 of 128 to one of 4.)  Every connection has
 * a bounded input buffer (one whole request at most: a longer line is an
 * error) and an output queue; a connection whose queue is over TCP_OUT_HIGH
 * is not read from until it drains, so a client that does not read its
 * replies holds a bounded amount of memory and nobody else waits for it.
 *
 * With the TCP fast path (common/tcp.bpf.h, docs/architecture.md) every
 * accepted connection joins the pinned sockhash: the kernel answers what it
 * can and hands the rest here.  This side then tells the kernel, in
 * tcp_paid, how many bytes it has read, consumed and answered in full. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include "tcp_int.h"

/* A free slot of the fast path's arrays into *slot; false: none left. */
static bool slot_get(struct xkv_serve_tcp *t, __u32 *slot)
{
	pthread_mutex_lock(&t->slot_mu);
	bool ok = t->nfree > 0;
	if (ok)
		*slot = t->free_slots[--t->nfree];
	pthread_mutex_unlock(&t->slot_mu);
	return ok;
}

static void slot_put(struct xkv_serve_tcp *t, __u32 slot)
{
	pthread_mutex_lock(&t->slot_mu);
	t->free_slots[t->nfree++] = slot;
	pthread_mutex_unlock(&t->slot_mu);
}

/* accept failed for want of descriptors: take the waiting connection with
 * the spare descriptor and close it (its client sees the end at once), so
 * the listener is not left readable; one log line per 10 s. */
static void accept_no_fd(struct xkv_serve_tcp *t, int lfd, int err)
{
	pthread_mutex_lock(&t->spare_mu);
	if (t->spare_fd >= 0) {
		close(t->spare_fd);
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			close(fd);
		t->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	pthread_mutex_unlock(&t->spare_mu);
	__u64 now = xkv_now_ns(), last = __atomic_load_n(&t->emfile_logged_ns, __ATOMIC_RELAXED);
	if ((!last || now - last > 10000000000ull) &&
	    __atomic_compare_exchange_n(&t->emfile_logged_ns, &last, now, false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED))
		fprintf(stderr, "xdpkv slow path: TCP accept: %s: new connections are closed at once "
			"(RLIMIT_NOFILE, --max-conns)\n", strerror(err));
}

/* Descriptors beside the connections: maps, sockets, epoll, logs. */
#define TCP_NOFILE_SPARE 256

int xkv_serve_tcp_nofile(unsigned max_conns, char *msg, size_t msglen)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)max_conns + TCP_NOFILE_SPARE;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_cur >= need)
		return 0;
	struct rlimit want = { .rlim_cur = need, .rlim_max = rl.rlim_max > need ? rl.rlim_max : need };
	if (!setrlimit(RLIMIT_NOFILE, &want))
		return 0;
	want.rlim_cur = rl.rlim_max; /* without CAP_SYS_RESOURCE: up to the hard limit */
	want.rlim_max = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &want);
	snprintf(msg, msglen, "open files limited to %llu (RLIMIT_NOFILE): fewer than --max-conns %u "
		 "connections fit; raise the limit (systemd: LimitNOFILE) or lower --max-conns",
		 (unsigned long long)want.rlim_cur, max_conns);
	return 1;
}


void xkv_tcp_conn_close(struct tcp_worker *w, struct tcp_conn *c)
{
	struct xkv_serve_tcp *t = w->t;

	if (t->o->verbose > 1) {
		char who[INET6_ADDRSTRLEN + 16];
		xkv_tcp_conn_name(c, who, sizeof(who));
		fprintf(stderr, "xdpkv slow path: TCP %s closed\n", who);
	}
	close(c->fd); /* leaves the epoll set and the sockhash with it: no verdict runs for it now */
	if (c->fast || c->xtcp) {
		bpf_map_delete_elem(t->s->tcp_slots_fd, &c->cookie);
		slot_put(t, c->slot);
	}
	if (c->peer)
		xkv_tcp_peer(t->s, c->src.addr, -1);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	xkv_tcp_in_free(t, c);
	xkv_buf_free(&c->out);
	free(c);
	long n = xkv_slow_tcp_event(t->sl, XKV_TCP_CLOSE, 0);
	if (n < (long)t->max_conns)
		__atomic_store_n(&t->limit_logged, 0, __ATOMIC_RELAXED);
}


/* Put the connection in the fast path's sockhash, its counters at 0.
 * False (and nothing left behind) when it cannot be: served here alone. */
static bool conn_fast(struct xkv_serve_tcp *t, struct tcp_conn *c)
{
	const struct xkv_store *s = t->s;
	__u64 fd = (__u64)c->fd;
	socklen_t len = sizeof(c->cookie);
	int one = 1;

	if ((!t->fast && !t->xtcp) || getsockopt(c->fd, SOL_SOCKET, SO_COOKIE, &c->cookie, &len) ||
	    !slot_get(t, &c->slot))
		return false;
	/* the slot at 0 before the kernel can find it (no verdict runs for a
	 * socket before it joins tcp_socks, and none after it closed) */
	memset(&t->kconns[c->slot], 0, sizeof(t->kconns[c->slot]));
	__atomic_store_n(&t->paid[c->slot], 0, __ATOMIC_RELEASE);
	/* the XDP responder (common/tcpx_xdp.bpf.h) finds the slot by cookie
	 * and answers only while tcp_paid equals the bytes the socket took in;
	 * the verdict stays off (its replies would be bytes serve did not
	 * answer): c->xtcp, not c->fast */
	if (t->xtcp) {
		if (bpf_map_update_elem(s->tcp_slots_fd, &c->cookie, &c->slot, BPF_ANY)) {
			slot_put(t, c->slot);
			return false;
		}
		c->xtcp = true;
		return false;
	}
	if (bpf_map_update_elem(s->tcp_slots_fd, &c->cookie, &c->slot, BPF_ANY) ||
	    bpf_map_update_elem(s->tcp_socks_fd, &c->cookie, &fd, BPF_NOEXIST)) {
		bpf_map_delete_elem(s->tcp_slots_fd, &c->cookie);
		slot_put(t, c->slot);
		return false;
	}
	/* What arrived before it joined waits in the receive queue, where a
	 * read would take it past the verdict (and past the count of what was
	 * passed).  Setting SO_RCVLOWAT calls the socket's data_ready, which is
	 * the verdict's now: the queue goes through it before the first read. */
	setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one));
	return true;
}

/* Accept what is waiting (another worker may have taken it first). */
static void tcp_accept(struct tcp_worker *w)
{
	struct xkv_serve_tcp *t = w->t;

	for (int i = 0; i < TCP_EVENTS; i++) {
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(w->lfd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				accept_no_fd(t, w->lfd, errno);
			return;
		}
		struct tcp_conn *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->last_ns = xkv_now_ns();
		if (xkv_addr_from_sockaddr(&sa, c->src.addr, &c->src.port) ||
		    !xkv_slow_tcp_admit(t->sl, c->src.addr, &w->delta)) {
			/* not in the allow list: closed before a byte is read or sent */
			if (t->o->verbose) {
				char who[INET6_ADDRSTRLEN + 16];
				xkv_tcp_conn_name(c, who, sizeof(who));
				fprintf(stderr, "xdpkv slow path: TCP %s refused (not in the allow list)\n", who);
			}
			w->pending++;
			close(fd);
			free(c);
			continue;
		}
		if (xkv_slow_tcp_event(t->sl, XKV_TCP_OPEN, 0) > (long)t->max_conns) {
			xkv_slow_tcp_event(t->sl, XKV_TCP_CLOSE, 0);
			xkv_slow_tcp_event(t->sl, XKV_TCP_REJECT, 0);
			if (!__atomic_exchange_n(&t->limit_logged, 1, __ATOMIC_RELAXED))
				fprintf(stderr, "xdpkv slow path: %u TCP connections open (--max-conns): "
					"new ones are told so and closed until some end\n", t->max_conns);
			/* what memcached (maxconns_fast, its default) writes before it
			 * closes: the client learns why rather than finding the end */
			static const char busy[] = "ERROR Too many open connections\r\n";
			(void)!send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
			close(fd);
			free(c);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		/* the handshake proved the address: UDP from it is trusted while
		 * the connection lasts (docs/security.md) */
		c->peer = !xkv_tcp_peer(t->s, c->src.addr, 1);
		c->fast = conn_fast(t, c);
		c->events = EPOLLIN | (c->fast ? EPOLLET | EPOLLRDHUP : 0);
		struct epoll_event e = { .events = c->events, .data.ptr = c };
		c->next = w->conns;
		if (c->next)
			c->next->prev = c;
		w->conns = c;
		if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &e)) {
			xkv_tcp_conn_close(w, c);
			continue;
		}
		if (t->o->verbose > 1) {
			char who[INET6_ADDRSTRLEN + 16];
			xkv_tcp_conn_name(c, who, sizeof(who));
			fprintf(stderr, "xdpkv slow path: TCP %s connected\n", who);
		}
	}
}

static void tcp_push(struct tcp_worker *w)
{
	if (!w->pending)
		return;
	xkv_serve_push(w->t->s, &w->delta, w->t->o->verbose);
	w->pending = 0;
	w->last_push = xkv_now_ns();
}

static bool tcp_quit(const struct xkv_serve_tcp *t)
{
	return __atomic_load_n(&t->quit, __ATOMIC_RELAXED) || (t->o->stop && *t->o->stop);
}

/* --idle-timeout: close what has been silent that long (memcached's
 * idle_timeout: a client that sent nothing and was sent nothing). */
static void idle_sweep(struct tcp_worker *w)
{
	struct xkv_serve_tcp *t = w->t;
	__u64 now = xkv_now_ns();

	if (!t->idle_ns || now - w->last_sweep < TCP_IDLE_SWEEP_MS * 1000000ull)
		return;
	w->last_sweep = now;
	for (struct tcp_conn *c = w->conns, *next; c; c = next) {
		next = c->next;
		__u64 last = c->last_ns;
		if (c->xtcp && t->kconns) { /* requests the XDP responder answered count too */
			__u64 x = __atomic_load_n(&t->kconns[c->slot].xdp_ns, __ATOMIC_RELAXED);
			if (x > last && x <= now)
				last = x;
		}
		if (now - last <= t->idle_ns)
			continue;
		if (t->o->verbose > 1) {
			char who[INET6_ADDRSTRLEN + 16];
			xkv_tcp_conn_name(c, who, sizeof(who));
			fprintf(stderr, "xdpkv slow path: TCP %s idle for --idle-timeout: closed\n", who);
		}
		xkv_tcp_conn_close(w, c);
		xkv_slow_tcp_event(t->sl, XKV_TCP_IDLE_KICK, 0); /* stats' idle_kicks */
	}
}

/* Every flow of the XDP responder (tcpx.h), removed where gone() says so:
 * read in batches (a system call per 256 flows: closed connections keep
 * their flows a while, thousands of a one-shot client's), each under its
 * lock (a copy torn by the responder's update could pair a learnt SERVED
 * with the old cookie 0).  A failed read ends the walk. */
static void flows_walk(const struct xkv_store *s,
		       bool (*gone)(const struct xkv_tcpx_flow *f, const void *arg), const void *arg)
{
	enum { BATCH = 256 };
	struct xkv_tcpx_key *keys = malloc(BATCH * sizeof(*keys));
	struct xkv_tcpx_flow *f = malloc(BATCH * sizeof(*f));
	LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_F_LOCK);
	__u32 in = 0, out = 0;
	bool first = true, more = keys && f && s->tcpx_flows_fd >= 0;
	while (more) {
		__u32 n = BATCH;
		int err = bpf_map_lookup_batch(s->tcpx_flows_fd, first ? NULL : &in, &out, keys, f, &n, &opts);
		if (err && errno != ENOENT)
			break;
		more = !err; /* ENOENT: this was the last batch */
		for (__u32 i = 0; i < n; i++)
			if (gone(&f[i], arg))
				bpf_map_delete_elem(s->tcpx_flows_fd, &keys[i]);
		in = out;
		first = false;
	}
	free(keys);
	free(f);
}

struct sweep_arg {
	const struct xkv_serve_tcp *t;
	__u64 now;
};

/* A flow whose connection serve no longer holds (its socket's cookie out
 * of tcp_slots), past its linger (xkv_tcpx_sweep_keep). */
static bool flow_swept(const struct xkv_tcpx_flow *f, const void *arg)
{
	const struct sweep_arg *a = arg;
	__u32 slot;
	return !xkv_tcpx_sweep_keep(f->flags, f->seen_ns, a->now, a->t->flow_linger_ns) &&
	       bpf_map_lookup_elem(a->t->s->tcp_slots_fd, &f->cookie, &slot);
}

/* The XDP responder's flows whose connection serve no longer holds:
 * removed, at once, or once silent for TIME-WAIT's length when a FIN was
 * seen (the responder still translates a retransmitted FIN until then; 5 s
 * where the client closed first: xkv_tcpx_sweep_keep).  A flow serve was
 * never seen to hold (its first requests answered before serve's accept,
 * no segment since) waits that long too: serve takes a connection within
 * milliseconds, and any segment after that marks the flow serve's.  A flow
 * dies with its connection; a full table never keeps a new one out for
 * long.  Its cost: about 0.6 us a flow a second (the kept reply copied
 * out), 1.8 % of a core with 28,000 one-shot connections' flows lingering
 * (5 % read one by one). */
static void flows_sweep(struct tcp_worker *w)
{
	struct xkv_serve_tcp *t = w->t;
	struct sweep_arg a = { .t = t, .now = xkv_now_ns() };

	if (!t->xtcp || w != t->w || a.now - w->last_flow_sweep < TCP_FLOW_SWEEP_MS * 1000000ull)
		return;
	w->last_flow_sweep = a.now;
	flows_walk(t->s, flow_swept, &a);
}

static void *tcp_worker_main(void *arg)
{
	struct tcp_worker *w = arg;
	struct xkv_serve_tcp *t = w->t;
	struct epoll_event evs[TCP_EVENTS];

	w->last_push = xkv_now_ns();
	while (!tcp_quit(t)) {
		int n = epoll_wait(w->ep, evs, TCP_EVENTS,
				   w->readies ? 0 : w->kwaits ? TCP_KWAIT_MS : TCP_WAIT_MS);
		for (int i = 0; i < n; i++) {
			if (!evs[i].data.ptr)
				tcp_accept(w);
			else if (!xkv_tcp_conn_event(w, evs[i].data.ptr, evs[i].events))
				xkv_tcp_conn_close(w, evs[i].data.ptr);
		}
		for (struct tcp_conn *c = w->conns, *next; c && (w->kwaits || w->readies); c = next) {
			next = c->next; /* conn_event may close c */
			if ((c->kwait || c->ready) && !xkv_tcp_conn_event(w, c, 0))
				xkv_tcp_conn_close(w, c);
		}
		idle_sweep(w);
		flows_sweep(w);
		if (w->pending >= TCP_PUSH_CALLS ||
		    (w->pending && xkv_now_ns() - w->last_push >= t->push_ns))
			tcp_push(w);
	}
	while (w->conns)
		xkv_tcp_conn_close(w, w->conns);
	tcp_push(w);
	return NULL;
}

static bool flow_held_or_closing(const struct xkv_tcpx_flow *f, const void *arg)
{
	(void)arg;
	return f->flags & (XKV_TCPX_F_SERVED | XKV_TCPX_F_FIN_C | XKV_TCPX_F_FIN_K);
}

/* The slots of a serve that was killed (tcp_slots is keyed by socket
 * cookie, which a boot never reuses): its sockets are closed, the entries
 * would only take room, and after enough crashes keep new connections out
 * of the fast path.  This serve's slots start free. */
static void fast_maps_clear(const struct xkv_store *s)
{
	__u64 k;

	while (s->tcp_slots_fd >= 0 && !bpf_map_get_next_key(s->tcp_slots_fd, NULL, &k))
		if (bpf_map_delete_elem(s->tcp_slots_fd, &k))
			break;
	/* and the XDP responder's flows of its connections (tcpx.h): those a
	 * serve held or that are closing (a killed serve's sockets are closed
	 * by the kernel); one that is neither may be a connection waiting for
	 * this serve's accept, answered already (the listener is open before
	 * this runs): the sweep judges those */
	flows_walk(s, flow_held_or_closing, NULL);
}

/* Map the fast path's arrays (tcpfast.h) and make every slot free.  false:
 * not mappable (pins of an older xdpkv: attach again), no fast path. */
static bool fast_maps_map(struct xkv_serve_tcp *t)
{
	const struct xkv_store *s = t->s;
	long page = sysconf(_SC_PAGESIZE);

	if (s->tcp_slots_fd < 0 || s->tcp_conns_fd < 0 || s->tcp_paid_fd < 0)
		return false;
	t->kconns_len = ((sizeof(*t->kconns) * XKV_TCP_CONNS_MAX) + page - 1) / page * page;
	t->paid_len = ((sizeof(*t->paid) * XKV_TCP_CONNS_MAX) + page - 1) / page * page;
	void *k = mmap(NULL, t->kconns_len, PROT_READ | PROT_WRITE, MAP_SHARED, s->tcp_conns_fd, 0);
	void *p = mmap(NULL, t->paid_len, PROT_READ | PROT_WRITE, MAP_SHARED, s->tcp_paid_fd, 0);
	t->free_slots = malloc(XKV_TCP_CONNS_MAX * sizeof(*t->free_slots));
	if (k == MAP_FAILED || p == MAP_FAILED || !t->free_slots) {
		if (k != MAP_FAILED)
			munmap(k, t->kconns_len);
		if (p != MAP_FAILED)
			munmap(p, t->paid_len);
		free(t->free_slots);
		t->free_slots = NULL;
		fprintf(stderr, "xdpkv slow path: the TCP fast path's maps cannot be mapped "
			"(pinned by an older xdpkv? detach and attach again): TCP is served here alone\n");
		return false;
	}
	t->kconns = k;
	t->paid = p;
	memset(t->paid, 0, t->paid_len);
	/* Handed out 0, 8, 16 ... then 1, 9 ...: the connections open at
	 * once (up to XKV_TCP_CONNS_MAX / 8) have paid[] and kconns[] entries
	 * on cache lines of their own (8-byte and 24-byte entries), so workers
	 * on other CPUs writing their connections' entries do not take the line
	 * from each other at every request (adjacent slots went to the
	 * connections accepted one after the other, by any worker). */
	const __u32 stride = 64 / sizeof(*t->paid), lines = XKV_TCP_CONNS_MAX / stride;
	_Static_assert(XKV_TCP_CONNS_MAX % (64 / sizeof(__u64)) == 0, "whole lines of paid[]");
	for (__u32 j = 0; j < XKV_TCP_CONNS_MAX; j++)
		t->free_slots[XKV_TCP_CONNS_MAX - 1 - j] = (j % lines) * stride + j / lines;
	t->nfree = XKV_TCP_CONNS_MAX;
	return true;
}

static void fast_maps_unmap(struct xkv_serve_tcp *t)
{
	if (t->kconns)
		munmap(t->kconns, t->kconns_len);
	if (t->paid)
		munmap(t->paid, t->paid_len);
	free(t->free_slots);
}

unsigned xkv_serve_tcp_threads(const struct xkv_serve_tcp *t)
{
	return t->nthreads;
}

void xkv_serve_tcp_stop(struct xkv_serve_tcp *t)
{
	if (!t)
		return;
	__atomic_store_n(&t->quit, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < t->nthreads; i++) {
		if (t->w[i].up)
			pthread_join(t->w[i].th, NULL);
		if (t->w[i].ep >= 0)
			close(t->w[i].ep);
		if (t->w[i].lfd >= 0)
			close(t->w[i].lfd);
	}
	xkv_tcp_peers_clear(t->s); /* its connections end with it */
	free(t->w);
	if (t->spare_fd >= 0)
		close(t->spare_fd);
	pthread_mutex_destroy(&t->spare_mu);
	fast_maps_unmap(t);
	pthread_mutex_destroy(&t->slot_mu);
	free(t);
}

unsigned xkv_serve_tcp_workers(const struct xkv_serve_opts *o)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return o->threads ? o->threads : cpus > 0 ? (unsigned)cpus : 1;
}

int xkv_serve_tcp_start(struct xkv_serve_tcp **out, struct xkv_store *s, struct xkv_slow *sl,
			const struct xkv_serve_opts *o, int *listen_fds, char *err, size_t errlen)
{
	struct xkv_serve_tcp *t = calloc(1, sizeof(*t));
	unsigned n = xkv_serve_tcp_workers(o);
	int rc = 0;

	*out = NULL;
	if (t)
		t->w = calloc(n, sizeof(*t->w));
	if (!t || !t->w) {
		for (unsigned i = 0; i < n; i++)
			if (listen_fds[i] >= 0)
				close(listen_fds[i]);
		free(t);
		return xkv_errf(err, errlen, -ENOMEM, "out of memory");
	}
	t->nthreads = n;
	for (unsigned i = 0; i < n; i++) {
		t->w[i].ep = -1;
		t->w[i].lfd = listen_fds[i]; /* ours now, closed by stop */
		listen_fds[i] = -1;
	}
	t->s = s;
	t->sl = sl;
	t->o = o;
	pthread_mutex_init(&t->spare_mu, NULL);
	pthread_mutex_init(&t->slot_mu, NULL);
	t->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	xkv_tcp_peers_clear(s); /* left by a serve that did not stop cleanly */
	fast_maps_clear(s);
	/* SASL required: the kernel would answer before anyone authenticates
	 * (docs/security.md, "SASL") */
	t->fast = !o->no_tcp_fast && !(s->cfg.flags & XKV_CFG_NO_TCP_FAST) && s->tcp_socks_fd >= 0 &&
		  !xkv_slow_sasl(sl) && fast_maps_map(t);
	/* the XDP responder in place of the verdict, where attach loaded it */
	t->xtcp = !(s->cfg.flags & XKV_CFG_NO_XDP_TCP) && s->tcpx_flows_fd >= 0 && !xkv_slow_sasl(sl) &&
		  (t->fast || (s->tcp_socks_fd >= 0 && fast_maps_map(t)));
	if (t->xtcp)
		t->fast = false;
	t->max_conns = o->max_conns ? o->max_conns : XKV_MAX_CONNS;
	t->push_ns = (o->push_ms ? o->push_ms : TCP_PUSH_MS) * 1000000ull;
	t->in_max = (size_t)(o->max_buffer_mib ? o->max_buffer_mib : XKV_MAX_BUFFER_MIB) << 20;
	t->idle_ns = o->idle_timeout * 1000000000ull;
	/* a test's shorter linger (tests/e2e/tcpstrict.sh: the sweep in seconds, not a minute) */
	const char *linger_ms = getenv("XDPKV_TEST_FLOW_LINGER_MS");
	t->flow_linger_ns = linger_ms && *linger_ms ? strtoull(linger_ms, NULL, 10) * 1000000ull
						    : XKV_TCPX_LINGER_NS;
	xkv_slow_tcp_event(sl, XKV_TCP_LISTEN, t->max_conns);
	if (t->idle_ns)
		xkv_slow_tcp_event(sl, XKV_TCP_IDLE_ON, 0);
	for (unsigned i = 0; i < t->nthreads && !rc; i++) {
		struct tcp_worker *w = &t->w[i];
		struct epoll_event e = { .events = EPOLLIN, .data.ptr = NULL };
		w->t = t;
		w->ep = epoll_create1(EPOLL_CLOEXEC);
		if (w->ep < 0 || w->lfd < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, w->lfd, &e)) {
			rc = xkv_errf(err, errlen, -errno, "TCP: epoll: %s", strerror(errno));
			break;
		}
		rc = -pthread_create(&w->th, NULL, tcp_worker_main, w);
		if (rc)
			xkv_errf(err, errlen, rc, "cannot start a TCP thread: %s", strerror(-rc));
		w->up = !rc;
	}
	if (rc) {
		xkv_serve_tcp_stop(t);
		return rc;
	}
	*out = t;
	return 0;
}
