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
/* The memcached release whose protocol the slow path speaks, as it answers
 * "version" (text and binary) and stats' "version": clients gate features
 * on it (libmemcached's memccapable takes the 1.4 branch for a 1.4 and
 * expects "version foo bar" refused).  xdpkv's own version is stats'
 * "xdpkv_version" and `xdpkv --version`. */
#define XKV_PROTO_VERSION "1.6.18"
#define XKV_VERSION_LINE "VERSION " XKV_PROTO_VERSION "\r\n"

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
	__u32 max_reply; /* reply bytes per request, frame headers included (default 2 MiB:
			  * one value of XKV_BIG_MAX and more; at most 65535 full datagrams) */
};
#define XKV_SLOW_MAX_KEYS 256
#define XKV_SLOW_MAX_KEYS_CAP 4095   /* the parser's token array, less the command */
#define XKV_SLOW_MAX_REPLY (2u << 20)
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
 * answers from, and the flusher thread of flush_all.  xkv_slow_handle and
 * xkv_slow_stream from any number of threads at once (each thread has its
 * own scratch and its own copy of the store handle; the counters go to the
 * caller's delta); xkv_slow_count_refresh from any. */
struct xkv_slow;

/* Counts the store once (a walk: not on a request path).  NULL: ENOMEM. */
struct xkv_slow *xkv_slow_new(struct xkv_store *s, const struct xkv_slow_limits *lim);
/* Cancels a flush_all still waiting for its delay; one that is due or
 * running is finished first. */
void xkv_slow_free(struct xkv_slow *sl);
/* Remove the big map's chunks that no item points at (xkv_big_collect;
 * not while a migration runs) and keep what it found for stats.  serve's
 * housekeeping calls it; a store whose big map is full does too.  Returns
 * the chunks kept or -errno.  The chunks of a big value the slow path
 * replaced or deleted stay XKV_BIG_LINGER_MS more, for readers that read
 * the old entry (a snapshot, a copier); this call removes those that are
 * due, as the next big write does. */
#define XKV_BIG_LINGER_MS 200
long xkv_slow_big_collect(struct xkv_slow *sl, struct xkv_big_census *out);
/* Recount the store's live items for stats (walks the map: call it off the
 * request thread).  Returns the count or -errno. */
long xkv_slow_count_refresh(struct xkv_slow *sl);
/* 1 while a flush_all is scheduled or running. */
int xkv_slow_flush_busy(struct xkv_slow *sl);
/* flush_all and binary flush commands this process took, every slow path
 * together (serve --snapshot-file: a deliberate flush may shrink the
 * snapshot) */
__u64 xkv_slow_flushes(void);
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

/* ---- live migration (docs/snapshots.md, "Live migration") ----
 * xdpkv migrate drives these through serve's control socket (serve.c). */

/* What the slow path did to the new store while migrating. */
struct xkv_slow_mig_stats {
	__u64 mirrored;    /* writes copied into the new store */
	__u64 deleted;     /* keys removed from it (deleted, or gone from the old store) */
	__u64 tombstones;  /* deleted keys remembered for the fixup */
	__u64 too_big;     /* items the new store's sizes cannot hold: not copied */
	__u64 full;        /* refused by a full new hash_map / percpu */
	__u64 collisions;  /* array_fnv: another key's item in the new store replaced */
	__u64 failed;      /* other errors (a key that may differ in the new store) */
	__u64 created;     /* mirrored writes that made a new key in the new store */
	__u64 removed;     /* deletes that removed a live item from it */
	__s64 live;        /* its live items when the fixup ended (-1: not counted yet) */
};
/* From now on every write is run on the current store and mirrored into
 * the store map store_fd (owned by the slow path from now on), made for
 * cfg: its item for the key, or its absence.  Deleted keys are remembered
 * until the fixup.  0, or -EBUSY (a migration runs), -EAGAIN (a flush_all is
 * pending) etc. with a message. */
int xkv_slow_mig_begin(struct xkv_slow *sl, int store_fd, const struct xkv_config *cfg, char *err,
		       size_t errlen);
/* Once the copier is done: mirror each remembered deleted key again (the
 * copier may have inserted an old version after the delete), then remember
 * no more, and count the new store's live items (no write between: the lru
 * eviction count is items in - items out - live).  *at gets the counts as
 * they stood then (writes go on counting after it).  Returns the keys done
 * or -errno. */
long xkv_slow_mig_fixup(struct xkv_slow *sl, struct xkv_slow_mig_stats *at);
/* The new store becomes the one served; the old one is closed.  0 or -EINVAL
 * (no migration mirroring). */
int xkv_slow_mig_switch(struct xkv_slow *sl);
/* The migration is over (switched) or abandoned (mirroring: the new store is
 * dropped, the old one stays).  Returns the state it was in (0 none, 1
 * mirroring, 2 switched). */
int xkv_slow_mig_end(struct xkv_slow *sl);
void xkv_slow_mig_stats(struct xkv_slow *sl, struct xkv_slow_mig_stats *st);
/* Hold the store (as a request does) while using it outside a request
 * (serve's snapshot tick): a switch waits for the release. */
void xkv_slow_hold(struct xkv_slow *sl);
void xkv_slow_release(struct xkv_slow *sl);

/* ---- a byte stream (TCP) ---- */

/* The longest command line a stream may send (a multi-get of 183 keys of
 * 250 bytes); with the largest data block, a whole request fits the
 * parser's buffer.  Longer: CLIENT_ERROR line too long, then close. */
#define XKV_STREAM_LINE_MAX (45 * 1024)
#define XKV_STREAM_REQ_MAX (XKV_STREAM_LINE_MAX + 2 + XKV_VAL_MAX + 2)
/* ... and with a value above --value-size: its data block is not copied
 * into the parse buffer, it is used where the stream holds it */
#define XKV_STREAM_BIG_REQ_MAX (XKV_STREAM_LINE_MAX + 2 + XKV_BIG_MAX + 2)
/* ... except a multi-get's (get, gets, gat, gats) from a trusted client:
 * memcached reads one of any length; here up to a whole input buffer */
#define XKV_STREAM_MGET_LINE_MAX (XKV_STREAM_BIG_REQ_MAX - 2)

/* A connection's rights as the lists gave them, under the acl_gen token
 * they were read with (engine/admit.c); zeroed: none yet. */
struct xkv_rights_kept {
	__u64 tok;
	bool valid;
	int drop;
	struct xkv_rights r;
};

/* A reply answered in parts, as the connection drains: a text multi-get
 * (engine/mget.c) or lru_crawler metadump (crawler.c).  Its line stays in
 * the caller's buffer, not consumed, until its END is out. */
struct xkv_stream_mget {
	bool on;         /* partly answered: the rest comes at the next call */
	bool paused;     /* set by the get: out reached out_max before a key */
	bool last;       /* the part running is the line's last: END after it */
	bool parts;      /* a line over one parse, run in parts of keys */
	__u32 done;      /* keys of the part running already answered */
	__u32 key1;      /* parts: where the first key begins in the line */
	__u32 part, part_end; /* parts: the keys running, bytes [part, part_end) */
	__u32 line;      /* parts: the line's length, its \r or \n not counted */
	__u64 pos;       /* lru_crawler metadump (crawler.c): the next position to walk */
	__u8 pre_len;    /* parts: the words before the first key, as each part's prefix */
	char pre[31];
};

/* One connection's state between calls; zero it when it opens. */
struct xkv_slow_stream {
	__u64 swallow;   /* data bytes still to discard (after "object too large") */
	size_t out_max;  /* stop running requests once out holds this many bytes
			  * (0: no bound); the rest waits for the next call */
	size_t need;     /* set by the call: the first request left is not whole
			  * until buf holds this many bytes (0: not known) */
	bool no_room;    /* set by the caller: buf cannot grow to need; that
			  * request gets "SERVER_ERROR out of memory storing
			  * object" and its data block is swallowed, as memcached
			  * does when it cannot allocate the item */
	__u8 proto;      /* XKV_STREAM_TEXT or _BINARY from its first byte; 0: none yet */
	bool authed;     /* binary: SASL authenticated (binproto.c) */
	struct xkv_rights_kept rights; /* the peer's, kept while the lists stay */
	struct xkv_stream_mget mg;
};

/* Is a reply under way in parts (a multi-get over out_max)?  Then call
 * again with the same bytes once out has drained, whether or not more came. */
static inline bool xkv_slow_stream_busy(const struct xkv_slow_stream *st)
{
	return st->mg.on;
}
enum { XKV_STREAM_TEXT = 1, XKV_STREAM_BINARY = 2 };
enum { XKV_STREAM_MORE = 0, XKV_STREAM_CLOSE = 1 };

/* Run every complete request at the front of buf[0..len) and append the
 * replies, in order and without frame headers, to out; *consumed says how
 * many bytes were used (the caller keeps the rest and calls again with more
 * bytes appended).  A request is complete with its line (ended by \r\n, or
 * by a bare \n as memcached reads a TCP line) and, for a storage command,
 * <bytes> + 2 data bytes; an incomplete one is not consumed (st->need then
 * says how many bytes it takes: calling again with fewer is wasted work).  A line that has no \n within
 * XKV_STREAM_LINE_MAX bytes (a trusted peer's multi-get:
 * XKV_STREAM_MGET_LINE_MAX) gets "CLIENT_ERROR line too long" and the
 * connection ends; a data block over the value size gets "SERVER_ERROR
 * object too large for cache" and is swallowed as it arrives; any other
 * malformed line is answered and the stream goes on at the next line.
 * src: the connection's peer (port unused); NULL for a trusted local
 * caller (tests).  The lists are checked at every call (their answer is
 * kept in st while no list changes: the acl_gen token): a peer no longer
 * allowed, a write from outside the write list and a reply-shaped line
 * (the loop guard) end the connection without a reply to it (counted as on
 * UDP).  No amplification cap (the handshake proved the address); for a
 * peer outside the trust list at most --max-keys and --max-reply per command.
 * With st->out_max a trusted peer's multi-get and metadump are answered in
 * parts as out drains (xkv_slow_stream_busy).  Returns XKV_STREAM_CLOSE when the
 * connection must be closed once out is sent ("quit" too), else
 * XKV_STREAM_MORE.  Callable from several threads at once.  A connection
 * whose first byte is 0x80 speaks memcached's binary protocol instead
 * (binproto.h; st->proto records which). */
int xkv_slow_stream(struct xkv_slow *sl, const struct xkv_slow_src *src, struct xkv_slow_stream *st,
		    const __u8 *buf, size_t len, size_t *consumed, struct xkv_buf *out,
		    struct xkv_stats *delta);

/* SASL PLAIN required (memcached -S; docs/security.md): db (sasl.h; the
 * caller keeps it for the slow path's life) or NULL (none).  Set before
 * serving.  Binary connections then authenticate first, text connections
 * and datagrams are refused. */
struct xkv_sasl;
void xkv_slow_set_sasl(struct xkv_slow *sl, const struct xkv_sasl *db);
const struct xkv_sasl *xkv_slow_sasl(const struct xkv_slow *sl);

/* May a TCP peer connect?  1 yes; 0 no, counted (drop_acl) in delta. */
int xkv_slow_tcp_admit(struct xkv_slow *sl, const __u8 addr[16], struct xkv_stats *delta);

/* The TCP server's connection counts for stats (curr_connections,
 * total_connections, rejected_connections, max_connections): LISTEN turns
 * them on (max_conns: the limit), OPEN / CLOSE a connection, REJECT one
 * refused over the limit.  Returns the connections open after the event. */
/* XKV_TCP_IDLE_ON: connections are closed after --idle-timeout (stats then
 * shows idle_kicks, as memcached with idle_timeout set); XKV_TCP_IDLE_KICK:
 * one was. */
enum xkv_tcp_event { XKV_TCP_LISTEN, XKV_TCP_OPEN, XKV_TCP_CLOSE, XKV_TCP_REJECT,
		     XKV_TCP_IDLE_ON, XKV_TCP_IDLE_KICK };
long xkv_slow_tcp_event(struct xkv_slow *sl, enum xkv_tcp_event ev, unsigned max_conns);

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
	/* TCP on the same port (serve_tcp.c) */
	bool no_tcp;                 /* UDP only */
	bool no_tcp_fast;            /* no TCP fast path even where attach loaded it */
	unsigned threads;            /* TCP worker threads; 0: the online CPUs */
	unsigned max_conns;          /* open TCP connections at most; 0: XKV_MAX_CONNS */
	unsigned idle_timeout;       /* seconds a connection may stay silent; 0: forever */
	unsigned max_buffer_mib;     /* half-received requests, all connections; 0: default */
	/* SASL PLAIN required (--sasl-pwdb; sasl.h): binary TCP clients only,
	 * after they authenticate; the kernel fast paths answer nobody (the
	 * host map's XKV_HOST_AUTH; no TCP fast path).  NULL: none (and the
	 * flag is cleared). */
	const struct xkv_sasl *sasl;
	/* optional: called from the housekeeping thread every tick_ms (serve
	 * --snapshot-every); it may take long, the other chores wait meanwhile */
	void (*tick)(void *arg);
	void *tick_arg;
	unsigned tick_ms;
};
#define XKV_MAX_CONNS 1024           /* memcached's default (-c) */
#define XKV_MAX_BUFFER_MIB 256       /* a 64 KiB line buffer each is not counted */
/* Bind the UDP port and (unless no_tcp) the TCP port (IPv4 and IPv6) on
 * ifname, drop privileges if asked, and answer until *stop, each datagram
 * and each connection under the access rules for its source; TCP on its
 * own worker threads.  A housekeeping thread recounts curr_items every count_ms and
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
