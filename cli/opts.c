// SPDX-License-Identifier: MIT
/* One parser for every command's option table, and the help generated from
 * the same tables. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static void *field(const struct xo_set *set, const struct xo *o)
{
	return (char *)set->base + o->off;
}

static int parse_ll(const char *ctx, const struct xo *o, const char *arg, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(arg, &end, 0);
	if (!*arg || *end || errno) {
		xerr("%s: --%s: '%s' is not a number", ctx, o->name, arg);
		return -1;
	}
	if ((o->min || o->max) && (v < o->min || v > o->max)) {
		xerr("%s: --%s: %lld is out of range %lld..%lld", ctx, o->name, v, o->min, o->max);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_ull(const char *ctx, const struct xo *o, const char *arg, unsigned long long *out)
{
	char *end;
	errno = 0;
	if (*arg == '-') {
		xerr("%s: --%s: '%s' must not be negative", ctx, o->name, arg);
		return -1;
	}
	unsigned long long v = strtoull(arg, &end, 0);
	if (!*arg || *end || errno) {
		xerr("%s: --%s: '%s' is not a number", ctx, o->name, arg);
		return -1;
	}
	if ((o->min || o->max) && (v < (unsigned long long)o->min || v > (unsigned long long)o->max)) {
		xerr("%s: --%s: %llu is out of range %lld..%lld", ctx, o->name, v, o->min, o->max);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_iface(const char *ctx, const struct xo *o, const char *arg, struct xo_iface *ifc)
{
	if (!*arg || strlen(arg) >= IF_NAMESIZE || strchr(arg, '/') || !strcmp(arg, ".") ||
	    !strcmp(arg, "..")) {
		xerr("%s: '%s' is not a valid interface name (1..%d characters, no '/')", ctx, arg,
		     IF_NAMESIZE - 1);
		return -1;
	}
	snprintf(ifc->name, sizeof(ifc->name), "%s", arg);
	ifc->ifindex = (int)if_nametoindex(arg);
	if (!ifc->ifindex && !(o->flags & XO_IF_ANY)) {
		xerr("%s: unknown interface '%s': %s", ctx, arg, strerror(errno));
		xhint("'ip -br link' lists the interfaces of this network namespace; for a namespace, "
		      "run xdpkv under 'nsenter --net=/run/netns/NAME' (not 'ip netns exec', which hides bpffs)");
		return -1;
	}
	return 0;
}

static int parse_enum(const char *ctx, const struct xo *o, const char *arg, int *out)
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
	xerr("%s: --%s: '%s' is not one of: %s", ctx, o->name, arg, names);
	return -1;
}

/* Store arg into the option's field.  0 or -1 (message printed). */
static int set_value(const char *ctx, const struct xo_set *set, const struct xo *o, const char *arg)
{
	void *f = field(set, o);
	long long ll;
	unsigned long long ull;

	switch (o->type) {
	case XO_BOOL:
		*(bool *)f = true;
		return 0;
	case XO_U32:
		if (parse_ull(ctx, o, arg, &ull))
			return -1;
		if (ull > UINT_MAX) {
			xerr("%s: --%s: %llu is too large", ctx, o->name, ull);
			return -1;
		}
		*(unsigned *)f = (unsigned)ull;
		return 0;
	case XO_U64:
		if (parse_ull(ctx, o, arg, &ull))
			return -1;
		*(unsigned long long *)f = ull;
		return 0;
	case XO_S64:
		if (parse_ll(ctx, o, arg, &ll))
			return -1;
		*(long long *)f = ll;
		return 0;
	case XO_STR:
		*(const char **)f = arg;
		return 0;
	case XO_IFACE:
		return parse_iface(ctx, o, arg, f);
	case XO_ENUM:
		return parse_enum(ctx, o, arg, f);
	case XO_CIDRS: {
		struct xo_cidrs *c = f;
		char err[256];
		if (c->n >= XO_CIDRS_MAX) {
			xerr("%s: --%s given more than %d times", ctx, o->name, XO_CIDRS_MAX);
			return -1;
		}
		if (xkv_cidr_parse(arg, &c->k[c->n], err, sizeof(err))) {
			xerr("%s: --%s: %s", ctx, o->name, err);
			return -1;
		}
		c->n++;
		return 0;
	}
	}
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

static int take_option(int argc, char **argv, int *i, const struct xo_set *sets, int nsets,
		       const char *ctx)
{
	const char *a = argv[*i], *name, *val = NULL;
	const struct xo_set *set = NULL;
	const struct xo *o;
	char sh = 0;
	size_t nlen;

	if (a[1] == '-') {
		name = a + 2;
		const char *eq = strchr(name, '=');
		nlen = eq ? (size_t)(eq - name) : strlen(name);
		if (eq)
			val = eq + 1;
	} else {
		if (a[2]) {
			xerr("%s: '%s': short options take one letter (write -v -h, or the long form)", ctx, a);
			return -1;
		}
		name = a + 1;
		nlen = 1;
		sh = a[1];
	}
	o = find_opt(sets, nsets, name, nlen, sh, &set);
	if (!o) {
		xerr("%s: unknown option '%s'", ctx, a);
		xhint("'xdpkv %s --help' lists its options", ctx);
		return -1;
	}
	if (o->type == XO_BOOL) {
		if (val) {
			xerr("%s: --%s takes no value", ctx, o->name);
			return -1;
		}
		return set_value(ctx, set, o, NULL);
	}
	if (!val) {
		if (*i + 1 >= argc) {
			xerr("%s: --%s needs a value (%s)", ctx, o->name, o->metavar ? o->metavar : "VALUE");
			return -1;
		}
		val = argv[++*i];
	}
	return set_value(ctx, set, o, val);
}

int xo_parse(int argc, char **argv, const struct xo_set *sets, int nsets, bool stop_at_arg,
	     const char *ctx)
{
	int npos = 0;
	bool only_pos = false;
	int i;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!only_pos && !strcmp(a, "--")) {
			only_pos = true;
			continue;
		}
		/* "-" alone is a positional (stdin) */
		if (!only_pos && a[0] == '-' && a[1]) {
			if (take_option(argc, argv, &i, sets, nsets, ctx))
				return -1;
			continue;
		}
		if (stop_at_arg)
			return i;
		const struct xo *o = next_positional(sets[0].table, &npos);
		if (!o) {
			xerr("%s: unexpected argument '%s'", ctx, a);
			xhint("'xdpkv %s --help' shows the usage", ctx);
			return -1;
		}
		if (set_value(ctx, &sets[0], o, a))
			return -1;
	}
	return stop_at_arg ? i : npos;
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

/* ---- help ---- */

const char xo_about[] =
	"xdpkv keeps a memcached-over-UDP key-value store in an XDP program: the kernel\n"
	"answers get/set/delete before the network stack; a userspace slow path\n"
	"answers the rest from the same BPF maps.";

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

static void print_opt(FILE *f, const struct xo *o)
{
	char form[56], left[64];
	xo_opt_form(o, form, sizeof(form));
	/* a long-only option lines up with the long forms after "-x, " */
	snprintf(left, sizeof(left), "%s%s", (o->flags & XO_POS) || o->sh ? "  " : "      ", form);
	fprintf(f, "%-30s %s", left, o->help);
	xo_opt_values(f, o);
	fputc('\n', f);
}

void xo_print_help(FILE *f, const struct cmd *c)
{
	bool any_pos = false, any_opt = false;

	fprintf(f, "Usage: xdpkv %s %s\n\n%s\n", c->name, c->synopsis, c->summary);
	if (c->doc)
		fprintf(f, "\n%s\n", c->doc);
	for (const struct xo *o = c->opts; o->name; o++)
		any_pos |= !!(o->flags & XO_POS), any_opt |= !(o->flags & XO_POS);
	if (any_pos) {
		fprintf(f, "\nArguments:\n");
		for (const struct xo *o = c->opts; o->name; o++)
			if (o->flags & XO_POS)
				print_opt(f, o);
	}
	if (any_opt) {
		fprintf(f, "\nOptions:\n");
		for (const struct xo *o = c->opts; o->name; o++)
			if (!(o->flags & XO_POS))
				print_opt(f, o);
	}
	fprintf(f, "\nGlobal options:\n");
	for (const struct xo *o = global_table; o->name; o++)
		if (c->uses_layout || strcmp(o->name, "variant"))
			print_opt(f, o);
	fprintf(f, "\nExit status: 0 ok, 1 not found / nothing to do, 2 usage error, 3 system error.\n");
}

void xo_print_usage(FILE *f)
{
	fprintf(f, "Usage: xdpkv [global options] COMMAND [arguments] [options]\n\n%s\n\nCommands:\n",
		xo_about);
	for (int i = 0; commands[i]; i++)
		fprintf(f, "  %-9s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(f, "\nGlobal options (before or after the command):\n");
	for (const struct xo *o = global_table; o->name; o++)
		print_opt(f, o);
	fprintf(f, "\n'xdpkv COMMAND --help' describes a command.  docs/cli.md has examples.\n");
}
