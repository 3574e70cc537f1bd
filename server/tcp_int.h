/* SPDX-License-Identifier: MIT */
/* Internal to server/: what the TCP server's files share.  serve_tcp.c
 * has the workers (accept, the event loop, the fast path's slots, start
 * and stop); tcp_conn.c moves one connection's bytes (read, run, write). */
#ifndef XDPKV_SERVER_TCP_INT_H
#define XDPKV_SERVER_TCP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include "tcp.h"
#include "push.h"
#include "tcpfast.h"
#include "tcpx.h"

#define TCP_IN_FIRST 4096                 /* a connection's first input buffer */
#define TCP_IN_CAP XKV_STREAM_BIG_REQ_MAX /* its largest: one whole request */
#define TCP_OUT_HIGH (256 * 1024)         /* queued reply bytes above which reading stops */
#define TCP_OUT_KEEP (64 * 1024)          /* a drained queue larger than this is freed */
#define TCP_EVENTS 64
#define TCP_WAIT_MS 100                   /* how often *stop is looked at */
#define TCP_KWAIT_MS 1                    /* how often a reply waiting for the kernel's is retried */
#define TCP_FLUSH_NS (2000ull * 1000000)  /* how long a close waits for the kernel's last replies */
#define TCP_PUSH_MS 100                   /* counters to the map at least this often */
#define TCP_PUSH_CALLS 256                /* ... or after this many reads served */
#define TCP_IN_FREE (64 * 1024)           /* input buffer any connection may grow to */
#define TCP_IDLE_SWEEP_MS 1000            /* how often idle connections are looked for */
#define TCP_FLOW_SWEEP_MS 1000            /* how often the responder's flows are (worker 0) */

_Static_assert(XKV_STREAM_BIG_REQ_MAX <= TCP_IN_CAP, "the input buffer holds a whole request");

struct tcp_conn {
	int fd;
	struct tcp_conn *prev, *next;     /* the worker's connections */
	struct xkv_slow_src src;
	struct xkv_slow_stream st;
	struct xkv_buf in;                /* received, not yet consumed (cap <= TCP_IN_CAP) */
	struct xkv_buf out;               /* replies; out.p[out_off..out.len) not sent yet */
	size_t out_off;
	bool closing;                     /* close once out is sent (quit, line too long) */
	bool rd_eof;                      /* the peer will send no more */
	bool peer;                        /* counted in tcp_peers */
	bool fast;                        /* in the fast path's sockhash */
	bool xtcp;                        /* answered in XDP too (slot and tcp_paid, no sockhash) */
	__u64 cookie;                     /* SO_COOKIE: its key there */
	__u32 slot;                       /* its slot in tcp_conns and tcp_paid */
	__u64 rcvd, paid;                 /* bytes read; bytes told to the kernel as answered */
	__u64 wrote;                      /* bytes this side wrote */
	__u64 kq_ok;                      /* the kernel's reply bytes known to be in the socket */
	bool kwait;                       /* replies (or the close) held until the kernel's earlier ones are out */
	__u64 flush_by_ns;                /* a close waiting for them: until then at most */
	__u32 events;                     /* what epoll watches for it */
	size_t in_charged;                /* in.cap above TCP_IN_FREE, charged to t->in_mem */
	__u64 last_ns;                    /* its last event (--idle-timeout) */
	bool ready;                       /* a reply in parts goes on at the worker's next turn */
};

struct tcp_worker {
	struct xkv_serve_tcp *t;
	pthread_t th;
	bool up;
	int ep;
	int lfd;                          /* its listening socket */
	struct tcp_conn *conns;
	struct xkv_stats delta;
	__u64 pending, last_push;
	unsigned kwaits;                  /* connections with kwait set */
	unsigned readies;                 /* connections with ready set */
	__u64 last_sweep;                 /* idle connections last looked for */
	__u64 last_flow_sweep;            /* the XDP responder's flows last looked over */
};

struct xkv_serve_tcp {
	struct xkv_store *s;
	struct xkv_slow *sl;
	const struct xkv_serve_opts *o;
	unsigned nthreads, max_conns;
	bool fast;                        /* connections join the TCP fast path */
	int quit;                         /* __atomic */
	int limit_logged;                 /* __atomic: the --max-conns line is out */
	/* out of descriptors (EMFILE): a spare one is given up to accept the
	 * waiting connection and close it, or the listener stays readable
	 * and every worker spins on it */
	int spare_fd;
	pthread_mutex_t spare_mu;
	__u64 emfile_logged_ns;           /* __atomic: the last EMFILE line */
	__u64 push_ns;
	/* input buffers: what connections hold of requests not whole yet
	 * (a half-sent 1 MiB set holds 1 MiB); above TCP_IN_FREE each, their
	 * sum is bounded by in_max (--max-buffer-mib) */
	size_t in_mem;                    /* __atomic */
	size_t in_max;
	__u64 idle_ns;                    /* --idle-timeout; 0: never */
	__u64 flow_linger_ns;             /* a closed flow kept this long (XKV_TCPX_LINGER_NS) */
	struct tcp_worker *w;
	/* the fast path's arrays, mapped (tcpfast.h), and their free slots */
	struct xkv_tcp_conn *kconns;      /* the kernel writes; here only zeroed for a new slot */
	__u64 *paid;                      /* written only here */
	bool xtcp;                        /* the XDP responder answers on these connections */
	size_t kconns_len, paid_len;
	pthread_mutex_t slot_mu;
	__u32 *free_slots;
	__u32 nfree;
};

/* tcp_conn.c: one event on c (0: run it again, e.g. waiting for the
 * kernel's replies); false: c is done, close it.  Its input buffer given
 * back; its name for a log line. */
bool xkv_tcp_conn_event(struct tcp_worker *w, struct tcp_conn *c, __u32 ev);
void xkv_tcp_in_free(struct xkv_serve_tcp *t, struct tcp_conn *c);
void xkv_tcp_conn_name(const struct tcp_conn *c, char *buf, size_t len);
/* serve_tcp.c: close c and free it. */
void xkv_tcp_conn_close(struct tcp_worker *w, struct tcp_conn *c);

#endif
