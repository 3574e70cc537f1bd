/* SPDX-License-Identifier: MIT */
/* The slow path's executor for a front end other than the text parser
 * (binproto.c, memcached's binary protocol): the same store functions the
 * text and meta commands run (read.c, rmw.c, classic.c; exec.c), called
 * with decoded arguments.
 * A front end opens a run (xkv_exec_run), which holds the store, checks the
 * source against the access lists and takes the thread's scratch, then
 * calls the xkv_exec_* functions from inside its callback. */
#ifndef XDPKV_SLOWEXEC_H
#define XDPKV_SLOWEXEC_H

#include <stdbool.h>
#include "slowpath.h"

#ifdef __cplusplus
extern "C" {
#endif

struct slow_cmd; /* one run's context (engine_int.h) */

/* What the source may do (the access lists, docs/security.md). */
struct xkv_exec_rights {
	bool write;   /* may change the store */
	bool trusted; /* no amplification cap, no --max-reply over TCP */
};

typedef int (*xkv_exec_fn)(struct slow_cmd *c, const struct xkv_exec_rights *rt, void *arg);
#define XKV_EXEC_REFUSED (-1000) /* xkv_exec_run: the source is refused (counted) */

/* Hold the store, check src (NULL: a trusted local caller; udp: the
 * datagram checks of xkv_slow_handle too: port, destination, lists; kept:
 * a connection's rights kept between calls, or NULL), take the thread's
 * scratch, run fn.  Replies go to out, counters to delta.  Returns fn's
 * value or XKV_EXEC_REFUSED (nothing appended to out). */
int xkv_exec_run(struct xkv_slow *sl, const struct xkv_slow_src *src, bool udp,
		 struct xkv_rights_kept *kept, struct xkv_buf *out, struct xkv_stats *delta,
		 xkv_exec_fn fn, void *arg);

/* stats detail over the binary protocol (key "detail on", "detail off",
 * "detail dump": rest is what follows "detail"): 0 done (dump: its lines
 * in *dump), 1 another word, -1 memory. */
int xkv_exec_detail(struct slow_cmd *c, const __u8 *rest, __u32 n, struct xkv_buf *dump);

/* The store's configuration and limits, for the run's checks. */
const struct xkv_config *xkv_exec_cfg(const struct slow_cmd *c);
__u32 xkv_exec_val_max(const struct slow_cmd *c);
struct xkv_stats *xkv_exec_delta(struct slow_cmd *c);

/* One item read (or touched): its value (valid until the next xkv_exec_*
 * call of this run), flags and cas unique. */
struct xkv_exec_item {
	const __u8 *val;
	__u32 len, flags;
	__u64 cas;
};
/* touch: give the item the expiry exptime (memcached's reading: seconds,
 * or a unix time past 30 days) as gat does.  1 hit, 0 miss, <0 -errno,
 * XKV_EX_DENIED or XKV_EX_PAUSED (a touch refused).  Counts get_keys and
 * get_misses as get and gat do. */
int xkv_exec_get(struct slow_cmd *c, const __u8 *key, __u32 klen, bool touch, __s64 exptime,
		 struct xkv_exec_item *it);

/* A write, as the text commands' set/add/replace/append/prepend/cas and
 * incr/decr run it. */
enum xkv_exec_mode { XKV_EX_SET, XKV_EX_ADD, XKV_EX_REPLACE, XKV_EX_APPEND, XKV_EX_PREPEND,
		     XKV_EX_INCR, XKV_EX_DECR };
/* Verdicts (the classic commands' replies) */
enum xkv_exec_out { XKV_EX_STORED, XKV_EX_NOT_STORED, XKV_EX_EXISTS, XKV_EX_NOT_FOUND,
		    XKV_EX_NON_NUMERIC, XKV_EX_TOO_LARGE,
		    XKV_EX_DENIED = 100, /* the source may not write */
		    XKV_EX_PAUSED,       /* snapshot --pause-writes holds the store */
		    XKV_EX_MIGRATING };  /* flush while a migration copies */
struct xkv_exec_wr {
	__u8 mode;               /* enum xkv_exec_mode */
	bool has_cas;            /* only over the item of this cas unique */
	bool vivify;             /* incr/decr: a miss creates the item with initial */
	__u64 cas;
	const __u8 *data;        /* set .. prepend */
	__u32 bytes, flags;
	__s64 exptime;           /* a stored or created item's */
	__u64 delta, initial;    /* incr, decr */
};
/* Run w on key: an enum xkv_exec_out verdict or <0 -errno; on
 * XKV_EX_STORED *cas is the item's new cas unique and, for incr/decr,
 * *num its number. */
int xkv_exec_write(struct slow_cmd *c, const __u8 *key, __u32 klen, const struct xkv_exec_wr *w,
		   __u64 *cas, __u64 *num);

/* Delete key (cas != 0: only the item of that cas unique): 1 deleted, 0
 * not found, XKV_EX_EXISTS, XKV_EX_DENIED, XKV_EX_PAUSED or <0 -errno. */
int xkv_exec_delete(struct slow_cmd *c, const __u8 *key, __u32 klen, __u64 cas);

/* flush_all [delay]: 0, XKV_EX_DENIED, XKV_EX_PAUSED, XKV_EX_MIGRATING or <0 -errno. */
int xkv_exec_flush(struct slow_cmd *c, __s64 delay);

/* stats' lines ("STAT <name> <value>\r\n" each, no END) into lines; with a
 * group (glen > 0), that group's (settings, items, slabs, sizes; reset:
 * done, no lines; sizes_enable, sizes_disable).  0, 1 (no such group
 * here), 2 (the lines of a group memcached ends with no END and no empty
 * binary response: sizes_enable, sizes_disable), or -1 without memory. */
int xkv_exec_stats(struct slow_cmd *c, const __u8 *group, __u32 glen, struct xkv_buf *lines);

#ifdef __cplusplus
}
#endif
#endif
