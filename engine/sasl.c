// SPDX-License-Identifier: MIT
/* SASL PLAIN's password file and check (sasl.h).  The file is read once,
 * when serve starts: changing it needs a restart, as memcached's. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "sasl.h"

#define SASL_FILE_MAX (1u << 20)
#define SASL_FIELD_MAX 255       /* RFC 4616: a name or password of up to 255 bytes */

struct sasl_user {
	char *name, *pass;
	size_t nlen, plen;
};

struct xkv_sasl {
	struct sasl_user *u;
	size_t n;
};

void xkv_sasl_free(struct xkv_sasl *db)
{
	if (!db)
		return;
	for (size_t i = 0; i < db->n; i++) {
		explicit_bzero(db->u[i].pass, db->u[i].plen);
		free(db->u[i].name);
		free(db->u[i].pass);
	}
	free(db->u);
	free(db);
}

size_t xkv_sasl_users(const struct xkv_sasl *db)
{
	return db ? db->n : 0;
}

/* One "user:password" line into db.  0, or -1 with the reason in err. */
static int add_line(struct xkv_sasl *db, char *line, size_t len, unsigned lineno, const char *path,
		    char *err, size_t errlen)
{
	char *colon = memchr(line, ':', len);
	if (!colon || colon == line) {
		snprintf(err, errlen, "%s:%u: not user:password", path, lineno);
		return -1;
	}
	/* memcached reads the password up to the next ':' (more fields may follow) */
	char *colon2 = memchr(colon + 1, ':', len - (size_t)(colon + 1 - line));
	size_t nlen = (size_t)(colon - line);
	size_t plen = (colon2 ? (size_t)(colon2 - line) : len) - nlen - 1;
	if (nlen > SASL_FIELD_MAX || plen > SASL_FIELD_MAX || memchr(line, 0, len)) {
		snprintf(err, errlen, "%s:%u: a user or password over %u bytes, or a NUL byte", path,
			 lineno, SASL_FIELD_MAX);
		return -1;
	}
	struct sasl_user *u = realloc(db->u, (db->n + 1) * sizeof(*u));
	if (!u) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	db->u = u;
	u = &db->u[db->n];
	u->name = strndup(line, nlen);
	u->pass = strndup(colon + 1, plen);
	u->nlen = nlen;
	u->plen = plen;
	if (!u->name || !u->pass) {
		free(u->name);
		free(u->pass);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	db->n++;
	return 0;
}

struct xkv_sasl *xkv_sasl_load(const char *path, char *err, size_t errlen)
{
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_uid != 0 || (sb.st_mode & 077) ||
	    sb.st_size > SASL_FILE_MAX) {
		snprintf(err, errlen,
			 "%s: must be a regular file owned by root, of mode 0600 or 0400 "
			 "(no access for group or others), at most %u bytes",
			 path, SASL_FILE_MAX);
		close(fd);
		return NULL;
	}
	char *text = malloc((size_t)sb.st_size + 1);
	struct xkv_sasl *db = calloc(1, sizeof(*db));
	ssize_t got = text ? read(fd, text, (size_t)sb.st_size) : -1;
	close(fd);
	if (!db || got != sb.st_size) {
		snprintf(err, errlen, "%s: %s", path, got < 0 ? strerror(errno) : "short read");
		goto fail;
	}
	unsigned lineno = 0;
	for (char *p = text, *end = text + got; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		lineno++;
		if (len && p[len - 1] == '\r')
			len--;
		if (len && p[0] != '#' && add_line(db, p, len, lineno, path, err, errlen))
			goto fail;
		p += (nl ? (size_t)(nl - p) + 1 : (size_t)(end - p));
	}
	if (!db->n) {
		snprintf(err, errlen, "%s: no user:password line", path);
		goto fail;
	}
	explicit_bzero(text, (size_t)got);
	free(text);
	return db;
fail:
	if (text && got > 0)
		explicit_bzero(text, (size_t)got);
	free(text);
	xkv_sasl_free(db);
	return NULL;
}

/* a == b over n bytes, in time that depends on n only */
static bool same_bytes(const char *a, const __u8 *b, size_t n)
{
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)a[i] ^ b[i];
	return d == 0;
}

bool xkv_sasl_plain(const struct xkv_sasl *db, const __u8 *msg, size_t len)
{
	const __u8 *z1 = memchr(msg, 0, len);
	if (!db || !z1)
		return false;
	const __u8 *user = z1 + 1;
	const __u8 *z2 = memchr(user, 0, len - (size_t)(user - msg));
	if (!z2)
		return false;
	size_t zlen = (size_t)(z1 - msg), ulen = (size_t)(z2 - user);
	const __u8 *pass = z2 + 1;
	size_t plen = len - (size_t)(pass - msg);
	if (zlen && (zlen != ulen || memcmp(msg, user, ulen)))
		return false; /* acting as another user: not offered */
	bool ok = false;
	for (size_t i = 0; i < db->n; i++) {
		const struct sasl_user *u = &db->u[i];
		bool name = u->nlen == ulen && !memcmp(u->name, user, ulen);
		bool pw = u->plen == plen && same_bytes(u->pass, pass, plen);
		ok |= name && pw;
	}
	return ok;
}
