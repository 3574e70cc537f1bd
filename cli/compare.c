// SPDX-License-Identifier: MIT
/* xdpkv compare: the comparison engine (docs/compare.md) is a Python program,
 * bench/compare/compare.py; this command runs it with every argument as
 * given, and tells it which xdpkv binary to drive (XDPKV). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

#ifndef XKV_SOURCE_DIR
#error "XKV_SOURCE_DIR must be defined (cli/CMakeLists.txt)"
#endif

#define COMPARE_SCRIPT XKV_SOURCE_DIR "/bench/compare/compare.py"

/* Debian's python3 first: the plots need python3-matplotlib, which lives
 * there; a python3 earlier in PATH (pyenv, venv) may lack it. */
static const char *find_python(char *buf, size_t len)
{
	if (access("/usr/bin/python3", X_OK) == 0)
		return "/usr/bin/python3";
	const char *path = getenv("PATH");
	while (path && *path) {
		const char *end = strchrnul(path, ':');
		int n = snprintf(buf, len, "%.*s/python3", (int)(end - path), path);
		if (n > 0 && (size_t)n < len && access(buf, X_OK) == 0)
			return buf;
		path = *end ? end + 1 : end;
	}
	return NULL;
}

/* argv: the arguments after "compare".  Returns only on failure. */
int compare_exec(int argc, char **argv)
{
	char self[PATH_MAX], pybuf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *py = find_python(pybuf, sizeof(pybuf));

	if (n <= 0) {
		xerr("compare: cannot find this program's path (/proc/self/exe): %s", strerror(errno));
		return EXIT_SYS;
	}
	self[n] = 0;
	if (!py) {
		xerr("compare: python3 not found (/usr/bin/python3 or in PATH)");
		xhint("install it: apt-get install python3 python3-matplotlib "
		      "(tests/lib/install-deps.sh does)");
		return EXIT_SYS;
	}
	if (access(COMPARE_SCRIPT, R_OK)) {
		xerr("compare: %s: %s", COMPARE_SCRIPT, strerror(errno));
		xhint("xdpkv compare runs from the source tree it was built from; "
		      "rebuild xdpkv from a checkout that has bench/compare/");
		return EXIT_SYS;
	}
	if (setenv("XDPKV", self, 1)) {
		xerr("compare: setenv: %s", strerror(errno));
		return EXIT_SYS;
	}
	char **args = calloc(argc + 3, sizeof(*args));
	if (!args) {
		xerr("compare: out of memory");
		return EXIT_SYS;
	}
	args[0] = (char *)py;
	args[1] = (char *)COMPARE_SCRIPT;
	if (argc)
		memcpy(args + 2, argv, argc * sizeof(*args));
	execv(py, args);
	xerr("compare: cannot run %s: %s", py, strerror(errno));
	free(args);
	return EXIT_SYS;
}

static int run_compare(void *opts, const struct global_opts *g)
{
	/* main() hands 'compare' to compare_exec before option parsing */
	return compare_exec(0, NULL);
}

static const struct xo compare_table[] = { XO_END };

const struct cmd cmd_compare = {
	.name = "compare",
	.synopsis = "[--quick] [--layouts L,...] [--baselines B,...] [--experiments a,b,...] "
		    "[--out DIR] [--json]",
	.summary = "compare the layouts with memcached and Redis on a veth testbed (report, plots)",
	.doc = "Runs bench/compare/compare.py with the arguments as given; "
	       "'xdpkv compare --help' lists them.  Needs root.  docs/compare.md.",
	.opts = compare_table,
	.opts_size = 0,
	.run = run_compare,
};
