// SPDX-License-Identifier: MIT
/* One table-driven option parser for every tool (opts.h): argv into a
 * struct, every value checked with a message naming the option, and the
 * option forms that help text is written with. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "opts.h"

/* "<prefix>message\n" on stderr */
__attribute__((format(printf, 2, 3)))
static void perr(const struct xo_parser *p, const char *fmt, ...)
{
	va_list ap;
	if (p->quiet)
		return;
	va_start(ap, fmt);
	fputs(p->prefix ? p->prefix : "", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void *field(const struct xo_set *set, const struct xo *o)
{
	return (char *)set->base + o->off;
}

static int parse_ll(const struct xo_parser *p, const char *ctx, const struct xo *o, const char *arg, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(arg, &end, 0);
	if (!*arg || *end || errno) {
		perr(p, "%s: --%s: '%s' is not a number", ctx, o->name, arg);
		return -1;
	}
	if ((o->min || o->max) && (v < o->min || v > o->max)) {
		perr(p, "%s: --%s: %lld is out of range %lld..%lld", ctx, o->name, v, o->min, o->max);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_ull(const struct xo_parser *p, const char *ctx, const struct xo *o, const char *arg, unsigned long long *out)
{
	char *end;
	errno = 0;
	if (*arg == '-') {
		perr(p, "%s: --%s: '%s' must not be negative", ctx, o->name, arg);
		return -1;
	}
	unsigned long long v = strtoull(arg, &end, 0);
	if (!*arg || *end || errno) {
		perr(p, "%s: --%s: '%s' is not a number", ctx, o->name, arg);
		return -1;
	}
	if ((o->min || o->max) && (v < (unsigned long long)o->min || v > (unsigned long long)o->max)) {
		perr(p, "%s: --%s: %llu is out of range %lld..%lld", ctx, o->name, v, o->min, o->max);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_enum(const struct xo_parser *p, const char *ctx, const struct xo *o, const char *arg, int *out)
{
	for (const struct xo_enum *e = o->enums; e->name; e++)
		if (!strcmp(e->name, arg)) {
			*out = e->val;
			return 0;
		}
	char names[256] = "";
	for (const struct xo_enum *e = o->enums; e->name; e++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 e == o->enums ? "" : ", ", e->name);
	perr(p, "%s: --%s: '%s' is not one of: %s", ctx, o->name, arg, names);
	return -1;
}

/* Store arg into the option's field.  0 or -1 (message printed). */
static int set_value(const struct xo_parser *p, const char *ctx, const struct xo_set *set, const struct xo *o, const char *arg)
{
	void *f = field(set, o);
	long long ll;
	unsigned long long ull;

	switch (o->type) {
	case XO_BOOL:
		*(bool *)f = true;
		return 0;
	case XO_U32:
		if (parse_ull(p, ctx, o, arg, &ull))
			return -1;
		if (ull > UINT_MAX) {
			perr(p, "%s: --%s: %llu is too large", ctx, o->name, ull);
			return -1;
		}
		*(unsigned *)f = (unsigned)ull;
		return 0;
	case XO_U64:
		if (parse_ull(p, ctx, o, arg, &ull))
			return -1;
		*(unsigned long long *)f = ull;
		return 0;
	case XO_S64:
		if (parse_ll(p, ctx, o, arg, &ll))
			return -1;
		*(long long *)f = ll;
		return 0;
	case XO_STR:
		*(const char **)f = arg;
		return 0;
	case XO_ENUM:
		return parse_enum(p, ctx, o, arg, f);
	}
	for (const struct xo_ext *x = p->ext; x && x->parse; x++)
		if (x->type == o->type)
			return x->parse(ctx, o, arg, f);
	perr(p, "%s: --%s: option of unknown type %d", ctx, o->name, o->type);
	return -1;
}

/* Find a named option in the sets; *set_out receives its set. */
static const struct xo *find_opt(const struct xo_set *sets, int nsets, const char *name, size_t nlen,
				 char sh, const struct xo_set **set_out)
{
	for (int s = 0; s < nsets; s++)
		for (const struct xo *o = sets[s].table; o->name; o++) {
			if (o->flags & XO_POS)
				continue;
			if ((sh && o->sh == sh) ||
			    (!sh && strlen(o->name) == nlen && !strncmp(o->name, name, nlen))) {
				*set_out = &sets[s];
				return o;
			}
		}
	return NULL;
}

/* abbrev: the one long option name[0..nlen) is a prefix of.  NULL if none;
 * *ambiguous (and a message) if several. */
static const struct xo *find_prefix(const struct xo_parser *p, const char *ctx, const struct xo_set *sets,
				    int nsets, const char *arg, const char *name, size_t nlen,
				    const struct xo_set **set_out, bool *ambiguous)
{
	const struct xo *found = NULL;
	char names[512] = "";

	*ambiguous = false;
	for (int s = 0; s < nsets; s++)
		for (const struct xo *o = sets[s].table; o->name; o++) {
			if ((o->flags & XO_POS) || strncmp(o->name, name, nlen))
				continue;
			size_t used = strlen(names);
			snprintf(names + used, sizeof(names) - used, "%s--%s", used ? ", " : "", o->name);
			if (found)
				*ambiguous = true;
			found = o;
			*set_out = &sets[s];
		}
	if (*ambiguous) {
		perr(p, "%s: option '%s' is ambiguous (%s)", ctx, arg, names);
		return NULL;
	}
	return found;
}

static const struct xo *next_positional(const struct xo *table, int *npos)
{
	int i = 0;
	for (const struct xo *o = table; o->name; o++)
		if (o->flags & XO_POS) {
			if (i == *npos) {
				(*npos)++;
				return o;
			}
			i++;
		}
	return NULL;
}

enum { TAKEN, KEEP = 1 }; /* take_option: done, or pass_unknown keeps the argument */

/* "-xyz" under bundle: each letter a flag, until one that takes a value (the
 * rest, or the next argument). */
static int take_shorts(struct xo_parser *p, int argc, char **argv, int *i, const struct xo_set *sets,
		       int nsets, const char *ctx)
{
	const char *a = argv[*i];
	for (const char *c = a + 1; *c; c++) {
		const struct xo_set *set = NULL;
		const struct xo *o = find_opt(sets, nsets, NULL, 0, *c, &set);
		if (!o) {
			if (p->pass_unknown && c == a + 1)
				return KEEP;
			perr(p, "%s: unknown option '-%c'", ctx, *c);
			p->fail = XO_FAIL_UNKNOWN;
			return -1;
		}
		if (o->type == XO_BOOL || (o->flags & XO_NOVAL)) {
			if (set_value(p, ctx, set, o, NULL))
				return -1;
			continue;
		}
		if (c[1])
			return set_value(p, ctx, set, o, c + 1);
		if (*i + 1 >= argc) {
			perr(p, "%s: --%s needs a value (%s)", ctx, o->name, o->metavar ? o->metavar : "VALUE");
			p->fail = XO_FAIL_FORM;
			return -1;
		}
		return set_value(p, ctx, set, o, argv[++*i]);
	}
	return TAKEN;
}

static int take_option(struct xo_parser *p, int argc, char **argv, int *i, const struct xo_set *sets, int nsets,
		       const char *ctx)
{
	const char *a = argv[*i], *name, *val = NULL;
	const struct xo_set *set = NULL;
	const struct xo *o;
	char sh = 0;
	size_t nlen;

	p->at = *i;
	if (a[1] == '-') {
		name = a + 2;
		const char *eq = p->values_apart ? NULL : strchr(name, '=');
		nlen = eq ? (size_t)(eq - name) : strlen(name);
		if (eq)
			val = eq + 1;
	} else {
		if (a[2] && p->bundle)
			return take_shorts(p, argc, argv, i, sets, nsets, ctx);
		if (a[2] && !p->pass_unknown) {
			perr(p, "%s: '%s': short options take one letter (write -v -h, or the long form)", ctx, a);
			return -1;
		}
		name = a + 1;
		nlen = 1;
		sh = a[2] ? 0 : a[1]; /* pass_unknown: "-xy" is no option of ours */
	}
	o = sh || a[1] == '-' ? find_opt(sets, nsets, name, nlen, sh, &set) : NULL;
	if (!o && p->abbrev && !sh && a[1] == '-' && nlen) {
		bool ambiguous;
		o = find_prefix(p, ctx, sets, nsets, a, name, nlen, &set, &ambiguous);
		if (ambiguous) {
			p->fail = XO_FAIL_AMBIGUOUS;
			return -1;
		}
	}
	if (!o) {
		if (p->pass_unknown)
			return KEEP;
		perr(p, "%s: unknown option '%s'", ctx, a);
		p->fail = XO_FAIL_UNKNOWN;
		return -1;
	}
	if (o->type == XO_BOOL || (o->flags & XO_NOVAL)) {
		if (val) {
			perr(p, "%s: --%s takes no value", ctx, o->name);
			p->fail = XO_FAIL_FORM;
			return -1;
		}
		return set_value(p, ctx, set, o, NULL);
	}
	if (!val) {
		if (*i + 1 >= argc || (p->values_joined && !sh)) {
			perr(p, "%s: --%s needs a value (%s)", ctx, o->name, o->metavar ? o->metavar : "VALUE");
			p->fail = XO_FAIL_FORM;
			return -1;
		}
		val = argv[++*i];
	}
	return set_value(p, ctx, set, o, val);
}

int xo_parse(struct xo_parser *p, int argc, char **argv, const struct xo_set *sets, int nsets, bool stop_at_arg,
	     const char *ctx)
{
	int npos = 0, kept = 0;
	bool only_pos = false;
	int i;

	for (i = 0; i < argc; i++) {
		char *a = argv[i];
		p->fail = XO_FAIL_VALUE; /* unless it says otherwise */
		p->at = i;
		if (!only_pos && !p->no_end_marker && !strcmp(a, "--")) {
			only_pos = true;
			if (p->pass_unknown) /* the tool after us sees it too */
				argv[kept++] = a;
			continue;
		}
		/* "-" alone is a positional (stdin) */
		if (!only_pos && a[0] == '-' && a[1]) {
			int r = take_option(p, argc, argv, &i, sets, nsets, ctx);
			if (r < 0)
				return -1;
			if (r == KEEP)
				argv[kept++] = a;
			continue;
		}
		if (stop_at_arg)
			return i;
		const struct xo *o = next_positional(sets[0].table, &npos);
		if (!o && p->pass_unknown) {
			argv[kept++] = a;
			continue;
		}
		if (!o) {
			perr(p, "%s: unexpected argument '%s'", ctx, a);
			p->fail = XO_FAIL_UNEXPECTED;
			return -1;
		}
		if (set_value(p, ctx, &sets[0], o, a))
			return -1;
	}
	p->fail = XO_FAIL_NONE;
	return stop_at_arg ? i : p->pass_unknown ? kept : npos;
}

const struct xo *xo_missing(const struct xo *table, int npos)
{
	int i = 0;
	for (const struct xo *o = table; o->name; o++)
		if (o->flags & XO_POS) {
			if (i >= npos && (o->flags & XO_REQ))
				return o;
			i++;
		}
	return NULL;
}

/* ---- for help text ---- */

void xo_opt_form(const struct xo *o, char *buf, size_t len)
{
	char sh[8] = "";
	if (o->flags & XO_POS) {
		snprintf(buf, len, "%s", o->name);
		return;
	}
	if (o->sh)
		snprintf(sh, sizeof(sh), "-%c, ", o->sh);
	snprintf(buf, len, "%s--%s%s%s", sh, o->name, o->metavar ? " " : "",
		 o->metavar ? o->metavar : "");
}

void xo_opt_values(FILE *f, const struct xo *o)
{
	if (o->type == XO_ENUM) {
		fprintf(f, " (");
		for (const struct xo_enum *e = o->enums; e->name; e++)
			fprintf(f, "%s%s", e == o->enums ? "" : "|", e->name);
		fprintf(f, ")");
	} else if ((o->type == XO_U32 || o->type == XO_U64 || o->type == XO_S64) && (o->min || o->max)) {
		fprintf(f, " [%lld..%lld]", o->min, o->max);
	}
}
