// SPDX-License-Identifier: MIT
/* One TCP connection of xdpkv serve, its bytes moved: read into a bounded
 * input buffer, run through the slow path's protocol code
 * (xkv_slow_stream), replies written as the socket takes them; on a
 * fast-path connection, in step with what the kernel answered
 * (tcp_conns, tcp_paid: docs/architecture.md, "Order on a connection"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include "tcp_int.h"

void xkv_tcp_conn_name(const struct tcp_conn *c, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	if (xkv_addr_is_v4(c->src.addr))
		inet_ntop(AF_INET, c->src.addr + 12, a, sizeof(a));
	else
		inet_ntop(AF_INET6, c->src.addr, a, sizeof(a));
	snprintf(buf, len, "[%s]:%u", a, c->src.port);
}

/* Grow c's input buffer to hold want bytes (at most TCP_IN_CAP): doubling
 * up to TCP_IN_FREE for anyone; beyond that to what the request needs,
 * charged to t->in_mem.  false: not now (over --max-buffer-mib, or no
 * memory); the buffer stays as it was. */
static bool in_grow(struct xkv_serve_tcp *t, struct tcp_conn *c, size_t want)
{
	if (want <= c->in.cap)
		return true;
	size_t cap = c->in.cap ? c->in.cap * 2 : TCP_IN_FIRST;
	if (cap < want)
		cap = want;
	if (cap > TCP_IN_FREE && want <= TCP_IN_FREE)
		cap = TCP_IN_FREE;
	if (cap > TCP_IN_CAP)
		cap = TCP_IN_CAP;
	size_t charge = cap > TCP_IN_FREE ? cap - TCP_IN_FREE : 0;
	if (charge > c->in_charged) {
		size_t more = charge - c->in_charged;
		if (__atomic_add_fetch(&t->in_mem, more, __ATOMIC_RELAXED) > t->in_max) {
			__atomic_sub_fetch(&t->in_mem, more, __ATOMIC_RELAXED);
			return false;
		}
	}
	__u8 *p = realloc(c->in.p, cap);
	if (!p) {
		if (charge > c->in_charged)
			__atomic_sub_fetch(&t->in_mem, charge - c->in_charged, __ATOMIC_RELAXED);
		return false;
	}
	c->in.p = p;
	c->in.cap = cap;
	c->in_charged = charge > c->in_charged ? charge : c->in_charged;
	return true;
}

void xkv_tcp_in_free(struct xkv_serve_tcp *t, struct tcp_conn *c)
{
	xkv_buf_free(&c->in);
	if (c->in_charged)
		__atomic_sub_fetch(&t->in_mem, c->in_charged, __ATOMIC_RELAXED);
	c->in_charged = 0;
}

/* Run what the input holds, as far as the output bound lets it. */
static void conn_process(struct tcp_worker *w, struct tcp_conn *c)
{
	/* A request that turns out to need more room than the buffer has
	 * gets it at once (memcached allocates the item when it reads the
	 * line), or its answer at once when there is none: a second pass. */
	for (int pass = 0; pass < 2; pass++) {
		if (c->closing || !c->in.len || c->out.len - c->out_off >= TCP_OUT_HIGH)
			return;
		/* the first request is not whole yet: parsing its line again
		 * would find the same (a big value arrives in many reads) */
		if (c->st.need > c->in.len) {
			if (c->st.need <= c->in.cap || in_grow(w->t, c, c->st.need))
				return;
			c->st.no_room = true; /* answered and swallowed (slowpath.h) */
		} else if (pass) {
			return;
		}
		size_t used = 0;
		__u64 before = w->delta.v[XKV_STAT_requests];
		c->st.out_max = c->out_off + TCP_OUT_HIGH;
		if (xkv_slow_stream(w->t->sl, &c->src, &c->st, c->in.p, c->in.len, &used, &c->out,
				    &w->delta) == XKV_STREAM_CLOSE)
			c->closing = true;
		w->delta.v[XKV_STAT_tcp_slow] += w->delta.v[XKV_STAT_requests] - before;
		w->pending++;
		if (used) {
			memmove(c->in.p, c->in.p + used, c->in.len - used);
			c->in.len -= used;
		}
		if (!c->in.len && c->in.cap > TCP_IN_FIRST)
			xkv_tcp_in_free(w->t, c); /* a large request went through: give it back */
	}
}

/* Can the input buffer take more (it grows to TCP_IN_CAP)? */
static bool in_room(const struct tcp_conn *c)
{
	return c->in.len < c->in.cap || c->in.cap < TCP_IN_CAP;
}

/* Bytes the verdict has passed to userspace on a fast-path connection
 * (counted before the skb is queued and the socket woken). */
static __u64 conn_passed(const struct xkv_serve_tcp *t, const struct tcp_conn *c)
{
	return __atomic_load_n(&t->kconns[c->slot].passed, __ATOMIC_ACQUIRE);
}

/* One read into the input buffer.  <0: the connection is gone; 3: the
 * buffer is full, nothing read (more may wait); 2: bytes came and filled
 * the room there was (more may wait); 1: bytes came and did not (the
 * socket had no more then), or the end; 0: nothing now. */
static int conn_read(struct xkv_serve_tcp *t, struct tcp_conn *c)
{
	/* room for what the first request still needs, or to find its line */
	if (c->in.cap - c->in.len < TCP_IN_FIRST / 2 && c->in.cap < TCP_IN_CAP &&
	    !in_grow(t, c, c->st.need > c->in.cap ? c->st.need : c->in.cap + 1) && !c->in.cap)
		return -1;
	if (c->in.len == c->in.cap)
		return 3; /* full: conn_process answers the request that needs more */
	size_t room = c->in.cap - c->in.len;
	ssize_t n = recv(c->fd, c->in.p + c->in.len, room, MSG_DONTWAIT);
	if (n > 0) {
		c->in.len += (size_t)n;
		c->rcvd += (__u64)n;
		return (size_t)n == room ? 2 : 1;
	}
	if (n == 0) {
		/* The end, unless the verdict passed bytes not read yet: the FIN's
		 * wake-up comes before the verdict runs on the segment it came in
		 * (tcp_data_queue: tcp_fin, then data_ready), so a reader woken by
		 * it can find the socket's queue empty and the end flagged while
		 * the segment's request is on its way to the psock's queue; its
		 * arrival wakes the socket again.  (Read from the kernel's order;
		 * not seen here: 6,000 connections closed by the segment with
		 * their last request, e2e_tcp's lastword, all done without it) */
		if (c->fast && conn_passed(t, c) > c->rcvd)
			return 0;
		c->rd_eof = true;
		return 1;
	}
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
}

/* May this side write now?  On a fast-path connection the kernel may have
 * queued replies to earlier requests (tcp_conns.kq bytes, frozen while this
 * side owes replies) that its psock backlog has not handed to TCP yet: this
 * side writes once the bytes in the socket, less its own, cover them.  The
 * bytes in the socket: acknowledged (read first) + not yet acknowledged
 * (SIOCOUTQ, second), never more than were written, whatever ACKs come
 * between the two reads. */
static bool conn_may_write(struct xkv_serve_tcp *t, struct tcp_conn *c)
{
	__u64 acked, kq;
	int outq = 0;

	if (!c->fast)
		return true;
	kq = __atomic_load_n(&t->kconns[c->slot].kq, __ATOMIC_ACQUIRE);
	if (kq == c->kq_ok)
		return true;
	if (xkv_tcp_bytes_acked(c->fd, &acked) || ioctl(c->fd, SIOCOUTQ, &outq) || outq < 0)
		return false;
	if (acked + (__u64)outq < c->wrote + kq)
		return false;
	c->kq_ok = kq;
	return true;
}

/* Hold (or release) the connection until the kernel's replies are out:
 * the worker runs it again every TCP_KWAIT_MS meanwhile. */
static void conn_kwait(struct tcp_worker *w, struct tcp_conn *c, bool wait)
{
	if (wait != c->kwait) {
		c->kwait = wait;
		w->kwaits += wait ? 1 : -1;
	}
}

/* Run the connection again at the worker's next turn (or not). */
static void conn_ready(struct tcp_worker *w, struct tcp_conn *c, bool ready)
{
	if (ready != c->ready) {
		c->ready = ready;
		w->readies += ready ? 1 : -1;
	}
}

/* May the connection be closed now?  Not while replies the kernel queued
 * to its last requests are still in the psock's backlog: closing the socket
 * drops them (a client that sends its last get and shuts its side in one
 * segment would lose the answer; memcached answers, then closes).  Waits
 * TCP_FLUSH_NS at most: a peer that stopped reading holds them for good. */
static bool conn_may_close(struct tcp_worker *w, struct tcp_conn *c)
{
	if (!c->fast || conn_may_write(w->t, c))
		return true;
	__u64 now = xkv_now_ns();
	if (!c->flush_by_ns)
		c->flush_by_ns = now + TCP_FLUSH_NS;
	if (now >= c->flush_by_ns)
		return true;
	conn_kwait(w, c, true);
	return false;
}

/* Send what is queued, as far as the socket takes it.  <0: gone. */
static int conn_write(struct tcp_worker *w, struct tcp_conn *c)
{
	bool wait = c->out_off < c->out.len && !conn_may_write(w->t, c);
	conn_kwait(w, c, wait);
	if (wait)
		return 0;
	while (c->out_off < c->out.len) {
		ssize_t n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		c->out_off += (size_t)n;
		c->wrote += (__u64)n;
	}
	c->out.len = c->out_off = 0;
	if (c->out.cap > TCP_OUT_KEEP)
		xkv_buf_free(&c->out);
	return 0;
}

/* Is there something to read?  On a fast-path connection the verdict
 * counts what it passes up (tcp_conns.passed) before the skb reaches the
 * socket's queue and wakes it, so a count equal to what was read means
 * that every skb since was answered in the kernel: a read would find
 * nothing (a system call for each request the kernel answered).  The end
 * of the stream and errors are read whatever the count. */
static bool conn_readable(const struct xkv_serve_tcp *t, const struct tcp_conn *c, __u32 ev)
{
	if (!c->fast)
		return ev & (EPOLLIN | EPOLLHUP);
	return (ev & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)) ||
	       conn_passed(t, c) != c->rcvd;
}

bool xkv_tcp_conn_event(struct tcp_worker *w, struct tcp_conn *c, __u32 ev)
{
	if (ev && w->t->idle_ns) /* a clock read a request, only for --idle-timeout */
		c->last_ns = xkv_now_ns();
	if (ev & EPOLLERR) {
		if (w->t->o->verbose > 1) {
			char who[INET6_ADDRSTRLEN + 16];
			int e = 0;
			socklen_t el = sizeof(e);
			getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el);
			xkv_tcp_conn_name(c, who, sizeof(who));
			fprintf(stderr, "xdpkv slow path: TCP %s: %s\n", who, strerror(e));
		}
		goto gone;
	}
	/* Edge-triggered on the fast path (see conn_fast): read what is
	 * there.  A read that did not fill the buffer took all there was; what
	 * comes later raises a new event (every skb passed up wakes the socket's
	 * waiters), so there is no read for EAGAIN, and none after the replies
	 * are sent: a system call each that found nothing.  Except once the peer
	 * has closed (RDHUP): its FIN raised the event already, and raises no
	 * other, so the reads go on to the end of the stream — a client whose
	 * last request (one with no reply) came in the segment that closed the
	 * connection was otherwise left open for good, in CLOSE-WAIT. */
	int r = 0;
	if (!c->rd_eof && conn_readable(w->t, c, ev))
		do {
			if ((r = conn_read(w->t, c)) < 0)
				goto gone;
		} while (c->fast && (r == 2 || (r == 1 && (ev & (EPOLLRDHUP | EPOLLHUP)))) &&
			 !c->rd_eof && in_room(c));
	/* Run, send, and again while either made progress: a pipeline whose
	 * replies outgrew the bound stops running requests until the queue
	 * drains, so a write that drains it must run the requests already
	 * read (their client waits for their replies, not to send more). */
	for (;;) {
		size_t before = c->in.len, queued_before = c->out.len - c->out_off;
		bool got = false;
		conn_process(w, c);
		size_t queued_now = c->out.len - c->out_off;
		if (conn_write(w, c) < 0)
			goto gone;
		bool sent = c->out.len - c->out_off < queued_now || (queued_before && !queued_now);
		if (c->fast && !c->rd_eof && r >= 2 && in_room(c)) {
			/* the read stopped on a full buffer: what is left raises no
			 * new event, read it now that the requests made room */
			size_t had = c->in.len;
			if ((r = conn_read(w->t, c)) < 0)
				goto gone;
			got = c->in.len != had || c->rd_eof;
		}
		/* a reply in parts: one window at a time, the worker's other
		 * connections served between two (fair workers) */
		if ((c->in.len == before && !got && !sent) || c->out.len > c->out_off || c->closing ||
		    xkv_slow_stream_busy(&c->st))
			break;
	}
	bool queued = c->out.len > c->out_off, busy = xkv_slow_stream_busy(&c->st);
	/* a part sent whole: nothing to wait for, the next at the next turn */
	conn_ready(w, c, busy && !queued && !c->closing);
	if ((c->closing || (c->rd_eof && !busy)) && !queued) {
		if (conn_may_close(w, c))
			goto gone; /* a request the peer left half-sent is dropped */
		return true;
	}
	/* All read is consumed (no partial request, no data block being
	 * swallowed) and answered, the replies handed to the socket in full:
	 * the kernel may answer again (it compares with what it passed); the
	 * sk_skb verdict never on a binary connection (it answers text only),
	 * the XDP responder on both (common/tcpx_bin.bpf.h) */
	if ((c->xtcp || (c->fast && c->st.proto != XKV_STREAM_BINARY)) && !queued && !c->in.len &&
	    !c->st.swallow &&
	    !c->closing && c->paid != c->rcvd) {
		__atomic_store_n(&w->t->paid[c->slot], c->rcvd, __ATOMIC_RELEASE);
		c->paid = c->rcvd;
	}
	__u32 want = queued && !c->kwait ? EPOLLOUT : 0;
	if (!c->closing && !c->rd_eof && c->out.len - c->out_off < TCP_OUT_HIGH)
		want |= EPOLLIN;
	if (c->fast)
		want |= EPOLLET | EPOLLRDHUP;
	if (want != c->events) {
		struct epoll_event e = { .events = want, .data.ptr = c };
		if (epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &e))
			goto gone;
		c->events = want;
	}
	return true;
gone:
	if (c->kwait)
		w->kwaits--;
	conn_ready(w, c, false);
	return false;
}
