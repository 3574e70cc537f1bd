// SPDX-License-Identifier: MIT
/* lib/opts: the option parser every tool uses.  Long and short forms,
 * --x=v and --x v, positionals and "--", missing and extra values, unknown
 * options, numbers out of range, enums, a tool's own type, and the exact
 * messages; getopt_long's forms (abbreviations, bundled short flags, values
 * only after '=') and passing unknown arguments on; a wrong parse fails the
 * run. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "opts.h"

struct o {
	bool flag, other;
	unsigned u32;
	unsigned long long u64;
	long long s64;
	const char *str, *pos1, *pos2;
	int mode;
	int ext; /* the tool's own type: a string's length */
};

static const struct xo_enum modes[] = { { "fast", 1 }, { "slow", 2 }, { NULL } };

enum { T_LEN = XO_EXT, T_BOTH };

static const struct xo table[] = {
	{ "FIRST", 0, XO_STR, offsetof(struct o, pos1), NULL, "first", .flags = XO_POS | XO_REQ },
	{ "SECOND", 0, XO_STR, offsetof(struct o, pos2), NULL, "second", .flags = XO_POS },
	{ "flag", 'f', XO_BOOL, offsetof(struct o, flag), NULL, "a flag" },
	{ "other", 0, XO_BOOL, offsetof(struct o, other), NULL, "another flag" },
	{ "count", 'c', XO_U32, offsetof(struct o, u32), "N", "a count", 1, 100 },
	{ "big", 0, XO_U64, offsetof(struct o, u64), "N", "any unsigned" },
	{ "delta", 'd', XO_S64, offsetof(struct o, s64), "D", "signed", -5, 5 },
	{ "name", 'n', XO_STR, offsetof(struct o, str), "NAME", "a name" },
	{ "mode", 'm', XO_ENUM, offsetof(struct o, mode), "M", "a mode", .enums = modes },
	{ "len", 0, T_LEN, offsetof(struct o, ext), "S", "a string's length" },
	{ "d2", 0, T_BOTH, 0, NULL, "flag and other", .flags = XO_NOVAL },
	XO_END,
};

static int parse_len(const char *ctx, const struct xo *o, const char *arg, void *field)
{
	if (!arg) { /* XO_NOVAL */
		*(int *)field = -1;
		return 0;
	}
	if (!strcmp(arg, "bad")) {
		fprintf(stderr, "T: %s: --%s: bad\n", ctx, o->name);
		return -1;
	}
	*(int *)field = (int)strlen(arg);
	return 0;
}

/* T_BOTH (no value): sets flag and other; its field is the struct */
static int parse_both(const char *ctx, const struct xo *o, const char *arg, void *field)
{
	(void)ctx, (void)o, (void)arg;
	((struct o *)field)->flag = ((struct o *)field)->other = true;
	return 0;
}

static const struct xo_ext ext[] = { { T_LEN, parse_len }, { T_BOTH, parse_both }, { 0, NULL } };

static int fails;
static char msg[1024];
static enum xo_fail fail;

/* Parse the NULL-terminated args into *o; stderr's text in msg. */
static struct xo_parser modes_on; /* the getopt-like modes parse() uses */

static int parse(struct o *o, bool stop, const char *const *args)
{
	char *argv[32];
	int argc = 0;
	while (args[argc])
		argv[argc] = (char *)args[argc], argc++;
	memset(o, 0, sizeof(*o));
	struct xo_set set = { table, o };
	struct xo_parser p = modes_on;
	p.prefix = "T: ";
	p.ext = ext;

	fflush(stderr);
	int saved = dup(2);
	FILE *tmp = tmpfile();
	if (saved < 0 || !tmp) {
		perror("test_opts: tmpfile");
		exit(2);
	}
	dup2(fileno(tmp), 2);
	int n = xo_parse(&p, argc, argv, &set, 1, stop, "ctx");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	size_t len = fread(msg, 1, sizeof(msg) - 1, tmp);
	msg[len] = 0;
	fclose(tmp);
	fail = p.fail;
	return n;
}

#define CHECK(cond)                                                                          \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "FAIL %s:%d: %s (stderr: '%s')\n", __FILE__, __LINE__, \
				#cond, msg);                                                 \
			fails++;                                                             \
		}                                                                            \
	} while (0)

#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* A parse that must fail with exactly this message and kind. */
static void refuse(const char *const *args, enum xo_fail kind, const char *want, int line)
{
	struct o o;
	int n = parse(&o, false, args);
	if (n != -1 || fail != kind || strcmp(msg, want)) {
		fprintf(stderr, "FAIL %s:%d: got %d, kind %d, '%s'; want -1, kind %d, '%s'\n", __FILE__,
			line, n, fail, msg, kind, want);
		fails++;
	}
}
#define REFUSE(kind, want, ...) refuse(ARGS(__VA_ARGS__), kind, want, __LINE__)

int main(void)
{
	struct o o;
	int n;

	/* long and short forms, --x=v and --x v, positionals anywhere */
	n = parse(&o, false, ARGS("a", "--flag", "--count=7", "-d", "-3", "--name", "x y", "b", "--mode=slow"));
	CHECK(n == 2 && o.flag && !o.other && o.u32 == 7 && o.s64 == -3 && !strcmp(o.str, "x y"));
	CHECK(!strcmp(o.pos1, "a") && !strcmp(o.pos2, "b") && o.mode == 2 && !msg[0] && fail == XO_FAIL_NONE);
	n = parse(&o, false, ARGS("-f", "-c", "100", "--big", "0x10", "--delta=5", "-m", "fast", "z"));
	CHECK(n == 1 && o.flag && o.u32 == 100 && o.u64 == 16 && o.s64 == 5 && o.mode == 1);
	n = parse(&o, false, ARGS("--big", "18446744073709551615", "a"));
	CHECK(n == 1 && o.u64 == 18446744073709551615ull);
	/* "--" ends the options; "-" alone is a positional */
	n = parse(&o, false, ARGS("--", "--flag", "-"));
	CHECK(n == 2 && !o.flag && !strcmp(o.pos1, "--flag") && !strcmp(o.pos2, "-"));
	/* an option's value may start with '-' */
	n = parse(&o, false, ARGS("--name", "-x", "a"));
	CHECK(n == 1 && !strcmp(o.str, "-x"));
	/* a tool's own type */
	n = parse(&o, false, ARGS("--len", "abcd", "a"));
	CHECK(n == 1 && o.ext == 4);
	REFUSE(XO_FAIL_VALUE, "T: ctx: --len: bad\n", "--len", "bad");
	/* stop at the first non-option: its index */
	n = parse(&o, true, ARGS("-f", "cmd", "--bogus"));
	CHECK(n == 1 && o.flag && !msg[0]);
	n = parse(&o, true, ARGS("-f"));
	CHECK(n == 1);
	/* required positionals */
	n = parse(&o, false, ARGS("-f"));
	CHECK(n == 0 && xo_missing(table, n) == &table[0]);
	CHECK(xo_missing(table, 1) == NULL);

	/* refusals, with their messages */
	REFUSE(XO_FAIL_UNKNOWN, "T: ctx: unknown option '--bogus'\n", "--bogus");
	REFUSE(XO_FAIL_UNKNOWN, "T: ctx: unknown option '-x'\n", "-x");
	REFUSE(XO_FAIL_UNKNOWN, "T: ctx: unknown option '--flags'\n", "--flags");
	REFUSE(XO_FAIL_UNKNOWN, "T: ctx: unknown option '--fla'\n", "--fla");
	REFUSE(XO_FAIL_UNEXPECTED, "T: ctx: unexpected argument 'c'\n", "a", "b", "c");
	REFUSE(XO_FAIL_FORM, "T: ctx: --count needs a value (N)\n", "a", "--count");
	REFUSE(XO_FAIL_FORM, "T: ctx: --count needs a value (N)\n", "-c");
	REFUSE(XO_FAIL_FORM, "T: ctx: --flag takes no value\n", "--flag=1");
	REFUSE(XO_FAIL_VALUE, "T: ctx: '-fc': short options take one letter (write -v -h, or the long form)\n", "-fc");
	REFUSE(XO_FAIL_VALUE, "T: ctx: --count: 0 is out of range 1..100\n", "--count", "0");
	REFUSE(XO_FAIL_VALUE, "T: ctx: --count: 101 is out of range 1..100\n", "--count=101");
	REFUSE(XO_FAIL_VALUE, "T: ctx: --count: '-1' must not be negative\n", "--count=-1");
	REFUSE(XO_FAIL_VALUE, "T: ctx: --count: '7x' is not a number\n", "--count=7x");
	REFUSE(XO_FAIL_VALUE, "T: ctx: --count: '' is not a number\n", "--count=");
	REFUSE(XO_FAIL_VALUE, "T: ctx: --big: '18446744073709551616' is not a number\n", "--big",
	       "18446744073709551616");
	REFUSE(XO_FAIL_VALUE, "T: ctx: --delta: -6 is out of range -5..5\n", "--delta=-6");
	REFUSE(XO_FAIL_VALUE, "T: ctx: --delta: 'x' is not a number\n", "-d", "x");
	REFUSE(XO_FAIL_VALUE, "T: ctx: --mode: 'medium' is not one of: fast, slow\n", "--mode", "medium");

	/* abbrev: a unique prefix is the option, an exact name wins over longer
	 * ones, a shared prefix is refused with the candidates */
	modes_on = (struct xo_parser){ .abbrev = true };
	n = parse(&o, false, ARGS("--fl", "--co=9", "--na", "v", "--mo", "fast", "a"));
	CHECK(n == 1 && o.flag && o.u32 == 9 && !strcmp(o.str, "v") && o.mode == 1 && !msg[0]);
	n = parse(&o, false, ARGS("--o", "a")); /* --other, the only "o..." */
	CHECK(n == 1 && o.other && !o.flag);
	REFUSE(XO_FAIL_AMBIGUOUS, "T: ctx: option '--d' is ambiguous (--delta, --d2)\n", "--d");
	REFUSE(XO_FAIL_UNKNOWN, "T: ctx: unknown option '--flagx'\n", "--flagx");
	REFUSE(XO_FAIL_FORM, "T: ctx: --flag takes no value\n", "--fla=1");
	REFUSE(XO_FAIL_FORM, "T: ctx: --count needs a value (N)\n", "--cou");
	n = parse(&o, false, ARGS("--d2", "a")); /* exact, though --d is ambiguous */
	CHECK(n == 1 && o.flag && o.other);
	/* bundle: flags together, a value after its letter or as the next argument */
	modes_on = (struct xo_parser){ .bundle = true };
	n = parse(&o, false, ARGS("-fc5", "a"));
	CHECK(n == 1 && o.flag && o.u32 == 5);
	n = parse(&o, false, ARGS("-fc", "6", "-d-2", "-nfoo", "a"));
	CHECK(n == 1 && o.flag && o.u32 == 6 && o.s64 == -2 && !strcmp(o.str, "foo"));
	REFUSE(XO_FAIL_UNKNOWN, "T: ctx: unknown option '-x'\n", "-fx");
	REFUSE(XO_FAIL_FORM, "T: ctx: --count needs a value (N)\n", "-fc");
	REFUSE(XO_FAIL_VALUE, "T: ctx: --count: 0 is out of range 1..100\n", "-fc0");
	REFUSE(XO_FAIL_UNKNOWN, "T: ctx: unknown option '--fl'\n", "--fl"); /* no abbrev here */
	/* values_joined: "--x v" is not a value */
	modes_on = (struct xo_parser){ .values_joined = true };
	n = parse(&o, false, ARGS("--count=3", "-c", "4", "a"));
	CHECK(n == 1 && o.u32 == 4);
	REFUSE(XO_FAIL_FORM, "T: ctx: --count needs a value (N)\n", "--count", "3", "a");
	/* pass_unknown: the rest stays in argv, in order, for another parser */
	modes_on = (struct xo_parser){ .pass_unknown = true, .values_joined = true };
	{
		char *av[] = { "a", "--bogus=1", "-f", "--count=8", "b", "-xy", "extra", "--flag", "-z", "--", "--other" };
		memset(&o, 0, sizeof(o));
		struct xo_set set = { table, &o };
		struct xo_parser p = modes_on;
		p.prefix = "T: ";
		n = xo_parse(&p, 11, av, &set, 1, false, "ctx");
		CHECK(n == 6 && o.flag && o.u32 == 8 && !o.other && !strcmp(o.pos1, "a") && !strcmp(o.pos2, "b"));
		CHECK(n == 6 && !strcmp(av[0], "--bogus=1") && !strcmp(av[1], "-xy") && !strcmp(av[2], "extra") &&
		      !strcmp(av[3], "-z") && !strcmp(av[4], "--") && !strcmp(av[5], "--other"));
		/* its own options' values are still checked */
		char *bv[] = { "--bogus", "--count=0" };
		p.quiet = true;
		CHECK(xo_parse(&p, 2, bv, &set, 1, false, "ctx") == -1 && p.fail == XO_FAIL_VALUE && p.at == 1);
	}
	modes_on = (struct xo_parser){ 0 };

	/* quiet, values apart, no "--" marker, an own type without a value */
	{
		static const struct xo t2[] = {
			{ "count", 'c', XO_U32, offsetof(struct o, u32), "N", "a count", 1, 100 },
			{ "go", 'g', T_LEN, offsetof(struct o, ext), NULL, "no value", .flags = XO_NOVAL },
			XO_END,
		};
		struct o q = {};
		struct xo_set set = { t2, &q };
		struct xo_parser p = { .prefix = "T: ", .ext = ext, .quiet = true, .values_apart = true,
				       .no_end_marker = true };
		char *a1[] = { "-c", "5", "--count=6" };
		CHECK(xo_parse(&p, 3, a1, &set, 1, false, "q") == -1 && p.fail == XO_FAIL_UNKNOWN && p.at == 2);
		CHECK(q.u32 == 5);
		char *a2[] = { "-c", "5", "--", "x" };
		CHECK(xo_parse(&p, 4, a2, &set, 1, false, "q") == -1 && p.fail == XO_FAIL_UNKNOWN && p.at == 2);
		char *a3[] = { "-c", "5", "x" };
		CHECK(xo_parse(&p, 3, a3, &set, 1, false, "q") == -1 && p.fail == XO_FAIL_UNEXPECTED && p.at == 2);
		char *a4[] = { "--go", "-c" };
		CHECK(xo_parse(&p, 2, a4, &set, 1, false, "q") == -1 && p.fail == XO_FAIL_FORM && p.at == 1);
		CHECK(q.ext == -1); /* parse_len got NULL */
		char *a5[] = { "--go=1" };
		CHECK(xo_parse(&p, 1, a5, &set, 1, false, "q") == -1 && p.fail == XO_FAIL_UNKNOWN && p.at == 0);
	}

	/* the forms help is written with */
	char form[64];
	xo_opt_form(&table[4], form, sizeof(form));
	CHECK(!strcmp(form, "-c, --count N"));
	xo_opt_form(&table[3], form, sizeof(form));
	CHECK(!strcmp(form, "--other"));
	xo_opt_form(&table[0], form, sizeof(form));
	CHECK(!strcmp(form, "FIRST"));
	char vals[64] = "";
	FILE *f = fmemopen(vals, sizeof(vals), "w");
	xo_opt_values(f, &table[4]);
	xo_opt_values(f, &table[8]);
	xo_opt_values(f, &table[5]);
	fclose(f);
	CHECK(!strcmp(vals, " [1..100] (fast|slow)"));

	if (fails) {
		fprintf(stderr, "test_opts: %d check(s) failed\n", fails);
		return 1;
	}
	printf("test_opts: all checks passed\n");
	return 0;
}
