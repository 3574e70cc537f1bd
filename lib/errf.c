// SPDX-License-Identifier: MIT
/* The one way an error message is returned: formatted into the caller's
 * buffer (NULL or 0 bytes: none), the code passed through. */
#include <stdarg.h>
#include <stdio.h>
#include "errf.h"

int xkv_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;
	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}
