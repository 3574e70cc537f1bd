// SPDX-License-Identifier: MIT
/* The copier of a live migration and the control messages it exchanges with
 * the slow path (server/migrate.h, docs/snapshots.md "Live migration"). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "migrate.h"
#include "snapshot.h"

#define MIG_BUSY_TRIES 64

struct copy_ctx {
	struct xkv_store *from, *to;
	__u64 span;
	int nthr;
	atomic_ullong items, copied, newer, too_big, bad_key, full, collisions, busy;
	atomic_int error;
};

struct copy_thr {
	struct copy_ctx *c;
	int idx;
	struct xkv_store to;         /* a copy: its counters are this thread's */
	struct xkv_entry *e;         /* to's entry_size bytes */
};

static int copy_visit(void *arg, const __u8 *key, __u32 klen, const struct xkv_entry *src, const __u8 *val)
{
	struct copy_thr *t = arg;
	struct copy_ctx *c = t->c;
	struct xkv_store *to = &t->to;
	struct xkv_entry *e = t->e;

	atomic_fetch_add(&c->items, 1);
	if (klen > to->cfg.key_cap) {
		atomic_fetch_add(&c->too_big, 1);
		return 0;
	}
	if (xkv_key_check(&to->cfg, key, klen) != XKV_OK) {
		atomic_fetch_add(&c->bad_key, 1);
		return 0;
	}
	/* the value inline or in chunks, as the new store's value size says */
	int b = xkv_big_carry(c->from, to, key, klen, src, src->len > c->from->cfg.val_cap ? NULL : val, e);
	if (b == -E2BIG) {
		atomic_fetch_add(&c->too_big, 1);
		return 0;
	}
	if (b == -ESTALE) { /* replaced while copying: the slow path mirrors the new one */
		atomic_fetch_add(&c->newer, 1);
		return 0;
	}
	if (b == -ENOMEM) {
		atomic_fetch_add(&c->full, 1);
		return 0;
	}
	if (b)
		return b;
	int r = -EBUSY;
	for (int i = 0; i < MIG_BUSY_TRIES && r == -EBUSY; i++)
		r = to->L->add(to, key, klen, e);
	switch (r) {
	case 0: atomic_fetch_add(&c->copied, 1); break;
	case -EEXIST: atomic_fetch_add(&c->newer, 1); break;
	case -EADDRINUSE: atomic_fetch_add(&c->collisions, 1); break;
	case -ENOMEM:
	case -E2BIG: atomic_fetch_add(&c->full, 1); break;
	case -EBUSY: atomic_fetch_add(&c->busy, 1); break;
	default: return r;
	}
	return atomic_load(&c->error) ? -ECANCELED : 0;
}

static void *copy_worker(void *arg)
{
	struct copy_thr *t = arg;
	struct copy_ctx *c = t->c;
	__u64 lo, hi, busy = 0;
	int zero = 0;
	xkv_scan_range(c->span, t->idx, c->nthr, &lo, &hi);

	t->e = malloc(t->to.cfg.entry_size);
	long r = t->e ? c->from->L->scan(c->from, lo, hi, copy_visit, t, &busy) : -ENOMEM;
	atomic_fetch_add(&c->busy, busy);
	if (r < 0 && r != -ECANCELED)
		atomic_compare_exchange_strong(&c->error, &zero, (int)r);
	free(t->e);
	return NULL;
}

struct copy_tick {
	struct copy_ctx *c;
	const struct xkv_mig_opts *o;
};

static void copy_tick(void *arg, double secs)
{
	struct copy_tick *k = arg;
	k->o->progress(k->o->arg, atomic_load(&k->c->items), secs);
}

int xkv_migrate_copy(struct xkv_store *from, struct xkv_store *to, const struct xkv_mig_opts *o,
		     struct xkv_mig_result *res, char *err, size_t errlen)
{
	struct copy_ctx c = { .from = from, .to = to };
	double t0 = xkv_secs();
	int e = 0;

	memset(res, 0, sizeof(*res));
	if (!from->L->scan || !from->L->span)
		return xkv_errf(err, errlen, -EOPNOTSUPP, "layout %s cannot be scanned", from->L->name);
	if (!to->L->add)
		return xkv_errf(err, errlen, -EOPNOTSUPP, "layout %s has no add", to->L->name);
	c.nthr = xkv_default_threads(o->threads);
	c.span = from->L->span(from);
	struct copy_thr *t = calloc((size_t)c.nthr, sizeof(*t));
	void **args = calloc((size_t)c.nthr, sizeof(*args));
	if (!t || !args) {
		free(t);
		free(args);
		return xkv_errf(err, errlen, -ENOMEM, "out of memory");
	}
	for (int i = 0; i < c.nthr; i++) {
		t[i] = (struct copy_thr){ .c = &c, .idx = i, .to = *to };
		t[i].to.new_items = t[i].to.overwrites = 0;
		args[i] = &t[i];
	}
	struct copy_tick k = { &c, o };
	e = xkv_run_threads(c.nthr, copy_worker, args, o->progress ? copy_tick : NULL, &k);
	free(t);
	free(args);
	if (e || (e = atomic_load(&c.error)))
		return xkv_errf(err, errlen, e, "copying: %s", strerror(-e));
	res->threads = c.nthr;
	res->items = atomic_load(&c.items);
	res->copied = atomic_load(&c.copied);
	res->newer = atomic_load(&c.newer);
	res->too_big = atomic_load(&c.too_big);
	res->bad_key = atomic_load(&c.bad_key);
	res->full = atomic_load(&c.full);
	res->collisions = atomic_load(&c.collisions);
	res->busy = atomic_load(&c.busy);
	res->seconds = xkv_secs() - t0;
	return 0;
}

/* ---- control messages ---- */

int xkv_mig_addr(const char *ifname, struct sockaddr_un *a, socklen_t *len)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* abstract: sun_path[0] is NUL, the name follows, no file */
	int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "%s%s", XKV_MIG_SOCK_PREFIX, ifname);
	if (n < 0 || (size_t)n >= sizeof(a->sun_path) - 1)
		return -ENAMETOOLONG;
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	return 0;
}

int xkv_mig_send(int sock, const struct xkv_mig_msg *m, int fd)
{
	struct iovec iov = { (void *)m, sizeof(*m) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*m) ? 0 : -(errno ? errno : EIO);
}

int xkv_mig_recv(int sock, struct xkv_mig_msg *m, int *fd)
{
	struct iovec iov = { m, sizeof(*m) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	int got = -1;

	if (fd)
		*fd = -1;
	ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&got, CMSG_DATA(cm), sizeof(int));
	if (fd)
		*fd = got;
	else if (got >= 0)
		close(got);
	if (n == 0)
		return 0;
	if (n != (ssize_t)sizeof(*m)) {
		if (fd && *fd >= 0)
			close(*fd), *fd = -1;
		return -EPROTO;
	}
	m->cmd[sizeof(m->cmd) - 1] = 0;
	m->text[sizeof(m->text) - 1] = 0;
	return 1;
}
