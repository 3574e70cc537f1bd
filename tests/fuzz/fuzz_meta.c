// SPDX-License-Identifier: MIT
/* fuzz_meta: the meta commands (mg, ms, md, ma, me, mn) and their flags.
 * Their flag handling (meta_flags, meta_key, slow_cmd_m* in engine/meta.c)
 * is static, reachable only through a request, so this is a second stream
 * target whose input is not text but a recipe: the fuzz bytes choose meta
 * command lines (command, key, flags from each command's letters and some
 * it refuses, flag arguments from a table of edge values, ms data blocks
 * right or wrong in length), a few classic commands that make numeric and
 * large items for them to work on, and the chunk sizes the text arrives in.
 * The text then goes through the same driver and checks as fuzz_stream
 * (stream_drive.c).  A recipe that runs out of bytes reads zeros. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slowpath.h"
#include "stream_drive.h"

#define TEXT_MAX (512 * 1024)
#define CMDS_MAX 48

struct recipe {
	const uint8_t *p;
	size_t n, i;
};

static uint8_t take(struct recipe *r)
{
	return r->i < r->n ? r->p[r->i++] : 0;
}

struct text {
	uint8_t *p;
	size_t len;
};

static void put(struct text *t, const void *s, size_t n)
{
	if (n > TEXT_MAX - t->len)
		n = TEXT_MAX - t->len;
	memcpy(t->p + t->len, s, n);
	t->len += n;
}

static void puts_(struct text *t, const char *s)
{
	put(t, s, strlen(s));
}

static void fill(struct text *t, char c, size_t n)
{
	if (n > TEXT_MAX - t->len)
		n = TEXT_MAX - t->len;
	memset(t->p + t->len, c, n);
	t->len += n;
}

/* Keys: a few that collide on purpose, base64 ones for the b flag, and the
 * edges of the key rule. */
static void put_key(struct text *t, uint8_t b)
{
	static const char *const keys[] = {
		"k0", "k1", "k2", "k3", "n0", "n1",
		"azA=",            /* "k0" in base64 (with b) */
		"bjA=",            /* "n0" */
		"AAAA",            /* decodes to NULs: refused */
		"@@@@",            /* not base64 */
		"a2V5",            /* "key" */
		"k\x7f" "bad",     /* DEL in a key */
		"k\x01" "ctl",     /* a control byte */
	};
	size_t nk = sizeof(keys) / sizeof(keys[0]);
	if (b % 16 < nk) {
		puts_(t, keys[b % 16]);
	} else if (b % 16 == nk) {
		fill(t, 'K', 250); /* the longest key */
	} else if (b % 16 == nk + 1) {
		fill(t, 'K', 251); /* one too long */
	} else {
		fill(t, 'Q', 4 * (1 + b / 16)); /* base64 of up to 48 bytes */
	}
}

/* A flag argument: numbers at the edges of each parser, modes, opaques. */
static const char *const args[] = {
	"", "0", "1", "-1", "30", "-30", "2147483647", "2147483648", "-2147483648",
	"-2147483649", "4294967295", "4294967296", "18446744073709551615",
	"18446744073709551616", "99999999999999999999", "abc", "1a", "S", "E", "A", "P",
	"R", "I", "D", "+", "-", "i", "d", "s", "x", "SS", "opaque",
	"0123456789012345678901234567890123456789", "000000000000000000001",
};

/* Letters: what the meta commands take, and some they do not. */
static const char letters[] = "bcfhklOqstuvCDEFIJMNRTxyzZ@";

static void put_flags(struct text *t, struct recipe *r)
{
	unsigned n = take(r) % 12; /* memcached takes at most 19 tokens */
	for (unsigned i = 0; i < n; i++) {
		uint8_t b = take(r);
		char l = letters[b % (sizeof(letters) - 1)];
		char tok[64];
		if (strchr("OCDJTNFMR", l)) {
			snprintf(tok, sizeof(tok), " %c%s", l, args[take(r) % (sizeof(args) / sizeof(args[0]))]);
		} else if (b & 0x80) {
			snprintf(tok, sizeof(tok), " %c%c", l, l); /* a flag with a stray byte */
		} else {
			snprintf(tok, sizeof(tok), " %c", l);
		}
		puts_(t, tok);
	}
}

static const size_t lens[] = { 0, 1, 2, 5, 19, 20, 21, 1023, 1024, 1025, 4000, 70000 };

/* A data block: digits (for ma and incr to work on) or letters. */
static void put_data(struct text *t, size_t n, uint8_t kind)
{
	if (kind & 1) {
		static const char *const nums[] = { "0", "1", "18446744073709551615",
						    "18446744073709551614", "99", "007" };
		const char *s = nums[(kind >> 1) % 6];
		size_t sl = strlen(s);
		if (sl <= n) {
			fill(t, '0', n - sl);
			put(t, s, sl);
			return;
		}
	}
	fill(t, 'v', n);
}

static void put_end(struct text *t, uint8_t b)
{
	puts_(t, b % 16 == 15 ? "\n" : "\r\n"); /* now and then a bare \n */
}

static void one_command(struct text *t, struct recipe *r)
{
	static const char *const meta[] = { "mg", "ms", "md", "ma", "me", "mn" };
	uint8_t c = take(r);
	char line[128];

	if (c % 8 < 6) {
		puts_(t, meta[c % 8]);
		if (c % 8 != 5 || (c & 0x80)) { /* mn takes no key; now and then one anyway */
			puts_(t, " ");
			put_key(t, take(r));
		}
		size_t real = 0;
		if (c % 8 == 1) { /* ms <key> <datalen> */
			uint8_t l = take(r);
			real = lens[l % (sizeof(lens) / sizeof(lens[0]))];
			long said = (long)real + ((l >> 4) % 5 == 4 ? 1 : (l >> 4) % 5 == 3 ? -1 : 0);
			if ((l >> 4) == 15)
				puts_(t, " x");
			else if (said >= 0)
				snprintf(line, sizeof(line), " %ld", said), puts_(t, line);
		}
		put_flags(t, r);
		put_end(t, take(r));
		if (c % 8 == 1) {
			put_data(t, real, take(r));
			puts_(t, "\r\n");
		}
		return;
	}
	/* classic commands on the same keys: numbers and big values to work on */
	uint8_t k = take(r), v = take(r);
	if (c % 8 == 6) {
		size_t n = lens[v % (sizeof(lens) / sizeof(lens[0]))];
		snprintf(line, sizeof(line), "set %s %u 0 %zu%s\r\n", k & 1 ? "n0" : "k0", (unsigned)(k >> 1),
			 n, v & 0x80 ? " noreply" : "");
		puts_(t, line);
		put_data(t, n, (uint8_t)(k | 1));
		puts_(t, "\r\n");
	} else {
		static const char *const other[] = { "incr", "decr", "get", "gets", "touch", "delete" };
		const char *w = other[v % 6];
		snprintf(line, sizeof(line), "%s %s%s%s\r\n", w, k & 1 ? "n0" : "k0",
			 v % 6 < 2 ? " 18446744073709551615" : v % 6 == 4 ? " 1" : "",
			 (v & 0x80) && v % 6 != 2 && v % 6 != 3 ? " noreply" : "");
		puts_(t, line);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *buf;
	struct fuzz_env *e = fuzz_env_get();
	struct recipe r = { data, size, 0 };

	if (!buf && !(buf = malloc(TEXT_MAX)))
		abort();
	/* how the text arrives: two schedule bytes */
	uint8_t sched[2] = { take(&r), take(&r) };
	struct sd_plan plan = { .sched = sched, .nsched = 2, .out_small = sched[0] & 1 };
	struct text t = { buf, 0 };
	for (unsigned i = 0; i < CMDS_MAX && r.i < r.n; i++)
		one_command(&t, &r);
	sd_run(e, t.p, t.len, &plan);
	fuzz_env_clear(e);
	return 0;
}
