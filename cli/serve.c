// SPDX-License-Identifier: MIT
/* xdpkv serve: the userspace slow path in the foreground (serve_loop, also
 * run by 'attach --serve') and the serve command. */
#include <signal.h>
#include "cli.h"
#include "sasl.h"
#include "slowpath.h"

/* ---- the slow path in the foreground ---- */

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = sig;
}

int serve_stop_signal(void)
{
	return stop_flag;
}

/* --snapshot-file: the file is never replaced by a snapshot of fewer items
 * than it held when serve started (a store that came up empty after a
 * failed restore must not overwrite the items it failed to restore), unless
 * --snapshot-allow-shrink or a flush_all since then said the store may
 * shrink. */
struct snap_every {
	struct xkv_store *s;
	const char *file;
	__u64 floor, flushes;
	bool allow_shrink;
};

static int snapshot_guarded(struct snap_every *se, const char *why)
{
	bool may_shrink = se->allow_shrink || xkv_slow_flushes() != se->flushes;
	return snapshot_quiet(se->s, se->file, why, may_shrink ? 0 : se->floor);
}

static void snapshot_tick(void *arg)
{
	snapshot_guarded(arg, "periodic");
}

int serve_loop(struct xkv_store *s, const char *ifname, unsigned port, const char *cmd,
		      const struct serve_extra *x)
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: wake the loop */
	char err[XKV_ERRLEN];

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL); /* a closed terminal stops it (attach --serve: keeps the store) */
	struct xkv_serve_opts o = {
		.ifname = ifname, .port = (__u16)port, .verbose = verbose_level(),
		.stop = &stop_flag, .ready_fd = -1,
	};
	struct snap_every se = { s, x ? x->snapshot_file : NULL };
	if (se.file) {
		se.allow_shrink = x->snapshot_allow_shrink;
		se.flushes = xkv_slow_flushes();
		se.floor = se.allow_shrink ? 0 : snapshot_floor(se.file);
		if (se.floor)
			xinfo("xdpkv: %s holds %llu items: a snapshot of fewer does not replace it", se.file,
			      (unsigned long long)se.floor);
	}
	if (x) {
		o.limits.max_keys = x->max_keys;
		o.limits.max_reply = x->max_reply;
		o.drop_user = x->drop_user;
		o.threads = x->threads;
		o.max_conns = x->max_conns;
		o.idle_timeout = x->idle_timeout;
		o.max_buffer_mib = x->max_buffer_mib;
		o.no_tcp = x->no_tcp;
		o.no_tcp_fast = x->no_tcp_fast;
		o.sasl = x->sasl;
	}
	if (se.file && x->snapshot_every) {
		o.tick = snapshot_tick;
		o.tick_arg = &se;
		o.tick_ms = x->snapshot_every * 1000u;
	}
	xinfo("xdpkv: slow path serving %s (%s) on %s port %u; Ctrl-C, SIGTERM or SIGHUP stops it", ifname,
	      s->cfg.layout, o.no_tcp ? "UDP" : "UDP and TCP", port ? port : s->cfg.port);
	int e = xkv_serve(s, &o, err, sizeof(err));
	if (e) {
		xerr("%s: slow path: %s", cmd, err);
		return EXIT_SYS;
	}
	xinfo("xdpkv: slow path stopped (%s)", stop_flag == SIGTERM ? "SIGTERM" :
	      stop_flag == SIGHUP ? "SIGHUP" : "SIGINT");
	if (se.file && snapshot_guarded(&se, "final"))
		return EXIT_SYS;
	return EXIT_OK;
}

/* ---- serve ---- */

struct serve_opts {
	struct xo_iface ifc;
	unsigned port, max_keys, max_reply, threads, max_conns, idle_timeout, max_buffer_mib;
	const char *user;
	bool keep_privileges, no_tcp, no_tcp_fast;
	unsigned snapshot_every;
	const char *snapshot_file;
	bool snapshot_allow_shrink;
	const char *sasl_pwdb;
};

static const struct xo serve_table[] = {
	{ "IFACE", 0, XO_IFACE, offsetof(struct serve_opts, ifc), NULL,
	  "interface whose store to serve", .flags = XO_POS | XO_REQ },
	{ "port", 'p', XO_U32, offsetof(struct serve_opts, port), "P",
	  "UDP and TCP port (default: the port given at attach)", 1, 65535 },
	{ "max-keys", 0, XO_U32, offsetof(struct serve_opts, max_keys), "N",
	  "keys in one multi-get, at most, over UDP and from TCP clients outside the trust list "
	  "(default 256; more: SERVER_ERROR too many keys)", 1, 4095 },
	{ "max-reply", 0, XO_U32, offsetof(struct serve_opts, max_reply), "BYTES",
	  "reply bytes to one request, at most, over UDP and to TCP clients outside the trust list "
	  "(default 2097152, i.e. 2 MiB; more: SERVER_ERROR reply too large)",
	  1400, 65535u * 1400u },
	{ "user", 'u', XO_STR, offsetof(struct serve_opts, user), "NAME",
	  "after binding and opening the maps, run as this user with no capabilities (default nobody)" },
	{ "keep-privileges", 0, XO_BOOL, offsetof(struct serve_opts, keep_privileges), NULL,
	  "stay root with every capability (not recommended)" },
	{ "threads", 0, XO_U32, offsetof(struct serve_opts, threads), "N",
	  "TCP worker threads, each with its own connections (default: the online CPUs)", 1, 1024 },
	{ "max-conns", 0, XO_U32, offsetof(struct serve_opts, max_conns), "N",
	  "open TCP connections at most; more are told ERROR Too many open connections and closed (default 1024)", 1, 1000000 },
	{ "idle-timeout", 0, XO_U32, offsetof(struct serve_opts, idle_timeout), "SECONDS",
	  "close a TCP connection silent this long (default 0: never, as memcached)", 0, 30 * 86400 },
	{ "max-buffer-mib", 0, XO_U32, offsetof(struct serve_opts, max_buffer_mib), "MIB",
	  "memory for requests still arriving, all TCP connections together (default 256); a set "
	  "that does not fit gets SERVER_ERROR out of memory storing object", 1, 1 << 20 },
	{ "no-tcp", 0, XO_BOOL, offsetof(struct serve_opts, no_tcp), NULL,
	  "serve UDP only (no TCP listener)" },
	{ "no-tcp-fast-path", 0, XO_BOOL, offsetof(struct serve_opts, no_tcp_fast), NULL,
	  "answer every TCP request here, none in the kernel (default: as attach said)" },
	{ "snapshot-file", 0, XO_STR, offsetof(struct serve_opts, snapshot_file), "FILE",
	  "snapshot the store to FILE when stopped (SIGTERM, SIGINT, SIGHUP), and every "
	  "--snapshot-every seconds; --user must be able to write FILE's directory" },
	{ "snapshot-every", 0, XO_U32, offsetof(struct serve_opts, snapshot_every), "SECONDS",
	  "with --snapshot-file: also snapshot this often (one thread, lz4)", 1, 7 * 86400 },
	{ "snapshot-allow-shrink", 0, XO_BOOL, offsetof(struct serve_opts, snapshot_allow_shrink), NULL,
	  "with --snapshot-file: let a snapshot of fewer items replace FILE (by default one with "
	  "fewer items than FILE held when serve started is refused, unless a flush_all came since)" },
	{ "sasl-pwdb", 'S', XO_STR, offsetof(struct serve_opts, sasl_pwdb), "FILE",
	  "require SASL PLAIN (memcached -S): user:password lines, a file root owns and only root "
	  "may read; binary-protocol TCP clients only, XDP and the TCP fast path answer nobody" },
	XO_END,
};

static int run_serve(void *vo, const struct global_opts *g)
{
	struct serve_opts *o = vo;
	struct xkv_store s;
	if ((o->snapshot_every || o->snapshot_allow_shrink) && !o->snapshot_file) {
		xerr("serve: --%s needs --snapshot-file",
		     o->snapshot_every ? "snapshot-every" : "snapshot-allow-shrink");
		return EXIT_USAGE;
	}
	int rc = open_pinned(&s, "serve", o->ifc.name);

	if (rc)
		return rc;
	struct xkv_sasl *db = NULL;
	if (o->sasl_pwdb) {
		char err[XKV_ERRLEN];
		if (!(db = xkv_sasl_load(o->sasl_pwdb, err, sizeof(err)))) {
			xerr("serve: --sasl-pwdb: %s", err);
			xkv_store_close(&s);
			return EXIT_USAGE;
		}
	}
	struct serve_extra x = {
		.sasl = db,
		.max_keys = o->max_keys, .max_reply = o->max_reply,
		.threads = o->threads, .max_conns = o->max_conns,
		.idle_timeout = o->idle_timeout, .max_buffer_mib = o->max_buffer_mib, .no_tcp = o->no_tcp, .no_tcp_fast = o->no_tcp_fast,
		.drop_user = o->keep_privileges ? NULL : o->user ? o->user : "nobody",
		.snapshot_every = o->snapshot_every, .snapshot_file = o->snapshot_file,
		.snapshot_allow_shrink = o->snapshot_allow_shrink,
	};
	rc = serve_loop(&s, o->ifc.name, o->port, "serve", &x);
	xkv_sasl_free(db);
	xkv_store_close(&s);
	return rc;
}

const struct cmd cmd_serve = {
	.name = "serve",
	.synopsis = "IFACE [--port P] [--max-keys N] [--max-reply BYTES] [--threads N] [--max-conns N] "
		    "[--no-tcp] [--no-tcp-fast-path]\n       [--user NAME | --keep-privileges] "
		    "[--snapshot-file FILE [--snapshot-every SECONDS] [--snapshot-allow-shrink]] [--sasl-pwdb FILE] [-v]",
	.summary = "run the userspace slow path for an attached interface",
	.doc = "Answers, from the pinned maps, what the XDP program passes on (other commands,\n"
	       "replies too large for one frame, busy slots).  Runs in the foreground and logs to\n"
	       "stderr; SIGTERM, SIGINT or SIGHUP stop it with exit status 0 (fits a systemd service).\n"
	       "It applies the same access rules as the XDP program (docs/security.md), caps what one\n"
	       "request may ask for, re-reads the interface's addresses every second, and once its\n"
	       "socket and maps are open it drops to --user with no capabilities.\n\n"
	       "It also listens on TCP, same port, for ordinary memcached clients (pymemcache,\n"
	       "python-memcache, libmemcached): pipelined requests, --threads workers, at most\n"
	       "--max-conns connections; the allow list is checked when a client connects (refused:\n"
	       "closed without a byte), the write list at every write (refused: the connection ends).\n"
	       "A TCP connection does not make UDP from its address trusted (only the trust list\n"
	       "does).  Replies stream as the socket drains: a connection holds at most ~256 KiB of\n"
	       "replies plus one value, whatever it asks for, and one that does not read is not read\n"
	       "from (docs/security.md, \"TCP\").  --no-tcp turns TCP off.  'attach --serve' listens\n"
	       "on TCP too, with the defaults.\n\n"
	       "With --snapshot-file it snapshots the store there when it stops, and with\n"
	       "--snapshot-every also periodically, while serving (docs/snapshots.md); the file\n"
	       "replaced stays as FILE.prev.  A snapshot of fewer items than FILE held when serve\n"
	       "started does not replace it (the final one then exits 3), unless a flush_all came\n"
	       "since or --snapshot-allow-shrink.\n\n"
	       "TCP clients may speak memcached's binary protocol too (docs/protocol.md).  With\n"
	       "--sasl-pwdb (memcached -S) every client must authenticate with SASL PLAIN over the\n"
	       "binary protocol first: text connections are closed, UDP is dropped (in XDP too) and\n"
	       "the TCP fast path is off (docs/security.md, \"SASL\").\n\n"
	       "Example: xdpkv serve veth0 -v\n"
	       "         xdpkv serve eth0 --snapshot-file /var/lib/xdpkv/eth0.snap --snapshot-every 300\n"
	       "         python3 -c 'import pymemcache; c = pymemcache.Client((\"10.0.0.1\", 11211)); "
	       "c.set(\"k\", \"v\"); print(c.get(\"k\"))'",
	.opts = serve_table,
	.opts_size = sizeof(struct serve_opts),
	.run = run_serve,
};
