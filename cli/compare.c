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

#if !defined(XKV_SOURCE_DIR) || !defined(XKV_REL_DATADIR) || !defined(XKV_REL_LIBEXECDIR)
#error "XKV_SOURCE_DIR, XKV_REL_DATADIR and XKV_REL_LIBEXECDIR must be defined (cli/CMakeLists.txt)"
#endif

#define COMPARE_SCRIPT "/bench/compare/compare.py"

/* Where compare.py is: an installed xdpkv (cli/packaging.cmake) has it in
 * XKV_REL_DATADIR next to its own directory, and its tools in
 * XKV_REL_LIBEXECDIR; a build tree's xdpkv uses the source tree it was
 * built from.  dir receives the data directory; *installed says which. */
static int find_compare(const char *self, char *dir, size_t len, bool *installed)
{
	char probe[PATH_MAX + 64];
	const char *slash = strrchr(self, '/');
	int bin = slash ? (int)(slash - self) : 0;

	snprintf(dir, len, "%.*s/%s", bin, self, XKV_REL_DATADIR);
	snprintf(probe, sizeof(probe), "%s%s", dir, COMPARE_SCRIPT);
	*installed = access(probe, R_OK) == 0;
	if (!*installed)
		snprintf(dir, len, "%s", XKV_SOURCE_DIR);
	snprintf(probe, sizeof(probe), "%s%s", dir, COMPARE_SCRIPT);
	return access(probe, R_OK) ? -errno : 0;
}

/* An installed compare's tools, unless the caller names its own (compare
 * notes the ones the package left out: the microbenchmark where Google
 * Benchmark was missing at build time). */
static int set_installed_tools(const char *self)
{
	static const char *const tools[][2] = {
		{ "XKV_LOADGEN", "xkv-loadgen" }, { "XKV_XDPGEN", "xdpgen" }, { "XKV_KVEXP", "xkv-kvexp" },
		{ "XKV_MICROBENCH", "microbench" }, { "XKV_REFLECTOR_OBJ", "reflector.bpf.o" },
	};
	const char *slash = strrchr(self, '/');
	int bin = slash ? (int)(slash - self) : 0;
	char p[PATH_MAX + 64];

	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		snprintf(p, sizeof(p), "%.*s/%s/%s", bin, self, XKV_REL_LIBEXECDIR, tools[i][1]);
		if (setenv(tools[i][0], p, 0))
			return -errno;
	}
	snprintf(p, sizeof(p), "%.*s/%s/tests/lib/xdp_pass.bpf.o", bin, self, XKV_REL_DATADIR);
	return setenv("TB_XDP_PASS_OBJ", p, 0) ? -errno : 0;
}

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
	char dir[PATH_MAX], script[PATH_MAX + 32];
	bool installed;
	int e = find_compare(self, dir, sizeof(dir), &installed);
	snprintf(script, sizeof(script), "%s%s", dir, COMPARE_SCRIPT);
	if (e) {
		xerr("compare: %s: %s", script, strerror(-e));
		xhint("an installed xdpkv has it under %s next to its directory; a build tree's "
		      "xdpkv runs it from the source tree it was built from", XKV_REL_DATADIR);
		return EXIT_SYS;
	}
	if (setenv("XDPKV", self, 1) || (installed && set_installed_tools(self))) {
		xerr("compare: setenv: %s", strerror(errno));
		return EXIT_SYS;
	}
	char **args = calloc(argc + 3, sizeof(*args));
	if (!args) {
		xerr("compare: out of memory");
		return EXIT_SYS;
	}
	args[0] = (char *)py;
	args[1] = script;
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
	.synopsis = "[--quick | --smoke] [--layouts L,...] [--baselines B,...] [--experiments a,...,o] "
		    "[--bmc-dir DIR] [--workload fixed|etc|twitter] [--repeat N] [--gen-cores G] "
		    "[--out DIR] [--json] [--estimate]",
	.summary = "compare the layouts with memcached, Redis and BMC on a veth testbed (report, plots)",
	.doc = "Runs bench/compare/compare.py with the arguments as given.  Every report opens "
	       "with the layout to pick for the workload (by stated rules) and a headline: one "
	       "row per system (every layout, memcached UDP and TCP, Redis, BMC) on the same "
	       "definitions, and a figure of measured throughput against bytes per item; "
	       "--quick runs the experiments it is made of (a,b,f,g,i,m) in under 5 minutes on 2 "
	       "CPUs; --bmc-dir DIR adds BMC (a build made as docs/compare.md says) and (o).  "
	       "--estimate prints the plan's time without running it.  "
	       "'xdpkv compare --help' lists them and the experiments (j: scaling with server "
	       "cores, l: the in-kernel microbenchmark at 1 ... nproc threads, m: hit ratio per "
	       "byte against libCacheSim).  "
	       "'xdpkv compare --experiments j,l --repeat 3' runs both for every layout; "
	       "'xdpkv compare --experiments m --quick' the hit ratio of every layout.  "
	       "--workload etc|twitter: production key and value sizes.  "
	       "Needs root.  docs/compare.md.",
	.opts = compare_table,
	.opts_size = 0,
	.run = run_compare,
};
