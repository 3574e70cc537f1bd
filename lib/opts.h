/* SPDX-License-Identifier: MIT */
/* One table-driven option parser for every tool: each tool declares its
 * options as a table of rows (name, short letter, type, field, help, range)
 * and this reads argv into a struct of its own.  Positional arguments are
 * rows too (XO_POS), taken in table order.  Help text is written from the
 * same rows (xo_opt_form, xo_opt_values). */
#ifndef XKV_LIB_OPTS_H
#define XKV_LIB_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum xo_type {
	XO_BOOL,  /* bool, no argument */
	XO_U32,   /* unsigned int, range min..max */
	XO_U64,   /* unsigned long long, range min..max */
	XO_S64,   /* long long, range min..max */
	XO_STR,   /* const char * (points into argv) */
	XO_ENUM,  /* int, one of enums[] */
	XO_EXT = 64, /* from here on: a tool's own types (struct xo_parser's ext) */
};

#define XO_POS       1u /* positional argument */
#define XO_REQ       2u /* required (positional) */
#define XO_NOVAL     4u /* a tool's own type that takes no value (its parse gets NULL) */
/* bits from 0x100 up: free for a tool's own types */

struct xo_enum {
	const char *name;
	int val;
};

struct xo {
	const char *name;      /* long option without "--", or the positional's name */
	char sh;               /* short option letter, 0 for none */
	int type;              /* enum xo_type, or a tool's own (>= XO_EXT) */
	size_t off;            /* offsetof() in the option struct */
	const char *metavar;   /* shown in help; NULL for XO_BOOL */
	const char *help;
	long long min, max;    /* numeric range (inclusive); min == max == 0: no check */
	const struct xo_enum *enums; /* XO_ENUM: NULL-name terminated */
	unsigned flags;        /* XO_POS, XO_REQ, a tool's own */
};
#define XO_END { NULL }

/* A table and the struct its rows point into. */
struct xo_set {
	const struct xo *table;
	void *base;
};

/* A tool's own type: parse arg into field; 0, or -1 after printing why. */
struct xo_ext {
	int type;
	int (*parse)(const char *ctx, const struct xo *o, const char *arg, void *field);
};

/* Why xo_parse failed (its message is printed already). */
enum xo_fail {
	XO_FAIL_NONE,
	XO_FAIL_UNKNOWN,    /* an option no table has */
	XO_FAIL_UNEXPECTED, /* a positional argument too many */
	XO_FAIL_VALUE,      /* a value out of range or not of its type; a bad short form */
	XO_FAIL_FORM,       /* a value missing, or given to an option that takes none */
	XO_FAIL_AMBIGUOUS,  /* abbrev: a prefix of several long options */
};

/* How a tool's parse reads and reports: messages go to stderr as
 * "<prefix>ctx: ...", or, quiet, not at all (the tool writes its own from
 * fail and at; its own types' messages are its own anyway). */
struct xo_parser {
	const char *prefix;        /* e.g. "xdpkv: " */
	const struct xo_ext *ext;  /* the tool's own types, ended by parse == NULL; or NULL */
	bool quiet;                /* print nothing */
	bool values_apart;         /* "--name=value" is not a form: values come as the next argument */
	bool no_end_marker;        /* "--" is an argument like any other, not the end of the options */
	/* getopt_long's forms, for tools that had it: */
	bool abbrev;               /* a long option may be cut to any prefix no other long option has */
	bool bundle;               /* short flags bundle ("-vh"); a short option's value may follow
				    * its letter ("-p5", "-vp5") */
	bool values_joined;        /* a long option's value only as "--name=value" ("--name" alone
				    * misses it; the next argument is never taken) */
	bool pass_unknown;         /* unknown options, and positionals no row takes, are not errors:
				    * they are kept, in order, in argv[0..n) and n is returned */
	enum xo_fail fail;         /* out: why the last xo_parse failed */
	int at;                    /* out: the index in argv of the argument it failed on */
};

/* Parse argv[0..argc) against sets (the first set's table gives the
 * positionals).  "--" ends the options; "-" alone is a positional.
 * stop_at_arg: stop at the first non-option and return its index;
 * pass_unknown: return the number of arguments kept (argv is rewritten);
 * otherwise return the number of positionals read.  -1 after printing an
 * error (p->fail says which kind, p->at where). */
int xo_parse(struct xo_parser *p, int argc, char **argv, const struct xo_set *sets, int nsets,
	     bool stop_at_arg, const char *ctx);
/* The first required positional beyond npos, or NULL. */
const struct xo *xo_missing(const struct xo *table, int npos);
/* An option as help shows it: "-x, --name META", "--name META" or "NAME". */
void xo_opt_form(const struct xo *o, char *buf, size_t len);
/* Its values, if it lists them: " (a|b)" or " [min..max]". */
void xo_opt_values(FILE *f, const struct xo *o);

#ifdef __cplusplus
}
#endif

#endif
