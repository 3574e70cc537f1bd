/* SPDX-License-Identifier: MIT */
/* xdpgen: what the generator and counter programs share with userspace. */
#ifndef XDPGEN_H
#define XDPGEN_H

#include <linux/types.h>

/* Largest request frame (Ethernet to the end of the command text).  A live
 * frame holds a page minus headroom and skb_shared_info: 2 KiB is safe. */
#define XG_FRAME_MAX 2048

/* One pre-built request frame.  The table map's value_size is set at load
 * time to XG_FRAME_OFF + the largest frame (rounded up to 8), and the
 * generator is told that size in gen_cfg.frame_max. */
struct xg_frame {
	__u32 len;
	__u32 pad;
	__u8 data[XG_FRAME_MAX];
};
#define XG_FRAME_OFF 8

/* Load-time configuration of the generator (rodata). */
struct xg_gen_cfg {
	__u32 nframes;   /* entries in the table */
	__u32 frame_max; /* bytes of the largest frame (the data_in size) */
	__u32 static_frame; /* diagnostic: send the frame as the kernel hands it over */
	__u32 pad;
	__u64 interval_ns;  /* pacing: one frame per interval per CPU, 0: flat out */
	__u64 burst_ns;     /* pacing: how far behind a CPU may catch up at once */
};

/* Per CPU: where this CPU is in the table, and how many frames it sent. */
struct xg_gen_state {
	__u64 pos;
	__u64 sent;
	__u64 bad;     /* table entry missing or too long: frame dropped */
	__u64 next_ns; /* pacing: earliest time of the next frame */
};

/* Load-time configuration of the counter. */
struct xg_count_cfg {
	__u16 port; /* the server's UDP port (replies come from it) */
};

/* Reply counters (per CPU). */
#define XG_COUNT_LIST(X) \
	X(replies, "memcached replies (datagrams from the port)") \
	X(hits,    "replies starting with VALUE") \
	X(misses,  "replies that are END only") \
	X(stored,  "STORED") \
	X(errors,  "ERROR, CLIENT_ERROR, SERVER_ERROR") \
	X(echoes,  "the request itself (get/set): a bare reflector's answer") \
	X(other,   "any other reply (NOT_STORED, a reply too short to tell, ...)")

enum xg_count {
#define XG_COUNT_ENUM(n, h) XG_C_##n,
	XG_COUNT_LIST(XG_COUNT_ENUM)
#undef XG_COUNT_ENUM
	XG_C__MAX,
};

struct xg_counts {
	__u64 v[XG_C__MAX];
};

#endif
