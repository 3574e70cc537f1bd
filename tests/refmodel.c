// SPDX-License-Identifier: MIT
/* Reference model of the XDP fast path; see refmodel.h.
 *
 * The rules, as the fast path promises them:
 *  - Only IPv4 without options or fragmentation, and IPv6 without
 *    extension headers, carrying UDP to the configured port, are looked at;
 *    everything else (and anything whose IP header promises more bytes than
 *    the frame has) goes on to the kernel untouched and uncounted.
 *  - The guards (none of them when the policy is unguarded), before a
 *    datagram counts as a request: a frame not sent to this host's MAC or
 *    a packet not sent to one of its addresses is passed on; a source port
 *    0, equal to the service port, or below 1024 (unless low ports are
 *    allowed), a source outside the allow list, or a source /24 or /64 over
 *    its rate (a token bucket: burst requests at once, then rate per
 *    second) is dropped.
 *  - A datagram past them is a request.  If its UDP length cannot hold the
 *    frame header, or claims more than the IP payload, it is passed on.
 *    Guarded, a bad IPv4 header checksum is passed on (the kernel drops it).
 *  - One datagram, one command: frame header seq 0 / total 1, else it is
 *    dropped unanswered (always, as memcached does).  Requests longer than
 *    XKV_REQ_MAX bytes of text are passed on.
 *  - Guarded, the UDP checksum over the UDP length's bytes must hold; IPv4
 *    may send none (0), IPv6 may not; with csum_partial the pseudo-header
 *    sum alone (what a CHECKSUM_PARTIAL sender leaves) is accepted too.  A
 *    bad one is passed on.
 *  - A line that is no command and reads as a reply (its first word a reply
 *    word, or a number) is dropped, always: two servers must not talk to
 *    each other forever.  Guarded, a well-formed write from a source outside
 *    the write list is dropped.
 *  - Guarded, a reply to an untrusted source (or any, when strict) longer
 *    than max_amp times the request (UDP payloads) becomes one SERVER_ERROR
 *    line, or nothing when even that is too long.
 *  - The command line ends at the first \r\n; a bare \n or no end is an error.
 *    Tokens are separated by spaces.  get/set/delete are served; the other
 *    known commands, well formed, are passed on, as is anything followed by
 *    more bytes (a second command) and get with more keys than the fast path
 *    tokenizes.  A get reply must fit one datagram or it is passed on.
 *  - A binary request (its first byte 0x80) is served when the datagram
 *    holds exactly one get, getq, getk or getkq frame of memcached's shape
 *    (no extras, the body just the key) with data type and cas 0, whose key
 *    the store can hold (1 to key_cap bytes, the text key rule's, no space,
 *    CR or LF even with binary keys): the hit with its flags,
 *    [key,] value and cas (memcached's response), a miss 0x0001 "Not found"
 *    (getk: the key instead), a quiet miss nothing (counted as noreply).  A
 *    value over one datagram is passed on.  Everything else binary is passed
 *    on; over the amplification cap a binary response is dropped.
 *  - Errors get their reply line, except where the line ends in "noreply"
 *    (and the tokens fit the parser): such an error is passed on, the slow
 *    path sends nothing for it (memcached); a full store with noreply is
 *    silent here.
 */
/* This file: the access policy and whole frames (rm_handle_frame). */
#include "refmodel_int.h"

/* ---- the access policy ---------------------------------------------------------- */

int rm_net_parse(const char *str, struct rm_net *n)
{
	char buf[64];
	const char *slash = strchr(str, '/');
	long bits = -1;
	__u8 v4[4];

	memset(n, 0, sizeof(*n));
	if (!strcmp(str, "any"))
		return 0;
	size_t alen = slash ? (size_t)(slash - str) : strlen(str);
	if (alen >= sizeof(buf))
		return -1;
	memcpy(buf, str, alen);
	buf[alen] = 0;
	if (slash) {
		char *end;
		bits = strtol(slash + 1, &end, 10);
		if (*end || bits < 0)
			return -1;
	}
	if (inet_pton(AF_INET, buf, v4) == 1) {
		if (bits > 32)
			return -1;
		n->addr[10] = n->addr[11] = 0xff;
		memcpy(n->addr + 12, v4, 4);
		n->bits = 96 + (__u32)(bits < 0 ? 32 : bits);
		return 0;
	}
	if (inet_pton(AF_INET6, buf, n->addr) == 1 && bits <= 128) {
		n->bits = (__u32)(bits < 0 ? 128 : bits);
		return 0;
	}
	return -1;
}

int rm_nets_add(struct rm_nets *l, const char *s)
{
	if (l->n == RM_NETS_MAX || rm_net_parse(s, &l->net[l->n]))
		return -1;
	l->n++;
	return 0;
}

/* Is addr (16-byte form) inside one of the networks? */
static int in_nets(const struct rm_nets *l, const __u8 addr[16])
{
	for (__u32 i = 0; i < l->n; i++) {
		const struct rm_net *net = &l->net[i];
		__u32 whole = net->bits / 8, part = net->bits % 8;
		if (memcmp(net->addr, addr, whole))
			continue;
		if (part && ((net->addr[whole] ^ addr[whole]) & (__u8)(0xff00 >> part)))
			continue;
		return 1;
	}
	return 0;
}

static __u64 mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* The rate limit as a token bucket per source network: it holds up to
 * `burst` requests' worth of time and refills at one request per 1/rate s.
 * A network never seen starts full. */
static int rate_admits(struct rm_store *s, const __u8 src[16], int v6)
{
	const struct rm_policy *p = &s->cfg.pol;
	__u64 cost = 1000000000ull / p->rate_limit;
	__u64 full = cost * (p->rate_burst ? p->rate_burst : 1);
	__u64 now = mono_ns();
	__u8 net[16] = { 0 };
	struct rm_bucket *b = NULL;

	memcpy(net, src, v6 ? 8 : 15); /* the /64, or the /24 of the mapped address */
	for (__u32 i = 0; i < s->nbuckets && !b; i++)
		if (!memcmp(s->bucket[i].net, net, 16))
			b = &s->bucket[i];
	if (!b) {
		if (s->nbuckets == RM_BUCKETS_MAX)
			abort();
		b = &s->bucket[s->nbuckets++];
		memcpy(b->net, net, 16);
		b->credit = full;
		b->at = now;
	}
	b->credit += now - b->at;
	if (b->credit > full)
		b->credit = full;
	b->at = now;
	if (b->credit < cost)
		return 0;
	b->credit -= cost;
	return 1;
}

/* Internet checksum: the one's complement sum of big-endian 16-bit words
 * (an odd last byte padded with zero), folded to 16 bits. */
static __u64 ones_add(__u64 acc, const __u8 *p, size_t n)
{
	for (size_t i = 0; i < n; i += 2)
		acc += (__u64)p[i] << 8 | (i + 1 < n ? p[i + 1] : 0);
	return acc;
}

static __u16 ones_fold(__u64 acc)
{
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (__u16)acc;
}

/* The UDP checksum of the datagram udp[0..ulen) between the addresses at
 * ip (as the IP header holds them) is acceptable. */
static int udp_csum_ok(const struct rm_policy *p, int v6, const __u8 *ip, const __u8 *udp,
		       __u32 ulen)
{
	__u16 field = be16(udp + 6);
	__u64 ph;
	if (field == 0)
		return !v6; /* "no checksum": IPv4 only */
	if (v6) {
		__u8 tail[8] = { (__u8)(ulen >> 24), (__u8)(ulen >> 16), (__u8)(ulen >> 8), (__u8)ulen,
				 0, 0, 0, 17 };
		ph = ones_add(ones_add(0, ip + 8, 32), tail, 8);
	} else {
		__u8 tail[4] = { 0, 17, (__u8)(ulen >> 8), (__u8)ulen };
		ph = ones_add(ones_add(0, ip + 12, 8), tail, 4);
	}
	if (ones_fold(ones_add(ph, udp, ulen)) == 0xffff)
		return 1;
	return p->csum_partial && field == ones_fold(ph);
}

/* Cut or drop a reply that says too much to a source that did not prove
 * its address (UDP payloads: frame header + text); a binary one is only
 * dropped (a text line would break a binary client). */
static void amp_cap(const struct rm_policy *p, int trusted, __u32 req_bytes, struct rm_result *r)
{
	__u64 most = (__u64)p->max_amp * req_bytes;
	if (!p->max_amp || trusted || XKV_UDP_HDR_LEN + r->text_len <= most)
		return;
	if (r->binary || XKV_UDP_HDR_LEN + strlen(XKV_R_AMP) > most) {
		discard(r, XKV_STAT_drop_amp);
		return;
	}
	r->text_len = 0;
	say_str(r, XKV_R_AMP);
	count(r, XKV_STAT_amp_capped);
}

/* ---- frames ------------------------------------------------------------------ */

static void untouched(struct rm_result *r)
{
	memset(r, 0, sizeof(*r));
	r->action = RM_XDP_PASS;
}

/* Source addresses no host has (RFC 1122 3.2.1.3 and RFC 4291): IPv4
 * "this network" 0/8, loopback 127/8, class D multicast and class E
 * (which holds the limited broadcast); IPv6 unspecified, loopback,
 * multicast ff00::/8, and IPv4-mapped (never on the wire).  a: 16 bytes,
 * IPv4 in the last 4. */
static int martian(const __u8 *a, int v6)
{
	static const __u8 zero[16];
	if (!v6)
		return a[12] == 0 || a[12] == 127 || (a[12] & 0xe0) == 0xe0;
	if (a[0] == 0xff)
		return 1;
	if (memcmp(a, zero, 10))
		return 0;
	if (a[10] == 0xff && a[11] == 0xff)
		return 1;
	return !memcmp(a, zero, 15) && (a[15] == 0 || a[15] == 1);
}

void rm_handle_frame(struct rm_store *s, const __u8 *pkt, size_t len, int64_t now,
		     struct rm_result *r)
{
	const struct rm_policy *p = &s->cfg.pol;
	int guarded = !p->unguarded, v6;
	const __u8 *udp;
	size_t l3_payload;   /* bytes the IP header says follow it */
	__u8 src[16] = { 0 }, dst[16] = { 0 };

	untouched(r);
	if (len < 14)
		return;
	__u16 et = be16(pkt + 12);
	const __u8 *ip = pkt + 14;
	size_t avail = len - 14;

	if (et == 0x0800) {
		if (avail < 20 || ip[0] != 0x45 || ip[9] != 17 || (be16(ip + 6) & 0x3fff))
			return;
		if (avail < 28)
			return;
		udp = ip + 20;
		if (be16(udp + 2) != s->cfg.port)
			return;
		size_t tot = be16(ip + 2);
		if (tot < 28 || tot > avail)
			return;  /* the kernel drops it; nothing counted */
		l3_payload = tot - 20;
		v6 = 0;
		src[10] = src[11] = dst[10] = dst[11] = 0xff;
		memcpy(src + 12, ip + 12, 4);
		memcpy(dst + 12, ip + 16, 4);
	} else if (et == 0x86dd) {
		if (avail < 48 || ip[6] != 17)
			return;
		udp = ip + 40;
		if (be16(udp + 2) != s->cfg.port)
			return;
		size_t pl = be16(ip + 4);
		if (pl < 8 || pl > avail - 40)
			return;
		l3_payload = pl;
		v6 = 1;
		memcpy(src, ip + 8, 16);
		memcpy(dst, ip + 24, 16);
	} else {
		return;
	}

	if (guarded) {
		__u16 sport = be16(udp);
		if ((p->check_mac && memcmp(pkt, p->mac, 6)) ||
		    (p->check_ip && !in_nets(&p->local, dst))) {
			pass(r, XKV_STAT_pass_not_local);
			return;
		}
		if (martian(src, v6)) {
			discard(r, XKV_STAT_drop_src);
			return;
		}
		if (sport == 0 || sport == s->cfg.port || (sport < 1024 && !p->low_ports)) {
			discard(r, XKV_STAT_drop_port);
			return;
		}
		if (!in_nets(&p->allow, src)) {
			discard(r, XKV_STAT_drop_acl);
			return;
		}
		if (p->rate_limit && !rate_admits(s, src, v6)) {
			discard(r, XKV_STAT_drop_ratelimit);
			return;
		}
	}
	count(r, XKV_STAT_requests);

	size_t ulen = be16(udp + 4);
	if (ulen < 8 + XKV_UDP_HDR_LEN || ulen > l3_payload) {
		pass(r, XKV_STAT_pass_malformed);
		return;
	}
	if (guarded && !v6 && ones_fold(ones_add(0, ip, 20)) != 0xffff) {
		pass(r, XKV_STAT_pass_csum);
		return;
	}
	const __u8 *d = udp + 8;
	if (be16(d + 2) != 0 || be16(d + 4) != 1) {
		discard(r, XKV_STAT_drop_frame);
		return;
	}
	size_t n = ulen - 8 - XKV_UDP_HDR_LEN;
	if (n > XKV_REQ_MAX) {
		pass(r, XKV_STAT_pass_room);
		return;
	}
	if (guarded && !udp_csum_ok(p, v6, ip, udp, (__u32)ulen)) {
		pass(r, XKV_STAT_pass_csum);
		return;
	}
	int may_write = !guarded || in_nets(&p->write, src);
	if (may_write && guarded && p->pause_writes)
		may_write = 2;
	if (n && d[XKV_UDP_HDR_LEN] == XKV_BIN_REQ)
		handle_binary(s, d + XKV_UDP_HDR_LEN, (__u32)n, now, r);
	else
		handle_text(s, d + XKV_UDP_HDR_LEN, (__u32)n, now, may_write, r);
	if (r->action != RM_XDP_TX)
		return;
	if (guarded)
		/* an open TCP connection from the address is no trust for UDP */
		amp_cap(p, !p->strict && in_nets(&p->trust, src),
			(__u32)(ulen - 8), r);
	if (r->action == RM_XDP_TX)
		count(r, XKV_STAT_replies);
}
