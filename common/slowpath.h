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

/* XKV_VERSION, reported by "version" and "stats", comes from CMake
 * (project(xdpkv VERSION ...) in the top CMakeLists.txt). */
#ifndef XKV_VERSION
#error "XKV_VERSION is defined by the build (CMakeLists.txt)"
#endif

/* Growable byte buffer for reply text. */
struct xkv_buf {
	__u8 *p;
	size_t len, cap;
};
int xkv_buf_put(struct xkv_buf *b, const void *src, size_t n);
void xkv_buf_free(struct xkv_buf *b);

/* Bounds on what one request may ask for; 0 = the default. */
struct xkv_slow_limits {
	__u32 max_keys;  /* keys per get (default 256, at most XKV_SLOW_MAX_KEYS_CAP) */
	__u32 max_reply; /* reply bytes per request, frame headers included (default 1 MiB,
			  * at most 65535 full datagrams) */
};
#define XKV_SLOW_MAX_KEYS 256
#define XKV_SLOW_MAX_KEYS_CAP 4095   /* the parser's token array, less the command */
#define XKV_SLOW_MAX_REPLY (1u << 20)
#define XKV_R_TOO_MANY_KEYS "SERVER_ERROR too many keys\r\n"
#define XKV_R_REPLY_LARGE   "SERVER_ERROR reply too large\r\n"

/* Where a datagram came from, for the access rules (docs/security.md). */
struct xkv_slow_src {
	__u8 addr[16];   /* source, in policy.h's 16-byte form */
	__u16 port;      /* source port, host order */
	__u8 has_dst;    /* dst is known (from IP_PKTINFO / IPV6_PKTINFO) */
	__u8 dst[16];    /* the address the datagram was sent to, 16-byte form */
};

/* The slow path of one store: limits, the cached item count that stats
 * answers from, and the flusher thread of flush_all.  xkv_slow_handle from
 * one thread at a time; xkv_slow_count_refresh from any. */
struct xkv_slow;

/* Counts the store once (a walk: not on a request path).  NULL: ENOMEM. */
struct xkv_slow *xkv_slow_new(struct xkv_store *s, const struct xkv_slow_limits *lim);
/* Cancels a flush_all still waiting for its delay; one that is due or
 * running is finished first. */
void xkv_slow_free(struct xkv_slow *sl);
/* Recount the store's live items for stats (walks the map: call it off the
 * request thread).  Returns the count or -errno. */
long xkv_slow_count_refresh(struct xkv_slow *sl);
/* 1 while a flush_all is scheduled or running. */
int xkv_slow_flush_busy(struct xkv_slow *sl);
/* The limits in force (defaults filled in). */
struct xkv_slow_limits xkv_slow_limits_of(const struct xkv_slow *sl);

/* Answer one request datagram.  dgram/len: the whole UDP payload, frame
 * header included.  src: where it came from; NULL for a trusted local
 * caller (tests), which skips the port and access rules and the
 * amplification cap.  Appends the reply text (no frame headers) for every
 * command in it, in order, to out; adds to the counters in delta.
 * Returns 1 if a reply must be sent, 0 if not (noreply, a refused or
 * dropped datagram, one too short to carry a frame header), and fills
 * *hdr with the request's header. */
int xkv_slow_handle(struct xkv_slow *sl, const struct xkv_slow_src *src, const __u8 *dgram,
		    size_t len, struct xkv_udp_hdr *hdr, struct xkv_buf *out, struct xkv_stats *delta);

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
	struct xkv_slow_limits limits; /* --max-keys, --max-reply; 0: defaults */
	/* Once bound: become this user ("nobody") with no capabilities, and
	 * set no_new_privs (xkv_drop_privileges); "" keeps the user but drops
	 * the capabilities; NULL keeps every privilege (attach --serve, which
	 * detaches as root afterwards).  The process's uid changes: run it
	 * where nothing else needs root afterwards. */
	const char *drop_user;
	unsigned count_ms;           /* curr_items recounted this often; 0: 10000 */
	unsigned sync_ms;            /* host map re-read from ifname this often; 0: 1000 */
	/* optional: called from the housekeeping thread every tick_ms (serve
	 * --snapshot-every); it may take long, the other chores wait meanwhile */
	void (*tick)(void *arg);
	void *tick_arg;
	unsigned tick_ms;
};
/* Bind the UDP port (IPv4 and IPv6) on ifname, drop privileges if asked,
 * and answer until *stop, each datagram under the access rules for its
 * source.  A housekeeping thread recounts curr_items every count_ms and
 * re-reads ifname's MAC and addresses into the host maps every sync_ms
 * (an error there is logged once, not fatal).  0 on a clean stop, <0 with
 * a message in err. */
int xkv_serve(struct xkv_store *s, const struct xkv_serve_opts *o, char *err, size_t errlen);

/* ---- privileges (privs.c) ---- */

/* Drop what the slow path does not need once its socket is bound and its
 * maps are open: supplementary groups, gid and uid become user's (NULL:
 * keep the user), every capability goes (map lookups and updates on open
 * fds need none since Linux 6.5; the bounding set too, when the caller may
 * change it), then PR_SET_NO_NEW_PRIVS.  Call it before creating threads:
 * capabilities and no_new_privs are per thread (threads created later
 * inherit them).  0 with a summary of what was dropped in msg, or -errno
 * with the reason in msg. */
int xkv_drop_privileges(const char *user, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif
