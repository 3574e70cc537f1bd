// SPDX-License-Identifier: MIT
/* migrate: move a live store into another layout or size while it serves
 * (docs/snapshots.md, "Live migration"). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "migrate.h"

struct mig_opts {
	struct xo_iface ifc;
	const char *layout;
	unsigned entries, key_size, value_size, threads;
	bool no_prealloc, no_common_lru, pause_writes, progress, json;
};

static const struct xo migrate_table[] = {
	{ "IFACE", 0, XO_IFACE, offsetof(struct mig_opts, ifc), NULL,
	  "interface the store is attached to", .flags = XO_POS | XO_REQ },
	{ "layout", 'l', XO_STR, offsetof(struct mig_opts, layout), "L",
	  "the new layout (default: the one it has; 'xdpkv layouts' lists them)" },
	{ "entries", 'n', XO_U32, offsetof(struct mig_opts, entries), "N",
	  "the new capacity in items (default: as now)", 1, 1 << 26 },
	{ "key-size", 'k', XO_U32, offsetof(struct mig_opts, key_size), "K",
	  "the new largest key in bytes (default: as now)", 1, XKV_KEY_MAX },
	{ "value-size", 's', XO_U32, offsetof(struct mig_opts, value_size), "V",
	  "the new largest value in bytes (default: as now)", 1, XKV_VAL_MAX },
	{ "no-prealloc", 0, XO_BOOL, offsetof(struct mig_opts, no_prealloc), NULL,
	  "hash_map: allocate items on insert (BPF_F_NO_PREALLOC)" },
	{ "no-common-lru", 0, XO_BOOL, offsetof(struct mig_opts, no_common_lru), NULL,
	  "lru: an LRU list per CPU (BPF_F_NO_COMMON_LRU)" },
	{ "threads", 'T', XO_U32, offsetof(struct mig_opts, threads), "N",
	  "threads copying (default: the online CPUs)", 1, 256 },
	{ "pause-writes", 0, XO_BOOL, offsetof(struct mig_opts, pause_writes), NULL,
	  "without a running 'xdpkv serve IFACE': hold every write for the copy (they get no "
	  "answer) instead of refusing to start" },
	{ "progress", 0, XO_BOOL, offsetof(struct mig_opts, progress), NULL,
	  "a progress line per second on stderr even when it is not a terminal" },
	{ "json", 'j', XO_BOOL, offsetof(struct mig_opts, json), NULL, "print the summary as JSON" },
	XO_END,
};

static void mig_progress(void *arg, __u64 items, double secs)
{
	fprintf(stderr, "migrate: %llu items read, %.1f s (%.0f items/s)\n", (unsigned long long)items,
		secs, secs > 0 ? items / secs : 0);
}

/* The new configuration: the old one with the options given. */
static int new_config(const struct mig_opts *o, const struct xkv_config *old, struct xkv_config *cfg)
{
	char err[XKV_ERRLEN];

	*cfg = *old; /* port, mode, access options, clock offset: as they are */
	cfg->arena_base = 0; /* a new arena gets its own address (the old one stays mapped meanwhile) */
	if (o->layout) {
		const struct xkv_layout *L = xkv_layout_find(o->layout);
		if (!L) {
			xerr("migrate: unknown --layout '%s'", o->layout);
			for (int i = 0; xkv_layouts[i]; i++)
				fprintf(stderr, "  %-10s %s\n", xkv_layouts[i]->name, xkv_layouts[i]->summary);
			return EXIT_USAGE;
		}
		snprintf(cfg->layout, sizeof(cfg->layout), "%s", L->name);
	}
	config_sizes(cfg, o->entries, o->key_size, o->value_size);
	cfg->flags &= ~(XKV_CFG_NO_PREALLOC | XKV_CFG_NO_COMMON_LRU | XKV_CFG_KEY_IN_VALUE);
	cfg->flags |= (o->no_prealloc ? XKV_CFG_NO_PREALLOC : 0) | (o->no_common_lru ? XKV_CFG_NO_COMMON_LRU : 0);
	if (xkv_config_finish(cfg, err, sizeof(err))) {
		xerr("migrate: %s", err);
		return EXIT_USAGE;
	}
	if (!strncmp(cfg->layout, old->layout, sizeof(cfg->layout)) && cfg->entries == old->entries &&
	    cfg->key_cap == old->key_cap && cfg->val_cap == old->val_cap &&
	    (cfg->flags & ~XKV_CFG_KEY_IN_VALUE) == (old->flags & ~XKV_CFG_KEY_IN_VALUE)) {
		xerr("migrate: %s already has a %s store of %u entries, keys <= %u B, values <= %u B: "
		     "nothing to migrate", o->ifc.name, old->layout, old->entries, old->key_cap, old->val_cap);
		xhint("'xdpkv attach %s' with the same options re-attaches (a new program, the same store)",
		      o->ifc.name);
		return EXIT_USAGE;
	}
	return 0;
}

/* One step with the slow path: send, wait for its answer.  0 or -errno
 * (printed). */
static int step(int sock, const char *cmd, const struct xkv_config *cfg, int fd, struct xkv_mig_msg *r)
{
	struct xkv_mig_msg m = {};
	snprintf(m.cmd, sizeof(m.cmd), "%s", cmd);
	if (cfg)
		m.cfg = *cfg;
	int e = xkv_mig_send(sock, &m, fd);
	if (!e) {
		e = xkv_mig_recv(sock, r, NULL);
		e = e == 1 ? 0 : e ? e : -ECONNRESET;
	}
	if (e) {
		xerr("migrate: the slow path did not answer '%s': %s", cmd, strerror(-e));
		return e;
	}
	if (strcmp(r->cmd, "ok")) {
		xerr("migrate: the slow path refused '%s': %s", cmd, r->text);
		return -EPROTO;
	}
	return 0;
}

/* Connect to `xdpkv serve IFACE`'s control socket: the fd, or -errno. */
static int serve_connect(const char *ifname)
{
	struct sockaddr_un a;
	socklen_t len;
	int e = xkv_mig_addr(ifname, &a, &len);
	if (e)
		return e;
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&a, len)) {
		e = -errno;
		close(s);
		return e;
	}
	/* The name is abstract: any local process could have taken it first.
	 * serve listens while it is still root (serve.c, ctl_listen); a
	 * listener of any other user gets no map from us. */
	struct ucred cr = { .pid = 0, .uid = (uid_t)-1 };
	socklen_t cl = sizeof(cr);
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &cl) || cr.uid != 0) {
		fprintf(stderr, "xdpkv migrate: the control socket of %s is held by uid %u (pid %d), "
			"not by a root xdpkv serve: not sending it the store\n", ifname,
			(unsigned)cr.uid, (int)cr.pid);
		close(s);
		return -EPERM;
	}
	return s;
}

struct mig_run {
	const struct mig_opts *o;
	struct xkv_store old, nw;
	struct xkv_config cfg;
	struct bpf_object *obj;
	int sock, sfd;
	bool mirrored;              /* a slow path mirrored the writes */
	struct xkv_mig_result res;
	struct xkv_mig_msg mirror;
	double hold_s, switch_s;
	const char *how;
	int old_verdict;            /* the TCP verdict detached for the migration, or -1 */
};

static void report(const struct mig_run *m)
{
	const struct xkv_mig_result *r = &m->res;
	const struct xkv_slow_mig_stats *ms = &m->mirror.st;
	const struct xkv_config *c = &m->cfg, *oc = &m->old.cfg;
	if (m->o->json) {
		printf("{\"iface\":\"%s\",\"from\":{\"layout\":\"%.16s\",\"entries\":%u,\"key_size\":%u,"
		       "\"value_size\":%u},\"to\":{\"layout\":\"%.16s\",\"entries\":%u,\"key_size\":%u,"
		       "\"value_size\":%u},\"writes\":\"%s\",\"items\":%llu,\"copied\":%llu,\"newer\":%llu,"
		       "\"too_big\":%llu,\"bad_key\":%llu,\"full\":%llu,\"collisions\":%llu,\"busy\":%llu,"
		       "\"evicted_estimated\":%llu,\"mirrored\":%llu,\"mirror_deleted\":%llu,"
		       "\"mirror_tombstones\":%llu,\"mirror_too_big\":%llu,\"mirror_full\":%llu,"
		       "\"mirror_collisions\":%llu,\"mirror_failed\":%llu,\"threads\":%d,\"copy_seconds\":%.3f,"
		       "\"seconds\":%.3f,\"writes_held_s\":%.3f}\n",
		       m->o->ifc.name, oc->layout, oc->entries, oc->key_cap, oc->val_cap, c->layout, c->entries,
		       c->key_cap, c->val_cap, m->mirrored ? "mirrored" : "paused",
		       (unsigned long long)r->items, (unsigned long long)r->copied, (unsigned long long)r->newer,
		       (unsigned long long)r->too_big, (unsigned long long)r->bad_key,
		       (unsigned long long)r->full, (unsigned long long)r->collisions,
		       (unsigned long long)r->busy, (unsigned long long)r->evicted,
		       (unsigned long long)ms->mirrored, (unsigned long long)ms->deleted,
		       (unsigned long long)ms->tombstones, (unsigned long long)ms->too_big,
		       (unsigned long long)ms->full, (unsigned long long)ms->collisions,
		       (unsigned long long)ms->failed, r->threads, r->seconds, m->switch_s, m->hold_s);
		return;
	}
	printf("migrated %s from %.16s (%u entries, keys <= %u B, values <= %u B) to %.16s (%u entries, "
	       "keys <= %u B, values <= %u B) in %.3f s; program %s\n", m->o->ifc.name, oc->layout,
	       oc->entries, oc->key_cap, oc->val_cap, c->layout, c->entries, c->key_cap, c->val_cap,
	       m->switch_s, m->how ? m->how : "swapped");
	printf("  copied %llu of %llu items in %.3f s (%d threads); %llu were written during the copy "
	       "(the newer version kept)\n", (unsigned long long)r->copied, (unsigned long long)r->items,
	       r->seconds, r->threads, (unsigned long long)r->newer);
	if (m->mirrored)
		printf("  writes meanwhile: served by the slow path into both stores (%llu mirrored, %llu "
		       "deletes, %llu deleted keys checked again after the copy)\n",
		       (unsigned long long)ms->mirrored, (unsigned long long)ms->deleted,
		       (unsigned long long)ms->tombstones);
	else
		printf("  writes were held for %.3f s (--pause-writes, no slow path: they got no answer)\n",
		       m->hold_s);
	if (r->too_big + ms->too_big)
		printf("  %llu did not fit: key or value larger than the new store's (keys <= %u B, values <= %u B)\n",
		       (unsigned long long)(r->too_big + ms->too_big), c->key_cap, c->val_cap);
	if (r->bad_key)
		printf("  %llu keys refused by the new store (control bytes: it lacks --binary-keys)\n",
		       (unsigned long long)r->bad_key);
	if (r->full + ms->full)
		printf("  %llu did not fit: %.16s is full (%u entries)\n", (unsigned long long)(r->full + ms->full),
		       c->layout, c->entries);
	if (r->collisions + ms->collisions)
		printf("  %llu lost to %.16s collisions (another key held the slot%s)\n",
		       (unsigned long long)(r->collisions + ms->collisions), c->layout,
		       strcmp(c->layout, "arena") ? "" : ", every slot of the window");
	if (r->evicted)
		printf("  about %llu evicted by lru to make room (%u entries; estimated: new items - growth)\n",
		       (unsigned long long)r->evicted, c->entries);
	if (r->busy)
		printf("  %llu not copied: their slot stayed busy\n", (unsigned long long)r->busy);
	if (ms->failed)
		printf("  %llu writes could not be mirrored (errors): those keys may differ\n",
		       (unsigned long long)ms->failed);
}

static bool lost_any(const struct mig_run *m)
{
	const struct xkv_mig_result *r = &m->res;
	const struct xkv_slow_mig_stats *ms = &m->mirror.st;
	return r->too_big || r->bad_key || r->full || r->collisions || r->busy || r->evicted ||
	       ms->too_big || ms->full || ms->collisions || ms->failed;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Everything after the checks: copy, swap, re-pin.  An exit code. */
static int migrate(struct mig_run *m, const struct prior *pr)
{
	const struct mig_opts *o = m->o;
	char err[XKV_ERRLEN];
	struct xkv_mig_opts mo = { .threads = (int)o->threads };
	double t0 = now_s(), held = 0;
	int rc = EXIT_SYS, e;

	if (o->progress || isatty(STDERR_FILENO))
		mo.progress = mig_progress;
	/* TCP connections in the kernel fast path keep the verdict program
	 * (and so the store) they were linked with until they close: refuse
	 * while there are any, and link none to the old program meanwhile */
	long conns = 0;
	if (xkv_tcp_fast_pause(&m->old, &m->old_verdict, &conns, err, sizeof(err))) {
		xerr("migrate: %s", err);
		return EXIT_SYS;
	}
	if (conns) {
		xerr("migrate: %ld TCP connection%s in the kernel fast path would keep reading and writing the old "
		     "store; nothing changed", conns, conns == 1 ? "" : "s");
		xhint("restart 'xdpkv serve %s' (its clients reconnect) or serve with --no-tcp-fast-path, then "
		      "migrate", o->ifc.name);
		return EXIT_USAGE;
	}
	m->obj = xkv_object_open(&m->cfg, err, sizeof(err));
	if (!m->obj) {
		xerr("migrate: %s", err);
		return EXIT_SYS;
	}
	if ((e = xkv_object_reuse_pins_but_store(m->obj, o->ifc.name, err, sizeof(err))) < 0 ||
	    (m->sfd = xkv_object_make_store(m->obj, err, sizeof(err))) < 0) {
		xerr("migrate: %s", err);
		return EXIT_SYS;
	}
	int own = fcntl(m->sfd, F_DUPFD_CLOEXEC, 0);
	if (own < 0 || xkv_store_adopt(&m->nw, &m->old, own, &m->cfg, err, sizeof(err))) {
		xerr("migrate: %s", own < 0 ? strerror(errno) : err);
		if (own >= 0)
			close(own);
		return EXIT_SYS;
	}
	if (m->sock >= 0 && step(m->sock, "begin", &m->cfg, m->sfd, &m->mirror))
		return EXIT_SYS;
	m->mirrored = m->sock >= 0;
	/* XDP passes every write up from here; a program run that read the
	 * flags just before may still be writing (as for snapshot --pause-writes) */
	if ((e = xkv_host_flags(&m->old, XKV_HOST_HOLD, 0)) < 0) {
		xerr("migrate: cannot set the host flags: %s", strerror(-e));
		return EXIT_SYS;
	}
	held = now_s();
	usleep(20000);
	if ((e = xkv_migrate_copy(&m->old, &m->nw, &mo, &m->res, err, sizeof(err)))) {
		xerr("migrate: %s; the old store stays", err);
		goto clear;
	}
	if (m->sock >= 0 && step(m->sock, "fixup", NULL, -1, &m->mirror))
		goto clear;
	/* no writes reach the new store without a slow path: count it now */
	m->res.evicted = xkv_migrate_evicted(&m->nw, m->res.copied, &m->mirror.st,
					     m->mirrored ? (long)m->mirror.st.live : m->nw.L->count(&m->nw));
	/* the new program on the new store, then its maps where the old were */
	if ((e = put_prog(m->obj, &o->ifc, m->old.cfg.mode, pr, pr->xmode, &m->how))) {
		print_load_failure(m->obj, e, &o->ifc, m->old.cfg.mode);
		xerr("migrate: the old program and store stay");
		goto clear;
	}
	/* TCP in XDP: the new programs (on the new store) in the tail-call
	 * array and on egress; the flows' offsets carry over (tcpx_flows is
	 * one of the maps reused) */
	if (!(m->cfg.flags & XKV_CFG_NO_XDP_TCP) &&
	    tcpx_egress_attach(m->obj, o->ifc.ifindex, err, sizeof(err)))
		xerr("migrate: %s (TCP is served by the kernel and 'xdpkv serve')", err);
	/* new TCP connections: the new program's verdict, on the new store */
	if (m->old_verdict >= 0 && !(m->cfg.flags & XKV_CFG_NO_TCP_FAST)) {
		if (xkv_tcp_fast_attach(m->obj, err, sizeof(err)))
			xerr("migrate: %s (TCP is served by 'xdpkv serve' alone)", err);
		close(m->old_verdict);
		m->old_verdict = -1;
	}
	if (xkv_pins_create(m->obj, o->ifc.name, err, sizeof(err))) {
		xerr("migrate: the new program serves, but re-pinning failed: %s", err);
		xhint("'xdpkv attach %s --replace ...' starts over (the items in the running program are lost)",
		      o->ifc.name);
		goto clear;
	}
	if (m->sock >= 0 && step(m->sock, "switch", NULL, -1, &m->mirror))
		goto clear;
	rc = EXIT_OK;
clear:
	if ((e = xkv_host_flags(&m->old, 0, XKV_HOST_HOLD)) < 0)
		xerr("migrate: cannot clear the host flags (writes stay with the slow path): %s", strerror(-e));
	m->hold_s = now_s() - held;
	if (m->sock >= 0 && rc == EXIT_OK)
		step(m->sock, "end", NULL, -1, &m->mirror);
	if (m->sock >= 0) { /* closing before "end" abandons the new store (before a switch) */
		close(m->sock);
		m->sock = -1;
	}
	m->switch_s = now_s() - t0;
	return rc;
}

static int run_migrate(void *vo, const struct global_opts *g)
{
	struct mig_opts *o = vo;
	struct mig_run m = { .o = o, .sock = -1, .sfd = -1, .old_verdict = -1 };
	char other[64], dir[256];
	struct prior pr;
	sigset_t hold, oldmask;
	int rc, lockfd = -1;

	if ((rc = need_privileges("migrate")) || (rc = open_pinned(&m.old, "migrate", o->ifc.name)))
		return rc;
	if (m.old.L->bench_only || !m.old.L->scan) {
		xerr("migrate: %s runs the %s store: it keeps no items", o->ifc.name, m.old.L->name);
		rc = EXIT_USAGE;
		goto out;
	}
	if ((rc = new_config(o, &m.old.cfg, &m.cfg)))
		goto out;
	rc = EXIT_SYS;
	attach_prior(&o->ifc, &pr, other, sizeof(other));
	if (!pr.ours) {
		xerr("migrate: xdpkv's program is not attached to %s (its pins are there): "
		     "nothing serves the store", o->ifc.name);
		xhint("'xdpkv attach %s' with its options re-attaches it", o->ifc.name);
		goto out;
	}
	/* one migrate at a time: a lock on the pin directory */
	xkv_pin_dir(o->ifc.name, dir, sizeof(dir));
	lockfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB)) {
		xerr("migrate: %s: %s", dir, lockfd < 0 ? strerror(errno) : "another migrate of it is running");
		goto out;
	}
	int hf = xkv_host_flags(&m.old, 0, 0);
	if (hf < 0) {
		xerr("migrate: cannot read the host map: %s", strerror(-hf));
		goto out;
	}
	if ((hf & XKV_HOST_PAUSE_WRITES) && !(hf & XKV_HOST_MIGRATING)) {
		xerr("migrate: 'xdpkv snapshot --pause-writes' holds the writes of %s now: try again "
		     "after it", o->ifc.name);
		goto out;
	}
	if (hf & XKV_HOST_MIGRATING) {
		xinfo("migrate: clearing what a killed migrate left (writes held in the host map)");
		xkv_host_flags(&m.old, 0, XKV_HOST_HOLD);
	}
	m.sock = serve_connect(o->ifc.name);
	if (m.sock < 0 && !o->pause_writes) {
		xerr("migrate: no 'xdpkv serve %s' to send writes to both stores during the copy (%s)",
		     o->ifc.name, strerror(-m.sock));
		xhint("start it ('xdpkv serve %s', or the service), or pass --pause-writes to hold the "
		      "writes (unanswered) for the copy", o->ifc.name);
		goto out;
	}
	/* the flags must not stay set: signals wait until they are cleared */
	sigemptyset(&hold);
	sigaddset(&hold, SIGINT);
	sigaddset(&hold, SIGTERM);
	sigaddset(&hold, SIGHUP);
	sigprocmask(SIG_BLOCK, &hold, &oldmask);
	rc = migrate(&m, &pr);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	if (rc == EXIT_OK) {
		report(&m);
		rc = lost_any(&m) ? EXIT_MISS : EXIT_OK;
	}
out:
	if (m.old_verdict >= 0) { /* not migrated: the old program serves TCP again */
		char err[XKV_ERRLEN];
		if (xkv_tcp_fast_resume(&m.old, m.old_verdict, err, sizeof(err)))
			xerr("migrate: %s", err);
		close(m.old_verdict);
	}
	if (m.sock >= 0)
		close(m.sock);
	if (m.nw.L)
		xkv_store_drop(&m.nw);
	if (m.sfd >= 0)
		close(m.sfd);
	if (m.obj)
		bpf_object__close(m.obj);
	xkv_store_close(&m.old);
	if (lockfd >= 0)
		close(lockfd);
	return rc;
}

const struct cmd cmd_migrate = {
	.name = "migrate",
	.synopsis = "IFACE [--layout L] [--entries N] [--key-size K] [--value-size V] [--no-prealloc] "
		    "[--no-common-lru] [--threads N] [--pause-writes] [--progress] [--json]",
	.summary = "move a live store into another layout or size while it serves",
	.doc = "Builds the new layout's store and program, copies every item into it while the old\n"
	       "program keeps serving, swaps the program in one step and pins the new maps where the\n"
	       "old ones were (serve, status and snapshot find them; the old store is freed).  Items\n"
	       "keep their flags, expiry and cas unique; the access lists, counters and options stay.\n\n"
	       "Writes during the copy are not lost: XDP passes them to the running 'xdpkv serve\n"
	       "IFACE', which applies each to the old and the new store (flush_all is refused\n"
	       "meanwhile).  Without a slow path it refuses to start, unless --pause-writes: then\n"
	       "writes get no answer until the switch.  What did not fit the new store is reported\n"
	       "as restore reports it (exit status 1): larger than its sizes, a full hash_map,\n"
	       "array_fnv collisions, lru evictions.  It refuses (exit status 2) while a TCP\n"
	       "connection is in the kernel fast path: that connection would keep the old store.\n"
	       "docs/snapshots.md has the design and what it guarantees.\n\n"
	       "Example: xdpkv migrate eth0 --layout lru --entries 2000000",
	.opts = migrate_table,
	.opts_size = sizeof(struct mig_opts),
	.run = run_migrate,
};
