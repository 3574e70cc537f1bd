/* SPDX-License-Identifier: MIT */
/* Counters.  One X-macro list gives the BPF enum and the userspace names.
 * The stats map is a PERCPU_ARRAY with two slots: XKV_STATS_FAST (the XDP
 * program, per CPU) and XKV_STATS_SLOW (the userspace slow path; it is the
 * only writer of that slot and keeps the total in CPU 0's copy). */
#ifndef XDPKV_STATS_H
#define XDPKV_STATS_H

/* X(name, help) */
#define XKV_STATS_LIST(X) \
	X(requests,        "requests accepted on the port (datagrams past the address, port, access and rate checks)") \
	X(cmd_get,         "get commands") \
	X(cmd_set,         "set commands") \
	X(cmd_delete,      "delete commands") \
	X(cmd_other,       "other commands (version, stats, incr, …)") \
	X(get_keys,        "keys asked for by get") \
	X(get_hits,        "keys found") \
	X(get_misses,      "keys not found (or expired)") \
	X(get_expired,     "keys found but expired (counted in misses too)") \
	X(stores,          "successful stores") \
	X(store_new,       "stores that created a new item (array_fnv, lru)") \
	X(deletes,         "successful deletes") \
	X(delete_misses,   "deletes of absent keys") \
	X(overwrites,      "array_fnv: stores that evicted a different live key (exact)") \
	X(evictions_est,   "lru, lru_percpu: evictions, estimated (new items - deletes - live)") \
	X(seq_retries,     "array_fnv: reads retried because a writer was active") \
	X(slot_repairs,    "array_fnv: slots taken back from a userspace writer that died inside") \
	X(err_unknown,     "ERROR replies (unknown command)") \
	X(err_client,      "CLIENT_ERROR replies") \
	X(err_too_large,   "SERVER_ERROR object too large") \
	X(err_oom,         "SERVER_ERROR out of memory") \
	X(replies,         "replies sent (datagrams)") \
	X(noreply,         "requests answered with nothing (noreply)") \
	X(pass_room,       "fast path: passed on, reply did not fit the frame") \
	X(pass_cmd,        "fast path: passed on, command served by the slow path") \
	X(pass_busy,       "fast path: passed on, slot busy after retries") \
	X(pass_malformed,  "fast path: passed on, malformed packet for the kernel to judge") \
	X(pass_not_local,  "not addressed to this host (MAC or IP): XDP passes it on, the slow path drops it") \
	X(pass_csum,       "fast path: passed on, bad IPv4 header or UDP checksum (the kernel drops it)") \
	X(pass_paused,     "fast path: passed on, a write while snapshot --pause-writes holds them (slow path: refused)") \
	X(pass_flush,      "fast path: passed on, a flush_all under way (the slow path hides what it removes)") \
	X(pass_detail,     "fast path: passed on, stats detail is on (the slow path counts each key prefix)") \
	X(drop_src,        "refused: a source address no host has (multicast, broadcast, loopback, unspecified)") \
	X(drop_port,       "refused: source port 0, the service port, or below 1024") \
	X(drop_acl,        "refused: source not in the allow list") \
	X(drop_ratelimit,  "refused: source /24 or /64 over --rate-limit") \
	X(drop_write_acl,  "refused: a write from a source not in the write list") \
	X(drop_reply,      "dropped: the datagram reads as a reply (loop guard)") \
	X(drop_frame,      "dropped: bad frame header (seq/total), as memcached does") \
	X(drop_oversize,   "slow path: refused, over --max-keys or --max-reply (SERVER_ERROR sent)") \
	X(amp_capped,      "replies cut to SERVER_ERROR: over --max-amplification for an untrusted source") \
	X(drop_amp,        "replies dropped: even the SERVER_ERROR was over --max-amplification") \
	X(tcp_fast,        "TCP requests answered in the kernel (sk_skb verdict on serve's connections)") \
	X(tcp_pass,        "TCP: segments the kernel handed to the userspace server") \
	X(tcp_slow,        "TCP requests answered by the userspace server") \
	X(tcp_lost,        "TCP: a request the kernel could not answer nor hand on (never seen)") \
	X(tcpx_answered,   "TCP requests answered in the driver hook (XDP, sequence translation), one a request") \
	X(tcpx_pipelined,  "TCP XDP: segments of several requests answered (their requests in tcpx_answered)") \
	X(tcpx_replayed,   "TCP XDP: a reply sent again (its request came again, the reply unacknowledged)") \
	X(tcpx_on_ack,     "TCP XDP: replies sent on the kernel's acknowledgement (their request's ACK was news to it)") \
	X(tcpx_dup_dropped, "TCP XDP: a repeated request dropped (its reply acknowledged, or none to resend)") \
	X(tcpx_acks_absorbed, "TCP XDP: pure ACKs of replies sent from XDP, no news to the kernel: dropped") \
	X(tcpx_held,       "TCP XDP: a request cut at an answered segment's end held, put in front of the next") \
	X(tcpx_held_alone, "TCP XDP: no room before a segment after held bytes: they went alone in its place") \
	X(tcpx_held_dropped, "TCP XDP: a segment after held bytes dropped: no room before it nor in it") \
	X(tcpx_refused_shape, "TCP XDP: not answered, not one whole get/set/delete (or flags, options, noreply)") \
	X(tcpx_refused_unacked, "TCP XDP: not answered, the last reply not yet acknowledged") \
	X(tcpx_refused_socket, "TCP XDP: not answered, no established socket for it") \
	X(tcpx_refused_order, "TCP XDP: not answered, not the socket's next byte, or bytes unread") \
	X(tcpx_refused_serve, "TCP XDP: not answered, serve owes replies on the connection") \
	X(tcpx_refused_kernel, "TCP XDP: not answered, the kernel has bytes unsent or unacknowledged") \
	X(tcpx_refused_room, "TCP XDP: not answered, the reply does not fit one segment, or the store was busy") \
	X(tcpx_refused_table, "TCP XDP: not answered, the flow table is full") \
	X(tcpx_refused_acl, "TCP XDP: not answered, the access lists or SASL send it to serve") \
	X(tcpx_rejected,   "TCP XDP: a segment the kernel would not accept (window, acknowledgement, timestamp, checksum): passed on, nothing changed")

enum xkv_stat {
#define XKV_STAT_ENUM(n, h) XKV_STAT_##n,
	XKV_STATS_LIST(XKV_STAT_ENUM)
#undef XKV_STAT_ENUM
	XKV_STAT__MAX,
};

struct xkv_stats {
	__u64 v[XKV_STAT__MAX];
};

#define XKV_STATS_FAST 0
#define XKV_STATS_SLOW 1
#define XKV_STATS_SLOTS 2

#endif
