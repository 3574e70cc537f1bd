// SPDX-License-Identifier: MIT
/* The text command loop shared by both transports: this thread's scratch,
 * parsing one command (ms's data block framed here), counting it, and
 * running it: the refusals first (a parse error, a write while paused or
 * migrating), then the command by its op; noreply's silence. */
#include "engine_int.h"
#include <stdlib.h>

static pthread_once_t slow_once = PTHREAD_ONCE_INIT;
static pthread_key_t slow_key;

static void slow_scratch_free(void *p)
{
	struct slow_scratch *sc = p;
	free(sc->big);
	free(sc);
}

static void slow_key_make(void)
{
	pthread_key_create(&slow_key, slow_scratch_free);
}

static struct slow_scratch *slow_scratch(void)
{
	pthread_once(&slow_once, slow_key_make);
	struct slow_scratch *sc = pthread_getspecific(slow_key);
	if (!sc) {
		sc = calloc(1, sizeof(*sc));
		if (sc && pthread_setspecific(slow_key, sc)) {
			free(sc);
			sc = NULL;
		}
	}
	return sc;
}

/* This thread's scratch and its own view of the store (see struct
 * slow_scratch) for the commands to come.  <0 (answered) without memory. */
int slow_cmd_begin(struct slow_cmd *c)
{
	c->sc = slow_scratch();
	if (!c->sc) {
		reply_err(c, XKV_E_OOM);
		return -1;
	}
	c->r = &c->sc->req;
	c->sc->store = *c->sl->s;
	c->sc->store.new_items = c->sc->store.overwrites = 0;
	c->s = &c->sc->store;
	return 0;
}

/* Copy the request text into the zero-padded parse buffer. */
void slow_load_text(struct slow_scratch *sc, const __u8 *text, size_t tlen)
{
	memcpy(sc->text, text, tlen);
	if (sc->text_used > tlen)
		memset(sc->text + tlen, 0, sc->text_used - tlen);
	sc->text_used = tlen;
}

/* ms <key> <datalen> <flag>*\r\n<data>\r\n: the parser reads its line
 * only; its data block is framed here with the verdicts the parser gives a
 * storage command's (data_off and bytes set for the stream's wait). */
static int frame_ms(struct slow_cmd *c, size_t avail)
{
	struct xkv_req *r = c->r;
	__u64 v;

	if (r->ntok < 3 || xkv_tok_u64(c->buf, &r->tok[2], 0x7ffffffdULL, &v))
		return xkv_fail(r, XKV_E_FORMAT);
	r->bytes = (__u32)v;
	r->data_off = r->line_len + 2;
	if (r->bytes > r->val_cap)
		return xkv_fail(r, XKV_E_TOO_LARGE);
	size_t end = (size_t)r->data_off + r->bytes; /* where \r\n must be */
	if (end + 2 > avail || c->buf[end] != '\r' || c->buf[end + 1] != '\n')
		return xkv_fail(r, XKV_E_DATA);
	r->next = (__u32)end + 2;
	return XKV_OK;
}

void parse_at(struct slow_cmd *c, size_t off, size_t tlen, int *err)
{
	memset(&c->tw, 0, sizeof(c->tw));
	c->buf = c->sc->text + off;
	/* memcached's key limit: a key longer than the store's is served as
	 * one no item has (store_get, slow_delete, write_once) */
	c->r->key_cap = XKV_KEY_MAX;
	c->r->val_cap = xkv_val_max(c->s);
	c->r->binary_keys = !!(c->s->cfg.flags & XKV_CFG_BINARY_KEYS);
	*err = xkv_parse(c->buf, (__u32)(tlen - off), c->r);
	if (!*err && c->r->op == XKV_OP_MS)
		*err = frame_ms(c, tlen - off);
	c->data = c->buf + (c->r->data_off & (SLOW_BUF / 2 - 1));
}

/* A get-like command with more keys than this slow path takes? */
bool too_many_keys(const struct slow_cmd *c)
{
	const struct xkv_req *r = c->r;
	bool getlike = r->op == XKV_OP_GET || r->op == XKV_OP_GETS || r->op == XKV_OP_GAT ||
		       r->op == XKV_OP_GATS;
	return getlike && (r->too_many || r->ntok - r->key1 > c->sl->lim.max_keys);
}

/* Does the command change the store?  xkv_op_writes, and an mg that
 * touches (T) or creates (N). */
bool slow_cmd_writes(const struct slow_cmd *c)
{
	const struct xkv_req *r = c->r;
	if (xkv_op_writes(r->op))
		return true;
	if (r->op != XKV_OP_MG)
		return false;
	for (__u32 t = 2; t < r->ntok; t++) {
		__u8 ch = *tok_ptr(c, t);
		if (ch == 'T' || ch == 'N')
			return true;
	}
	return false;
}

void count_cmd(struct slow_cmd *c)
{
	if (c->mg && c->mg->on)
		return; /* a multi-get's later parts (mget.c): counted once */
	switch (c->r->op) {
	case XKV_OP_GET: STAT(c, cmd_get); break;
	case XKV_OP_SET: STAT(c, cmd_set); break;
	case XKV_OP_DELETE: STAT(c, cmd_delete); break;
	case XKV_OP_NONE: break;
	default: STAT(c, cmd_other); break;
	}
}

/* One parsed command.  Returns <0 to stop processing the datagram. */
int slow_dispatch(struct slow_cmd *c)
{
	switch (c->r->op) {
	case XKV_OP_GET:
	case XKV_OP_GETS:
	case XKV_OP_GAT:
	case XKV_OP_GATS: return slow_cmd_get(c);
	case XKV_OP_SET:
	case XKV_OP_ADD:
	case XKV_OP_REPLACE:
	case XKV_OP_APPEND:
	case XKV_OP_PREPEND:
	case XKV_OP_CAS: return slow_cmd_store(c);
	case XKV_OP_TOUCH: return slow_cmd_touch(c);
	case XKV_OP_VERBOSITY: return answer(c, R_OK_LINE); /* memcached's log level: none here */
	case XKV_OP_MG: return slow_cmd_mg(c);
	case XKV_OP_MN: return PUT_LIT(c->out, "MN\r\n");
	case XKV_OP_MS: return slow_cmd_ms(c);
	case XKV_OP_MD: return slow_cmd_md(c);
	case XKV_OP_MA: return slow_cmd_ma(c);
	case XKV_OP_ME: return slow_cmd_me(c);
	case XKV_OP_DELETE: return slow_cmd_delete(c);
	case XKV_OP_INCR:
	case XKV_OP_DECR: return slow_cmd_arith(c);
	case XKV_OP_VERSION: return PUT_LIT(c->out, XKV_VERSION_LINE);
	/* memcached's answer unless started with -A (no way to stop it here) */
	case XKV_OP_SHUTDOWN: return PUT_LIT(c->out, "ERROR: shutdown not enabled\r\n");
	case XKV_OP_STATS: return slow_cmd_stats(c);
	case XKV_OP_LRU_CRAWLER: return slow_cmd_lru_crawler(c);
	case XKV_OP_SLABS: return slow_cmd_slabs(c);
	case XKV_OP_FLUSH_ALL: return slow_cmd_flush(c);
	}
	return stop(reply_err(c, XKV_E_UNKNOWN));
}

/* The command word's op, read again where a parser verdict cleared r->op
 * (xkv_parse reads get, set and delete itself, the rest with
 * xkv_parse_slow_op).  XKV_OP_NONE for no word or an unknown one. */
__u8 word_op(const struct slow_cmd *c)
{
	const struct xkv_tok *w = &c->r->tok[0];
	if (!c->r->ntok)
		return XKV_OP_NONE;
	if (xkv_tok_is(c->buf, w, "get", 3))
		return XKV_OP_GET;
	if (xkv_tok_is(c->buf, w, "set", 3))
		return XKV_OP_SET;
	if (xkv_tok_is(c->buf, w, "delete", 6))
		return XKV_OP_DELETE;
	return xkv_parse_slow_op(c->buf, w);
}

/* A classic command ending in "noreply" gets no reply at all, errors
 * included: memcached reads the token before anything else and drops
 * every line of that command (a client that sent noreply never reads one;
 * an error line would answer its next request).  A line that is not the
 * command's shape (ERROR) is answered.  The parser clears op on a verdict:
 * the command word is read again. */
static bool text_noreply(const struct slow_cmd *c, int err)
{
	const struct xkv_req *r = c->r;

	if (!err)
		return r->noreply;
	if (err == XKV_E_UNKNOWN || err == XKV_E_NO_CRLF || r->too_many || r->ntok < 2 ||
	    r->ntok > XKV_PARSE_TOKENS)
		return false;
	switch (word_op(c)) {
	case XKV_OP_SET: case XKV_OP_ADD: case XKV_OP_REPLACE: case XKV_OP_APPEND:
	case XKV_OP_PREPEND: case XKV_OP_CAS: case XKV_OP_DELETE: case XKV_OP_INCR:
	case XKV_OP_DECR: case XKV_OP_TOUCH: case XKV_OP_VERBOSITY: case XKV_OP_FLUSH_ALL:
		return xkv_tok_is(c->buf, &r->tok[r->ntok - 1], "noreply", 7);
	default:
		return false;
	}
}

/* A set or ms refused as too large removes the key's item: memcached
 * does so that a failed set cannot leave the old value readable. */
static void too_large_unlink(struct slow_cmd *c)
{
	const struct xkv_req *r = c->r;
	__u8 op = word_op(c);

	if (!c->may_write || r->ntok < 2 || (op != XKV_OP_SET && op != XKV_OP_MS) ||
	    xkv_key_check(&c->s->cfg, tok_ptr(c, 1), r->tok[1].len))
		return;
	slow_delete(c, tok_ptr(c, 1), r->tok[1].len, false, 0);
}

/* Count and run one command the parser read (err: its verdict), appending
 * its reply: the per-command path of both transports.  Returns <0 when the
 * rest of a datagram must not run (a parse error, a reply over budget). */
static int slow_run_cmd(struct slow_cmd *c, int err)
{
	count_cmd(c);
	if (err == XKV_E_TOO_LARGE || err == XKV_E_OOM)
		too_large_unlink(c);
	/* a get-like line with a key over 250 bytes after valid ones
	 * (parse.h): its keys are read up to that one (slow_cmd_get) */
	if (err == XKV_E_KEY_LONG && c->r->op != XKV_OP_NONE)
		err = XKV_OK;
	if (err) {
		reply_err(c, err);
		over_budget(c, 0);
		return -1;
	}
	/* migrate: the write goes to the old store and the new one */
	if (slow_cmd_writes(c) && c->sl->mig_state == MIG_MIRROR) {
		int rc;
		if (mig_write_begin(c, &rc)) {
			rc = slow_dispatch(c);
			mig_write_end(c);
		}
		return rc < 0 || over_budget(c, 0) ? -1 : 0;
	}
	/* snapshot --pause-writes holds the store still: refuse, change nothing
	 * (after a migration's switch the flag is still up for a moment: the
	 * store written is the new one, which XDP serves) */
	if (slow_cmd_writes(c) && c->sl->mig_state == MIG_NONE && xkv_writes_paused(c->s) > 0) {
		STAT(c, pass_paused);
		if (!c->r->noreply && PUT_LIT(c->out, XKV_R_PAUSED) < 0)
			return -1;
		return over_budget(c, 0) ? -1 : 0;
	}
	return slow_dispatch(c) < 0 || over_budget(c, 0) ? -1 : 0;
}

int slow_run(struct slow_cmd *c, int err)
{
	size_t mark = c->out->len;
	int rc = slow_run_cmd(c, err);
	if (c->out->len > mark && text_noreply(c, err)) {
		c->out->len = mark; /* counted as answered: the error counters stay */
		c->over = OVER_NONE;
		STAT(c, noreply);
	}
	return rc;
}

/* A reply that outgrew max_reply is taken back (from out_start) and
 * replaced by the error line. */
void settle_over_reply(struct slow_cmd *c)
{
	if (c->over != OVER_REPLY)
		return;
	c->out->len = c->out_start;
	STAT(c, drop_oversize);
	PUT_LIT(c->out, XKV_R_REPLY_LARGE);
}
