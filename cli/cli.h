/* SPDX-License-Identifier: MIT */
/* The xdpkv command line tool: commands, option tables, shared helpers. */
#ifndef XDPKV_CLI_H
#define XDPKV_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <net/if.h>
#include "xdpkv.h"
#include "opts.h"

/* Exit codes, the same for every command (docs/cli.md). */
enum {
	EXIT_OK = 0,    /* done / hit */
	EXIT_MISS = 1,  /* key not found, nothing attached, items not stored */
	EXIT_USAGE = 2, /* bad command line or option value */
	EXIT_SYS = 3,   /* the system said no: privileges, kernel, BPF, I/O */
};

/* ---- option tables (lib/opts.h) ------------------------------------------
 * Each command declares its options as a table; one parser reads them all.
 * xdpkv adds two types of its own (argtypes.c). */

enum {
	XO_IFACE = XO_EXT, /* struct xo_iface: interface name -> ifindex */
	XO_CIDRS,          /* struct xo_cidrs: repeatable address/CIDR/"any" */
};
#define XO_IF_ANY    0x100u /* XO_IFACE: the interface need not exist (pins may outlive it) */

struct xo_iface {
	char name[IF_NAMESIZE];
	int ifindex;           /* 0 when XO_IF_ANY and the interface does not exist */
};

#define XO_CIDRS_MAX 64
struct xo_cidrs {
	int n;                 /* how many were given (0: the option's default applies) */
	struct xkv_acl_key k[XO_CIDRS_MAX];
};

/* Options every command accepts, before or after the command name. */
struct global_opts {
	const char *layout;    /* --layout, or --variant (its first name) */
	bool verbose;
	bool help;
	bool version;
};

struct cmd {
	const char *name;
	const char *synopsis;  /* after "xdpkv NAME " */
	const char *summary;   /* one line, for xdpkv --help */
	const char *doc;       /* paragraph(s) for xdpkv NAME --help */
	const struct xo *opts;
	size_t opts_size;      /* sizeof the option struct */
	const void *defaults;  /* initial option struct (NULL: zeroed) */
	bool uses_layout;      /* --layout means something to it */
	int (*run)(void *opts, const struct global_opts *g);
};

/* commands.c: the global options and the commands, NULL-terminated */
extern const struct xo global_table[];
extern const struct cmd *const commands[];

/* argtypes.c: xo_parse with xdpkv's types, messages and hints (xo_parse
 * says what stop_at_arg and the result mean). */
int cli_parse(int argc, char **argv, const struct xo_set *sets, int nsets, bool stop_at_arg,
	      const char *ctx);

/* help.c: xdpkv COMMAND --help, xdpkv --help */
void xo_print_help(FILE *f, const struct cmd *c);
void xo_print_usage(FILE *f);
/* What xdpkv is, one paragraph (--help and the man page). */
extern const char xo_about[];
/* man.c: the xdpkv(8) page in roff, from the same tables (xdpkv --man). */
int xo_print_man(FILE *f);

/* ---- messages (msg.c): ours, -v, and the libraries' kept for a failure ---- */
void xerr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void xhint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void xinfo(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* libbpf/libxdp messages are kept in a ring unless -v; dump them on failure. */
void xlog_dump(void);
void xlog_clear(void);
int verbose_level(void);
/* The first xerr message of this run ("" if none). */
const char *msg_first_error(void);
void msg_set_verbose(int level);
/* libbpf and libxdp print through lib/log.c: all with -v, else kept */
void msg_hook_libraries(void);

/* ---- privileges and pinned stores (privs.c) ---- */

/* Privileges for BPF and XDP.  0 ok, else prints why (cmd names the command). */
int need_privileges(const char *cmd);
/* Does this process see another /sys/fs/bpf than PID 1 (ip netns exec)? */
bool bpffs_hidden(void);
/* Open the store through its pins; prints the error.  0 or an exit code. */
int open_pinned(struct xkv_store *s, const char *cmd, const char *ifname);
/* Map an -errno from a BPF call to an exit code and print a hint for EPERM. */
int sys_fail(const char *cmd, const char *what, int e);

/* ---- JSON output (json.c) ---- */
void json_str(FILE *f, const void *s, size_t len);
static inline void json_cstr(FILE *f, const char *s)
{
	json_str(f, s, __builtin_strlen(s));
}

/* acl.c: print a list's entries ("a, b (connected)"); *n gets their count */
int acl_print_list(const struct xkv_store *s, int list, FILE *f, int *n);

/* ---- the commands ---- */
extern const struct cmd cmd_attach, cmd_acl, cmd_detach, cmd_serve, cmd_status, cmd_layouts, cmd_get,
	cmd_set, cmd_del, cmd_load, cmd_import, cmd_snapshot, cmd_restore, cmd_dump, cmd_migrate,
	cmd_compare, cmd_verify;

/* compare.c: run bench/compare/compare.py with the arguments after
 * 'compare' as given.  Returns only on failure. */
int compare_exec(int argc, char **argv);

/* snapshot.c: snapshot s to file with the defaults (one thread), one line on
 * stderr saying what happened; `why` names the occasion.  Fewer than
 * min_items items: the file is not replaced (-ERANGE).  0 or -errno. */
int snapshot_quiet(struct xkv_store *s, const char *file, const char *why, __u64 min_items);
/* The items a snapshot file holds, as its header (or, damaged, its blocks)
 * says: 0 if there is none, UINT64_MAX (said on stderr) if it cannot be read. */
__u64 snapshot_floor(const char *file);
/* Restore a snapshot file into s and print what 'xdpkv restore' prints (cmd
 * names the command in errors); restore's exit code. */
int restore_into(struct xkv_store *s, const char *ifname, const char *file, const char *cmd);

/* attach_config.c: the sizes given (0: keep cfg's) into cfg (attach, migrate) */
void config_sizes(struct xkv_config *cfg, unsigned entries, unsigned key_size, unsigned value_size);

/* ---- the slow path in the foreground (serve.c) ---- */
/* What `serve` adds to the slow path's defaults. */
struct serve_extra {
	unsigned max_keys, max_reply, threads, max_conns, idle_timeout, max_buffer_mib;
	bool no_tcp, no_tcp_fast;
	const char *drop_user; /* NULL: keep root (attach --serve must detach afterwards) */
	unsigned snapshot_every; /* seconds; 0: no periodic snapshot */
	const char *snapshot_file;
	bool snapshot_allow_shrink; /* else fewer items than the file held at start: not written */
	const struct xkv_sasl *sasl; /* --sasl-pwdb */
};
/* Serve s until a signal stops it (x: NULL for the defaults); a final
 * snapshot when x asks for one.  An exit code. */
int serve_loop(struct xkv_store *s, const char *ifname, unsigned port, const char *cmd,
	       const struct serve_extra *x);
/* The signal that stopped the last serve_loop (SIGINT, SIGTERM, SIGHUP). */
int serve_stop_signal(void);

/* ---- our XDP program on an interface (xdpprog.c) ---- */

/* xdpprog.c: is an xdpkv program on ifindex?  Fills id/legacy; 1 yes, 0 no. */
int xdpkv_prog_on(int ifindex, unsigned *prog_id, bool *legacy, char *other, size_t olen);

/* xdpprog.c: what an earlier attach left on the interface. */
struct prior {
	bool ours, pins;             /* our program is on it; its pins are there */
	unsigned id;                 /* our program's id */
	bool legacy;                 /* attached alone, not under libxdp's dispatcher */
	int xmode;                   /* how: enum xdp_attach_mode */
};
/* Fill pr for ifc; other: the name of another XDP program there ("" if
 * none).  Returns whether the interface's XDP attachment is a single program
 * (not libxdp's dispatcher). */
bool attach_prior(const struct xo_iface *ifc, struct prior *pr, char *other, size_t olen);
/* Put obj's program on ifc: in place of ours (pr) without a moment where
 * neither runs (XDP_FLAGS_REPLACE, or libxdp's dispatcher), or fresh.  *how
 * says which way.  Loads obj when it is not loaded.  0 or -errno, not
 * printed: print_load_failure says what failed (attach first asks
 * attach_load_failed, which tells a refused program from a refused attach). */
int put_prog(struct bpf_object *obj, const struct xo_iface *ifc, int mode, const struct prior *pr,
	     int xmode, const char **how);
/* What put_prog's failure e was, with the verifier log's tail and a hint. */
void print_load_failure(struct bpf_object *obj, int e, const struct xo_iface *ifc, int mode);
/* Take our program (program id `only`, or any when 0) off ifindex.
 * 1 detached, 0 none there, <0 -errno. */
int detach_ours(int ifindex, unsigned only, unsigned *id_out);
/* The XDP TCP responder's TC egress program onto ifindex (replacing ours),
 * and off it (0 when it was not there). */
int tcpx_egress_attach(struct bpf_object *obj, int ifindex, char *err, size_t errlen);
int tcpx_egress_detach(int ifindex);
/* Which way ours is attached, in words (put_prog attaches it alone: a
 * dispatcher's is an older xdpkv's); *id gets the program id. */
const char *attach_path(int ifindex, unsigned *id);

#endif
