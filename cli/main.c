// SPDX-License-Identifier: MIT
/* xdpkv: command dispatch (commands.c has the table) and --version.
 * Messages, and the library's kept for when something fails: msg.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "cli.h"

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

/* Is one of the words (exactly) among the arguments, before a "--"? */
static bool given(int argc, char **argv, const char *a, const char *b)
{
	for (int i = 0; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], a) || !strcmp(argv[i], b))
			return true;
	return false;
}

static bool has_opt(const struct cmd *c, const char *name)
{
	for (const struct xo *o = c->opts; o && o->name; o++)
		if (!strcmp(o->name, name))
			return true;
	return false;
}

/* --json: stdout through a stream that counts what the command printed, so
 * that a command that failed without printing its object (not attached, a
 * missing file, a damaged snapshot) still prints one: its error. */
static FILE *real_stdout;
static size_t printed;

static ssize_t counted_write(void *cookie, const char *buf, size_t len)
{
	printed += len;
	/* a failed write shows on the command's own fflush (get checks it) */
	if (fwrite(buf, 1, len, real_stdout) < len || fflush(real_stdout))
		return -1;
	return (ssize_t)len;
}

static void json_count_start(void)
{
	cookie_io_functions_t fns = { .write = counted_write };
	FILE *c = fopencookie(NULL, "w", fns);
	if (c) {
		real_stdout = stdout;
		stdout = c;
	}
}

static void json_count_end(int rc)
{
	if (!real_stdout)
		return;
	fflush(stdout);
	if (rc && !printed) {
		const char *why = msg_first_error();
		fprintf(stdout, "{\"error\":");
		json_cstr(stdout, why[0] ? why : rc == EXIT_USAGE ? "bad command line (stderr says why)"
							 : "failed (stderr says why)");
		fprintf(stdout, ",\"exit\":%d}\n", rc);
	}
	fclose(stdout);
	stdout = real_stdout;
	real_stdout = NULL;
	fflush(stdout);
}

static int run_cmd(const struct cmd *c, int argc, char **argv, struct global_opts *g)
{
	/* --help before anything is checked: 'attach badif --help' helps */
	if (given(argc, argv, "-h", "--help")) {
		xo_print_help(stdout, c);
		return EXIT_OK;
	}
	void *o = calloc(1, c->opts_size ? c->opts_size : 1);
	if (!o)
		return EXIT_SYS;
	if (has_opt(c, "json") && given(argc, argv, "-j", "--json"))
		json_count_start();
	if (c->defaults)
		memcpy(o, c->defaults, c->opts_size);
	struct xo_set sets[] = { { c->opts, o }, { global_table, g } };
	int npos = cli_parse(argc, argv, sets, 2, false, c->name);
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
	if (g->layout && !c->uses_layout) {
		xerr("%s: --layout (--variant) only applies to attach (a pinned store knows its layout)",
		     c->name);
		rc = EXIT_USAGE;
		goto out;
	}
	msg_set_verbose(g->verbose);
	rc = c->run(o, g);
out:
	json_count_end(rc);
	free(o);
	return rc;
}

int main(int argc, char **argv)
{
	struct global_opts g = {};
	struct xo_set gset = { global_table, &g };

	msg_hook_libraries();

	if (argc == 2 && !strcmp(argv[1], "--man")) /* hidden: the build writes xdpkv.8 with it */
		return xo_print_man(stdout);
	int i = cli_parse(argc - 1, argv + 1, &gset, 1, true, NULL);
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
