// SPDX-License-Identifier: MIT
/* xdpkv's messages on stderr: errors, hints and information lines. */
#include <stdarg.h>
#include "cli.h"

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void xerr(const char *fmt, ...)
{
	va_list ap;
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
