/* SPDX-License-Identifier: MIT */
/* TCP answered in the driver hook: the per-flow state the XDP responder
 * (tcpx_xdp.bpf.h) and the TC egress translation (tcpx_tc.bpf.h) share, and
 * that serve clears (server/serve_tcp.c).  The invariants it keeps are in
 * docs/architecture.md, "TCP in the driver hook".
 *
 * Two byte streams, each in two numberings: the wire's (what the client
 * sends and sees) and the kernel's (what serve's socket sends and sees).
 * The responder takes a request out of the client's stream (dc bytes so
 * far) and puts its reply into the server's (ds bytes so far); the newest
 * answer is the correction point, as in netfilter's seqadj:
 *   client stream: kernel = wire - dc      for wire >= c_start (the answered request)
 *                  kernel = wire - dc_prev for segments that end before it
 *   server stream: wire = kernel + ds      for kernel >= s_k (the reply's place)
 *                  wire = kernel + ds_prev below it
 * An acknowledgement of the server stream inside the injected reply
 * [s_wire, s_wire + r_len) means s_k to the kernel.
 *
 * A request cut at the end of an answered segment (its line, or a set's
 * data, not complete: memcached waits for more too) is held in the flow:
 * the `held` bytes [c_end, c_end + held) are acknowledged to the client
 * but not yet the kernel's (whose rcv_nxt is c_end's place), and go in
 * front of the client's next segment, which starts at c_end + held
 * (xkv_tcpx_prepend in tcpx_seg.bpf.h, called from tcpx_xdp.bpf.h):
 * answered with it, or handed to the kernel with it. */
#ifndef XDPKV_TCPX_H
#define XDPKV_TCPX_H

#include <linux/types.h>
#include <linux/bpf.h> /* struct bpf_spin_lock */

#define XKV_TCPX_FLOWS_MAX 65536  /* flows with state; a full table: not answered */
#define XKV_TCPX_REPLY_MAX 1448   /* a reply in one segment at most (MTU 1500 with timestamps) */
#define XKV_TCPX_REPLAY_NS 200000000ull /* a kept reply sent again at most this often: the
					 * kernel's smallest RTO (TCP_RTO_MIN) */
#define XKV_TCPX_WRITE_REPLY 64   /* room a write's reply needs (its longest, SERVER_ERROR
				   * ..., with room to spare): checked before the store changes */
#define XKV_TCPX_PIPE_MAX 31      /* requests in one segment answered here at most (each a
				   * tail call: the kernel allows 33 in a chain, which
				   * xdpkv_tcpx and xdpkv_tcpx_fin take two of) */
#define XKV_TCPX_PIPE_SLOTS 32    /* the per-request arrays: a power of two above it */
#define XKV_TCPX_HOLD_MAX 200     /* a request cut at a segment's end, held here at most
				   * (bytes): put back in front of the next segment, in the
				   * frame's headroom (XDP_PACKET_HEADROOM 256, less the
				   * xdp_frame the kernel keeps there) */
#define XKV_TCPX_LINGER_NS 60000000000ull /* a closed flow kept for its FIN's retransmissions
					   * (TIME-WAIT's length, TCP_TIMEWAIT_LEN) */
#define XKV_TCPX_PASSIVE_NS 5000000000ull /* a flow closed by the client first: kept for the
					   * kernel's FIN retransmissions (LAST-ACK: RTO 0.2 s
					   * doubling, 5 tries in 6.2 s) */

/* The responder's programs in the order of their slots in tcpx_progs, the
 * array of its tail calls (tcpx_xdp.bpf.h), which attach fills
 * (cli/xdpprog.c) */
#define XKV_TCPX_PROG_SEG 0   /* xdpkv_tcpx: the segment */
#define XKV_TCPX_PROG_RUN 1   /* a text request of a segment found answerable */
#define XKV_TCPX_PROG_BIN 2   /* a binary request */
#define XKV_TCPX_PROG_FIN 3   /* the answer, after the last request */
#define XKV_TCPX_PROG_META 4  /* a meta command */
#define XKV_TCPX_PROGS 5
#define XKV_TCPX_PROG_NAMES                                                                   \
	{ "xdpkv_tcpx", "xdpkv_tcpx_run", "xdpkv_tcpx_bin", "xdpkv_tcpx_fin", "xdpkv_tcpx_meta" }

/* The flow: both addresses in policy.h's 16-byte form, the ports as on the
 * wire (peer = the client). */
struct xkv_tcpx_key {
	__u8 peer[16], local[16];
	__be16 pport, lport;
	__u32 _pad;
};

#define XKV_TCPX_F_ACKED 1u   /* the client has acknowledged the last reply in full */
#define XKV_TCPX_F_FIN_C 2u   /* the client sent its FIN */
#define XKV_TCPX_F_FIN_K 4u   /* the kernel sent its FIN (fin_k: its wire seq + 1) */
#define XKV_TCPX_F_ANSWERED 16u /* a request was answered here: segments are translated */
#define XKV_TCPX_F_ON_ACK 32u /* the last reply goes out on the kernel's next segment at s_k
			       * (its request's ACK was news to the kernel: tcpx_tc.bpf.h) */
#define XKV_TCPX_F_SERVED 8u  /* its socket was seen in serve's hands (tcp_slots): from then
			       * on its leaving them ends the flow (serve's sweep) */
#define XKV_TCPX_F_PASSIVE 128u /* the kernel's FIN came after the client's: this side
				 * has no TIME-WAIT, its socket goes at the client's last
				 * ACK (serve's sweep keeps the flow XKV_TCPX_PASSIVE_NS) */
#define XKV_TCPX_F_NOREPLY 64u /* the last answer was noreply writes: no reply bytes, a pure
				* ACK (or the kernel's, as old data); a copy of the segment
				* goes to the kernel as old data, which acknowledges it */

struct xkv_tcpx_flow {
	struct bpf_spin_lock lock;
	__u32 flags;             /* XKV_TCPX_F_* */
	__u32 dc_prev, dc;       /* client stream: bytes taken out before / after c_start */
	__u32 ds_prev, ds;       /* server stream: bytes put in before / after s_k */
	__u32 c_start, c_end;    /* wire seq of the last answered request, and past it */
	__u32 s_k, s_wire;       /* its reply's place: kernel seq, wire seq */
	__u32 r_len;             /* its reply's bytes (r[]) */
	__u32 fin_k;             /* with F_FIN_K: the wire seq past the kernel's FIN */
	__u32 passed_end;        /* wire seq past the client's bytes handed to the kernel so far:
				  * until its rcv_nxt reaches it some are still on their way
				  * (GRO, the backlog), and a copy of them must not be answered */
	__u32 proto;             /* XKV_TCPX_PROTO_*: the connection's, from its first byte */
	__u32 ts_recent;         /* TSval of the last request answered here (PAWS: the kernel's
				  * own ts_recent never saw it) */
	__u64 cookie;            /* its socket's (SO_COOKIE), the one serve accepted (tcp_slots) */
	__u64 seen_ns;           /* its last segment (bpf_ktime_get_ns: CLOCK_MONOTONIC) */
	__u64 replay_ns;         /* its last reply sent (answer or replay): a replay waits
				  * XKV_TCPX_REPLAY_NS after it */
	__u32 held;              /* bytes of a cut request held (hold[]), from c_end on */
	__u8 r[XKV_TCPX_REPLY_MAX]; /* the reply text, kept to send again if it is lost */
	__u8 hold[XKV_TCPX_HOLD_MAX];
};

/* What the XDP program knows of the segment under way and of the reply it
 * builds (in the per-CPU scratch, prelude.bpf.h). */
struct xkv_tcpx_seg {
	struct xkv_tcpx_key key;
	__u32 l4, doff, plen;      /* TCP header offset in the frame, its bytes, payload bytes */
	__u32 seq, ack, tsval, tsecr;
	__u32 ts_at, sack_at, sack_n; /* frame offsets of the TSval and the first SACK block */
	__u16 win;
	__u8 fl, odd;              /* TCP flags; an option the translation does not know */
	__u8 on;                   /* the reply under way is a TCP segment (xkv_emit_frame) */
	__u8 r_has_ts;
	__u8 noreply;              /* ... is noreply writes': no reply, a pure ACK (tcpx_commit) */
	__u8 on_ack;               /* ... is kept for the kernel's acknowledgement (not sent here) */
	__u8 merge;                /* ... extends the flow's answer, whose reply the client has
				    * not acknowledged yet (tcpx_answer) */
	__u8 cut;                  /* the scan stopped at a request cut at the end */
	__u16 hold;                /* the segment's last bytes to hold: a cut request (hold_b) */
	__u16 put;                 /* bytes held before put in front of it (xkv_tcpx_prepend) */
	__u16 r_win;
	__u32 r_seq, r_ack, r_tsval, r_tsecr;
	__u32 r_room;              /* reply bytes the segment may carry (MSS, window) */
	__u32 r_len;               /* reply bytes sent */
	__u8 opt[64];
	__u8 hdr[32];              /* the reply's TCP header */
	/* the segment's requests (tcpx_pipe.bpf.h): split by xkv_tcpx_scan,
	 * run one a program in a tail-call chain, their replies collected */
	__u8 pipe;                 /* collecting: a reply goes to acc[], not out */
	__u8 pipe_n, pipe_i;       /* requests, the one under way */
	__u8 pipe_w;               /* the first write's index (pipe_n: none); only writes after it */
	__u8 pipe_wreply;          /* writes from pipe_w on that have a reply */
	__u8 applied;              /* a write has changed the store: no way back */
	__u8 proto;                /* the flow's XKV_TCPX_PROTO_*: every request must speak it */
	__u32 pipe_bin;            /* bit i: request i is binary (xdpkv_tcpx_bin runs it) */
	__u32 pipe_meta;           /* bit i: request i is a meta command (xdpkv_tcpx_meta) */
	struct {                   /* the meta command under way (tcpx_meta.bpf.h) */
		__u32 mask;        /* XKV_META_F_* of its flags */
		__u32 first;       /* the token of its first flag */
		__u32 units;       /* its reply's room, in XKV_TCPX_WRITE_REPLY units */
		__u32 cflags;      /* ms: F; a hit: the item's client flags */
		__u32 len;         /* a hit's value bytes */
		__u32 o;           /* the return flags' writer: its next reply byte */
		__u32 t;           /* ... its token */
		__u32 which;       /* ... the flags it writes */
		__s64 ttl;         /* ms: T (0: none); a hit: seconds left (-1: none) */
		__u64 cas;         /* a hit's cas, a stored item's new one */
	} meta;
	__u16 pipe_len[XKV_TCPX_PIPE_SLOTS]; /* each request's bytes */
	__u32 pipe_off;            /* payload offset of request pipe_i */
	__u32 acc_len;             /* reply bytes collected */
	__u8 acc[2048 + XKV_TCPX_REPLY_MAX]; /* the replies (at offsets below 2048) */
	__u8 hold_b[256];          /* the cut request's bytes (hold) */
	struct {                   /* its socket when it came (xkv_tcpx_look) */
		__u8 found;        /* XKV_TCPX_SK_* */
		__u8 served;       /* serve accepted it (its cookie in tcp_slots) */
		__u8 tstamp_ok;
		__u8 established;  /* in ESTABLISHED (no FIN either way yet) */
		__u8 fresh;        /* nothing received yet (bytes_received 0) */
		__u32 rcv_nxt, rcv_wup, rcv_wnd, snd_una, snd_nxt, max_window, ts_recent;
		__u32 write_seq, snd_wnd, snd_wscale;
		__u64 cookie;
	} sk;
};

/* A connection's protocol, as memcached and serve take it from its first
 * byte (0x80: binary); a flow made after the first byte reached the kernel
 * learns it from the first request it answers (a segment that starts where
 * serve stopped: tcpx_pipe.bpf.h). */
#define XKV_TCPX_PROTO_UNKNOWN 0
#define XKV_TCPX_PROTO_TEXT 1
#define XKV_TCPX_PROTO_BIN 2

#define XKV_TCPX_SK_NONE 0     /* no socket: the connection is gone */
#define XKV_TCPX_SK_CONN 1     /* a connection's socket, synchronized (not a listener) */
#define XKV_TCPX_SK_TW 2       /* in TIME-WAIT */
#define XKV_TCPX_SK_OTHER 3    /* a listener, a request socket: not this connection's */

/* serve's sweep (server/serve_tcp.c) on a flow whose socket's cookie is not in
 * tcp_slots: 1 to keep it for now.  Closing (a FIN seen): kept fin_linger
 * after it was last seen, at most XKV_TCPX_PASSIVE_NS where the client closed
 * first (no TIME-WAIT on this side: a one-shot client's flows would fill the
 * table in a minute at 1,100 connections a second); never seen in serve's hands (answered before the
 * accept, cookie maybe not yet learnt): TIME-WAIT's length; else it goes at
 * once.  A flow seen after the sweep's clock reading (the responder
 * stamps it meanwhile) is alive, whatever it is. */
static inline int xkv_tcpx_sweep_keep(__u32 flags, __u64 seen_ns, __u64 now, __u64 fin_linger)
{
	__u64 linger = flags & (XKV_TCPX_F_FIN_C | XKV_TCPX_F_FIN_K) ? fin_linger
		       : !(flags & XKV_TCPX_F_SERVED)                  ? XKV_TCPX_LINGER_NS
								       : 0;
	if ((flags & XKV_TCPX_F_PASSIVE) && linger > XKV_TCPX_PASSIVE_NS)
		linger = XKV_TCPX_PASSIVE_NS;
	return (__s64)(now - seen_ns) < 0 || now - seen_ns < linger;
}

#endif
