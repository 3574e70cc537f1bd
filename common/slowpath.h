/* SPDX-License-Identifier: MIT */
/* The userspace slow path: answers what the XDP fast path passes on, from
 * the same maps, through the layout's accessor.  Protocol logic here
 * (testable without sockets); the socket loop in serve.c. */
#ifndef XDPKV_SLOWPATH_H
#define XDPKV_SLOWPATH_H

#include <signal.h>
#include "xdpkv.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef XKV_VERSION
#define XKV_VERSION "0.1.0" /* reported by "version" and "stats" */
#endif

/* Growable byte buffer for reply text. */
struct xkv_buf {
	__u8 *p;
	size_t len, cap;
};
int xkv_buf_put(struct xkv_buf *b, const void *src, size_t n);
void xkv_buf_free(struct xkv_buf *b);

/* Answer one request datagram.  dgram/len: the whole UDP payload, frame
 * header included.  Appends the reply text (no frame headers) for every
 * command in it, in order, to out; adds to the counters in delta.
 * Returns 1 if a reply must be sent, 0 if not (noreply, or a datagram too
 * short to carry a frame header), and fills *hdr with the request's header. */
int xkv_slow_handle(struct xkv_store *s, const __u8 *dgram, size_t len,
		    struct xkv_udp_hdr *hdr, struct xkv_buf *out, struct xkv_stats *delta);

/* Split reply text into datagrams of at most XKV_DGRAM_MAX bytes (frame
 * header included): datagram i gets req_id, seq i, total n.  Calls emit for
 * each; returns n, or <0 if emit failed. */
int xkv_slow_frame(__u16 req_id_be, const __u8 *text, size_t len,
		   int (*emit)(void *arg, const __u8 *dgram, size_t dlen), void *arg);

struct xkv_serve_opts {
	const char *ifname;          /* interface whose pins (and addresses) to serve */
	__u16 port;                  /* 0: the port in the pinned cfg */
	int verbose;
	volatile sig_atomic_t *stop; /* loop ends when *stop becomes non-zero */
	int ready_fd;                /* >= 0: write "ready\n" there once bound, then close it */
	unsigned push_ms;            /* counters to the stats map at least this often; 0: 100 */
};
/* Bind the UDP port (IPv4 and IPv6) on ifname and answer until *stop.
 * 0 on a clean stop, <0 with a message in err. */
int xkv_serve(struct xkv_store *s, const struct xkv_serve_opts *o, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
