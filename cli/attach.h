/* SPDX-License-Identifier: MIT */
/* attach's options, shared by the files that make up the attach command:
 * attach.c (the command), attach_config.c, attach_policy.c. */
#ifndef XDPKV_CLI_ATTACH_H
#define XDPKV_CLI_ATTACH_H

#include "cli.h"

struct attach_opts {
	struct xo_iface ifc;
	int mode;
	unsigned entries, key_size, value_size, port;
	unsigned big_memory;     /* MiB; 0: the default */
	bool no_big;
	bool no_prealloc, no_common_lru, binary_keys, strict_keys, serve;
	const char *hash_seed;   /* --hash-seed as given (NULL: random, or the pinned one) */
	bool fnv_unseeded;
	bool replace, reset_acl; /* re-attach */
	const char *restore;
	/* access policy (docs/security.md) */
	struct xo_cidrs allow, write_allow, trust;
	unsigned max_amp, rate_limit, rate_burst;
	bool strict, low_ports;
	bool no_tcp_fast;
	bool no_xdp_tcp;
	const char *sasl_pwdb;   /* with --serve: SASL required (serve --sasl-pwdb) */
	struct xkv_sasl *sasl;   /* read before anything is attached */
};

/* attach_config.c: cfg from o for layout (unknown: the list, EXIT_USAGE).
 * 0 or an exit code (printed). */
int build_config(const struct attach_opts *o, const char *layout, struct xkv_config *cfg);
/* attach_config.c: a re-attach takes the pinned seed and arena address. */
int keep_pinned_seed(const struct attach_opts *o, const struct prior *pr, struct xkv_config *cfg);
/* attach_policy.c: fill the access lists and the host's view (*kept: the
 * entries of before that stay).  0 or -errno (err says why). */
int attach_policy(struct xkv_store *s, const struct attach_opts *o, bool reused, int *kept,
		  char *err, size_t errlen);
/* attach_fallback.c: put_prog failed with e.  Loads each program alone to
 * learn what this kernel refuses: only optional ones (the TCP responder, the
 * TCP verdict): one line each, their XKV_CFG_NO_* flags into cfg, and 0 (open
 * and put the object again); the XDP program itself, or nothing refused
 * (the attach failed): printed, -1. */
int attach_load_failed(struct bpf_object *obj, struct xkv_config *cfg, int e, const struct xo_iface *ifc,
		       int mode);
/* attach_policy.c: the "access:" and "replies:" lines. */
void print_policy(const struct xkv_store *s, const struct attach_opts *o);

#endif
