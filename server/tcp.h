/* SPDX-License-Identifier: MIT */
/* The TCP server of xdpkv serve: what serve_tcp.c implements and serve.c
 * (the main loop) calls.  Not an API: slowpath.h has that. */
#ifndef XDPKV_SERVER_TCP_H
#define XDPKV_SERVER_TCP_H

#include "slowpath.h"

/* The TCP server: xkv_serve_tcp_workers(o) workers, each with its own
 * epoll, connections and listener: listen_fds[i], one SO_REUSEPORT group
 * (taken over, closed by stop; -1 where there is none).  Start it once
 * privileges are dropped (threads inherit them).  0, or <0 with a message
 * in err. */
struct xkv_serve_tcp;
unsigned xkv_serve_tcp_workers(const struct xkv_serve_opts *o);
int xkv_serve_tcp_start(struct xkv_serve_tcp **out, struct xkv_store *s, struct xkv_slow *sl,
			const struct xkv_serve_opts *o, int *listen_fds, char *err, size_t errlen);
unsigned xkv_serve_tcp_threads(const struct xkv_serve_tcp *t);
/* Stop the workers (they look at *o->stop, this makes sure), close every
 * connection, push their counters, free.  NULL: nothing. */
void xkv_serve_tcp_stop(struct xkv_serve_tcp *t);
/* Raise RLIMIT_NOFILE so that max_conns connections fit (call before the
 * privileges go: the hard limit needs CAP_SYS_RESOURCE).  0, or 1 with a
 * warning in msg when the limit stays lower. */
int xkv_serve_tcp_nofile(unsigned max_conns, char *msg, size_t msglen);

#endif
