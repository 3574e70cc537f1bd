// SPDX-License-Identifier: MIT
/* Messages: levels, a threshold, a sink, the libbpf/libxdp print hooks and
 * a ring of kept lines. */
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "log.h"

static enum xkv_log_level threshold = XKV_LOG_WARN;
static xkv_log_sink sink;

void xkv_log_set_level(enum xkv_log_level level)
{
	threshold = level;
}

enum xkv_log_level xkv_log_get_level(void)
{
	return threshold;
}

void xkv_log_set_sink(xkv_log_sink s)
{
	sink = s;
}

void xkv_vlog(enum xkv_log_level level, const char *fmt, va_list ap)
{
	if (level > threshold)
		return;
	if (sink)
		sink(level, fmt, ap);
	else
		vfprintf(stderr, fmt, ap);
}

void xkv_log(enum xkv_log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	xkv_vlog(level, fmt, ap);
	va_end(ap);
}

static int libbpf_hook(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	xkv_vlog(level == LIBBPF_WARN ? XKV_LOG_WARN : level == LIBBPF_INFO ? XKV_LOG_INFO
									: XKV_LOG_DEBUG,
		 fmt, ap);
	return 0;
}

static int libxdp_hook(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	xkv_vlog(level == LIBXDP_WARN ? XKV_LOG_WARN : level == LIBXDP_INFO ? XKV_LOG_INFO
									: XKV_LOG_DEBUG,
		 fmt, ap);
	return 0;
}

void xkv_log_libbpf(void)
{
	libbpf_set_print(libbpf_hook);
}

void xkv_log_libxdp(void)
{
	libxdp_set_print(libxdp_hook);
}

/* ---- the ring of kept lines ---- */

#define KEPT_LINES 24
static char kept[KEPT_LINES][256];
static unsigned kept_next;

void xkv_log_keep(enum xkv_log_level level, const char *fmt, va_list ap)
{
	char *l = kept[kept_next++ % KEPT_LINES];
	vsnprintf(l, sizeof(kept[0]), fmt, ap);
	size_t len = strlen(l);
	while (len && l[len - 1] == '\n')
		l[--len] = 0;
}

unsigned xkv_log_kept(void (*fn)(void *arg, const char *line), void *arg)
{
	unsigned first = kept_next > KEPT_LINES ? kept_next - KEPT_LINES : 0;
	for (unsigned i = first; fn && i < kept_next; i++)
		fn(arg, kept[i % KEPT_LINES]);
	return kept_next - first;
}

void xkv_log_kept_clear(void)
{
	kept_next = 0;
	memset(kept, 0, sizeof(kept));
}
