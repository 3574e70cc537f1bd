// SPDX-License-Identifier: MIT
/* What the running kernel's verifier says of a layout's programs: each
 * program loaded alone (nothing attached), with the verifier's statistics
 * (log level 4: processed instructions, verification time, stack depth), or
 * the reason it was refused (the verifier's last line).  `xdpkv verify`, the
 * suite's verifier budget and the kernel matrix read it.
 *
 * For finding where the verifier spends its work (docs/architecture.md,
 * "Keeping the verifier happy"): XKV_VERIFY_LOG=1 copies each program's log
 * to stderr, XKV_VERIFY_LEVEL=6 makes it the instruction-by-instruction log
 * (with XKV_VLOG=BYTES, up to 1 GB, for a program of 100,000s of them). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "xdpkv.h"

/* The statistics line comes last, a failed load's reason just before it.  The
 * kernel counts the whole log's size against the buffer even at level 4 and
 * refuses a program whose log would not fit (ENOSPC): a large one. */
static size_t verify_log_size(void)
{
	const char *v = getenv("XKV_VLOG");
	return v ? strtoul(v, NULL, 0) : 16u << 20;
}

static void parse_stats(const char *log, struct xkv_prog_cost *c)
{
	const char *p = strstr(log, "processed ");
	if (p)
		sscanf(p, "processed %u insns", &c->insns);
	p = strstr(log, "verification time ");
	if (p)
		sscanf(p, "verification time %u usec", &c->time_us);
	p = strstr(log, "stack depth ");
	if (p) {
		/* "stack depth 120+32+0": the main program's and each subprogram's */
		unsigned v, sum = 0;
		const char *q = p + strlen("stack depth ");
		while (sscanf(q, "%u", &v) == 1) {
			if (v > sum)
				sum = v;
			q += strspn(q, "0123456789");
			if (*q != '+')
				break;
			q++;
		}
		c->stack = sum;
	}
}

/* The last line of the log that is not one of the statistics' lines: the
 * verifier's reason for a refusal. */
static void last_reason(const char *log, char *out, size_t len)
{
	const char *end = log + strlen(log);
	out[0] = 0;
	while (end > log) {
		const char *e = end;
		while (e > log && (e[-1] == '\n' || e[-1] == ' '))
			e--;
		const char *s = e;
		while (s > log && s[-1] != '\n')
			s--;
		if (e == s) {
			end = s;
			if (s == log)
				break;
			continue;
		}
		if (strncmp(s, "processed ", 10) && strncmp(s, "verification time", 17) &&
		    strncmp(s, "stack depth", 11) && strncmp(s, "mark_precise", 12)) {
			snprintf(out, len, "%.*s", (int)(e - s), s);
			return;
		}
		end = s;
	}
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int xkv_verify_layout(const struct xkv_config *cfg, xkv_verify_fn fn, void *arg, char *err, size_t errlen)
{
	const struct xkv_layout *L = xkv_layout_find_any(cfg->layout);
	size_t logsz = verify_log_size();
	char *log = malloc(logsz);
	struct bpf_object *obj;
	struct bpf_program *p;
	int n = 0, e = 0;

	if (!L || !log) {
		free(log);
		return xkv_errf(err, errlen, -EINVAL, "unknown layout '%s'", cfg->layout);
	}
	/* the programs this configuration loads, in the object's order */
	char names[16][64];
	obj = xkv_object_open_with(L, cfg, err, errlen);
	if (!obj) {
		free(log);
		return -EINVAL;
	}
	bpf_object__for_each_program(p, obj)
		if (bpf_program__autoload(p) && n < 16)
			snprintf(names[n++], sizeof(names[0]), "%s", bpf_program__name(p));
	bpf_object__close(obj);
	for (int i = 0; i < n; i++) {
		struct xkv_prog_cost c = {};
		memcpy(c.name, names[i], sizeof(c.name));
		obj = xkv_object_open_with(L, cfg, err, errlen);
		if (!obj) {
			e = -EINVAL;
			break;
		}
		bpf_object__for_each_program(p, obj) {
			bool me = !strcmp(bpf_program__name(p), names[i]);
			bpf_program__set_autoload(p, me);
			if (me) {
				log[0] = 0;
				bpf_program__set_log_buf(p, log, logsz);
				/* BPF_LOG_STATS; XKV_VERIFY_LEVEL=5 adds every state (debugging) */
				bpf_program__set_log_level(p, getenv("XKV_VERIFY_LEVEL") ? atoi(getenv("XKV_VERIFY_LEVEL")) : 4);
			}
		}
		double t0 = now_s();
		c.err = bpf_object__load(obj);
		c.wall_ms = (unsigned)((now_s() - t0) * 1000);
		if (getenv("XKV_VERIFY_LOG"))
			fputs(log, stderr);
		parse_stats(log, &c);
		if (c.err)
			last_reason(log, c.reason, sizeof(c.reason));
		if (c.err && !c.reason[0])
			/* no log: refused before the verifier (a map, a helper) */
			snprintf(c.reason, sizeof(c.reason), "%s", strerror(-c.err));
		bpf_object__close(obj);
		if ((e = fn(arg, &c)))
			break;
	}
	free(log);
	return e;
}

/* Can this kernel hold the layout's store at all?  Its store map created
 * as attach creates it (small), then dropped; the answer kept for the
 * process.  1 yes; 0 no, why says the kernel's reason; <0 -errno when the
 * probe itself could not run (message in why). */
int xkv_layout_probe(const struct xkv_layout *L, char *why, size_t len)
{
	static struct {
		const struct xkv_layout *L;
		int rc;
		char why[160];
	} seen[16];
	struct xkv_config cfg;
	char err[XKV_ERRLEN];
	int i;

	for (i = 0; i < 16 && seen[i].L; i++)
		if (seen[i].L == L) {
			snprintf(why, len, "%s", seen[i].why);
			return seen[i].rc;
		}
	if (xkv_config_defaults(&cfg, L->name))
		return xkv_errf(why, len, -EINVAL, "unknown layout '%s'", L->name);
	cfg.entries = 1024;
	cfg.big_chunks = 0;
	int rc;
	if (xkv_config_finish(&cfg, err, sizeof(err))) {
		rc = xkv_errf(why, len, -EINVAL, "%s", err);
	} else {
		struct bpf_object *obj = xkv_object_open_with(L, &cfg, err, sizeof(err));
		if (!obj) {
			rc = xkv_errf(why, len, -EINVAL, "%s", err);
		} else {
			struct bpf_map *m = bpf_object__find_map_by_name(obj, "store");
			int fd = xkv_object_make_store(obj, err, sizeof(err));
			if (fd >= 0) {
				close(fd);
				rc = 1;
				why[0] = 0;
			} else if (fd == -EPERM && geteuid() != 0) {
				rc = xkv_errf(why, len, fd, "not root: cannot create BPF maps");
			} else {
				/* Debian 12's libbpf predates ARENA (33) */
				const char *t = !m ? NULL : bpf_map__type(m) == 33 ? "arena"
					      : libbpf_bpf_map_type_str(bpf_map__type(m));
				rc = 0;
				snprintf(why, len, "this kernel refuses its %s%s map: %s",
					 t ? "BPF_MAP_TYPE_" : "", t ? t : "store", strerror(-fd));
				if (t) /* libbpf names types in lower case */
					for (char *c = strstr(why, "BPF_MAP_TYPE_") + 13; *c && *c != ' '; c++)
						*c = (char)toupper((unsigned char)*c);
			}
			bpf_object__close(obj);
		}
	}
	if (i < 16 && rc >= 0) {
		seen[i].L = L;
		seen[i].rc = rc;
		snprintf(seen[i].why, sizeof(seen[i].why), "%s", why);
	}
	return rc;
}
