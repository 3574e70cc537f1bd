// SPDX-License-Identifier: MIT
/* The snapshot file format: writer (temp file, blocks appended by any thread,
 * commit by rename) and reader (header check, block index, checksum check,
 * decompression).  docs/snapshots.md describes the bytes. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <lz4.h>
#include <zstd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>
#include "snapfile.h"
#include "xdpkv.h"

_Static_assert(sizeof(struct xkv_snap_hdr) == 128, "snapshot header is 128 bytes");
_Static_assert(sizeof(struct xkv_snap_blk) == 40, "block header is 40 bytes");

/* ---- items ---- */

size_t xkv_snap_item_put(__u8 *out, const struct xkv_snap_item *it)
{
	__u8 *p = out;
	__u8 head = it->has_cas ? XKV_SNAP_ITEM_CAS : 0;
	__u16 klen = (__u16)it->klen;
	*p++ = head;
	*p++ = 0;
	memcpy(p, &klen, 2), p += 2;
	memcpy(p, &it->flags, 4), p += 4;
	memcpy(p, &it->vlen, 4), p += 4;
	memcpy(p, &it->expire_unix_ns, 8), p += 8;
	if (it->has_cas)
		memcpy(p, &it->cas, 8), p += 8;
	memcpy(p, it->key, it->klen), p += it->klen;
	memcpy(p, it->val, it->vlen), p += it->vlen;
	return (size_t)(p - out);
}

int xkv_snap_item_next(const __u8 **pp, const __u8 *end, struct xkv_snap_item *it)
{
	const __u8 *p = *pp;
	__u16 klen;
	if (p == end)
		return 0;
	if ((size_t)(end - p) < XKV_SNAP_ITEM_HEAD || (p[0] & ~XKV_SNAP_ITEM_CAS))
		return -1;
	it->has_cas = p[0] & XKV_SNAP_ITEM_CAS;
	memcpy(&klen, p + 2, 2);
	memcpy(&it->flags, p + 4, 4);
	memcpy(&it->vlen, p + 8, 4);
	memcpy(&it->expire_unix_ns, p + 12, 8);
	p += XKV_SNAP_ITEM_HEAD;
	it->cas = 0;
	if (it->has_cas) {
		if (end - p < 8)
			return -1;
		memcpy(&it->cas, p, 8);
		p += 8;
	}
	it->klen = klen;
	if (!klen || (size_t)(end - p) < (size_t)klen + it->vlen)
		return -1;
	it->key = p;
	it->val = p + klen;
	*pp = p + klen + it->vlen;
	return 1;
}

/* ---- codecs ---- */

const char *xkv_codec_name(int codec)
{
	switch (codec) {
	case XKV_CODEC_NONE: return "none";
	case XKV_CODEC_LZ4: return "lz4";
	case XKV_CODEC_ZSTD: return "zstd";
	}
	return "unknown";
}

int xkv_codec_parse(const char *s, int *codec, int *level)
{
	*level = 0;
	if (!strcmp(s, "none"))
		*codec = XKV_CODEC_NONE;
	else if (!strcmp(s, "lz4"))
		*codec = XKV_CODEC_LZ4;
	else if (!strcmp(s, "zstd"))
		*codec = XKV_CODEC_ZSTD, *level = 3; /* zstd's own default */
	else if (!strncmp(s, "zstd:", 5)) {
		char *end;
		long l = strtol(s + 5, &end, 10);
		if (!s[5] || *end || l < 1 || l > 19)
			return -EINVAL;
		*codec = XKV_CODEC_ZSTD;
		*level = (int)l;
	} else
		return -EINVAL;
	return 0;
}

static size_t codec_bound(int codec, size_t len)
{
	switch (codec) {
	case XKV_CODEC_LZ4: return (size_t)LZ4_compressBound((int)len);
	case XKV_CODEC_ZSTD: return ZSTD_compressBound(len);
	}
	return len;
}

/* Compress into out (codec_bound bytes); the length, or 0 on failure. */
static size_t compress(int codec, int level, const void *in, size_t len, void *out, size_t cap)
{
	static __thread ZSTD_CCtx *cctx; /* one per thread, kept for the process */
	switch (codec) {
	case XKV_CODEC_LZ4: {
		int n = LZ4_compress_default(in, out, (int)len, (int)cap);
		return n > 0 ? (size_t)n : 0;
	}
	case XKV_CODEC_ZSTD: {
		if (!cctx && !(cctx = ZSTD_createCCtx()))
			return 0;
		size_t n = ZSTD_compressCCtx(cctx, out, cap, in, len, level);
		return ZSTD_isError(n) ? 0 : n;
	}
	}
	memcpy(out, in, len);
	return len;
}

/* 0, or -1 when the payload does not decompress to exactly raw_len bytes. */
static int decompress(int codec, const void *in, size_t len, void *out, size_t raw_len)
{
	switch (codec) {
	case XKV_CODEC_NONE:
		if (len != raw_len)
			return -1;
		memcpy(out, in, len);
		return 0;
	case XKV_CODEC_LZ4:
		return LZ4_decompress_safe(in, out, (int)len, (int)raw_len) == (int)raw_len ? 0 : -1;
	case XKV_CODEC_ZSTD: {
		size_t n = ZSTD_decompress(out, raw_len, in, len);
		return !ZSTD_isError(n) && n == raw_len ? 0 : -1;
	}
	}
	return -1;
}

/* ---- writing ---- */

struct xkv_snap_writer {
	int fd;
	char path[PATH_MAX], tmp[PATH_MAX];
	int codec, level;
	pthread_mutex_t mu;
	__u64 off;            /* next block goes here */
	int error;            /* first -errno of a block write */
	struct xkv_snap_hdr hdr;
};

static __u64 hdr_csum(const struct xkv_snap_hdr *h)
{
	return XXH3_64bits(h, offsetof(struct xkv_snap_hdr, csum));
}

static __u64 blk_csum(const struct xkv_snap_blk *b)
{
	return XXH3_64bits(b, offsetof(struct xkv_snap_blk, hdr_csum));
}

int xkv_snap_create(struct xkv_snap_writer **wp, const char *path, const struct xkv_snap_info *info,
		    int codec, int level, char *err, size_t errlen)
{
	struct xkv_snap_writer *w = calloc(1, sizeof(*w));
	char dir[PATH_MAX], base[PATH_MAX];
	struct timespec ts;

	if (!w)
		return xkv_errf(err, errlen, -ENOMEM, "out of memory");
	if (snprintf(w->path, sizeof(w->path), "%s", path) >= (int)sizeof(w->path)) {
		free(w);
		return xkv_errf(err, errlen, -ENAMETOOLONG, "%s: path too long", path);
	}
	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(base, sizeof(base), "%s", path);
	/* same directory as the target, so rename() is atomic */
	snprintf(w->tmp, sizeof(w->tmp), "%s/.%s.tmp.%d", dirname(dir), basename(base), (int)getpid());
	/* a new file, never through a link: a temp name someone placed there
	 * (a symlink in a shared directory) is not written through.  One left
	 * by an earlier process of this pid (killed mid-snapshot) goes first
	 * (unlink removes a link itself, not its target). */
	const int oflags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	w->fd = open(w->tmp, oflags, 0600);
	if (w->fd < 0 && errno == EEXIST && !unlink(w->tmp))
		w->fd = open(w->tmp, oflags, 0600);
	if (w->fd < 0) {
		int e = xkv_errf(err, errlen, -errno, "cannot create %s: %s", w->tmp, strerror(errno));
		free(w);
		return e;
	}
	pthread_mutex_init(&w->mu, NULL);
	w->codec = codec;
	w->level = level;
	w->off = sizeof(w->hdr);
	memcpy(w->hdr.magic, XKV_SNAP_MAGIC, sizeof(w->hdr.magic));
	w->hdr.version = XKV_SNAP_VERSION;
	w->hdr.hdr_len = sizeof(w->hdr);
	snprintf(w->hdr.layout, sizeof(w->hdr.layout), "%s", info->layout);
	snprintf(w->hdr.writer, sizeof(w->hdr.writer), "%s", XKV_VERSION);
	clock_gettime(CLOCK_REALTIME, &ts);
	w->hdr.created_ns = (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
	w->hdr.key_cap = info->key_cap;
	w->hdr.val_cap = info->val_cap;
	w->hdr.entries = info->entries;
	w->hdr.codec = (__u32)codec;
	*wp = w;
	return 0;
}

static int pwrite_all(int fd, const void *buf, size_t len, __u64 off)
{
	const __u8 *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n, len -= (size_t)n, off += (__u64)n;
	}
	return 0;
}

static int pread_all(int fd, void *buf, size_t len, __u64 off)
{
	__u8 *p = buf;
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			return -ENODATA;
		p += n, len -= (size_t)n, off += (__u64)n;
	}
	return 0;
}

int xkv_snap_put_block(struct xkv_snap_writer *w, const void *raw, size_t len, __u32 items)
{
	if (len > XKV_SNAP_BLOCK_MAX)
		return -E2BIG;
	struct xkv_snap_blk b = { .codec = (__u32)w->codec };
	/* codec none, or a block that does not shrink: the payload is raw
	 * itself, written from where it is (no copy) */
	__u8 *buf = NULL;
	const void *payload = raw;
	size_t n = len;
	if (w->codec != XKV_CODEC_NONE) {
		size_t cap = codec_bound(w->codec, len);
		if (!(buf = malloc(cap)))
			return -ENOMEM;
		n = compress(w->codec, w->level, raw, len, buf, cap);
		if (n && n < len)
			payload = buf;
		else
			n = len;
	}
	if (payload == raw)
		b.codec = XKV_CODEC_NONE;
	b.magic = XKV_SNAP_BLK_MAGIC;
	b.raw_len = (__u32)len;
	b.comp_len = (__u32)n;
	b.items = items;
	b.payload_csum = XXH3_64bits(payload, n);
	b.hdr_csum = blk_csum(&b);

	pthread_mutex_lock(&w->mu);
	__u64 off = w->off;
	w->off += sizeof(b) + n;
	w->hdr.items += items;
	w->hdr.blocks++;
	w->hdr.raw_bytes += len;
	pthread_mutex_unlock(&w->mu);

	int e = pwrite_all(w->fd, &b, sizeof(b), off);
	if (!e)
		e = pwrite_all(w->fd, payload, n, off + sizeof(b));
	free(buf);
	if (e) {
		pthread_mutex_lock(&w->mu);
		if (!w->error)
			w->error = e;
		pthread_mutex_unlock(&w->mu);
	}
	return e;
}

void xkv_snap_writer_totals(struct xkv_snap_writer *w, struct xkv_snap_totals *t)
{
	pthread_mutex_lock(&w->mu);
	t->items = w->hdr.items;
	t->raw_bytes = w->hdr.raw_bytes;
	t->file_bytes = w->off;
	t->blocks = w->hdr.blocks;
	pthread_mutex_unlock(&w->mu);
}

static void writer_free(struct xkv_snap_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

void xkv_snap_abort(struct xkv_snap_writer *w)
{
	if (!w)
		return;
	unlink(w->tmp);
	writer_free(w);
}

static int fsync_dir(const char *path)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	int fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int e = fsync(fd) ? -errno : 0;
	close(fd);
	return e;
}

int xkv_snap_commit(struct xkv_snap_writer *w, char *err, size_t errlen)
{
	int e = w->error;
	if (e) {
		xkv_errf(err, errlen, e, "writing %s: %s", w->tmp, strerror(-e));
		goto fail;
	}
	w->hdr.csum = hdr_csum(&w->hdr);
	if ((e = pwrite_all(w->fd, &w->hdr, sizeof(w->hdr), 0))) {
		xkv_errf(err, errlen, e, "writing %s: %s", w->tmp, strerror(-e));
		goto fail;
	}
	if (fsync(w->fd)) {
		e = -errno;
		xkv_errf(err, errlen, e, "fsync %s: %s", w->tmp, strerror(errno));
		goto fail;
	}
	/* the file replaced stays as FILE.prev (a hard link: FILE itself is
	 * never missing); the first snapshot has none to keep */
	char prev[PATH_MAX + 8];
	snprintf(prev, sizeof(prev), "%s.prev", w->path);
	if (unlink(prev) && errno != ENOENT) {
		e = -errno;
		xkv_errf(err, errlen, e, "removing %s: %s", prev, strerror(errno));
		goto fail;
	}
	if (link(w->path, prev) && errno != ENOENT) {
		e = -errno;
		xkv_errf(err, errlen, e, "keeping %s as %s: %s (it is not replaced)", w->path, prev,
			 strerror(errno));
		goto fail;
	}
	if (rename(w->tmp, w->path)) {
		e = -errno;
		xkv_errf(err, errlen, e, "rename %s to %s: %s", w->tmp, w->path, strerror(errno));
		goto fail;
	}
	if ((e = fsync_dir(w->path))) {
		/* the file is in place; only its durability across a power cut is unknown */
		xkv_errf(err, errlen, e, "fsync of the directory of %s: %s", w->path, strerror(-e));
		writer_free(w);
		return e;
	}
	writer_free(w);
	return 0;
fail:
	xkv_snap_abort(w);
	return e;
}

/* ---- reading ---- */

const char *xkv_snap_blk_name(const struct xkv_snap_reader *r, size_t i, char *buf, size_t len)
{
	/* of the blocks the header counts; while the file is still being indexed
	 * (or its header is damaged), of those found so far */
	__u64 of = r->hdr_ok && r->hdr.blocks > r->nblk ? r->hdr.blocks : r->nblk;
	snprintf(buf, len, "block %zu of %llu (offset %llu)", i, (unsigned long long)of,
		 (unsigned long long)r->blk[i].off);
	return buf;
}

/* Is there a valid block header at off?  1 yes (in *b), 0 no, <0 -errno. */
static int blk_at(int fd, __u64 off, __u64 size, struct xkv_snap_blk *b)
{
	if (off + sizeof(*b) > size)
		return 0;
	int e = pread_all(fd, b, sizeof(*b), off);
	if (e)
		return e;
	return b->magic == XKV_SNAP_BLK_MAGIC && b->hdr_csum == blk_csum(b);
}

static int add_ref(struct xkv_snap_reader *r, size_t *cap, __u64 off, const struct xkv_snap_blk *b)
{
	if (r->nblk == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		void *p = realloc(r->blk, nc * sizeof(*r->blk));
		if (!p)
			return -ENOMEM;
		r->blk = p;
		*cap = nc;
	}
	struct xkv_snap_blkref *ref = &r->blk[r->nblk++];
	memset(ref, 0, sizeof(*ref));
	ref->off = off;
	if (b)
		ref->h = *b;
	return 0;
}

/* Salvage: the next offset > off holding a valid block header, or size.
 * Reads the file in chunks and tests every position where the magic is. */
static __u64 resync(int fd, __u64 off, __u64 size)
{
	enum { CHUNK = 1 << 20 };
	__u8 *buf = malloc(CHUNK);
	__u32 magic = XKV_SNAP_BLK_MAGIC;
	struct xkv_snap_blk b;
	if (!buf)
		return size;
	for (__u64 pos = off + 1; pos + sizeof(b) <= size;) {
		size_t n = size - pos < CHUNK ? (size_t)(size - pos) : CHUNK;
		if (pread_all(fd, buf, n, pos))
			break;
		for (size_t i = 0; i + 4 <= n; i++)
			if (!memcmp(buf + i, &magic, 4) && blk_at(fd, pos + i, size, &b) == 1) {
				free(buf);
				return pos + i;
			}
		pos += n > 3 ? n - 3 : n;
	}
	free(buf);
	return size;
}

int xkv_snap_open(struct xkv_snap_reader *r, const char *path, bool salvage, char *err, size_t errlen)
{
	struct stat st;
	size_t cap = 0;
	int e;

	memset(r, 0, sizeof(*r));
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0)
		return xkv_errf(err, errlen, -errno, "cannot open %s: %s", path, strerror(errno));
	if (fstat(r->fd, &st)) {
		e = -errno;
		xkv_errf(err, errlen, e, "%s: %s", path, strerror(errno));
		goto fail;
	}
	r->size = (__u64)st.st_size;
	e = r->size < sizeof(r->hdr) ? -ENODATA : pread_all(r->fd, &r->hdr, sizeof(r->hdr), 0);
	if (e == -ENODATA || memcmp(r->hdr.magic, XKV_SNAP_MAGIC, sizeof(r->hdr.magic))) {
		e = -EBADMSG;
		xkv_errf(err, errlen, e, "%s is not an xdpkv snapshot (no '%s' header)", path, XKV_SNAP_MAGIC);
		goto fail;
	}
	if (e) {
		xkv_errf(err, errlen, e, "reading %s: %s", path, strerror(-e));
		goto fail;
	}
	if (r->hdr.version != XKV_SNAP_VERSION) {
		e = -EPROTONOSUPPORT;
		xkv_errf(err, errlen, e, "%s: snapshot format version %u; this xdpkv (%s) reads version %u",
			 path, r->hdr.version, XKV_VERSION, XKV_SNAP_VERSION);
		goto fail;
	}
	r->hdr_ok = r->hdr.csum == hdr_csum(&r->hdr) && r->hdr.hdr_len == sizeof(r->hdr);
	if (!r->hdr_ok && !salvage) {
		e = -EBADMSG;
		xkv_errf(err, errlen, e, "%s: the file header is damaged (checksum mismatch); "
			 "--salvage restores the blocks that are intact", path);
		goto fail;
	}
	__u64 off = sizeof(r->hdr);
	while (off < r->size) {
		struct xkv_snap_blk b;
		int ok = blk_at(r->fd, off, r->size, &b);
		if (ok < 0) {
			e = ok;
			xkv_errf(err, errlen, e, "reading %s: %s", path, strerror(-e));
			goto fail;
		}
		if (ok && off + sizeof(b) + b.comp_len <= r->size && b.raw_len <= XKV_SNAP_BLOCK_MAX) {
			if ((e = add_ref(r, &cap, off, &b)))
				goto nomem;
			off += sizeof(b) + b.comp_len;
			continue;
		}
		/* a damaged header, or a payload cut short by the end of the file */
		if ((e = add_ref(r, &cap, off, ok ? &b : NULL)))
			goto nomem;
		struct xkv_snap_blkref *ref = &r->blk[r->nblk - 1];
		ref->bad = true;
		if (!ok && off + sizeof(b) > r->size)
			xkv_snap_blk_why(ref, "truncated: the file ends inside its header");
		else if (!ok)
			xkv_snap_blk_why(ref, "header damaged (magic or header checksum mismatch)");
		else
			xkv_snap_blk_why(ref, "truncated: %u payload bytes, the file has %llu",
				 b.comp_len, (unsigned long long)(r->size - off - sizeof(b)));
		if (!salvage) {
			char name[96];
			e = -EBADMSG;
			xkv_errf(err, errlen, e, "%s: %s: %s; --salvage restores the blocks that are intact",
				 path, xkv_snap_blk_name(r, r->nblk - 1, name, sizeof(name)), ref->why);
			goto fail;
		}
		__u64 next = resync(r->fd, off, r->size);
		r->skipped_bytes += next - off;
		off = next;
	}
	if (r->hdr_ok && r->hdr.blocks != r->nblk && !salvage) {
		e = -EBADMSG;
		xkv_errf(err, errlen, e, "%s: truncated: the header says %llu blocks, the file holds %zu; "
			 "--salvage restores the blocks that are intact", path,
			 (unsigned long long)r->hdr.blocks, r->nblk);
		goto fail;
	}
	return 0;
nomem:
	xkv_errf(err, errlen, e, "out of memory");
fail:
	xkv_snap_close(r);
	return e;
}

/* The reader holds one ref per block header (40 bytes) it finds: a file of
 * empty blocks may make it hold this much per 40 bytes of file, no more. */
_Static_assert(sizeof(struct xkv_snap_blkref) <= 64, "a block's ref stays small (snapfile.h)");

void xkv_snap_blk_why(struct xkv_snap_blkref *b, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	free(b->why);
	b->why = s ? s : strdup("damaged");
}

void xkv_snap_close(struct xkv_snap_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	for (size_t i = 0; r->blk && i < r->nblk; i++)
		free(r->blk[i].why);
	free(r->blk);
	r->blk = NULL;
	r->fd = -1;
}

int xkv_snap_read_block(struct xkv_snap_reader *r, size_t i, __u8 **raw)
{
	struct xkv_snap_blkref *b = &r->blk[i];
	if (raw)
		*raw = NULL;
	if (b->bad)
		return -EBADMSG;
	__u8 *buf = malloc(b->h.comp_len ? b->h.comp_len : 1);
	if (!buf)
		return -ENOMEM;
	int e = pread_all(r->fd, buf, b->h.comp_len, b->off + sizeof(b->h));
	if (e) {
		free(buf);
		xkv_snap_blk_why(b, "read error: %s", strerror(-e));
		return e == -ENODATA ? -EBADMSG : e;
	}
	if (XXH3_64bits(buf, b->h.comp_len) != b->h.payload_csum) {
		free(buf);
		xkv_snap_blk_why(b, "payload checksum mismatch (XXH3)");
		return -EBADMSG;
	}
	if (!raw) {
		free(buf);
		return 0;
	}
	__u8 *out = malloc(b->h.raw_len ? b->h.raw_len : 1);
	if (!out) {
		free(buf);
		return -ENOMEM;
	}
	if (decompress((int)b->h.codec, buf, b->h.comp_len, out, b->h.raw_len)) {
		free(buf);
		free(out);
		xkv_snap_blk_why(b, "%s payload does not decompress to %u bytes",
			 xkv_codec_name((int)b->h.codec), b->h.raw_len);
		return -EBADMSG;
	}
	free(buf);
	*raw = out;
	return 0;
}
