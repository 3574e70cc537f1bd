// SPDX-License-Identifier: MIT
/* slabs automove / slabs reassign, read as memcached 1.6.18 reads them.
 * This store has no slab pages to move (stats slabs: the store map is
 * class 1, one page; the big map class 2), so a well-formed request changes
 * nothing and gets memcached's answer for a store in that state. */
#include "engine_int.h"
#include <stdlib.h>

static bool word_is(const struct slow_cmd *c, __u32 t, const char *w)
{
	size_t n = strlen(w);
	return t < c->r->ntok && c->r->tok[t].len == n && !memcmp(tok_ptr(c, t), w, n);
}

/* strtod over token t, as memcached's safe_strtod: the whole token. */
static bool tok_double(const struct slow_cmd *c, __u32 t)
{
	char s[64];
	__u32 n = c->r->tok[t].len;
	if (n == 0 || n >= sizeof(s))
		return false;
	memcpy(s, tok_ptr(c, t), n);
	s[n] = 0;
	char *end;
	strtod(s, &end);
	return end != s && *end == 0;
}

/* slabs automove <0|1|2> | ratio <r>  [noreply]: OK (nothing to move) */
static int slabs_automove(struct slow_cmd *c)
{
	struct xkv_req *r = c->r;
	__u64 level;
	r->noreply = xkv_tok_is(c->buf, &r->tok[r->ntok - 1], "noreply", 7);
	if (word_is(c, 2, "ratio")) {
		if (r->ntok < 4 || !tok_double(c, 3))
			return answer(c, XKV_R_ERROR);
		return answer(c, "OK\r\n");
	}
	if (xkv_tok_mc_u64(c->buf, &r->tok[2], &level) || level > 0xffffffffULL) {
		STAT(c, err_client);
		return answer(c, XKV_R_FORMAT);
	}
	return answer(c, level <= 2 ? "OK\r\n" : XKV_R_ERROR);
}

/* slabs reassign <src> <dst>: memcached's checks in its order; a class
 * that exists has one page, none to spare */
static int slabs_reassign(struct slow_cmd *c)
{
	struct xkv_req *r = c->r;
	__s64 src, dst, wide;
	if (xkv_tok_mc_i32(c->buf, &r->tok[2], &src, &wide) ||
	    xkv_tok_mc_i32(c->buf, &r->tok[3], &dst, &wide)) {
		STAT(c, err_client);
		return answer(c, XKV_R_FORMAT);
	}
	if (src == dst)
		return answer(c, "SAME src and dst class are identical\r\n");
	__s64 largest = xkv_big_on(c->s) ? 2 : 1;
	if (src < 0 || src > largest || dst < 0 || dst > largest)
		return answer(c, "BADCLASS invalid src or dst class id\r\n");
	return answer(c, "NOSPARE source class has no spare pages\r\n");
}

int slow_cmd_slabs(struct slow_cmd *c)
{
	if (c->r->ntok == 4 && word_is(c, 1, "reassign"))
		return slabs_reassign(c);
	if (c->r->ntok >= 3 && word_is(c, 1, "automove"))
		return slabs_automove(c);
	STAT(c, err_unknown);
	return answer(c, XKV_R_ERROR);
}
