// SPDX-License-Identifier: MIT
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* struct ucred, accept4 */
#endif
/* The slow path's socket loop: one dual-stack UDP socket bound to the port
 * on the interface (and the TCP server of tcp.h on the same port), batched receive, replies sent from the address each
 * request was sent to, counters pushed to the stats map in batches.  A
 * housekeeping thread keeps what would stall the loop off it: the item
 * count for stats and the host map's view of the interface. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "slowpath.h"
#include "sock.h"
#include "push.h"
#include "tcp.h"
#include "migrate.h"

#define SERVE_BATCH 32                   /* datagrams per recvmmsg */
#define SERVE_DGRAM 65536                /* largest UDP payload, rounded up */
#define SERVE_PUSH_MS 100                /* counters to the map at least this often */
#define SERVE_PUSH_REQS 256              /* ... or after this many requests */
#define SERVE_COUNT_MS 10000             /* curr_items recounted this often */
#define SERVE_SYNC_MS 1000               /* host map re-read from the interface this often */

/* Where a request came from and where it was sent to. */
struct serve_peer {
	int fd;
	int v6;                          /* the socket is AF_INET6 */
	struct sockaddr_storage from;
	socklen_t fromlen;
	int have_dst;                    /* reply from dst6/dst4 (not for multicast, broadcast) */
	struct in6_pktinfo dst6;         /* v6 socket (v4 requests as mapped addresses) */
	struct in_pktinfo dst4;          /* v4-only socket */
	int dst_known;                   /* dst16: where the request was sent, whatever it was */
	__u8 dst16[16];
	const struct xkv_serve_opts *o;
};

/* The destination address of a received datagram, from its control data. */
static void peer_dst(struct serve_peer *p, struct msghdr *mh)
{
	p->have_dst = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO) {
			memcpy(&p->dst6, CMSG_DATA(cm), sizeof(p->dst6));
			p->have_dst = 1;
		} else if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;
			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			if (p->v6) { /* as a mapped address */
				memset(&p->dst6, 0, sizeof(p->dst6));
				p->dst6.ipi6_addr.s6_addr[10] = 0xff;
				p->dst6.ipi6_addr.s6_addr[11] = 0xff;
				memcpy(&p->dst6.ipi6_addr.s6_addr[12], &pi.ipi_addr, 4);
				p->dst6.ipi6_ifindex = pi.ipi_ifindex;
			} else {
				p->dst4 = pi;
			}
			p->have_dst = 1;
		}
	}
	p->dst_known = p->have_dst;
	if (p->have_dst && p->v6)
		memcpy(p->dst16, &p->dst6.ipi6_addr, 16); /* mapped for IPv4, as policy.h wants */
	else if (p->have_dst)
		xkv_addr_from_v4(p->dst16, &p->dst4.ipi_addr);
	/* a request sent to a multicast or broadcast address is answered from
	 * an address the kernel picks */
	if (p->have_dst && p->v6 && IN6_IS_ADDR_MULTICAST(&p->dst6.ipi6_addr))
		p->have_dst = 0;
	__u32 a4 = 0;
	if (p->have_dst && p->v6 && IN6_IS_ADDR_V4MAPPED(&p->dst6.ipi6_addr))
		memcpy(&a4, &p->dst6.ipi6_addr.s6_addr[12], 4);
	else if (p->have_dst && !p->v6)
		a4 = p->dst4.ipi_addr.s_addr;
	if (a4 && (IN_MULTICAST(ntohl(a4)) || a4 == INADDR_BROADCAST))
		p->have_dst = 0;
}

/* xkv_slow_frame's emit: one reply datagram, from the request's destination. */
static int serve_emit(void *arg, const __u8 *dgram, size_t dlen)
{
	struct serve_peer *p = arg;
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)dgram, .iov_len = dlen };
	struct msghdr mh = {
		.msg_name = &p->from, .msg_namelen = p->fromlen,
		.msg_iov = &iov, .msg_iovlen = 1,
	};

	if (p->have_dst) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		struct cmsghdr *cm = (struct cmsghdr *)ctl.buf;
		if (p->v6) {
			struct in6_pktinfo pi = p->dst6;
			mh.msg_controllen = CMSG_SPACE(sizeof(pi));
			cm->cmsg_level = IPPROTO_IPV6;
			cm->cmsg_type = IPV6_PKTINFO;
			cm->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		} else {
			struct in_pktinfo pi = { .ipi_ifindex = p->dst4.ipi_ifindex,
						 .ipi_spec_dst = p->dst4.ipi_addr };
			mh.msg_controllen = CMSG_SPACE(sizeof(pi));
			cm->cmsg_level = IPPROTO_IP;
			cm->cmsg_type = IP_PKTINFO;
			cm->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		}
	}
	if (sendmsg(p->fd, &mh, 0) < 0) {
		if (p->o->verbose)
			fprintf(stderr, "xdpkv slow path: send failed: %s\n", strerror(errno));
		return 0; /* one lost reply is the client's to retry; keep serving */
	}
	return 0;
}

static void peer_name(const struct serve_peer *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (p->from.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)&p->from;
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		port = ntohs(s6->sin6_port);
	} else if (p->from.ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)&p->from;
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		port = ntohs(s4->sin_port);
	}
	snprintf(buf, len, "[%s]:%u", a, port);
}

struct serve_state {
	struct xkv_store *s;
	struct xkv_slow *sl;
	const struct xkv_serve_opts *o;
	int fd, v6;
	__u8 *bufs;                      /* SERVE_BATCH * SERVE_DGRAM */
	struct mmsghdr msgs[SERVE_BATCH];
	struct iovec iovs[SERVE_BATCH];
	struct sockaddr_storage from[SERVE_BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct cmsghdr align;
	} ctl[SERVE_BATCH];
	struct xkv_buf out;
	struct xkv_stats delta;
	__u64 pending, last_push, push_ns;
};

static void serve_push(struct serve_state *st)
{
	if (!st->pending)
		return;
	xkv_serve_push(st->s, &st->delta, st->o->verbose);
	st->pending = 0;
	st->last_push = xkv_now_ns();
}

static void serve_one(struct serve_state *st, int i)
{
	struct mmsghdr *m = &st->msgs[i];
	struct serve_peer p = {
		.fd = st->fd, .v6 = st->v6, .fromlen = m->msg_hdr.msg_namelen, .o = st->o,
	};
	struct xkv_udp_hdr hdr;
	const __u8 *dgram = st->bufs + (size_t)i * SERVE_DGRAM;

	memcpy(&p.from, &st->from[i], sizeof(p.from));
	peer_dst(&p, &m->msg_hdr);
	st->out.len = 0;
	st->pending++;
	if (m->msg_hdr.msg_flags & MSG_TRUNC)
		return; /* cannot happen: buffers hold the largest datagram */
	struct xkv_slow_src src = { .has_dst = (__u8)p.dst_known };
	if (xkv_addr_from_sockaddr(&p.from, src.addr, &src.port))
		return; /* not IP: cannot happen on this socket */
	memcpy(src.dst, p.dst16, 16);
	if (!xkv_slow_handle(st->sl, &src, dgram, m->msg_len, &hdr, &st->out, &st->delta)) {
		if (st->o->verbose > 1) {
			char who[INET6_ADDRSTRLEN + 16];
			peer_name(&p, who, sizeof(who));
			fprintf(stderr, "xdpkv slow path: %s %u bytes -> no reply\n", who, m->msg_len);
		}
		return;
	}
	int n = xkv_slow_frame(hdr.req_id, st->out.p, st->out.len, serve_emit, &p);
	if (st->o->verbose) {
		char who[INET6_ADDRSTRLEN + 16];
		peer_name(&p, who, sizeof(who));
		fprintf(stderr, "xdpkv slow path: %s %u bytes -> %zu bytes in %d datagram(s)\n",
			who, m->msg_len, st->out.len, n);
	}
}

static void serve_prepare(struct serve_state *st)
{
	for (int i = 0; i < SERVE_BATCH; i++) {
		st->iovs[i].iov_base = st->bufs + (size_t)i * SERVE_DGRAM;
		st->iovs[i].iov_len = SERVE_DGRAM;
		struct msghdr *h = &st->msgs[i].msg_hdr;
		memset(h, 0, sizeof(*h));
		h->msg_name = &st->from[i];
		h->msg_namelen = sizeof(st->from[i]);
		h->msg_iov = &st->iovs[i];
		h->msg_iovlen = 1;
		h->msg_control = st->ctl[i].buf;
		h->msg_controllen = sizeof(st->ctl[i].buf);
	}
}

/* One round: a blocking recvmmsg that returns as soon as one datagram is in
 * (MSG_WAITFORONE) or after SERVE_POLL_MS (SO_RCVTIMEO), so a busy server
 * pays one receive syscall per batch and no poll.  <0 on error. */
static int serve_round(struct serve_state *st, char *err, size_t errlen)
{
	serve_prepare(st);
	int n = recvmmsg(st->fd, st->msgs, SERVE_BATCH, MSG_WAITFORONE, NULL);
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		return xkv_errf(err, errlen, -errno, "recvmmsg: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		serve_one(st, i);
	if (st->pending >= SERVE_PUSH_REQS ||
	    (st->pending && xkv_now_ns() - st->last_push >= st->push_ns))
		serve_push(st);
	return 0;
}

/* systemd's readiness protocol (sd_notify(3)) without libsystemd: one
 * datagram to the unix socket named by $NOTIFY_SOCKET ('@' = abstract name).
 * Nothing happens without it; a failure only matters with -v. */
static void serve_notify(const char *msg, int verbose)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = path ? strlen(path) : 0;
	int fd;

	if (!len || (path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = 0;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
			     offsetof(struct sockaddr_un, sun_path) + len) < 0) {
		if (verbose)
			fprintf(stderr, "xdpkv slow path: NOTIFY_SOCKET %s: %s\n", path, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
}

static void serve_ready(int fd, int verbose)
{
	serve_notify("READY=1\nSTATUS=serving", verbose);
	if (fd < 0)
		return;
	ssize_t w = write(fd, "ready\n", 6);
	(void)w;
	close(fd);
}

/* ---- housekeeping, off the request thread ---- */

struct serve_keeper {
	struct xkv_store *s;
	struct xkv_slow *sl;
	const struct xkv_serve_opts *o;
	pthread_mutex_t mu;
	pthread_cond_t cv;               /* CLOCK_MONOTONIC */
	bool quit;
	bool sync_failing;               /* the error was logged once */
};

/* The interface's MAC and addresses into the maps the XDP program checks. */
static void keeper_sync(struct serve_keeper *k)
{
	char err[XKV_ERRLEN] = "";
	int changes = 0;
	int e = xkv_host_sync(k->s, k->o->ifname, 0, &changes, err, sizeof(err));

	if (e) {
		if (!k->sync_failing)
			fprintf(stderr, "xdpkv slow path: cannot keep the host map of %s current: %s\n",
				k->o->ifname, err[0] ? err : strerror(-e));
		k->sync_failing = true;
		return;
	}
	if (k->sync_failing && k->o->verbose)
		fprintf(stderr, "xdpkv slow path: host map of %s current again\n", k->o->ifname);
	k->sync_failing = false;
	if (changes && k->o->verbose)
		fprintf(stderr, "xdpkv slow path: %s changed: %d host map and list entries updated\n",
			k->o->ifname, changes);
}

static void *keeper_main(void *arg)
{
	struct serve_keeper *k = arg;
	__u64 sync_ns = (k->o->sync_ms ? k->o->sync_ms : SERVE_SYNC_MS) * 1000000ull;
	__u64 count_ns = (k->o->count_ms ? k->o->count_ms : SERVE_COUNT_MS) * 1000000ull;
	__u64 next_sync = 0, next_count = xkv_now_ns() + count_ns; /* counted at start */
	__u64 tick_ns = k->o->tick ? k->o->tick_ms * 1000000ull : 0;
	__u64 next_tick = tick_ns ? xkv_now_ns() + tick_ns : UINT64_MAX;

	pthread_mutex_lock(&k->mu);
	while (!k->quit) {
		__u64 now = xkv_now_ns();
		if (now >= next_sync || now >= next_count || now >= next_tick) {
			pthread_mutex_unlock(&k->mu);
			if (now >= next_tick) {
				xkv_slow_hold(k->sl); /* a migration's switch waits */
				k->o->tick(k->o->tick_arg);
				xkv_slow_release(k->sl);
				next_tick = xkv_now_ns() + tick_ns;
			}
			if (now >= next_sync) {
				keeper_sync(k);
				next_sync = now + sync_ns;
			}
			if (now >= next_count) {
				xkv_slow_count_refresh(k->sl);
				/* the chunks of big values nobody points at any more */
				struct xkv_big_census cs;
				if (xkv_slow_big_collect(k->sl, &cs) >= 0 && cs.removed && k->o->verbose)
					fprintf(stderr, "xdpkv slow path: %llu chunks of replaced or removed big values freed\n",
						(unsigned long long)cs.removed);
				next_count = now + count_ns;
			}
			pthread_mutex_lock(&k->mu);
			continue;
		}
		__u64 at = next_sync < next_count ? next_sync : next_count;
		at = next_tick < at ? next_tick : at;
		struct timespec ts = { .tv_sec = (time_t)(at / 1000000000ull),
				       .tv_nsec = (long)(at % 1000000000ull) };
		pthread_cond_timedwait(&k->cv, &k->mu, &ts);
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

static int keeper_start(struct serve_keeper *k, pthread_t *th)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&k->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cv, &ca);
	pthread_condattr_destroy(&ca);
	return -pthread_create(th, NULL, keeper_main, k);
}

static void keeper_stop(struct serve_keeper *k, pthread_t th)
{
	pthread_mutex_lock(&k->mu);
	k->quit = true;
	pthread_cond_signal(&k->cv);
	pthread_mutex_unlock(&k->mu);
	pthread_join(th, NULL);
	pthread_cond_destroy(&k->cv);
	pthread_mutex_destroy(&k->mu);
}

/* ---- the migration control socket (migrate.h) ---- */

struct serve_ctl {
	int lfd;
	struct xkv_store *s;
	struct xkv_slow *sl;
	const struct xkv_serve_opts *o;
	atomic_int quit;
	pthread_t th;
	bool up;                 /* th runs */
};

/* st: the mirror's counts to send (NULL: as they stand now) */
static void ctl_reply(int c, int rc, const char *why, struct xkv_slow *sl, __s64 n,
		      const struct xkv_slow_mig_stats *st)
{
	struct xkv_mig_msg r = {};
	snprintf(r.cmd, sizeof(r.cmd), "%s", rc ? "error" : "ok");
	snprintf(r.text, sizeof(r.text), "%s", why ? why : "");
	r.n = n;
	if (st)
		r.st = *st;
	else
		xkv_slow_mig_stats(sl, &r.st);
	xkv_mig_send(c, &r, -1);
}

/* One migrate command's connection, step by step. */
static void ctl_conn(struct serve_ctl *k, int c)
{
	const char *ifn = k->o->ifname;
	struct xkv_mig_msg m;
	char err[XKV_ERRLEN];
	int fd, got;

	for (;;) {
		struct pollfd p = { .fd = c, .events = POLLIN };
		int pr = 0;
		while (!atomic_load(&k->quit) && !(pr = poll(&p, 1, SERVE_POLL_MS)))
			;
		if (pr <= 0 || (got = xkv_mig_recv(c, &m, &fd)) != 1)
			break; /* serve stops, or the peer went away */
		long rc = 0;
		err[0] = 0;
		if (!strcmp(m.cmd, "begin")) {
			if (fd < 0)
				rc = xkv_errf(err, sizeof(err), -EINVAL, "begin without the store");
			else if ((rc = xkv_slow_mig_begin(k->sl, fd, &m.cfg, err, sizeof(err))))
				close(fd);
			if (!rc)
				fprintf(stderr, "xdpkv slow path: migrating %s to %.16s: writes go to both stores\n",
					ifn, m.cfg.layout);
			ctl_reply(c, (int)rc, err, k->sl, 0, NULL);
			continue;
		}
		if (fd >= 0)
			close(fd);
		if (!strcmp(m.cmd, "fixup")) {
			/* the counts of the moment the live items were counted: the
			 * writes after it would put the eviction estimate off */
			struct xkv_slow_mig_stats at;
			rc = xkv_slow_mig_fixup(k->sl, &at);
			ctl_reply(c, rc < 0 ? (int)rc : 0, rc < 0 ? strerror((int)-rc) : NULL, k->sl, rc,
				  rc < 0 ? NULL : &at);
		} else if (!strcmp(m.cmd, "switch")) {
			rc = xkv_slow_mig_switch(k->sl);
			if (!rc)
				fprintf(stderr, "xdpkv slow path: %s now serves the new %.16s store\n", ifn,
					k->s->cfg.layout);
			ctl_reply(c, (int)rc, rc ? "no migration to switch" : NULL, k->sl, 0, NULL);
		} else if (!strcmp(m.cmd, "end")) {
			ctl_reply(c, 0, NULL, k->sl, 0, NULL);
			xkv_slow_mig_end(k->sl);
			return;
		} else {
			ctl_reply(c, -EINVAL, "unknown step", k->sl, 0, NULL);
		}
	}
	/* the migrate command went away (killed, or it failed): drop a new
	 * store not switched to, and let writes go to XDP again */
	int was = xkv_slow_mig_end(k->sl);
	if (was) {
		xkv_host_flags(k->s, 0, XKV_HOST_HOLD);
		fprintf(stderr, "xdpkv slow path: the migrate of %s went away %s; writes go to XDP again\n",
			ifn, was == 1 ? "before its switch: the old store stays" : "after its switch");
	}
}

static void *ctl_main(void *arg)
{
	struct serve_ctl *k = arg;
	while (!atomic_load(&k->quit)) {
		struct pollfd p = { .fd = k->lfd, .events = POLLIN };
		if (poll(&p, 1, SERVE_POLL_MS) <= 0)
			continue;
		int c = accept4(k->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		if (!getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) && cr.uid == 0)
			ctl_conn(k, c);
		close(c);
	}
	return NULL;
}

/* Listen for xdpkv migrate; a second serve of the interface has none (the
 * first one mirrors).  Called while serve still runs as root: the socket
 * keeps the credentials of its listen(), which migrate checks (SO_PEERCRED)
 * before it sends a map.  0, or -errno (logged, not fatal). */
static int ctl_listen(struct serve_ctl *k)
{
	struct sockaddr_un a;
	socklen_t len;
	int e = xkv_mig_addr(k->o->ifname, &a, &len);

	k->lfd = -1;
	if (e)
		return e;
	k->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (k->lfd < 0 || bind(k->lfd, (struct sockaddr *)&a, len) || listen(k->lfd, 4)) {
		e = -errno;
		fprintf(stderr, "xdpkv slow path: no migration control for %s: %s%s\n", k->o->ifname,
			strerror(-e), e == -EADDRINUSE ? " (another serve of it has it)" : "");
		if (k->lfd >= 0)
			close(k->lfd);
		k->lfd = -1;
		return e;
	}
	return 0;
}

/* Serve the control socket on a thread of its own. */
static int ctl_start(struct serve_ctl *k)
{
	int e;
	if (k->lfd < 0)
		return -EBADF;
	if ((e = -pthread_create(&k->th, NULL, ctl_main, k))) {
		close(k->lfd);
		k->lfd = -1;
	}
	k->up = !e;
	return e;
}

static void ctl_stop(struct serve_ctl *k)
{
	if (k->lfd < 0)
		return;
	atomic_store(&k->quit, 1);
	if (k->up)
		pthread_join(k->th, NULL);
	k->up = false;
	close(k->lfd);
	k->lfd = -1;
}

int xkv_serve(struct xkv_store *s, const struct xkv_serve_opts *o, char *err, size_t errlen)
{
	struct serve_ctl ctl = { .lfd = -1, .s = s, .o = o };
	__u16 port = o->port ? o->port : s->cfg.port;
	struct serve_keeper keeper = { .s = s, .o = o };
	pthread_t keeper_th;
	bool keeper_up = false;
	struct xkv_serve_tcp *tcp = NULL;
	int *tcp_fds = NULL, tcp_v6 = 0;
	unsigned tcp_n = 0;
	int rc = 0;

	if (!o->ifname || !*o->ifname)
		return xkv_errf(err, errlen, -EINVAL, "no interface given");
	if (strlen(o->ifname) >= IFNAMSIZ || !if_nametoindex(o->ifname))
		return xkv_errf(err, errlen, -ENODEV, "no such interface: %s", o->ifname);
	if (o->sasl && (o->no_tcp || (s->cfg.flags & XKV_CFG_UNGUARDED)))
		return xkv_errf(err, errlen, -EINVAL, "--sasl-pwdb needs TCP (authentication is over "
				"TCP) and the access checks (a store attached --unguarded answers anyone in XDP)");
	/* SASL: XDP answers nobody from now on; without it, as before */
	int hf = xkv_host_flags(s, o->sasl ? XKV_HOST_AUTH : 0, o->sasl ? 0 : XKV_HOST_AUTH);
	if (o->sasl && hf < 0)
		return xkv_errf(err, errlen, hf, "cannot turn the XDP path off for SASL: %s", strerror(-hf));
	struct serve_state *st = calloc(1, sizeof(*st));
	if (!st)
		return xkv_errf(err, errlen, -ENOMEM, "out of memory");
	st->bufs = malloc((size_t)SERVE_BATCH * SERVE_DGRAM);
	if (!st->bufs) {
		free(st);
		return xkv_errf(err, errlen, -ENOMEM, "out of memory");
	}
	st->s = s;
	st->o = o;
	st->push_ns = (o->push_ms ? o->push_ms : SERVE_PUSH_MS) * 1000000ull;
	st->fd = xkv_serve_socket(o->ifname, port, SOCK_DGRAM, &st->v6, err, errlen);
	if (st->fd < 0) {
		rc = st->fd;
		goto out;
	}
	if (!o->no_tcp) {
		/* a listener per TCP worker (serve_tcp.c) */
		tcp_n = xkv_serve_tcp_workers(o);
		tcp_fds = malloc(tcp_n * sizeof(*tcp_fds));
		if (!tcp_fds) {
			tcp_n = 0;
			rc = xkv_errf(err, errlen, -ENOMEM, "out of memory");
			goto out_fd;
		}
		for (unsigned i = 0; i < tcp_n; i++)
			tcp_fds[i] = -1;
		for (unsigned i = 0; i < tcp_n; i++) {
			tcp_fds[i] = xkv_serve_socket(o->ifname, port, SOCK_STREAM, &tcp_v6, err, errlen);
			if (tcp_fds[i] < 0) {
				rc = tcp_fds[i];
				goto out_fd;
			}
		}
	}
	if (!o->no_tcp) {
		char msg[256];
		if (xkv_serve_tcp_nofile(o->max_conns ? o->max_conns : XKV_MAX_CONNS, msg, sizeof(msg)))
			fprintf(stderr, "xdpkv slow path: %s\n", msg);
	}
	ctl_listen(&ctl);
	/* the sockets are bound and the maps are open: nothing else needs root
	 * (before any thread exists: capabilities are per thread) */
	if (o->drop_user) {
		char msg[512];
		rc = xkv_drop_privileges(*o->drop_user ? o->drop_user : NULL, msg, sizeof(msg));
		if (rc) {
			xkv_errf(err, errlen, rc, "cannot drop privileges: %s", msg);
			goto out_fd;
		}
		fprintf(stderr, "xdpkv slow path: %s\n", msg);
	}
	st->sl = keeper.sl = xkv_slow_new(s, &o->limits);
	if (!st->sl) {
		rc = xkv_errf(err, errlen, -ENOMEM, "out of memory");
		goto out_fd;
	}
	xkv_slow_set_sasl(st->sl, o->sasl);
	/* stats detail starts off: a serve that died with it on left the
	 * fast path handing every request over */
	if (s->host_fd >= 0)
		xkv_host_flags(s, 0, XKV_HOST_DETAIL);
	rc = keeper_start(&keeper, &keeper_th);
	if (rc) {
		xkv_errf(err, errlen, rc, "cannot start the housekeeping thread: %s", strerror(-rc));
		goto out_fd;
	}
	keeper_up = true;
	ctl.sl = st->sl;
	ctl_start(&ctl);
	if (tcp_n) {
		rc = xkv_serve_tcp_start(&tcp, s, st->sl, o, tcp_fds, err, errlen); /* takes the fds */
		if (rc)
			goto out_fd;
	}
	if (o->verbose) {
		struct xkv_slow_limits lim = xkv_slow_limits_of(st->sl);
		fprintf(stderr, "xdpkv slow path: serving %s layout on %s UDP port %u (%s), "
			"at most %u keys per get and %u reply bytes per request\n",
			s->cfg.layout, o->ifname, port, st->v6 ? "IPv4 and IPv6" : "IPv4 only",
			lim.max_keys, lim.max_reply);
		if (tcp)
			fprintf(stderr, "xdpkv slow path: TCP port %u too (%s), %u threads, "
				"at most %u connections\n", port, tcp_v6 ? "IPv4 and IPv6" : "IPv4 only",
				xkv_serve_tcp_threads(tcp), o->max_conns ? o->max_conns : XKV_MAX_CONNS);
	}
	st->last_push = xkv_now_ns();
	serve_ready(o->ready_fd, o->verbose);
	while (!(o->stop && *o->stop)) {
		rc = serve_round(st, err, errlen);
		if (rc)
			break;
	}
	serve_notify("STOPPING=1", o->verbose);
	serve_push(st);
out_fd:
	ctl_stop(&ctl);
	xkv_serve_tcp_stop(tcp); /* before the slow path it uses goes */
	for (unsigned i = 0; i < tcp_n; i++)
		if (tcp_fds[i] >= 0)
			close(tcp_fds[i]);
	free(tcp_fds);
	if (keeper_up)
		keeper_stop(&keeper, keeper_th);
	xkv_slow_free(st->sl); /* waits for a flush that is running */
	close(st->fd);
out:
	xkv_buf_free(&st->out);
	free(st->bufs);
	free(st);
	return rc;
}
