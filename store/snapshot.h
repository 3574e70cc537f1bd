/* SPDX-License-Identifier: MIT */
/* Snapshots of a store: write its live items to a snapshot file and restore
 * them into any store (another layout, another size), split over threads.
 * The file format is store/snapfile.h; docs/snapshots.md explains both. */
#ifndef XDPKV_SNAPSHOT_H
#define XDPKV_SNAPSHOT_H

#include "xdpkv.h"
#include "snapfile.h"

struct xkv_snap_opts {
	int threads;          /* 0: the online CPUs */
	int codec, level;     /* snapshot: enum xkv_codec and zstd's level */
	bool salvage;         /* restore: restore the intact blocks of a damaged file */
	__u32 block_bytes;    /* snapshot: uncompressed bytes per block; 0: XKV_SNAP_BLOCK_RAW */
	/* snapshot: fewer items than this and the file is not replaced (-ERANGE):
	 * a store that lost its items does not overwrite the snapshot that
	 * holds them (serve --snapshot-file); 0: any */
	__u64 min_items;
	/* About once a second, from the calling thread, while the workers run:
	 * items and (file) bytes done so far. */
	void (*progress)(void *arg, __u64 items, __u64 bytes, double secs);
	/* restore: each block that is not restored, with why (from the calling
	 * thread or a worker, one at a time) */
	void (*bad_block)(void *arg, const char *name, const char *why);
	void *arg;
};

struct xkv_snap_result {
	double seconds;
	int threads;
	__u64 items;          /* snapshot: written; restore: read from intact blocks */
	__u64 raw_bytes;      /* uncompressed payload bytes */
	__u64 file_bytes;     /* the file's size */
	__u64 blocks;         /* blocks written / in the file */
	__u64 busy;           /* items skipped or not stored: a writer held their slot (array_fnv) */
	/* restore only */
	char layout[16];      /* the layout the file came from ("?" if its header is damaged) */
	__u64 stored;         /* items the target store accepted */
	__u64 expired;        /* items whose expiry passed before they were restored */
	__u64 too_big;        /* key or value larger than the target's --key-size/--value-size */
	__u64 bad_key;        /* key refused by the target (control bytes without --binary-keys) */
	__u64 full;           /* refused by a full hash_map / percpu */
	__u64 collisions;     /* array_fnv: stored over a live item of another key (that one is lost) */
	__u64 evicted;        /* lru: items it evicted to make room (estimated: new - live growth) */
	__u64 bad_blocks;     /* salvage: blocks not restored */
	__u64 lost_items;     /* salvage: items in them, where the block header still says */
	__u64 hdr_items, hdr_blocks; /* what the file header says (0 if it is damaged) */
};

/* 0 or -errno with a message in err.  The file is replaced atomically. */
int xkv_snapshot(struct xkv_store *s, const char *path, const struct xkv_snap_opts *o,
		 struct xkv_snap_result *res, char *err, size_t errlen);
/* 0 or -errno with a message in err (-EBADMSG: a damaged file, the message
 * names the block).  Items that do not fit the target are counted in res,
 * not errors. */
int xkv_restore(struct xkv_store *s, const char *path, const struct xkv_snap_opts *o,
		struct xkv_snap_result *res, char *err, size_t errlen);

/* Run fn(ctx, i) for i in 0..n-1 on n threads while the calling thread calls
 * tick(ctx, secs) about once a second (tick may be NULL).  0 or -errno. */
int xkv_run_threads(int n, void *(*fn)(void *), void **args, void (*tick)(void *ctx, double secs),
		    void *ctx);
double xkv_secs(void); /* CLOCK_MONOTONIC seconds */
/* n > 0: n; else the online CPUs. */
int xkv_default_threads(int n);
/* Thread idx of n scans positions [*lo, *hi) of span (the last to the end). */
void xkv_scan_range(__u64 span, int idx, int n, __u64 *lo, __u64 *hi);

#endif
