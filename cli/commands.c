// SPDX-License-Identifier: MIT
/* The command table that main.c walks and help.c and man.c render, and the
 * global options every command accepts. */
#include "cli.h"

const struct cmd *const commands[] = {
	&cmd_attach, &cmd_detach, &cmd_serve, &cmd_status, &cmd_get, &cmd_set,
	&cmd_del, &cmd_load, &cmd_snapshot, &cmd_restore, &cmd_migrate, &cmd_dump, &cmd_import, &cmd_acl, &cmd_layouts, &cmd_verify, &cmd_compare, NULL,
};

const struct xo global_table[] = {
	{ "layout", 0, XO_STR, offsetof(struct global_opts, layout), "NAME",
	  "storage layout for attach (see 'xdpkv layouts'; default lru, which evicts when full; "
	  "'null': a benchmark floor that answers every get with one fixed value)" },
	{ "variant", 0, XO_STR, offsetof(struct global_opts, layout), "NAME",
	  "the same as --layout (its first name, kept)" },
	{ "verbose", 'v', XO_BOOL, offsetof(struct global_opts, verbose), NULL,
	  "print libbpf/libxdp debug output and more detail" },
	{ "help", 'h', XO_BOOL, offsetof(struct global_opts, help), NULL, "show help and exit" },
	{ "version", 'V', XO_BOOL, offsetof(struct global_opts, version), NULL,
	  "show the version and exit" },
	XO_END,
};
