// SPDX-License-Identifier: MIT
/* xdpkv: command dispatch, global options, messages, privileges. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "cli.h"
#include "log.h"

/* compare.c: 'compare' passes its arguments to bench/compare/compare.py as given */
extern const struct cmd cmd_compare;
int compare_exec(int argc, char **argv);

#ifndef CAP_BPF
#define CAP_BPF 39
#endif

const struct cmd *const commands[] = {
	&cmd_attach, &cmd_detach, &cmd_serve, &cmd_status, &cmd_get, &cmd_set,
	&cmd_del, &cmd_load, &cmd_snapshot, &cmd_restore, &cmd_migrate, &cmd_dump, &cmd_import, &cmd_acl, &cmd_layouts, &cmd_compare, NULL,
};

const struct xo global_table[] = {
	{ "variant", 0, XO_STR, offsetof(struct global_opts, variant), "NAME",
	  "storage layout for attach (see 'xdpkv layouts'; default hash_map; "
	  "'null': a benchmark floor that answers every get with one fixed value)" },
	{ "verbose", 'v', XO_BOOL, offsetof(struct global_opts, verbose), NULL,
	  "print libbpf/libxdp debug output and more detail" },
	{ "help", 'h', XO_BOOL, offsetof(struct global_opts, help), NULL, "show help and exit" },
	{ "version", 0, XO_BOOL, offsetof(struct global_opts, version), NULL,
	  "show the version and exit" },
	XO_END,
};

/* ---- messages ---- */

static int verbose;

int verbose_level(void)
{
	return verbose;
}

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void xerr(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("xdpkv: ", fmt, ap);
	va_end(ap);
}

void xhint(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("xdpkv: hint: ", fmt, ap);
	va_end(ap);
}

void xinfo(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

/* libbpf and libxdp messages (lib/log.c): all of them with -v; without, the
 * non-debug ones go to the ring of recent lines, shown only when something
 * fails. */
static void lib_message(enum xkv_log_level level, const char *fmt, va_list ap)
{
	if (verbose)
		vfprintf(stderr, fmt, ap);
	else if (level != XKV_LOG_DEBUG)
		xkv_log_keep(level, fmt, ap);
}

static void dump_line(void *arg, const char *line)
{
	if (line[0])
		fprintf(stderr, "  %s\n", line);
}

void xlog_dump(void)
{
	if (!xkv_log_kept(NULL, NULL))
		return;
	fprintf(stderr, "xdpkv: library messages (latest last; -v shows all):\n");
	xkv_log_kept(dump_line, NULL);
}

void xlog_clear(void)
{
	xkv_log_kept_clear();
}

/* ---- privileges and pinned stores ---- */

static bool have_cap(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

int need_privileges(const char *cmd)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};

	if (syscall(SYS_capget, &h, d)) {
		xerr("%s: cannot read this process's capabilities: %s", cmd, strerror(errno));
		return EXIT_SYS;
	}
	bool bpf = have_cap(d, CAP_BPF) || have_cap(d, CAP_SYS_ADMIN);
	bool net = have_cap(d, CAP_NET_ADMIN);
	if (bpf && net)
		return 0;
	xerr("%s: needs %s%s%s (running as uid %u)", cmd, bpf ? "" : "CAP_BPF (or CAP_SYS_ADMIN)",
	     !bpf && !net ? " and " : "", net ? "" : "CAP_NET_ADMIN", (unsigned)geteuid());
	xhint("run it as root: sudo xdpkv %s ...", cmd);
	return EXIT_SYS;
}

int sys_fail(const char *cmd, const char *what, int e)
{
	if (e > 0)
		e = -e;
	xerr("%s: %s: %s", cmd, what, strerror(-e));
	if (e == -EPERM || e == -EACCES)
		xhint("BPF maps and XDP need root (CAP_BPF and CAP_NET_ADMIN)");
	return EXIT_SYS;
}

/* 'ip netns exec NAME' remounts /sys (source: NAME) in a private mount
 * namespace, so /sys/fs/bpf there is not the system's bpffs. */
bool bpffs_hidden(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[1024], src[256] = "", path[300];
	bool hidden = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char mnt[256], type[64], source[256];
		const char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %255s", type, source) != 2)
			continue;
		if (!strcmp(mnt, "/sys") && !strcmp(type, "sysfs"))
			snprintf(src, sizeof(src), "%s", source); /* the last one wins */
	}
	fclose(f);
	if (src[0] && !strchr(src, '/')) {
		snprintf(path, sizeof(path), "/run/netns/%s", src);
		hidden = access(path, F_OK) == 0;
	}
	return hidden;
}

static void hint_hidden_bpffs(void)
{
	xhint("this process sees another /sys/fs/bpf than the system's ('ip netns exec' "
	      "remounts /sys): use 'nsenter --net=/run/netns/NAME xdpkv ...' instead");
}

int open_pinned(struct xkv_store *s, const char *cmd, const char *ifname)
{
	char err[XKV_ERRLEN];
	int e = xkv_store_open_pinned(s, ifname, err, sizeof(err));
	if (!e)
		return 0;
	xerr("%s: %s", cmd, err);
	if (e == -ENOENT) {
		if (bpffs_hidden()) {
			hint_hidden_bpffs();
			return EXIT_MISS;
		}
		xhint("attach it first: xdpkv attach %s  ('xdpkv status' lists attached interfaces)",
		      ifname);
		return EXIT_MISS;
	}
	if (e == -EPERM || e == -EACCES)
		xhint("BPF maps need root (CAP_BPF)");
	return EXIT_SYS;
}

/* ---- dispatch ---- */

static const struct cmd *find_cmd(const char *name)
{
	for (int i = 0; commands[i]; i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

static void print_version(void)
{
	printf("xdpkv %s (libbpf %s, libxdp)\n", XKV_VERSION, libbpf_version_string());
	printf("layouts:");
	for (int i = 0; xkv_layouts[i]; i++)
		printf(" %s", xkv_layouts[i]->name);
	printf("\n");
}

static int run_cmd(const struct cmd *c, int argc, char **argv, struct global_opts *g)
{
	void *o = calloc(1, c->opts_size ? c->opts_size : 1);
	if (!o)
		return EXIT_SYS;
	if (c->defaults)
		memcpy(o, c->defaults, c->opts_size);
	struct xo_set sets[] = { { c->opts, o }, { global_table, g } };
	int npos = xo_parse(argc, argv, sets, 2, false, c->name);
	int rc;

	if (npos < 0) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (g->help) {
		xo_print_help(stdout, c);
		rc = EXIT_OK;
		goto out;
	}
	if (g->version) {
		print_version();
		rc = EXIT_OK;
		goto out;
	}
	const struct xo *miss = xo_missing(c->opts, npos);
	if (miss) {
		xerr("%s: missing %s", c->name, miss->name);
		fprintf(stderr, "usage: xdpkv %s %s\n", c->name, c->synopsis);
		rc = EXIT_USAGE;
		goto out;
	}
	if (g->variant && !c->uses_variant) {
		xerr("%s: --variant only applies to attach (a pinned store knows its layout)", c->name);
		rc = EXIT_USAGE;
		goto out;
	}
	verbose = g->verbose;
	rc = c->run(o, g);
out:
	free(o);
	return rc;
}

int main(int argc, char **argv)
{
	struct global_opts g = {};
	struct xo_set gset = { global_table, &g };

	xkv_log_set_level(XKV_LOG_DEBUG); /* lib_message decides */
	xkv_log_set_sink(lib_message);
	xkv_log_libbpf();
	xkv_log_libxdp();

	if (argc == 2 && !strcmp(argv[1], "--man")) /* hidden: the build writes xdpkv.8 with it */
		return xo_print_man(stdout);
	int i = xo_parse(argc - 1, argv + 1, &gset, 1, true, "xdpkv");
	if (i < 0)
		return EXIT_USAGE;
	if (i >= argc - 1) { /* no command */
		if (g.version) {
			print_version();
			return EXIT_OK;
		}
		xo_print_usage(g.help ? stdout : stderr);
		return g.help ? EXIT_OK : EXIT_USAGE;
	}
	const char *name = argv[1 + i];
	if (!strcmp(name, "help")) { /* xdpkv help [COMMAND] */
		const struct cmd *c = i + 2 < argc ? find_cmd(argv[2 + i]) : NULL;
		if (c)
			xo_print_help(stdout, c);
		else
			xo_print_usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(name, "compare"))
		return compare_exec(argc - 2 - i, argv + 2 + i);
	const struct cmd *c = find_cmd(name);
	if (!c) {
		xerr("unknown command '%s'", name);
		xhint("'xdpkv --help' lists the commands");
		return EXIT_USAGE;
	}
	return run_cmd(c, argc - 2 - i, argv + 2 + i, &g);
}
