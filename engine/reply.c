// SPDX-License-Identifier: MIT
/* Building a reply: the growing reply buffer (xkv_buf), the error lines a
 * command answers, and a command's one-line answer (noreply: none). */
#include "engine_int.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define R_BUSY       "SERVER_ERROR busy\r\n"

int xkv_buf_put(struct xkv_buf *b, const void *src, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		__u8 *p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, src, n);
	b->len += n;
	return 0;
}

void xkv_buf_free(struct xkv_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int buf_printf(struct xkv_buf *b, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	return xkv_buf_put(b, line, (size_t)n);
}

/* Append the reply line for a parser/store verdict and count it. */
int reply_err(struct slow_cmd *c, int err)
{
	switch (err) {
	case XKV_E_UNKNOWN: STAT(c, err_unknown); break;
	case XKV_E_TOO_LARGE: STAT(c, err_too_large); break;
	case XKV_E_OOM: STAT(c, err_oom); break;
	default: STAT(c, err_client); break;
	}
	const char *line = xkv_err_line(err);
	return xkv_buf_put(c->out, line, strlen(line));
}

/* A client error with its own line (not a parser verdict). */
int reply_err_line(struct slow_cmd *c, const char *line)
{
	STAT(c, err_client);
	return xkv_buf_put(c->out, line, strlen(line));
}

/* A store error other than "full": busy after retries, or the kernel's. */
int reply_store_errno(struct slow_cmd *c, int err)
{
	if (err == -ENOMEM)
		return reply_err(c, XKV_E_OOM);
	if (err == -EBUSY)
		return PUT_LIT(c->out, R_BUSY);
	return buf_printf(c->out, "SERVER_ERROR %s\r\n", strerror(-err));
}

/* A command's one-line answer, or none with noreply. */
int answer(struct slow_cmd *c, const char *line)
{
	if (c->r->noreply) {
		STAT(c, noreply);
		return 0;
	}
	return xkv_buf_put(c->out, line, strlen(line));
}
