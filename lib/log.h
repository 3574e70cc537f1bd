/* SPDX-License-Identifier: MIT */
/* Messages (log.c): levels, a threshold (-v / --verbose sets it), and the
 * one hook that routes libbpf's and libxdp's messages through them. */
#ifndef XDPKV_LIB_LOG_H
#define XDPKV_LIB_LOG_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

enum xkv_log_level {
	XKV_LOG_ERROR,
	XKV_LOG_WARN,
	XKV_LOG_INFO,
	XKV_LOG_DEBUG,
};

/* Messages at `level` or more important are shown (default: XKV_LOG_WARN). */
void xkv_log_set_level(enum xkv_log_level level);
enum xkv_log_level xkv_log_get_level(void);
/* The usual mapping of a --verbose flag: everything, or errors and warnings. */
static inline void xkv_log_set_verbose(int verbose)
{
	xkv_log_set_level(verbose ? XKV_LOG_DEBUG : XKV_LOG_WARN);
}

/* Where a shown message goes: stderr, as it is (the default; NULL restores it). */
typedef void (*xkv_log_sink)(enum xkv_log_level level, const char *fmt, va_list ap);
void xkv_log_set_sink(xkv_log_sink sink);

void xkv_vlog(enum xkv_log_level level, const char *fmt, va_list ap);
void xkv_log(enum xkv_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Route libbpf's messages (WARN, INFO, DEBUG) through xkv_vlog at the same
 * levels; libxdp's too. */
void xkv_log_libbpf(void);
void xkv_log_libxdp(void);

/* A ring of the latest messages kept aside rather than shown (a sink for the
 * CLI without -v: shown only when something fails, the verifier's tail among
 * them).  xkv_log_keep is the sink; lines lose their trailing newlines. */
void xkv_log_keep(enum xkv_log_level level, const char *fmt, va_list ap);
/* Call fn (unless NULL) with each kept line, oldest first; the number of lines. */
unsigned xkv_log_kept(void (*fn)(void *arg, const char *line), void *arg);
void xkv_log_kept_clear(void);

#ifdef __cplusplus
}
#endif

#endif
