/* SPDX-License-Identifier: MIT */
/* Who may talk to xdpkv, and how much it may say back: the maps the XDP
 * program checks before it parses anything, shared by the BPF side, the slow
 * path, the CLI and the tests.  See docs/security.md.
 *
 * Addresses are 16 bytes everywhere: IPv6 as is, IPv4 as the mapped address
 * ::ffff:a.b.c.d, so one LPM trie holds both families ("any" is ::/0, an
 * IPv4 /n is prefix 96 + n). */
#ifndef XDPKV_POLICY_H
#define XDPKV_POLICY_H

#include <linux/types.h>

/* Key of the LPM tries acl_allow, acl_write, acl_trust. */
struct xkv_acl_key {
	__u32 prefixlen;   /* 0..128 */
	__u8 addr[16];
};

/* The three lists; one LPM trie each (pinned as acl_allow, acl_write, acl_trust). */
enum xkv_acl_list {
	XKV_ACL_ALLOW = 0, /* may send requests at all (--allow) */
	XKV_ACL_WRITE = 1, /* may change the store (--write-allow) */
	XKV_ACL_TRUST = 2, /* replies are not capped by --max-amplification (--trust) */
	XKV_ACL__N,
};
#define XKV_ACL_MAX_ENTRIES 4096 /* per list */

/* Value of an ACL entry: where it came from. */
#define XKV_ACL_USER 1u /* given on the command line or with `xdpkv acl add` */
#define XKV_ACL_AUTO 2u /* a connected subnet of the interface, kept in sync by
			 * `xdpkv serve` and `xdpkv acl IFACE sync` */

/* The host map (ARRAY, one entry): what "addressed to this host" means.
 * Written by attach and re-synced when the interface's addresses change. */
#define XKV_HOST_INLINE 4 /* local addresses the host entry can hold itself */
struct xkv_host {
	__u8 mac[6];       /* the interface's unicast MAC */
	__u16 flags;       /* XKV_HOST_* */
	__u32 gen;         /* bumped by every sync (for status) */
	/* With XKV_HOST_ADDRS_INLINE: local_addrs has n_inline entries, all of
	 * them here (16-byte form), and XDP compares them instead of a hash
	 * lookup (~50 ns per request, docs/results.md).  Without it (more
	 * addresses, or a writer that fills local_addrs only): local_addrs. */
	__u32 n_inline;
	__u8 addr[XKV_HOST_INLINE][16]; /* at offset 16: 4-byte words */
};
#define XKV_HOST_CHECK_MAC 1u  /* serve only frames sent to mac */
#define XKV_HOST_CHECK_IP  2u  /* serve only packets sent to an address in local_addrs */
#define XKV_HOST_AUTO_ALLOW 4u /* acl_allow follows the connected subnets */
#define XKV_HOST_AUTO_WRITE 8u /* acl_write follows the connected subnets */
#define XKV_HOST_AUTO_TRUST 16u /* acl_trust follows the connected subnets */
#define XKV_HOST_ADDRS_INLINE 32u /* addr[0 .. n_inline) is the whole of local_addrs */
#define XKV_HOST_PAUSE_WRITES 64u /* snapshot --pause-writes: XDP passes every write to the
				   * slow path, which refuses it with XKV_R_PAUSED */
#define XKV_HOST_MIGRATING 128u /* migrate: set with XKV_HOST_PAUSE_WRITES, so XDP passes
				 * every write up as for a pause; the slow path that the
				 * migration talks to applies them to both stores instead
				 * of refusing them (docs/snapshots.md, "Live migration") */
#define XKV_HOST_AUTH 256u /* serve --sasl-pwdb: every client must authenticate (binary
			    * protocol, TCP): XDP drops every request, as memcached -S
			    * serves no UDP (docs/security.md, "SASL") */
#define XKV_HOST_FLUSHING 512u /* a flush_all is due or walking the store: XDP passes every
				* request to the slow path, which hides what the flush
				* removes until the walk is done (engine/flush.c) */
#define XKV_HOST_DETAIL 1024u /* stats detail on: XDP and the TCP verdict pass every request
				* to the slow path, which counts it by key prefix
				* (engine/detail.c) */
/* What sends every request to the slow path. */
#define XKV_HOST_SLOW_ALL (XKV_HOST_FLUSHING | XKV_HOST_DETAIL)
/* The bits that belong to snapshot and migrate, not to the host sync. */
#define XKV_HOST_HOLD (XKV_HOST_PAUSE_WRITES | XKV_HOST_MIGRATING)
/* ... and the ones the host sync leaves as they are */
#define XKV_HOST_KEEP (XKV_HOST_HOLD | XKV_HOST_AUTH | XKV_HOST_SLOW_ALL)

/* local_addrs (HASH): key = 16-byte address (as above), value = __u8 prefix
 * length of the subnet it was configured with (0..128, mapped for IPv4). */
#define XKV_LOCAL_ADDRS_MAX 256

/* tcp_peers (HASH): key = a 16-byte source address that holds an open TCP
 * connection to `xdpkv serve` (the handshake proved the address), value =
 * __u32 how many.  Such a source is trusted (no amplification cap) like one
 * in acl_trust, unless --strict.  Written only by serve's TCP workers,
 * emptied when serve starts and stops. */
#define XKV_TCP_PEERS_MAX 65536

/* Per-source rate limit (LRU_HASH ratelimit): key = the source's /24
 * (IPv4) or /64 (IPv6) in the 16-byte form, the rest zero; value = the
 * theoretical arrival time of the next request (GCRA, CLOCK_MONOTONIC ns). */
struct xkv_rl_key {
	__u8 addr[16];
};
#define XKV_RL_ENTRIES 65536

/* Reply to a request whose answer would exceed --max-amplification for an
 * untrusted source (when even this does not fit, nothing is sent). */
#define XKV_R_AMP "SERVER_ERROR reply too large for an unverified source\r\n"

/* The slow path's answer to a write while a snapshot holds writes. */
#define XKV_R_PAUSED "SERVER_ERROR writes paused for a snapshot\r\n"

/* Defaults (docs/security.md) */
#define XKV_DEFAULT_MAX_AMP 10

/* Address helpers usable on both sides. */
static inline void xkv_addr_from_v4(__u8 out[16], const void *v4)
{
	for (int i = 0; i < 10; i++)
		out[i] = 0;
	out[10] = 0xff;
	out[11] = 0xff;
	out[12] = ((const __u8 *)v4)[0];
	out[13] = ((const __u8 *)v4)[1];
	out[14] = ((const __u8 *)v4)[2];
	out[15] = ((const __u8 *)v4)[3];
}

static inline int xkv_addr_is_v4(const __u8 a[16])
{
	for (int i = 0; i < 10; i++)
		if (a[i])
			return 0;
	return a[10] == 0xff && a[11] == 0xff;
}

#endif
