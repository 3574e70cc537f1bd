// SPDX-License-Identifier: MIT
/* One UDP request datagram: its frame header, the source's admission,
 * the amplification cap, a scan before anything runs (so that a refused
 * datagram changes nothing), then every command in order; and the framing
 * of a reply into datagrams (xkv_slow_frame). */
#include "engine_int.h"
#include <arpa/inet.h>
#include "binproto.h"

/* A verdict on the command line alone: memcached answers it and reads the
 * next line as the next command, and so does a datagram here.  After any
 * other (a data block of the wrong length, one too large, no \r\n) the
 * next line is a guess: the datagram ends there. */
static bool line_error(int err)
{
	return err == XKV_E_UNKNOWN || err == XKV_E_FORMAT || err == XKV_E_KEY_BAD ||
	       err == XKV_E_EXPTIME || err == XKV_E_DEL_USAGE || err == XKV_E_DELTA;
}

/* What the datagram would do, read before any of it runs, so that a refused
 * datagram changes nothing: the commands up to the first parse error (the
 * ones that would run).  Returns the counter of a silent drop, or -1. */
enum { SCAN_TOO_MANY_KEYS = 1 };
static int scan_datagram(struct slow_cmd *c, size_t tlen, bool may_write, int *flags)
{
	size_t off = 0;
	bool writes = false;
	int err;

	*flags = 0;
	do {
		parse_at(c, off, tlen, &err);
		if (err) {
			/* answering a reply is how two servers talk forever */
			if (err == XKV_E_UNKNOWN && xkv_reply_shaped(c->buf, c->r))
				return XKV_STAT_drop_reply;
			/* memcached answers nothing of a datagram with an HTTP line */
			if (err == XKV_E_HTTP)
				return XKV_STAT_err_unknown;
			if (!line_error(err))
				break;
			off += c->r->next;
			continue;
		}
		writes |= slow_cmd_writes(c);
		if (too_many_keys(c))
			*flags |= SCAN_TOO_MANY_KEYS;
		off += c->r->next;
	} while (off < tlen);
	if (writes && !may_write)
		return XKV_STAT_drop_write_acl;
	return -1;
}

static int slow_handle(struct xkv_slow *sl, const struct xkv_slow_src *src, const __u8 *dgram,
		       size_t len, struct xkv_udp_hdr *hdr, struct xkv_buf *out, struct xkv_stats *delta)
{
	struct xkv_store *s = sl->s;
	struct slow_cmd c = { .sl = sl, .s = s, .out = out, .d = delta, .out_start = out->len,
			      .framed = true };
	struct xkv_rights rt;

	if (len >= XKV_UDP_HDR_LEN)
		memcpy(hdr, dgram, sizeof(*hdr));
	int drop = slow_admit(sl, src, &rt);
	if (drop) {
		if (drop > 0)
			delta->v[drop]++;
		return 0;
	}
	STAT(&c, requests); /* counted as the fast path does: past the access checks */
	if (len < XKV_UDP_HDR_LEN)
		return 0; /* no header to echo: nobody to answer */
	/* one datagram per request; anything else gets silence, as memcached */
	if (hdr->total != htons(1) || hdr->seq != 0) {
		STAT(&c, drop_frame);
		return 0;
	}
	/* An untrusted source gets at most max_amp reply bytes per request
	 * byte; everyone at most max_reply. */
	__u64 amp_cap = 0;
	c.budget = sl->lim.max_reply;
	if (src && !rt.trusted && s->cfg.max_amp && !(s->cfg.flags & XKV_CFG_UNGUARDED)) {
		amp_cap = (__u64)s->cfg.max_amp * len;
		if (amp_cap < c.budget) {
			c.budget = (size_t)amp_cap;
			c.budget_amp = 1;
		}
	}
	if (slow_cmd_begin(&c))
		goto done;

	size_t tlen = len - XKV_UDP_HDR_LEN;
	if (tlen > XKV_PARSE_SPAN)
		tlen = XKV_PARSE_SPAN; /* cannot happen: UDP payloads are < 64 KiB */
	slow_load_text(c.sc, dgram + XKV_UDP_HDR_LEN, tlen);

	int scan;
	c.may_write = rt.write;
	drop = scan_datagram(&c, tlen, rt.write, &scan);
	if (drop >= 0) {
		delta->v[drop]++;
		return 0;
	}
	if (scan & SCAN_TOO_MANY_KEYS) { /* refused before anything runs */
		STAT(&c, drop_oversize);
		PUT_LIT(out, XKV_R_TOO_MANY_KEYS);
		goto done;
	}

	/* Every command in order.  After an error of the line alone the next
	 * line runs, as memcached goes on; after a bad data block the error
	 * line is the last thing answered (the next line is a guess).  A reply
	 * over the budget stops it too (what ran, ran). */
	size_t off = 0;
	do {
		int err;
		parse_at(&c, off, tlen, &err);
		if (slow_run(&c, err) < 0 && (c.over != OVER_NONE || (err && !line_error(err))))
			break;
		off += c.r->next;
	} while (off < tlen);
	settle_over_reply(&c);
done:;
	size_t n = out->len - c.out_start;
	if (amp_cap && (c.over == OVER_AMP || wire_bytes(n) > amp_cap)) {
		out->len = c.out_start;
		if (XKV_UDP_HDR_LEN + sizeof(XKV_R_AMP) - 1 > amp_cap) {
			STAT(&c, drop_amp);
			return 0;
		}
		STAT(&c, amp_capped);
		PUT_LIT(out, XKV_R_AMP);
		n = out->len - c.out_start;
	}
	if (n == 0)
		return 0;
	delta->v[XKV_STAT_replies] += (n + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT;
	return 1;
}

int xkv_slow_handle(struct xkv_slow *sl, const struct xkv_slow_src *src, const __u8 *dgram,
		    size_t len, struct xkv_udp_hdr *hdr, struct xkv_buf *out, struct xkv_stats *delta)
{
	int rc;
	if (xkv_bin_dgram_take(sl, src, dgram, len, hdr, out, delta, &rc))
		return rc;
	xkv_slow_hold(sl);
	rc = slow_handle(sl, src, dgram, len, hdr, out, delta);
	xkv_slow_release(sl);
	return rc;
}

/* ---- framing -------------------------------------------------------------- */

int xkv_slow_frame(__u16 req_id_be, const __u8 *text, size_t len,
		   int (*emit)(void *arg, const __u8 *dgram, size_t dlen), void *arg)
{
	size_t total = (len + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT;
	__u8 d[XKV_DGRAM_MAX];

	if (total > 0xffff)
		return -E2BIG;
	for (size_t i = 0; i < total; i++) {
		struct xkv_udp_hdr h = {
			.req_id = req_id_be,
			.seq = htons((__u16)i),
			.total = htons((__u16)total),
		};
		size_t off = i * XKV_DGRAM_TEXT;
		size_t n = len - off < XKV_DGRAM_TEXT ? len - off : XKV_DGRAM_TEXT;

		memcpy(d, &h, sizeof(h));
		memcpy(d + XKV_UDP_HDR_LEN, text + off, n);
		int ret = emit(arg, d, XKV_UDP_HDR_LEN + n);
		if (ret < 0)
			return ret;
	}
	return (int)total;
}
