/* SPDX-License-Identifier: MIT */
/* SASL PLAIN for the binary protocol (sasl.c): the password file and the
 * check of one PLAIN message.  docs/security.md, "SASL". */
#ifndef XDPKV_SASL_H
#define XDPKV_SASL_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct xkv_sasl;

/* Read the password file at path: one "user:password" a line, more
 * ":fields" after the password ignored (memcached's file, as
 * MEMCACHED_SASL_PWDB names it), '#' lines and empty ones skipped.  The file must be a regular file owned by root and
 * not readable or writable by group or others, and hold at least one user.
 * NULL with the reason in err. */
struct xkv_sasl *xkv_sasl_load(const char *path, char *err, size_t errlen);
void xkv_sasl_free(struct xkv_sasl *db);
/* The users it holds. */
size_t xkv_sasl_users(const struct xkv_sasl *db);

/* A PLAIN message ([authzid] NUL authcid NUL password, RFC 4616): true
 * when authcid is a user of db with that password (compared in time that
 * does not depend on where it differs) and authzid is empty or authcid. */
bool xkv_sasl_plain(const struct xkv_sasl *db, const __u8 *msg, size_t len);

#ifdef __cplusplus
}
#endif
#endif
