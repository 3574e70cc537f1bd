// SPDX-License-Identifier: MIT
/* xdpkv's own option types on lib/opts' parser (an interface, a list of
 * CIDRs) and the parse every command goes through, with xdpkv's hints. */
#include <errno.h>
#include <string.h>
#include "cli.h"

static int parse_iface(const char *ctx, const struct xo *o, const char *arg, void *field)
{
	struct xo_iface *ifc = field;
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

static int parse_cidrs(const char *ctx, const struct xo *o, const char *arg, void *field)
{
	struct xo_cidrs *c = field;
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

static const struct xo_ext cli_types[] = {
	{ XO_IFACE, parse_iface },
	{ XO_CIDRS, parse_cidrs },
	{ 0, NULL },
};

int cli_parse(int argc, char **argv, const struct xo_set *sets, int nsets, bool stop_at_arg,
	      const char *ctx)
{
	/* ctx NULL: xdpkv's own options, before the command ("xdpkv: unknown
	 * option '-x'", not "xdpkv: xdpkv: ...") */
	struct xo_parser p = { .prefix = ctx ? "xdpkv: " : "", .ext = cli_types };
	int n = xo_parse(&p, argc, argv, sets, nsets, stop_at_arg, ctx ? ctx : "xdpkv");

	if (p.fail == XO_FAIL_UNKNOWN)
		xhint("'xdpkv%s%s --help' lists %s options", ctx ? " " : "", ctx ? ctx : "",
		      ctx ? "its" : "the commands and");
	else if (p.fail == XO_FAIL_UNEXPECTED)
		xhint("'xdpkv%s%s --help' shows the usage", ctx ? " " : "", ctx ? ctx : "");
	return n;
}
