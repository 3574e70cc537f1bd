// SPDX-License-Identifier: MIT
/* xdpkv verify: would this kernel load the layout's programs, and at what
 * cost?  Each program loaded alone, nothing attached (store/verify.c). */
#include <stdlib.h>
#include <string.h>
#include "cli.h"

struct verify_opts {
	bool all, json, binary_keys, strict_keys, no_xdp_tcp;
	unsigned key_size, value_size, rate_limit, budget;
};

static const struct xo verify_table[] = {
	{ "all", 0, XO_BOOL, offsetof(struct verify_opts, all), NULL,
	  "every layout, not only --layout's" },
	{ "key-size", 'k', XO_U32, offsetof(struct verify_opts, key_size), "K",
	  "as attach's --key-size (default 64)", 1, XKV_KEY_MAX },
	{ "value-size", 's', XO_U32, offsetof(struct verify_opts, value_size), "V",
	  "as attach's --value-size (default 1024)", 1, XKV_VAL_MAX },
	{ "strict-keys", 0, XO_BOOL, offsetof(struct verify_opts, strict_keys), NULL,
	  "as attach's --strict-keys (the default: binary keys, as attach's)" },
	{ "binary-keys", 0, XO_BOOL, offsetof(struct verify_opts, binary_keys), NULL,
	  "as attach's --binary-keys (the default)" },
	{ "no-xdp-tcp", 0, XO_BOOL, offsetof(struct verify_opts, no_xdp_tcp), NULL,
	  "as attach's --no-xdp-tcp (the TCP responder's programs are not loaded)" },
	{ "rate-limit", 0, XO_U32, offsetof(struct verify_opts, rate_limit), "REQ/S",
	  "as attach's --rate-limit", 1, 100000000 },
	{ "budget", 0, XO_U32, offsetof(struct verify_opts, budget), "N",
	  "exit 1 when a program needs more than N processed instructions (default 250000)", 1,
	  1000000 },
	{ "json", 'j', XO_BOOL, offsetof(struct verify_opts, json), NULL,
	  "one JSON object per program, a line each" },
	XO_END,
};

struct verify_run {
	const struct verify_opts *o;
	const struct xkv_config *cfg;
	unsigned budget;
	int refused, over, unavailable;
};

static int print_cost(void *arg, const struct xkv_prog_cost *c)
{
	struct verify_run *r = arg;
	bool over = !c->err && c->insns > r->budget;

	r->refused += !!c->err;
	r->over += over;
	if (r->o->json) {
		printf("{\"layout\":");
		json_cstr(stdout, r->cfg->layout);
		printf(",\"program\":");
		json_cstr(stdout, c->name);
		printf(",\"key_size\":%u,\"value_size\":%u,\"binary_keys\":%s,\"loaded\":%s,"
		       "\"insns\":%u,\"time_us\":%u,\"stack\":%u,\"wall_ms\":%u,\"budget\":%u,\"reason\":",
		       r->cfg->key_cap, r->cfg->val_cap, r->cfg->flags & XKV_CFG_BINARY_KEYS ? "true" : "false",
		       c->err ? "false" : "true", c->insns, c->time_us, c->stack, c->wall_ms, r->budget);
		json_cstr(stdout, c->reason);
		printf("}\n");
	} else {
		printf("%-10s %-20s %9u %8.1f %6u  %s%s\n", r->cfg->layout, c->name, c->insns,
		       c->time_us / 1000.0, c->stack, c->err ? "refused: " : over ? "over budget" : "ok",
		       c->reason);
	}
	fflush(stdout);
	return 0;
}

static int run_verify(void *vo, const struct global_opts *g)
{
	struct verify_opts *o = vo;
	struct verify_run r = { .o = o, .budget = o->budget ? o->budget : 250000 };
	char err[XKV_ERRLEN];
	int rc;

	if ((rc = need_privileges("verify")))
		return rc;
	if (!o->all && g->layout && !xkv_layout_find_any(g->layout)) {
		xerr("verify: unknown layout '%s' (xdpkv layouts lists them)", g->layout);
		return EXIT_USAGE;
	}
	if (!o->json)
		printf("%-10s %-20s %9s %8s %6s  %s\n", "LAYOUT", "PROGRAM", "INSNS", "MS", "STACK", "RESULT");
	for (int i = 0; o->all ? !!xkv_layouts[i] : i == 0; i++) {
		const char *name = o->all ? xkv_layouts[i]->name : g->layout ? g->layout : XKV_LAYOUT_DEFAULT;
		struct xkv_config cfg;
		if (xkv_config_defaults(&cfg, name)) {
			xerr("verify: unknown layout '%s' (xdpkv layouts lists them)", name);
			return EXIT_USAGE;
		}
		config_sizes(&cfg, 0, o->key_size, o->value_size);
		if (!o->strict_keys)
			cfg.flags |= XKV_CFG_BINARY_KEYS;
		if (o->no_xdp_tcp)
			cfg.flags |= XKV_CFG_NO_XDP_TCP;
		cfg.rate_limit = cfg.rate_burst = o->rate_limit;
		cfg.max_amp = XKV_DEFAULT_MAX_AMP;
		cfg.entries = 1024; /* the verifier's work does not depend on it */
		if (xkv_config_finish(&cfg, err, sizeof(err))) {
			xerr("verify: %s", err);
			return EXIT_USAGE;
		}
		r.cfg = &cfg;
		char why[200];
		int av = xkv_layout_probe(xkv_layout_find_any(name), why, sizeof(why));
		if (av == 0) {
			/* not a refusal of ours: the kernel lacks the layout's map */
			if (o->json) {
				printf("{\"layout\":");
				json_cstr(stdout, name);
				printf(",\"program\":\"-\",\"key_size\":%u,\"value_size\":%u,\"binary_keys\":%s,"
				       "\"loaded\":false,\"available\":false,\"reason\":", cfg.key_cap, cfg.val_cap,
				       cfg.flags & XKV_CFG_BINARY_KEYS ? "true" : "false");
				json_cstr(stdout, why);
				printf("}\n");
			} else {
				printf("%-10s %-20s %9s %8s %6s  unavailable: %s\n", name, "-", "-", "-", "-", why);
			}
			r.unavailable++;
			continue;
		}
		if ((rc = xkv_verify_layout(&cfg, print_cost, &r, err, sizeof(err)))) {
			xerr("verify: %s", err);
			xlog_dump();
			return EXIT_SYS;
		}
	}
	/* a layout the kernel lacks fails only when it was asked for by name */
	if (r.unavailable && !o->all)
		return EXIT_SYS;
	return r.refused ? EXIT_SYS : r.over ? EXIT_MISS : EXIT_OK;
}

const struct cmd cmd_verify = {
	.name = "verify",
	.synopsis = "[--all] [-k K] [-s V] [--strict-keys] [--no-xdp-tcp] [--budget N] [--json]",
	.summary = "load the layout's programs without attaching: what this kernel's verifier says",
	.doc = "Loads each program attach would load for these settings, one at a time, on nothing,\n"
	       "and prints the verifier's own statistics: processed instructions (the kernel refuses a\n"
	       "program at 1,000,000), its verification time and the deepest stack frame; a program\n"
	       "the kernel refuses is printed with the verifier's last line.  xdpkv keeps every\n"
	       "program within a quarter of the kernel's limit (--budget).  A layout whose map this\n"
	       "kernel cannot create (arena where BPF arenas are missing or not permitted) is listed\n"
	       "as unavailable, with the kernel's reason.  Exit status 0 all loaded within the\n"
	       "budget (with --all: unavailable layouts aside), 1 one over it, 3 one refused.\n\n"
	       "Example: xdpkv verify --all -k 250 -s 16384 --strict-keys --json",
	.opts = verify_table,
	.opts_size = sizeof(struct verify_opts),
	.uses_layout = true,
	.run = run_verify,
};
