/* SPDX-License-Identifier: MIT */
/* Live migration of a store into another layout or size (xdpkv migrate,
 * docs/snapshots.md "Live migration"): the copier, and the control messages
 * between the migrate command and the slow path that mirrors writes. */
#ifndef XDPKV_MIGRATE_H
#define XDPKV_MIGRATE_H

#include <sys/socket.h>
#include <sys/un.h>
#include "xdpkv.h"
#include "slowpath.h"

struct xkv_mig_opts {
	int threads;          /* 0: the online CPUs */
	/* about once a second from the calling thread: items read so far */
	void (*progress)(void *arg, __u64 items, double secs);
	void *arg;
};

/* What the copy did; the counts after `copied` did not fit the new store
 * (the names restore uses, docs/snapshots.md). */
struct xkv_mig_result {
	double seconds;
	int threads;
	__u64 items;          /* live items read from the old store */
	__u64 copied;         /* stored into the new store */
	__u64 newer;          /* already there: a write during the copy put a newer version */
	__u64 too_big, bad_key, full, collisions, busy;
	__u64 evicted;        /* lru: items in - items out - live (xkv_migrate_evicted) */
};

/* Copy every live item of from into to with the layout's add (a key already
 * in to is a newer version, written meanwhile, and stays), keeping each
 * item's flags, expiry and write stamp (its cas unique).  from and to share
 * the clock (one machine).  0 or -errno with a message. */
int xkv_migrate_copy(struct xkv_store *from, struct xkv_store *to, const struct xkv_mig_opts *o,
		     struct xkv_mig_result *r, char *err, size_t errlen);

/* lru (no other layout evicts): items the new store lost to make room, from
 * what went in and out by the fixup, counted by the slow path while no
 * write ran (copied + created - removed - live); items that expired during
 * the copy count too.  Without a slow path the copier's count alone (live:
 * the new store's live items after the copy, no writes meanwhile). */
static inline __u64 xkv_migrate_evicted(const struct xkv_store *to, __u64 copied,
					const struct xkv_slow_mig_stats *ms, long live)
{
	if (!xkv_map_lru(to->L->map_type) || live < 0)
		return 0;
	__s64 in = (__s64)(copied + ms->created) - (__s64)ms->removed;
	return in > live ? (__u64)(in - live) : 0;
}

/* ---- the control socket of `xdpkv serve IFACE` ----
 * A SOCK_SEQPACKET unix socket in the abstract namespace (one per network
 * namespace and interface), root peers only.  One message each way per
 * step: begin (with the new store's fd), fixup, switch, end; the connection
 * closing before end abandons the migration (before switch) or ends it. */
#define XKV_MIG_SOCK_PREFIX "xdpkv-migrate/"

struct xkv_mig_msg {
	char cmd[16];                    /* "begin" "fixup" "switch" "end"; replies "ok" "error" */
	struct xkv_config cfg;           /* begin: the new store's */
	__s64 n;                         /* fixup reply: keys fixed */
	struct xkv_slow_mig_stats st;    /* replies: the mirror's counts so far */
	char text[256];                  /* error reply: why */
};

int xkv_mig_addr(const char *ifname, struct sockaddr_un *a, socklen_t *len);
/* Send m with fd (-1: none).  0 or -errno. */
int xkv_mig_send(int sock, const struct xkv_mig_msg *m, int fd);
/* Receive one message; *fd gets a passed fd or -1 (fd may be NULL: one is
 * closed).  1 a message, 0 the peer closed, -errno. */
int xkv_mig_recv(int sock, struct xkv_mig_msg *m, int *fd);

#endif
