// SPDX-License-Identifier: MIT
/* xdpkv --help and xdpkv COMMAND --help, written from the command table
 * (commands.c) and the option tables. */
#include <string.h>
#include "cli.h"


const char xo_about[] =
	"xdpkv keeps a memcached-compatible key-value store in an XDP program: the\n"
	"kernel answers get/set/delete over UDP, and over the TCP connections the\n"
	"slow path accepted, before the network stack; the userspace slow path\n"
	"answers the rest, over UDP and TCP, from the same BPF maps.";

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
		if (c->uses_layout || (strcmp(o->name, "layout") && strcmp(o->name, "variant")))
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
