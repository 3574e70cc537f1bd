// SPDX-License-Identifier: MIT
/* xdpkv's messages on stderr: errors, hints and information lines; -v;
 * the libbpf and libxdp messages (lib/log.c): all of them with -v, else
 * the non-debug ones kept in a ring that is shown when something fails. */
#include <stdarg.h>
#include "cli.h"
#include "log.h"

static int verbose;

int verbose_level(void)
{
	return verbose;
}

void msg_set_verbose(int level)
{
	verbose = level;
}

static void lib_message(enum xkv_log_level level, const char *fmt, va_list ap)
{
	if (verbose)
		vfprintf(stderr, fmt, ap);
	else if (level != XKV_LOG_DEBUG)
		xkv_log_keep(level, fmt, ap);
}

void msg_hook_libraries(void)
{
	xkv_log_set_level(XKV_LOG_DEBUG); /* lib_message decides */
	xkv_log_set_sink(lib_message);
	xkv_log_libbpf();
	xkv_log_libxdp();
}

static void dump_line(void *arg, const char *line)
{
	if (line[0])
		fprintf(stderr, "  %s\n", line);
}

void xlog_dump(void)
{
	if (!xkv_log_kept(NULL, NULL))
		return;
	fprintf(stderr, "xdpkv: library messages (latest last; -v shows all):\n");
	xkv_log_kept(dump_line, NULL);
}

void xlog_clear(void)
{
	xkv_log_kept_clear();
}

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static char first_error[512]; /* --json's error object says it */

const char *msg_first_error(void)
{
	return first_error;
}

void xerr(const char *fmt, ...)
{
	va_list ap;
	if (!first_error[0]) {
		va_start(ap, fmt);
		vsnprintf(first_error, sizeof(first_error), fmt, ap);
		va_end(ap);
	}
	va_start(ap, fmt);
	vmsg("xdpkv: ", fmt, ap);
	va_end(ap);
}

void xhint(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("xdpkv: hint: ", fmt, ap);
	va_end(ap);
}

void xinfo(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}
