/* SPDX-License-Identifier: MIT */
/* The per-thread loops.
 *
 * Closed loop: up to --depth requests in flight per thread.  Over UDP each
 * is an outstanding request id; over TCP they are pipelined over --conns
 * connections per thread (replies come back in order per connection).
 * Open loop: arrivals are a Poisson process of rate --rate / threads per
 * thread; a request's latency runs from its scheduled time, so a server
 * that falls behind is charged for the queue it causes (no coordinated
 * omission).  --depth then only caps what may be in flight.
 *
 * UDP: a request with no complete reply after --timeout-ms is a timeout;
 * its slot is reused and a late reply is ignored (its id no longer maps to
 * the slot).  TCP cannot lose a reply: no reply within --timeout-ms is a
 * fatal error (the server is stuck), not a count. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "lg.h"

#define UDP_HDR       8
#define UDP_RID_NONE  0
#define CHUNKS_MAX    256
#define RBUF_MIN      (256 * 1024)
#define TIMEOUT_SCAN  1000000ULL /* ns between scans for timed-out requests */

uint64_t lg_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * LG_NSEC + (uint64_t)ts.tv_nsec;
}

static int fail(struct lg_thread *t, const char *fmt, const char *arg)
{
	snprintf(t->err, sizeof(t->err), fmt, arg);
	return -1;
}

int lg_connect(const struct lg_config *c, int type, char *err, size_t errlen)
{
	int fd = socket(c->addr.ss_family, type | SOCK_CLOEXEC, 0), one = 1, rcv = 4 << 20;

	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (type == SOCK_DGRAM)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	if (connect(fd, (const struct sockaddr *)&c->addr, c->addrlen) < 0) {
		snprintf(err, errlen, "connect to %s port %u (%s): %s", c->server, c->port,
			 lg_proto_name(c->proto), strerror(errno));
		close(fd);
		return -1;
	}
	if (type == SOCK_STREAM)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* ---- what to send next ---- */

struct sched {
	bool open;
	double gap_mean_ns;
	uint64_t next; /* open loop: the next arrival */
};

static void sched_init(struct sched *s, struct lg_thread *t, uint64_t start)
{
	const struct lg_config *c = t->c;

	s->open = c->rate > 0 && !t->sequential;
	s->gap_mean_ns = s->open ? (double)LG_NSEC * c->threads / c->rate : 0;
	s->next = start;
	if (s->open)
		s->next += (uint64_t)(-log(1.0 - lg_rand01(&t->rng)) * s->gap_mean_ns);
}

static void sched_advance(struct sched *s, struct lg_thread *t)
{
	s->next += (uint64_t)(-log(1.0 - lg_rand01(&t->rng)) * s->gap_mean_ns);
}

/* Is there still something to send (now or later)? */
static bool more_to_send(struct lg_thread *t, const struct sched *s, uint64_t now)
{
	if (t->sequential)
		return t->nretry || t->range_next < t->range_hi;
	if (t->quota)
		return t->issued_measured < t->quota;
	return (s->open ? s->next : now) < t->t_end;
}

/* Time of the next request if one may go now, else 0 (not yet: open loop). */
static uint64_t due(const struct sched *s, uint64_t now)
{
	if (!s->open)
		return now;
	return s->next <= now ? s->next : 0;
}

static void pick_op(struct lg_thread *t, struct lg_req *q)
{
	const struct lg_config *c = t->c;
	double x;

	q->count = 1;
	q->vlen = c->values[c->nvalues > 1 ? lg_rand(&t->rng) % c->nvalues : 0];
	q->version = 0;
	if (t->sequential) {
		q->op = t->all_sets ? LG_SET : LG_GET;
		q->key = t->nretry ? t->retry[--t->nretry] : t->range_next++;
		if (c->wl.kind != WL_FIXED) /* a workload sizes each key's value by its id */
			q->vlen = wl_value_size(&c->wl, q->key);
		return;
	}
	x = lg_rand01(&t->rng) * 100.0;
	q->op = x < c->write_ratio ? LG_SET : x < c->write_ratio + c->scan_ratio ? LG_SCAN : LG_GET;
	q->key = lg_pick_key(c, &t->rng);
	if (q->op == LG_SCAN) {
		q->count = c->scan_len;
		if (q->key + q->count > c->keys)
			q->key = c->keys - q->count;
	}
	if (q->op == LG_SET)
		q->version = ++t->version * c->threads + t->id;
	if (c->wl.kind != WL_FIXED)
		q->vlen = wl_value_size(&c->wl, q->key);
}

static void next_req(struct lg_thread *t, struct sched *s, struct lg_req *q, uint64_t at,
		     uint64_t now)
{
	pick_op(t, q);
	q->sched_ns = at;
	q->sent_ns = now;
	if (t->sequential)
		q->measured = t->measure_all;
	else if (t->quota)
		q->measured = at >= t->t_measure && t->issued_measured < t->quota;
	else
		q->measured = at >= t->t_measure && at < t->t_end;
	if (q->measured && t->quota)
		t->issued_measured++;
	if (s->open)
		sched_advance(s, t);
}

static void retry_later(struct lg_thread *t, uint64_t key)
{
	if (t->nretry == t->retry_cap) {
		size_t cap = t->retry_cap ? 2 * t->retry_cap : 1024;
		uint64_t *r = realloc(t->retry, cap * sizeof(*r));
		if (!r)
			return;
		t->retry = r;
		t->retry_cap = cap;
	}
	t->retry[t->nretry++] = key;
}

static void account(struct lg_thread *t, const struct lg_req *q, const struct lg_result *r,
		    uint64_t now)
{
	struct lg_counters *n = &t->n;

	if (!q->measured)
		return;
	n->gets += q->op == LG_GET;
	n->sets += q->op == LG_SET;
	n->scans += q->op == LG_SCAN;
	n->hits += r->hits;
	n->misses += r->misses;
	n->wrong += r->wrong;
	n->errors += r->errors;
	lg_hist_add(&t->hist, now - q->sched_ns);
	if (now > t->t_last_done)
		t->t_last_done = now;
	atomic_store_explicit(&t->progress_ops, n->gets + n->sets + n->scans, memory_order_relaxed);
	if (r->wrong)
		atomic_store_explicit(&t->progress_wrong, n->wrong, memory_order_relaxed);
}

static void account_timeout(struct lg_thread *t, const struct lg_req *q)
{
	if (t->sequential && t->all_sets)
		retry_later(t, q->key);
	if (!q->measured)
		return;
	t->n.timeouts++;
	atomic_store_explicit(&t->progress_timeouts, t->n.timeouts, memory_order_relaxed);
}

/* How long to sleep: until the next arrival, the next timeout scan, or the end. */
static void wait_for(int ep, struct epoll_event *ev, int nev, int *got, uint64_t now, uint64_t wake)
{
	struct timespec ts = { 0 };
	uint64_t d = wake > now ? wake - now : 0;

	ts.tv_sec = (time_t)(d / LG_NSEC);
	ts.tv_nsec = (long)(d % LG_NSEC);
	*got = epoll_pwait2(ep, ev, nev, &ts, NULL);
}

static int epoll_add(int ep, int fd, uint32_t events, uint32_t id)
{
	struct epoll_event e = { .events = events, .data.u32 = id };
	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

/* ================= UDP ================= */

struct udp_slot {
	struct lg_req q;
	bool busy;
	uint16_t rid, total;
	char *buf;          /* reply text gathered so far, in sequence order */
	size_t len, cap;
	uint16_t seq[CHUNKS_MAX];
	uint32_t clen[CHUNKS_MAX];
	unsigned nchunks;
};

struct udp {
	int fd, ep;
	unsigned depth, busy;
	struct udp_slot *slot;
	uint16_t *owner;    /* request id -> slot + 1 */
	uint16_t next_rid;
	unsigned *free_list, nfree;
	char *sbuf;
	size_t smax;
};

static void udp_release(struct udp *u, struct udp_slot *s)
{
	u->owner[s->rid] = UDP_RID_NONE;
	s->busy = false;
	s->len = 0;
	s->nchunks = 0;
	u->busy--;
	u->free_list[u->nfree++] = (unsigned)(s - u->slot);
}

static int udp_send(struct lg_thread *t, struct udp *u, struct sched *sc, uint64_t at, uint64_t now)
{
	unsigned i = u->free_list[--u->nfree];
	struct udp_slot *s = &u->slot[i];
	int n;

	while (u->owner[u->next_rid] != UDP_RID_NONE)
		u->next_rid++;
	s->rid = u->next_rid++;
	u->owner[s->rid] = (uint16_t)(i + 1);
	s->busy = true;
	s->total = 0;
	u->busy++;
	next_req(t, sc, &s->q, at, now);
	n = lg_req_write(t->c, &s->q, u->sbuf + UDP_HDR, u->smax - UDP_HDR);
	if (n < 0)
		return fail(t, "request does not fit %s", "the send buffer");
	u->sbuf[0] = (char)(s->rid >> 8);
	u->sbuf[1] = (char)s->rid;
	memset(u->sbuf + 2, 0, 6);
	u->sbuf[5] = 1; /* total 1 */
	if (send(u->fd, u->sbuf, (size_t)n + UDP_HDR, 0) < 0) {
		if (errno == ECONNREFUSED)
			return fail(t, "send: connection refused (nothing listens on the %s port?)",
				    "UDP");
		/* ENOBUFS, EAGAIN: the request is lost and will time out */
	}
	return 0;
}

static bool grow(char **buf, size_t *cap, size_t need)
{
	size_t c = *cap ? *cap : 4096;
	char *b;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	b = realloc(*buf, c);
	if (!b)
		return false;
	*buf = b;
	*cap = c;
	return true;
}

/* Insert datagram (seq, data) after the datagrams with seq <= it. */
static bool udp_gather(struct udp_slot *s, uint16_t seq, const char *d, size_t n)
{
	size_t off = s->len;
	unsigned at = s->nchunks;

	if (!grow(&s->buf, &s->cap, s->len + n))
		return false;
	if (s->nchunks < CHUNKS_MAX) {
		while (at > 0 && s->seq[at - 1] > seq) {
			at--;
			off -= s->clen[at];
		}
		memmove(&s->seq[at + 1], &s->seq[at], (s->nchunks - at) * sizeof(s->seq[0]));
		memmove(&s->clen[at + 1], &s->clen[at], (s->nchunks - at) * sizeof(s->clen[0]));
		s->seq[at] = seq;
		s->clen[at] = (uint32_t)n;
		s->nchunks++;
	}
	memmove(s->buf + off + n, s->buf + off, s->len - off);
	memcpy(s->buf + off, d, n);
	s->len += n;
	return true;
}

/* memcached sends a multi-value reply as datagrams that all say "seq 0 of
 * 1", so only its end tells that it is complete: a reply that starts with
 * a value ends with END.  Skipping the parse until then keeps a long scan
 * from being parsed (and checked) once per datagram. */
static bool reply_may_be_complete(const struct lg_config *c, const struct lg_req *q,
				  const char *text, size_t len)
{
	if (q->op == LG_SET || len < 6 || memcmp(text, "VALUE ", 6))
		return true;
	return !memcmp(text + len - 5, "END\r\n", 5);
}

static int udp_datagram(struct lg_thread *t, struct udp *u, const char *d, size_t n, uint64_t now)
{
	struct lg_result r;
	struct udp_slot *s;
	uint16_t rid, seq, total;
	const char *text;
	size_t tlen;
	long done;

	if (n < UDP_HDR)
		return 0;
	rid = (uint16_t)((uint8_t)d[0] << 8 | (uint8_t)d[1]);
	seq = (uint16_t)((uint8_t)d[2] << 8 | (uint8_t)d[3]);
	total = (uint16_t)((uint8_t)d[4] << 8 | (uint8_t)d[5]);
	if (u->owner[rid] == UDP_RID_NONE) {
		t->n.late++; /* late reply to a timed-out request, or not ours */
		return 0;
	}
	s = &u->slot[u->owner[rid] - 1];
	if (t->c->echo) { /* the request itself came back: answered, nothing to check */
		memset(&r, 0, sizeof(r));
		account(t, &s->q, &r, now);
		udp_release(u, s);
		return 0;
	}
	if (total > s->total)
		s->total = total;
	if (s->len == 0 && total <= 1) {
		text = d + UDP_HDR;
		tlen = n - UDP_HDR;
	} else {
		if (!udp_gather(s, seq, d + UDP_HDR, n - UDP_HDR))
			return fail(t, "out of memory gathering a %s reply", "multi-datagram");
		if (s->total > 1 && s->nchunks < s->total && s->nchunks < CHUNKS_MAX)
			return 0;
		text = s->buf;
		tlen = s->len;
	}
	if (!reply_may_be_complete(t->c, &s->q, text, tlen))
		done = 0;
	else
		done = lg_reply_parse(t->c, &s->q, text, tlen, &r);
	if (done == 0) {
		if (text != s->buf && !udp_gather(s, seq, text, tlen))
			return fail(t, "out of memory gathering a %s reply", "multi-datagram");
		return 0;
	}
	if (done < 0) {
		memset(&r, 0, sizeof(r));
		r.errors = 1;
	}
	account(t, &s->q, &r, now);
	udp_release(u, s);
	return 0;
}

/* --kernel-stamps: the datagram's receive time (SO_TIMESTAMPNS, realtime) on
 * lg_now()'s clock, or now where the kernel gave none */
static uint64_t rx_time(const struct msghdr *m, uint64_t now)
{
	struct timespec rt, mono;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR((struct msghdr *)m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_TIMESTAMPNS)
			continue;
		struct timespec ts;
		memcpy(&ts, CMSG_DATA(c), sizeof(ts));
		clock_gettime(CLOCK_REALTIME, &rt);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		int64_t ago = ((int64_t)rt.tv_sec - ts.tv_sec) * (int64_t)LG_NSEC +
			      (rt.tv_nsec - ts.tv_nsec);
		uint64_t m_now = (uint64_t)mono.tv_sec * LG_NSEC + (uint64_t)mono.tv_nsec;
		return ago > 0 && (uint64_t)ago < m_now ? m_now - (uint64_t)ago : now;
	}
	return now;
}

static int udp_receive(struct lg_thread *t, struct udp *u)
{
	static __thread char d[LG_UDP_MAX + 1];
	static __thread char cbuf[CMSG_SPACE(sizeof(struct timespec)) + 64];

	for (;;) {
		struct iovec iov = { .iov_base = d, .iov_len = sizeof(d) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
		if (t->c->kstamp) {
			m.msg_control = cbuf;
			m.msg_controllen = sizeof(cbuf);
		}
		ssize_t n = recvmsg(u->fd, &m, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			if (errno == ECONNREFUSED)
				return fail(t, "recv: connection refused (nothing listens on the %s port?)",
					    "UDP");
			return fail(t, "recv: %s", strerror(errno));
		}
		uint64_t now = lg_now();
		if (udp_datagram(t, u, d, (size_t)n, t->c->kstamp ? rx_time(&m, now) : now) < 0)
			return -1;
	}
}

static void udp_expire(struct lg_thread *t, struct udp *u, uint64_t now)
{
	uint64_t limit = (uint64_t)t->c->timeout_ms * 1000000ULL;

	for (unsigned i = 0; i < u->depth; i++) {
		struct udp_slot *s = &u->slot[i];
		if (s->busy && now - s->q.sent_ns > limit) {
			account_timeout(t, &s->q);
			udp_release(u, s);
		}
	}
}

static void udp_free(struct udp *u)
{
	if (u->slot)
		for (unsigned i = 0; i < u->depth; i++)
			free(u->slot[i].buf);
	free(u->slot);
	free(u->owner);
	free(u->free_list);
	free(u->sbuf);
	if (u->ep >= 0)
		close(u->ep);
	if (u->fd >= 0)
		close(u->fd);
}

static int udp_setup(struct lg_thread *t, struct udp *u, unsigned depth)
{
	memset(u, 0, sizeof(*u));
	u->ep = -1;
	u->depth = depth;
	u->smax = UDP_HDR + lg_req_max(t->c);
	u->next_rid = (uint16_t)(lg_rand(&t->rng));
	u->slot = calloc(depth, sizeof(*u->slot));
	u->owner = calloc(65536, sizeof(*u->owner));
	u->free_list = calloc(depth, sizeof(*u->free_list));
	u->sbuf = malloc(u->smax);
	u->fd = lg_connect(t->c, SOCK_DGRAM, t->err, sizeof(t->err));
	if (!u->slot || !u->owner || !u->free_list || !u->sbuf)
		return fail(t, "out of memory (%s)", "UDP slots");
	if (u->fd < 0)
		return -1;
	/* --echo: a reflector sends the datagram back as it came, and on veth
	 * its UDP checksum is still the offload's partial sum; send none (0 is
	 * "no checksum" for UDP over IPv4) so the echo is received */
	int one = 1;
	if (t->c->echo && setsockopt(u->fd, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one)) < 0)
		return fail(t, "SO_NO_CHECK: %s", strerror(errno));
	if (t->c->kstamp && setsockopt(u->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
		return fail(t, "SO_TIMESTAMPNS: %s", strerror(errno));
	for (unsigned i = 0; i < depth; i++)
		u->free_list[u->nfree++] = depth - 1 - i;
	u->ep = epoll_create1(EPOLL_CLOEXEC);
	if (u->ep < 0 || epoll_add(u->ep, u->fd, EPOLLIN, 0) < 0)
		return fail(t, "epoll: %s", strerror(errno));
	return 0;
}

static int run_udp(struct lg_thread *t, unsigned depth, uint64_t start)
{
	struct epoll_event ev[4];
	uint64_t now, at, next_scan = 0, wake;
	struct sched sc;
	struct udp u;
	int got, rc = -1;

	if (udp_setup(t, &u, depth) < 0)
		goto out;
	sched_init(&sc, t, start);
	for (;;) {
		now = lg_now();
		while (u.nfree && more_to_send(t, &sc, now) && (at = due(&sc, now)))
			if (udp_send(t, &u, &sc, at, now) < 0)
				goto out;
		if (!u.busy && !more_to_send(t, &sc, now))
			break;
		wake = now + 10 * TIMEOUT_SCAN;
		if (u.busy && next_scan < wake)
			wake = next_scan > now ? next_scan : now + TIMEOUT_SCAN;
		if (sc.open && u.nfree && more_to_send(t, &sc, now) && sc.next < wake)
			wake = sc.next;
		if (!t->sequential && !t->quota && now < t->t_end && t->t_end < wake)
			wake = t->t_end;
		if (t->c->spin) { /* busy-polling receive: no sleep, no wake-up in the latency; */
			sched_yield(); /* the CPU to the client veth's NAPI thread when it has work */
			got = 1;
		} else
			wait_for(u.ep, ev, 4, &got, now, wake);
		if (got < 0 && errno != EINTR) {
			fail(t, "epoll_pwait2: %s", strerror(errno));
			goto out;
		}
		if (got > 0 && udp_receive(t, &u) < 0)
			goto out;
		now = lg_now();
		if (now >= next_scan) {
			udp_expire(t, &u, now);
			next_scan = now + TIMEOUT_SCAN;
		}
	}
	rc = 0;
out:
	udp_free(&u);
	return rc;
}

/* ================= TCP ================= */

struct tcp_conn {
	int fd;
	char *wbuf, *rbuf;
	size_t wlen, woff, wcap, rlen, rcap;
	struct lg_req *fifo;
	unsigned head, n, cap;
	bool out_armed;
};

struct tcp {
	int ep;
	unsigned nconn, cursor, busy;
	size_t rmax;
	struct tcp_conn *conn;
};

static struct tcp_conn *tcp_pick(struct tcp *p)
{
	for (unsigned k = 0; k < p->nconn; k++) {
		struct tcp_conn *c = &p->conn[(p->cursor + k) % p->nconn];
		if (c->n < c->cap) {
			p->cursor = (p->cursor + k + 1) % p->nconn;
			return c;
		}
	}
	return NULL;
}

static int tcp_queue(struct lg_thread *t, struct tcp *p, struct tcp_conn *c, struct sched *sc,
		     uint64_t at, uint64_t now)
{
	struct lg_req *q = &c->fifo[(c->head + c->n) % c->cap];
	int n;

	next_req(t, sc, q, at, now);
	if (!grow(&c->wbuf, &c->wcap, c->wlen + p->rmax))
		return fail(t, "out of memory (%s)", "TCP send buffer");
	n = lg_req_write(t->c, q, c->wbuf + c->wlen, c->wcap - c->wlen);
	if (n < 0)
		return fail(t, "request does not fit %s", "the send buffer");
	c->wlen += (size_t)n;
	c->n++;
	p->busy++;
	return 0;
}

static int tcp_flush(struct lg_thread *t, struct tcp *p, struct tcp_conn *c, unsigned id)
{
	struct epoll_event e = { .events = EPOLLIN, .data.u32 = id };

	while (c->woff < c->wlen) {
		ssize_t n = send(c->fd, c->wbuf + c->woff, c->wlen - c->woff, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN)
				break;
			if (errno == EINTR)
				continue;
			return fail(t, "send: %s", strerror(errno));
		}
		c->woff += (size_t)n;
	}
	if (c->woff == c->wlen)
		c->woff = c->wlen = 0;
	if ((c->wlen > 0) != c->out_armed) {
		c->out_armed = c->wlen > 0;
		e.events |= c->out_armed ? EPOLLOUT : 0;
		if (epoll_ctl(p->ep, EPOLL_CTL_MOD, c->fd, &e) < 0)
			return fail(t, "epoll_ctl: %s", strerror(errno));
	}
	return 0;
}

static int tcp_replies(struct lg_thread *t, struct tcp *p, struct tcp_conn *c, uint64_t now)
{
	size_t off = 0;
	struct lg_result r;

	while (off < c->rlen) {
		struct lg_req *q = &c->fifo[c->head];
		long n;

		if (!c->n)
			return fail(t, "the server sent %s", "a reply to no request");
		n = lg_reply_parse(t->c, q, c->rbuf + off, c->rlen - off, &r);
		if (n == 0)
			break;
		if (n < 0)
			return fail(t, "cannot parse the server's reply (%s)", lg_proto_name(t->c->proto));
		account(t, q, &r, now);
		c->head = (c->head + 1) % c->cap;
		c->n--;
		p->busy--;
		off += (size_t)n;
	}
	memmove(c->rbuf, c->rbuf + off, c->rlen - off);
	c->rlen -= off;
	return 0;
}

static int tcp_read(struct lg_thread *t, struct tcp *p, struct tcp_conn *c)
{
	for (;;) {
		ssize_t n;

		if (!grow(&c->rbuf, &c->rcap, c->rlen + RBUF_MIN / 4))
			return fail(t, "out of memory (%s)", "TCP receive buffer");
		n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, MSG_DONTWAIT);
		if (n == 0)
			return fail(t, "the server closed the %s connection", "TCP");
		if (n < 0) {
			if (errno == EAGAIN)
				return 0;
			if (errno == EINTR)
				continue;
			return fail(t, "recv: %s", strerror(errno));
		}
		c->rlen += (size_t)n;
		if (tcp_replies(t, p, c, lg_now()) < 0)
			return -1;
	}
}

static int tcp_check_stuck(struct lg_thread *t, struct tcp *p, uint64_t now)
{
	uint64_t limit = (uint64_t)t->c->timeout_ms * 1000000ULL;
	char ms[32];

	for (unsigned i = 0; i < p->nconn; i++) {
		struct tcp_conn *c = &p->conn[i];
		if (c->n && now - c->fifo[c->head].sent_ns > limit) {
			t->n.timeouts++;
			snprintf(ms, sizeof(ms), "%u", t->c->timeout_ms);
			return fail(t, "no TCP reply within %s ms (the server is stuck)", ms);
		}
	}
	return 0;
}

static void tcp_free(struct tcp *p)
{
	for (unsigned i = 0; p->conn && i < p->nconn; i++) {
		if (p->conn[i].fd >= 0)
			close(p->conn[i].fd);
		free(p->conn[i].wbuf);
		free(p->conn[i].rbuf);
		free(p->conn[i].fifo);
	}
	free(p->conn);
	if (p->ep >= 0)
		close(p->ep);
}

static int tcp_setup(struct lg_thread *t, struct tcp *p, unsigned depth, unsigned nconn)
{
	memset(p, 0, sizeof(*p));
	p->ep = epoll_create1(EPOLL_CLOEXEC);
	p->nconn = nconn;
	p->rmax = lg_req_max(t->c);
	p->conn = calloc(nconn, sizeof(*p->conn));
	if (!p->conn)
		return fail(t, "out of memory (%s)", "connections");
	for (unsigned i = 0; i < nconn; i++)
		p->conn[i].fd = -1;
	if (p->ep < 0)
		return fail(t, "epoll: %s", strerror(errno));
	for (unsigned i = 0; i < nconn; i++) {
		struct tcp_conn *c = &p->conn[i];
		c->cap = depth / nconn + (i < depth % nconn);
		c->fifo = calloc(c->cap, sizeof(*c->fifo));
		c->fd = lg_connect(t->c, SOCK_STREAM, t->err, sizeof(t->err));
		if (!c->fifo)
			return fail(t, "out of memory (%s)", "connections");
		if (c->fd < 0)
			return -1;
		if (epoll_add(p->ep, c->fd, EPOLLIN, i) < 0)
			return fail(t, "epoll: %s", strerror(errno));
	}
	return 0;
}

static int run_tcp(struct lg_thread *t, unsigned depth, unsigned nconn, uint64_t start)
{
	struct epoll_event ev[64];
	uint64_t now, at, wake;
	struct tcp_conn *c;
	struct sched sc;
	struct tcp p;
	int got, rc = -1;

	if (nconn > depth)
		nconn = depth;
	if (tcp_setup(t, &p, depth, nconn) < 0)
		goto out;
	sched_init(&sc, t, start);
	for (;;) {
		now = lg_now();
		while (more_to_send(t, &sc, now) && (at = due(&sc, now)) && (c = tcp_pick(&p)))
			if (tcp_queue(t, &p, c, &sc, at, now) < 0)
				goto out;
		for (unsigned i = 0; i < p.nconn; i++)
			if (p.conn[i].wlen && tcp_flush(t, &p, &p.conn[i], i) < 0)
				goto out;
		if (!p.busy && !more_to_send(t, &sc, now))
			break;
		wake = now + 10 * TIMEOUT_SCAN;
		if (sc.open && p.busy < depth && more_to_send(t, &sc, now) && sc.next < wake)
			wake = sc.next;
		if (!t->sequential && !t->quota && now < t->t_end && t->t_end < wake)
			wake = t->t_end;
		wait_for(p.ep, ev, 64, &got, now, wake);
		if (got < 0 && errno != EINTR) {
			fail(t, "epoll_pwait2: %s", strerror(errno));
			goto out;
		}
		for (int i = 0; i < got; i++) {
			c = &p.conn[ev[i].data.u32];
			if ((ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && tcp_read(t, &p, c) < 0)
				goto out;
			if ((ev[i].events & EPOLLOUT) && tcp_flush(t, &p, c, ev[i].data.u32) < 0)
				goto out;
		}
		if (tcp_check_stuck(t, &p, lg_now()) < 0)
			goto out;
	}
	rc = 0;
out:
	tcp_free(&p);
	return rc;
}

int lg_run(struct lg_thread *t)
{
	const struct lg_config *c = t->c;
	unsigned depth = c->depth;

	if (t->sequential && depth < 64)
		depth = 64; /* preload and verify: pipelined, whatever --depth says */
	if (c->proto == LG_MC_UDP)
		return run_udp(t, depth, t->t_start);
	return run_tcp(t, depth, c->conns, t->t_start);
}
