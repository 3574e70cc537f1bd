// SPDX-License-Identifier: MIT
/* snapshot, restore, dump: keep the data of a store (docs/snapshots.md).
 * import, dump's reverse, lives with load (cli/load.c). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "jsonl.h"
#include "snapfile.h"
#include "snapshot.h"

/* The default codec: measured in docs/results.md ("Snapshots"). */
#define SNAP_DEFAULT_CODEC "lz4"

struct snap_opts {
	struct xo_iface ifc;
	const char *file, *compress;
	unsigned threads;
	bool salvage, progress, json, pause_writes;
};

#define SNAP_IFACE { "IFACE", 0, XO_IFACE, offsetof(struct snap_opts, ifc), NULL, \
		     "interface the store is attached to", .flags = XO_POS | XO_REQ | XO_IF_ANY }
#define SNAP_THREADS { "threads", 'T', XO_U32, offsetof(struct snap_opts, threads), "N", \
		       "threads splitting the work (default: the online CPUs)", 1, 256 }
#define SNAP_PROGRESS { "progress", 0, XO_BOOL, offsetof(struct snap_opts, progress), NULL, \
			"a progress line per second on stderr even when it is not a terminal" }
#define SNAP_JSON { "json", 'j', XO_BOOL, offsetof(struct snap_opts, json), NULL, \
		    "print the summary as JSON" }

static const char *cmd_name;

static void progress_line(void *arg, __u64 items, __u64 bytes, double secs)
{
	fprintf(stderr, "%s: %llu items, %.1f MB, %.1f s (%.0f items/s)\n", cmd_name,
		(unsigned long long)items, bytes / 1e6, secs, secs > 0 ? items / secs : 0);
}

static void print_bad_block(void *arg, const char *name, const char *why)
{
	xerr("%s: %s: %s", cmd_name, name, why);
}

/* Open the pinned store of a command that reads or writes every item. */
static int open_store(struct xkv_store *s, const char *cmd, const char *ifname)
{
	int rc = open_pinned(s, cmd, ifname);
	if (rc)
		return rc;
	if (s->L->bench_only || !s->L->scan) {
		xerr("%s: %s runs the %s store (%s): it keeps no items", cmd, ifname, s->L->name, s->L->loses);
		xkv_store_close(s);
		return EXIT_USAGE;
	}
	return 0;
}

static void snap_opts_fill(struct xkv_snap_opts *so, const struct snap_opts *o)
{
	memset(so, 0, sizeof(*so));
	so->threads = (int)o->threads;
	so->salvage = o->salvage;
	if (o->progress || isatty(STDERR_FILENO))
		so->progress = progress_line;
	so->bad_block = print_bad_block;
}

static double per_s(__u64 n, double secs)
{
	return secs > 0 ? n / secs : 0;
}

/* ---- snapshot ---- */

static const struct xo snapshot_table[] = {
	SNAP_IFACE,
	{ "FILE", 0, XO_STR, offsetof(struct snap_opts, file), NULL,
	  "the snapshot file (replaced atomically)", .flags = XO_POS | XO_REQ },
	SNAP_THREADS,
	{ "compress", 'c', XO_STR, offsetof(struct snap_opts, compress), "CODEC",
	  "none, lz4, zstd or zstd:LEVEL (1..19; zstd = zstd:3); default " SNAP_DEFAULT_CODEC },
	{ "pause-writes", 0, XO_BOOL, offsetof(struct snap_opts, pause_writes), NULL,
	  "a consistent snapshot: writes are refused (SERVER_ERROR) while it runs, reads go on" },
	SNAP_PROGRESS,
	SNAP_JSON,
	XO_END,
};

static int run_snapshot(void *vo, const struct global_opts *g)
{
	struct snap_opts *o = vo;
	struct xkv_snap_opts so;
	struct xkv_snap_result res;
	struct xkv_store s;
	char err[XKV_ERRLEN];
	const char *spec = o->compress ? o->compress : SNAP_DEFAULT_CODEC;
	int rc;

	cmd_name = "snapshot";
	snap_opts_fill(&so, o);
	if (xkv_codec_parse(spec, &so.codec, &so.level)) {
		xerr("snapshot: --compress: '%s' is not one of none, lz4, zstd, zstd:1..19", spec);
		return EXIT_USAGE;
	}
	if ((rc = open_store(&s, "snapshot", o->ifc.name)))
		return rc;
	/* --pause-writes: XDP passes writes to the slow path, which refuses
	 * them, until the snapshot is written.  Signals wait meanwhile, so an
	 * interrupted snapshot never leaves the writes held. */
	sigset_t hold, old;
	double pause_s = -1;
	int pause_lost = 0;
	struct timespec t0, t1;
	if (o->pause_writes) {
		sigemptyset(&hold);
		sigaddset(&hold, SIGINT);
		sigaddset(&hold, SIGTERM);
		sigaddset(&hold, SIGHUP);
		int hf = xkv_host_flags(&s, 0, 0);
		if (hf > 0 && (hf & XKV_HOST_MIGRATING)) {
			xkv_store_close(&s);
			xerr("snapshot: --pause-writes: 'xdpkv migrate' holds the writes of %s now "
			     "(or was killed without a slow path: the next migrate clears it)", o->ifc.name);
			return EXIT_SYS;
		}
		sigprocmask(SIG_BLOCK, &hold, &old);
		int pe = xkv_writes_pause(&s, 1);
		if (pe) {
			sigprocmask(SIG_SETMASK, &old, NULL);
			xkv_store_close(&s);
			xerr("snapshot: cannot pause writes: %s", strerror(-pe));
			return EXIT_SYS;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		/* a program run that read the flag before it was set may still be
		 * writing: XDP runs take microseconds; 20 ms covers a NAPI poll */
		usleep(20000);
	}
	int e = xkv_snapshot(&s, o->file, &so, &res, err, sizeof(err));
	if (o->pause_writes) {
		pause_lost = xkv_writes_paused(&s) != 1;
		xkv_writes_pause(&s, 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		sigprocmask(SIG_SETMASK, &old, NULL);
		pause_s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	}
	xkv_store_close(&s);
	if (e) {
		xerr("snapshot: %s", err);
		return EXIT_SYS;
	}
	if (pause_lost)
		xerr("snapshot: the write pause was lost while it ran (the host map was rewritten): "
		     "this snapshot may be fuzzy");
	if (o->json) {
		printf("{\"file\":");
		json_cstr(stdout, o->file);
		printf(",\"layout\":\"%s\",\"items\":%llu,\"bytes\":%llu,\"compressed_bytes\":%llu,"
		       "\"blocks\":%llu,\"codec\":\"%s\",\"threads\":%d,\"seconds\":%.3f,"
		       "\"items_per_s\":%.0f,\"mb_per_s\":%.1f,\"busy\":%llu",
		       s.L->name, (unsigned long long)res.items, (unsigned long long)res.raw_bytes,
		       (unsigned long long)res.file_bytes, (unsigned long long)res.blocks, spec, res.threads,
		       res.seconds, per_s(res.items, res.seconds), per_s(res.raw_bytes, res.seconds) / 1e6,
		       (unsigned long long)res.busy);
		if (o->pause_writes)
			printf(",\"writes_paused_s\":%.3f,\"consistent\":%s", pause_s,
			       pause_lost ? "false" : "true");
		printf("}\n");
	} else {
		printf("snapshot of %s (%s): %llu items, %.1f MB of items in %.1f MB (%s) in %.3f s "
		       "(%.0f items/s, %.0f MB/s, %d threads) -> %s\n", o->ifc.name, s.L->name,
		       (unsigned long long)res.items, res.raw_bytes / 1e6, res.file_bytes / 1e6, spec,
		       res.seconds, per_s(res.items, res.seconds), per_s(res.raw_bytes, res.seconds) / 1e6,
		       res.threads, o->file);
		if (res.busy)
			xerr("snapshot: %llu items skipped: a writer held their slot through every retry",
			     (unsigned long long)res.busy);
		if (o->pause_writes)
			printf("writes were paused for %.3f s (refused with SERVER_ERROR; reads served)\n",
			       pause_s);
	}
	return EXIT_OK;
}

const struct cmd cmd_snapshot = {
	.name = "snapshot",
	.synopsis = "IFACE FILE [--threads N] [--compress none|lz4|zstd[:LEVEL]] [--pause-writes] "
		    "[--progress] [--json]",
	.summary = "write every live item to a snapshot file, while serving",
	.doc = "Reads the store through its pins while XDP keeps serving: each item is one whole\n"
	       "version of itself, the snapshot as a whole is not a point in time (docs/snapshots.md).\n"
	       "Expired items are left out.  Blocks are compressed and checksummed (XXH3); the file\n"
	       "is written beside FILE, synced and renamed over it, so FILE is always either the old\n"
	       "snapshot or the whole new one.\n\n"
	       "--pause-writes makes it one point in time: while it runs every write (set, delete,\n"
	       "incr, flush_all, ...) is refused with 'SERVER_ERROR writes paused for a snapshot',\n"
	       "on the fast path and the slow path alike, and reads are served; it reports how long.\n"
	       "Signals wait until the writes are resumed.\n\n"
	       "Example: xdpkv snapshot veth0 /var/lib/xdpkv/veth0.snap --compress zstd",
	.opts = snapshot_table,
	.opts_size = sizeof(struct snap_opts),
	.run = run_snapshot,
};

__u64 snapshot_floor(const char *file)
{
	struct xkv_snap_reader r;
	char err[XKV_ERRLEN];

	if (access(file, F_OK) && errno == ENOENT)
		return 0;
	/* salvage: a damaged file still says what it held (its header, or
	 * its blocks' headers) */
	if (xkv_snap_open(&r, file, true, err, sizeof(err))) {
		xerr("serve: %s is not a snapshot this xdpkv can read (%s): it is not replaced "
		     "(move it aside, or --snapshot-allow-shrink)", file, err);
		return UINT64_MAX;
	}
	__u64 n = 0;
	for (size_t i = 0; i < r.nblk; i++)
		n += r.blk[i].h.items;
	if (r.hdr_ok && r.hdr.items > n)
		n = r.hdr.items;
	xkv_snap_close(&r);
	return n;
}

int snapshot_quiet(struct xkv_store *s, const char *file, const char *why, __u64 min_items)
{
	struct xkv_snap_opts so = { .threads = 1, .min_items = min_items };
	struct xkv_snap_result res;
	char err[XKV_ERRLEN];
	xkv_codec_parse(SNAP_DEFAULT_CODEC, &so.codec, &so.level);
	int e = xkv_snapshot(s, file, &so, &res, err, sizeof(err));
	if (e == -ERANGE)
		xerr("%s snapshot: %s (a flush_all, or serve --snapshot-allow-shrink, lets a smaller "
		     "store replace it)", why, err);
	else if (e)
		xerr("%s snapshot: %s", why, err);
	else
		xinfo("xdpkv: %s snapshot: %llu items in %.3f s -> %s", why, (unsigned long long)res.items,
		      res.seconds, file);
	return e;
}

/* ---- restore ---- */

static const struct xo restore_table[] = {
	SNAP_IFACE,
	{ "FILE", 0, XO_STR, offsetof(struct snap_opts, file), NULL, "a snapshot file",
	  .flags = XO_POS | XO_REQ },
	SNAP_THREADS,
	{ "salvage", 0, XO_BOOL, offsetof(struct snap_opts, salvage), NULL,
	  "restore the intact blocks of a damaged file and report the others" },
	SNAP_PROGRESS,
	SNAP_JSON,
	XO_END,
};

static void restore_text(const struct snap_opts *o, const struct xkv_store *s, const struct xkv_snap_result *r)
{
	printf("restored %llu of %llu items from %s (%s) into %s (%s) in %.3f s (%.0f items/s, "
	       "%.0f MB/s, %d threads)\n", (unsigned long long)r->stored, (unsigned long long)r->items,
	       o->file, r->layout, o->ifc.name, s->L->name, r->seconds, per_s(r->stored, r->seconds),
	       per_s(r->raw_bytes, r->seconds) / 1e6, r->threads);
	if (r->expired)
		printf("  %llu expired before they could be restored (not stored)\n", (unsigned long long)r->expired);
	if (r->too_big)
		printf("  %llu did not fit: key or value larger than this store's (keys <= %u B, values <= %u B)\n",
		       (unsigned long long)r->too_big, s->cfg.key_cap, xkv_val_max(s));
	if (r->bad_key)
		printf("  %llu keys refused by this store (control bytes: attach with --binary-keys)\n",
		       (unsigned long long)r->bad_key);
	if (r->full)
		printf("  %llu did not fit: %s is full (%u entries)\n", (unsigned long long)r->full,
		       s->L->name, s->cfg.entries);
	if (r->busy)
		printf("  %llu not stored: their slot stayed busy\n", (unsigned long long)r->busy);
	if (r->collisions)
		printf("  %llu stored over a live item of another key in the same slot (%s "
		       "collisions: %llu items lost)\n", (unsigned long long)r->collisions, s->L->name,
		       (unsigned long long)r->collisions);
	if (r->evicted)
		printf("  about %llu evicted by lru to make room (%u entries; estimated: new items - growth)\n",
		       (unsigned long long)r->evicted, s->cfg.entries);
	if (r->bad_blocks)
		printf("  %llu damaged blocks not restored (%llu items in them where their header says)\n",
		       (unsigned long long)r->bad_blocks, (unsigned long long)r->lost_items);
	if (r->hdr_blocks > r->blocks)
		printf("  %llu blocks missing at the end (the header says %llu blocks, %llu items)\n",
		       (unsigned long long)(r->hdr_blocks - r->blocks), (unsigned long long)r->hdr_blocks,
		       (unsigned long long)r->hdr_items);
}

/* Restore o->file into s and report it; an exit code.  s stays open. */
static int restore_report(struct xkv_store *s, const struct snap_opts *o)
{
	struct xkv_snap_opts so;
	struct xkv_snap_result r;
	char err[XKV_ERRLEN];

	snap_opts_fill(&so, o);
	if (!o->salvage)
		so.bad_block = NULL; /* the error names the first; it is the whole story */
	int e = xkv_restore(s, o->file, &so, &r, err, sizeof(err));
	if (e) {
		xerr("%s: %s", cmd_name, err);
		return EXIT_SYS; /* no such file too: an I/O error (docs/cli.md) */
	}
	if (o->json) {
		printf("{\"file\":");
		json_cstr(stdout, o->file);
		printf(",\"from_layout\":");
		json_cstr(stdout, r.layout);
		printf(",\"layout\":\"%s\",\"items\":%llu,\"stored\":%llu,\"bytes\":%llu,\"compressed_bytes\":%llu,"
		       "\"blocks\":%llu,\"threads\":%d,\"seconds\":%.3f,\"items_per_s\":%.0f,\"mb_per_s\":%.1f,"
		       "\"expired\":%llu,\"too_big\":%llu,\"bad_key\":%llu,\"full\":%llu,\"busy\":%llu,"
		       "\"collisions\":%llu,\"evicted_estimated\":%llu,\"bad_blocks\":%llu,\"lost_items\":%llu,"
		       "\"header_items\":%llu,\"header_blocks\":%llu}\n",
		       s->L->name, (unsigned long long)r.items, (unsigned long long)r.stored,
		       (unsigned long long)r.raw_bytes, (unsigned long long)r.file_bytes,
		       (unsigned long long)r.blocks, r.threads, r.seconds, per_s(r.stored, r.seconds),
		       per_s(r.raw_bytes, r.seconds) / 1e6, (unsigned long long)r.expired,
		       (unsigned long long)r.too_big, (unsigned long long)r.bad_key, (unsigned long long)r.full,
		       (unsigned long long)r.busy, (unsigned long long)r.collisions,
		       (unsigned long long)r.evicted, (unsigned long long)r.bad_blocks,
		       (unsigned long long)r.lost_items, (unsigned long long)r.hdr_items,
		       (unsigned long long)r.hdr_blocks);
	} else {
		restore_text(o, s, &r);
	}
	bool lost = r.stored + r.expired < r.items || r.collisions || r.evicted || r.bad_blocks ||
		    r.hdr_blocks > r.blocks;
	return lost ? EXIT_MISS : EXIT_OK;
}

static int run_restore(void *vo, const struct global_opts *g)
{
	struct snap_opts *o = vo;
	struct xkv_store s;
	int rc;

	cmd_name = "restore";
	if ((rc = open_store(&s, "restore", o->ifc.name)))
		return rc;
	rc = restore_report(&s, o);
	xkv_store_close(&s);
	return rc;
}

int restore_into(struct xkv_store *s, const char *ifname, const char *file, const char *cmd)
{
	struct snap_opts o = { .file = file };

	cmd_name = cmd;
	snprintf(o.ifc.name, sizeof(o.ifc.name), "%s", ifname);
	if (s->L->bench_only || !s->L->scan) {
		xerr("%s: %s runs the %s store (%s): it keeps no items", cmd, ifname, s->L->name, s->L->loses);
		return EXIT_USAGE;
	}
	return restore_report(s, &o);
}

const struct cmd cmd_restore = {
	.name = "restore",
	.synopsis = "IFACE FILE [--threads N] [--salvage] [--progress] [--json]",
	.summary = "store the items of a snapshot file (any layout and size)",
	.doc = "Every block's checksum is verified before the store is touched: a damaged file is\n"
	       "refused with the block named (exit 3), unless --salvage, which restores the intact\n"
	       "blocks and reports the others.  Into another layout or a smaller store it is a\n"
	       "migration: what did not fit (too large, a full hash_map, array_fnv collisions, lru\n"
	       "evictions) is counted and the exit status is 1.  Items expired meanwhile are skipped.\n\n"
	       "Example: xdpkv restore veth0 /var/lib/xdpkv/veth0.snap",
	.opts = restore_table,
	.opts_size = sizeof(struct snap_opts),
	.run = run_restore,
};

/* ---- dump ---- */

static const struct xo dump_table[] = {
	SNAP_IFACE,
	{ "FILE", 0, XO_STR, offsetof(struct snap_opts, file), NULL,
	  "where the JSON lines go (default, or '-': stdout)", .flags = XO_POS },
	XO_END,
};

struct dump_ctx {
	FILE *f;
	struct xkv_store *s;
	struct xkv_big_reader big; /* values above --value-size */
};

static int dump_item(void *arg, const __u8 *key, __u32 klen, const struct xkv_entry *e, const __u8 *val)
{
	struct dump_ctx *d = arg;
	long long exp = 0;
	int r = xkv_big_resolve(d->s, &d->big, key, klen, &e, &val);
	if (r <= 0)
		return r; /* 0: gone meanwhile */
	if (e->expire_ns) { /* unix seconds, rounded up: the item lives until then */
		long long ns = (long long)e->expire_ns + d->s->cfg.realtime_off_ns;
		exp = ns / 1000000000ll + (ns % 1000000000ll != 0);
	}
	fputc('{', d->f);
	jsonl_bytes_field(d->f, "key", key, klen);
	fputc(',', d->f);
	jsonl_bytes_field(d->f, "value", val, e->len);
	fprintf(d->f, ",\"flags\":%u,\"exptime\":%lld,\"cas\":%llu}\n", e->flags, exp,
		(unsigned long long)e->wtime_ns);
	return ferror(d->f) ? -EIO : 0;
}

static int run_dump(void *vo, const struct global_opts *g)
{
	struct snap_opts *o = vo;
	struct xkv_store s;
	bool out = !o->file || !strcmp(o->file, "-");
	struct dump_ctx d = { .f = out ? stdout : fopen(o->file, "w"), .s = &s };
	__u64 busy = 0;
	int rc;

	if (!d.f) {
		xerr("dump: cannot create %s: %s", o->file, strerror(errno));
		return EXIT_SYS;
	}
	if ((rc = open_store(&s, "dump", o->ifc.name))) {
		if (!out)
			fclose(d.f);
		return rc;
	}
	long n = s.L->scan(&s, 0, UINT64_MAX, dump_item, &d, &busy);
	xkv_big_reader_free(&d.big);
	if (fflush(d.f) || (!out && fclose(d.f)))
		n = n < 0 ? n : -errno;
	xkv_store_close(&s);
	if (n < 0)
		return sys_fail("dump", out ? "stdout" : o->file, (int)n);
	xinfo("dumped %ld items of %s", n, o->ifc.name);
	if (busy)
		xerr("dump: %llu items skipped: a writer held their slot through every retry",
		     (unsigned long long)busy);
	return EXIT_OK;
}

const struct cmd cmd_dump = {
	.name = "dump",
	.synopsis = "IFACE [FILE]",
	.summary = "write every live item as JSON lines (for import, or to read)",
	.doc = "One object per line: {\"key\":…,\"value\":…,\"flags\":F,\"exptime\":T}; a key or value that\n"
	       "is not valid UTF-8 is written as \"key_b64\" / \"value_b64\" (base64) instead; exptime\n"
	       "is absolute unix seconds, 0 = never.  The store keeps no CAS values, so no \"cas\".\n"
	       "Reads while serving, like snapshot.\n\n"
	       "Example: xdpkv dump veth0 items.jsonl; xdpkv import veth1 items.jsonl",
	.opts = dump_table,
	.opts_size = sizeof(struct snap_opts),
	.run = run_dump,
};
