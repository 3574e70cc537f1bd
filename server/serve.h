/* SPDX-License-Identifier: MIT */
/* Inside xdpkv serve: what serve.c (UDP, the main loop) and serve_tcp.c
 * (the TCP server) share.  Not an API: slowpath.h has that. */
#ifndef XDPKV_SERVE_H
#define XDPKV_SERVE_H

#include "slowpath.h"

/* A socket bound to port on ifname, dual-stack where the kernel has IPv6
 * (*v6 says which): type SOCK_DGRAM for the UDP slow path, SOCK_STREAM for
 * a non-blocking TCP listener.  The fd, or <0 with a message in err. */
int xkv_serve_socket(const char *ifname, __u16 port, int type, int *v6, char *err, size_t errlen);

/* Add delta to the stats map's slow-path slot (one thread at a time, so
 * that no delta is lost) and zero it. */
void xkv_serve_push(struct xkv_store *s, struct xkv_stats *delta, int verbose);

/* The TCP server: o->threads workers, each with its own epoll and
 * connections, accepting on listen_fd (taken over, closed by stop).  Start
 * it once privileges are dropped (threads inherit them).  0, or <0 with a
 * message in err. */
struct xkv_serve_tcp;
int xkv_serve_tcp_start(struct xkv_serve_tcp **out, struct xkv_store *s, struct xkv_slow *sl,
			const struct xkv_serve_opts *o, int listen_fd, char *err, size_t errlen);
unsigned xkv_serve_tcp_threads(const struct xkv_serve_tcp *t);
/* Stop the workers (they look at *o->stop, this makes sure), close every
 * connection, push their counters, free.  NULL: nothing. */
void xkv_serve_tcp_stop(struct xkv_serve_tcp *t);
/* Raise RLIMIT_NOFILE so that max_conns connections fit (call before the
 * privileges go: the hard limit needs CAP_SYS_RESOURCE).  0, or 1 with a
 * warning in msg when the limit stays lower. */
int xkv_serve_tcp_nofile(unsigned max_conns, char *msg, size_t msglen);

#endif
