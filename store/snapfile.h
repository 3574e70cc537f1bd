/* SPDX-License-Identifier: MIT */
/* The snapshot file format (docs/snapshots.md): a header, then independent
 * blocks, each with its length, codec and XXH3 checksums.  This layer knows
 * bytes and files only (no BPF): the store side is store/snapshot.c.
 * All integers are little-endian. */
#ifndef XDPKV_SNAPFILE_H
#define XDPKV_SNAPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define XKV_SNAP_MAGIC "XKVSNAP" /* 8 bytes with its NUL */
#define XKV_SNAP_VERSION 1u
#define XKV_SNAP_BLK_MAGIC 0x4b4c4258u /* "XBLK" */
/* a block's uncompressed payload: the writer cuts blocks at this size */
#define XKV_SNAP_BLOCK_RAW (1u << 20)
#define XKV_SNAP_BLOCK_MAX (64u << 20) /* the reader refuses larger lengths */

enum xkv_codec { XKV_CODEC_NONE = 0, XKV_CODEC_LZ4 = 1, XKV_CODEC_ZSTD = 2 };

/* File header, 128 bytes at offset 0. */
struct xkv_snap_hdr {
	char magic[8];        /* XKV_SNAP_MAGIC */
	__u32 version;        /* XKV_SNAP_VERSION */
	__u32 hdr_len;        /* sizeof(struct xkv_snap_hdr): blocks start here */
	char layout[16];      /* the layout the items came from */
	char writer[16];      /* xdpkv version that wrote it */
	__u64 items;          /* items in all blocks */
	__u64 blocks;         /* number of blocks */
	__u64 raw_bytes;      /* sum of the blocks' uncompressed payloads */
	__u64 created_ns;     /* CLOCK_REALTIME when the snapshot began */
	__u32 key_cap, val_cap, entries; /* the source store's limits */
	__u32 codec;          /* enum xkv_codec the writer used (blocks say their own) */
	__u8 _reserved[24];
	__u64 csum;           /* XXH3-64 of the 120 bytes above */
};

/* Block header, 40 bytes, followed by comp_len payload bytes. */
struct xkv_snap_blk {
	__u32 magic;          /* XKV_SNAP_BLK_MAGIC */
	__u32 codec;          /* enum xkv_codec of the payload */
	__u32 raw_len;        /* payload bytes once decompressed */
	__u32 comp_len;       /* payload bytes in the file */
	__u32 items;          /* items in the payload */
	__u32 _reserved;
	__u64 payload_csum;   /* XXH3-64 of the comp_len bytes as stored */
	__u64 hdr_csum;       /* XXH3-64 of the 32 bytes above */
};

/* One item in a block's uncompressed payload: a 20-byte head, the cas when
 * head bit 0 says so, then key and value bytes. */
#define XKV_SNAP_ITEM_HEAD 20u
#define XKV_SNAP_ITEM_CAS 1u
struct xkv_snap_item {
	const __u8 *key, *val;
	__u32 klen, vlen, flags;
	__u64 expire_unix_ns; /* CLOCK_REALTIME ns; 0 = never */
	bool has_cas;
	__u64 cas;
};

/* Bytes an item takes in a payload. */
static inline size_t xkv_snap_item_size(__u32 klen, __u32 vlen, bool has_cas)
{
	return XKV_SNAP_ITEM_HEAD + (has_cas ? 8u : 0u) + klen + vlen;
}
/* Encode it at out (xkv_snap_item_size bytes); returns the bytes written. */
size_t xkv_snap_item_put(__u8 *out, const struct xkv_snap_item *it);
/* Decode the item at *p (< end) and advance *p: 1, 0 at end, -1 malformed. */
int xkv_snap_item_next(const __u8 **p, const __u8 *end, struct xkv_snap_item *it);

const char *xkv_codec_name(int codec);
/* "none", "lz4", "zstd" (level 3), "zstd:LEVEL" (1..19).  0 or -EINVAL. */
int xkv_codec_parse(const char *s, int *codec, int *level);

/* ---- writing: a temp file beside the target, renamed over it by commit ---- */
struct xkv_snap_writer;
struct xkv_snap_info {
	char layout[16];
	__u32 key_cap, val_cap, entries;
};
int xkv_snap_create(struct xkv_snap_writer **w, const char *path, const struct xkv_snap_info *info,
		    int codec, int level, char *err, size_t errlen);
/* Compress, checksum and append one block (any thread).  0 or -errno. */
int xkv_snap_put_block(struct xkv_snap_writer *w, const void *raw, size_t len, __u32 items);
/* Totals so far (any thread). */
struct xkv_snap_totals {
	__u64 items, raw_bytes, file_bytes, blocks;
};
void xkv_snap_writer_totals(struct xkv_snap_writer *w, struct xkv_snap_totals *t);
/* Write the header, fsync, keep the target as TARGET.prev (a hard link),
 * rename over the target, fsync the directory; frees w.  The target is
 * either the old file or the whole new one at every instant. */
int xkv_snap_commit(struct xkv_snap_writer *w, char *err, size_t errlen);
/* Remove the temp file and free w (the target is left as it was). */
void xkv_snap_abort(struct xkv_snap_writer *w);

/* ---- reading ---- */
struct xkv_snap_blkref {
	__u64 off;            /* of the block header */
	struct xkv_snap_blk h;
	bool bad;             /* header damaged or payload past the end: unreadable */
	char *why;            /* why it is bad (header or payload, once read); NULL:
			       * not known bad.  Allocated only then: a ref is ~56
			       * bytes for a block header of 40 (with the reason
			       * inline, a file of empty blocks made restore hold
			       * 5x its size, issue 17) */
};
/* Set b->why (printf-style); the old reason goes. */
void xkv_snap_blk_why(struct xkv_snap_blkref *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
struct xkv_snap_reader {
	int fd;
	__u64 size;
	struct xkv_snap_hdr hdr;
	bool hdr_ok;
	struct xkv_snap_blkref *blk; /* in file order */
	size_t nblk;
	__u64 skipped_bytes;  /* salvage: bytes between blocks no header could be found in */
};
/* Open path, check the header and find every block.  Without salvage, any
 * damage is an error naming the block; with it, damaged headers are noted in
 * r->blk (bad) and the scan resynchronises on the next valid block header. */
int xkv_snap_open(struct xkv_snap_reader *r, const char *path, bool salvage, char *err, size_t errlen);
void xkv_snap_close(struct xkv_snap_reader *r);
/* Read block i and check its payload checksum; with raw != NULL also
 * decompress it into a malloc'd *raw (raw_len bytes).  0, or -EBADMSG with
 * the reason in b->why (any thread: pread). */
int xkv_snap_read_block(struct xkv_snap_reader *r, size_t i, __u8 **raw);
/* "block 3 of 12 (offset 4194432)" */
const char *xkv_snap_blk_name(const struct xkv_snap_reader *r, size_t i, char *buf, size_t len);

#endif
