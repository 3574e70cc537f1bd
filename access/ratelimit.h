/* SPDX-License-Identifier: MIT */
/* The slow path's own per-source rate limit, for UDP datagrams that reach
 * `xdpkv serve` without passing the XDP program's limit: IPv4 fragments
 * and options, IPv6 extension headers, VLAN-tagged frames and anything
 * else the program hands to the kernel untouched (XDP_PASS) arrive at the
 * socket unlimited.  The same rule as the program's (GCRA, --rate-limit
 * requests per second per source /24 or /64, --rate-burst at once), kept
 * in this process: a datagram the program passed on was limited there
 * already, and a subsequence of a stream within the limit is within it
 * too, so such traffic is not cut twice; a source sending both kinds may
 * get up to twice its rate in all.  A fixed table: a new source takes the
 * slot of the one its hash lands on (an attacker with many /24s has many
 * budgets anyway). */
#ifndef XDPKV_RATELIMIT_H
#define XDPKV_RATELIMIT_H

#include <pthread.h>
#include <stdbool.h>
#include <linux/types.h>

#define XKV_RL_USER_SLOTS 4096

struct xkv_rl {
	pthread_mutex_t mu;
	__u64 period_ns;  /* 1 s / rate; 0: no limit */
	__u64 tau_ns;     /* period * (burst - 1) */
	struct {
		__u8 key[16]; /* the source's /24 or /64 in the 16-byte form */
		__u64 tat;    /* theoretical arrival time of its next request */
	} slot[XKV_RL_USER_SLOTS];
};

/* rate 0: every request passes. */
void xkv_rl_init(struct xkv_rl *rl, __u32 rate, __u32 burst);
void xkv_rl_destroy(struct xkv_rl *rl);
/* May a request from addr (16-byte form) go on at now (CLOCK_MONOTONIC ns)? */
bool xkv_rl_ok(struct xkv_rl *rl, const __u8 addr[16], __u64 now);

#endif
