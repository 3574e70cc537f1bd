// SPDX-License-Identifier: MIT
/* fuzz_snapshot: the snapshot reader (store/snapfile.c: xkv_snap_open,
 * xkv_snap_read_block, xkv_snap_item_next) and restore (store/snapshot.c:
 * xkv_restore into a small store, fuzz_env.c) on arbitrary files.
 *
 * Input: one mode byte, then the file's bytes (written to a memfd, opened
 * by its /proc/self/fd path).  Mode bits:
 *   0 clear: the checksums are made right first (the file header's, then
 *     each block's header and payload checksum, walking blocks from byte
 *     128 while their magic holds), so the fuzzer gets past XXH3 into the
 *     codecs and the item decoder; set: the bytes as they are;
 *   1 salvage (resynchronise over damage) instead of refusing it;
 *   2 restore into the store as well.
 * Checked: nothing crashes or leaks; every decoded item lies inside its
 * block; a restore's counts add up.
 *
 * Seeds: XKV_FUZZ_SNAP_SEEDS=DIR fuzz_snapshot -runs=0 writes a few real
 * snapshots (codecs none, lz4, zstd; cas, expiry, big values) into DIR. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <xxhash.h>
#include "snapshot.h"
#include "fuzz_env.h"

static int memfd = -1;

/* xkv_run_threads (store/snapshot.c) polls its workers every 50 ms: a
 * restore of a small file would take 100 ms (two passes).  This target is
 * linked with --wrap=nanosleep so that the poll is 20 us here; nothing else
 * changes. */
int __real_nanosleep(const struct timespec *req, struct timespec *rem);
int __wrap_nanosleep(const struct timespec *req, struct timespec *rem);
int __wrap_nanosleep(const struct timespec *req, struct timespec *rem)
{
	struct timespec short_ = { 0, 20000 };
	if (req->tv_sec || req->tv_nsec > short_.tv_nsec)
		req = &short_;
	return __real_nanosleep(req, rem);
}
static char mem_path[64];

static void put_u64(__u8 *p, __u64 v)
{
	memcpy(p, &v, 8);
}

/* Make the checksums right (mode bit 0 clear). */
static void fix_csums(__u8 *f, size_t n)
{
	if (n < sizeof(struct xkv_snap_hdr))
		return;
	put_u64(f + offsetof(struct xkv_snap_hdr, csum), XXH3_64bits(f, offsetof(struct xkv_snap_hdr, csum)));
	size_t off = sizeof(struct xkv_snap_hdr);
	while (off + sizeof(struct xkv_snap_blk) <= n) {
		struct xkv_snap_blk b;
		memcpy(&b, f + off, sizeof(b));
		if (b.magic != XKV_SNAP_BLK_MAGIC)
			break;
		size_t end = off + sizeof(b) + b.comp_len;
		if (end <= n)
			b.payload_csum = XXH3_64bits(f + off + sizeof(b), b.comp_len);
		b.hdr_csum = XXH3_64bits(&b, offsetof(struct xkv_snap_blk, hdr_csum));
		memcpy(f + off, &b, sizeof(b));
		if (end > n)
			break;
		off = end;
	}
}

/* The reader on its own: every block, every item in it. */
static void read_all(bool salvage)
{
	struct xkv_snap_reader r;
	char err[512];

	if (xkv_snap_open(&r, mem_path, salvage, err, sizeof(err)))
		return;
	FUZZ_CHECK(r.nblk == 0 || r.blk, "blocks without a list");
	for (size_t i = 0; i < r.nblk; i++) {
		char name[96];
		__u8 *raw = NULL;
		xkv_snap_blk_name(&r, i, name, sizeof(name));
		if (xkv_snap_read_block(&r, i, &raw))
			continue;
		const __u8 *p = raw, *end = raw + r.blk[i].h.raw_len;
		struct xkv_snap_item it;
		int e;
		while ((e = xkv_snap_item_next(&p, end, &it)) == 1) {
			FUZZ_CHECK(it.key >= raw && it.key + it.klen <= end && it.val >= it.key + it.klen &&
					   it.val + it.vlen <= end && p <= end,
				   "item outside its block");
		}
		free(raw);
	}
	xkv_snap_close(&r);
}

static void restore(struct fuzz_env *e, bool salvage)
{
	struct xkv_snap_opts o = { .threads = 1, .salvage = salvage };
	struct xkv_snap_result res;
	char err[512];

	if (xkv_restore(&e->s, mem_path, &o, &res, err, sizeof(err)) == 0) {
		FUZZ_CHECK(res.stored + res.expired + res.too_big + res.bad_key + res.full + res.busy <=
				   res.items,
			   "restore counted %llu stored of %llu items", (unsigned long long)res.stored,
			   (unsigned long long)res.items);
		FUZZ_CHECK(strnlen(res.layout, sizeof(res.layout)) < sizeof(res.layout), "layout name");
	}
	fuzz_env_clear(e);
}

/* ---- seeds --------------------------------------------------------------- */

static void seed_file(const char *dir, const char *name, int codec, int nblocks, bool big)
{
	char path[512], tmp[512], err[512];
	struct xkv_snap_info info = { .layout = "hash_map", .key_cap = 250, .val_cap = 1024, .entries = 256 };
	struct xkv_snap_writer *w;
	__u8 raw[8192];

	snprintf(tmp, sizeof(tmp), "%s/.%s.snap", dir, name);
	if (xkv_snap_create(&w, tmp, &info, codec, 3, err, sizeof(err))) {
		fprintf(stderr, "seed %s: %s\n", name, err);
		exit(1);
	}
	for (int b = 0; b < nblocks; b++) {
		size_t len = 0;
		__u32 n = 0;
		for (int i = 0; i < 4; i++, n++) {
			char key[32], val[2048];
			int kl = snprintf(key, sizeof(key), "key:%d:%d", b, i);
			size_t vl = big && i == 3 ? 1500 : (size_t)(5 + 7 * i);
			memset(val, 'a' + i, vl);
			struct xkv_snap_item it = { .key = (const __u8 *)key, .val = (const __u8 *)val,
						    .klen = (__u32)kl, .vlen = (__u32)vl, .flags = (__u32)i,
						    .expire_unix_ns = i == 2 ? 4000000000000000000ull : 0,
						    .has_cas = i & 1, .cas = 1000 + (__u64)i };
			len += xkv_snap_item_put(raw + len, &it);
		}
		if (xkv_snap_put_block(w, raw, len, n)) {
			fprintf(stderr, "seed %s: block\n", name);
			exit(1);
		}
	}
	if (xkv_snap_commit(w, err, sizeof(err))) {
		fprintf(stderr, "seed %s: %s\n", name, err);
		exit(1);
	}
	/* the seed: mode byte (restore, checksums fixed) + the file */
	FILE *in = fopen(tmp, "rb");
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *out = fopen(path, "wb");
	if (!in || !out)
		exit(1);
	fputc(4, out);
	int c;
	while ((c = fgetc(in)) != EOF)
		fputc(c, out);
	fclose(in);
	fclose(out);
	unlink(tmp);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("XKV_FUZZ_SNAP_SEEDS");
	if (dir) {
		seed_file(dir, "none-2blocks", XKV_CODEC_NONE, 2, false);
		seed_file(dir, "lz4-big", XKV_CODEC_LZ4, 1, true);
		seed_file(dir, "zstd-3blocks", XKV_CODEC_ZSTD, 3, false);
		seed_file(dir, "empty", XKV_CODEC_NONE, 0, false);
	}
	memfd = memfd_create("fuzz_snapshot", MFD_CLOEXEC);
	if (memfd < 0) {
		perror("memfd_create");
		exit(2);
	}
	snprintf(mem_path, sizeof(mem_path), "/proc/self/fd/%d", memfd);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static __u8 *file;
	static size_t file_cap;

	if (size < 1)
		return 0;
	__u8 mode = data[0];
	size_t n = size - 1;
	if (!file || n > file_cap) {
		free(file);
		file_cap = n ? n : 1;
		if (!(file = malloc(file_cap)))
			abort();
	}
	memcpy(file, data + 1, n);
	if (!(mode & 1))
		fix_csums(file, n);
	if (ftruncate(memfd, 0) || (n && pwrite(memfd, file, n, 0) != (ssize_t)n))
		abort();
	read_all(mode & 2);
	if (mode & 4)
		restore(fuzz_env_get(), mode & 2);
	return 0;
}
