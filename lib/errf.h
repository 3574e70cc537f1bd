/* SPDX-License-Identifier: MIT */
/* xkv_errf: an error message into the caller's buffer, its code returned. */
#pragma once
#include <stddef.h>

/* Format into err (when err and errlen), return rc: `return xkv_errf(err,
 * errlen, -EINVAL, "bad %s", what);`. */
int xkv_errf(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
