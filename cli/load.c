// SPDX-License-Identifier: MIT
/* load: bulk preload of a store, generated (--generate N) or from a file,
 * in batches through xkv_store_set_batch(). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cli.h"
#include "jsonl.h"
#include "loadgen.h"

struct load_opts {
	struct xo_iface ifc;
	const char *file;
	unsigned long long generate, seed;
	unsigned key_size, value_size, batch;
	bool progress, json;
	bool import;          /* import: FILE holds dump's JSON lines */
};

static const struct load_opts load_defaults = { .batch = 4096 };

/* The rows load and import share. */
#define LOAD_IFACE { "IFACE", 0, XO_IFACE, offsetof(struct load_opts, ifc), NULL, \
		     "interface the store is attached to", .flags = XO_POS | XO_REQ | XO_IF_ANY }
#define LOAD_COMMON_OPTS                                                                 \
	{ "batch", 'b', XO_U32, offsetof(struct load_opts, batch), "B",                  \
	  "items per batch (default 4096)", 1, 1 << 20 },                                \
	{ "progress", 0, XO_BOOL, offsetof(struct load_opts, progress), NULL,            \
	  "show the progress bar even when stderr is not a terminal" },                  \
	{ "json", 'j', XO_BOOL, offsetof(struct load_opts, json), NULL,                  \
	  "print the summary as JSON" }

static const struct xo load_table[] = {
	LOAD_IFACE,
	{ "FILE", 0, XO_STR, offsetof(struct load_opts, file), NULL,
	  "lines 'KEY VALUE' or 'KEY FLAGS EXPTIME VALUE'; '-' reads stdin", .flags = XO_POS },
	{ "generate", 'g', XO_U64, offsetof(struct load_opts, generate), "N",
	  "store N generated items key:000…i (see docs/cli.md)", 1, 1ll << 32 },
	{ "key-size", 'k', XO_U32, offsetof(struct load_opts, key_size), "K",
	  "generated key length (default 16, at most the store's)", 5, XKV_KEY_MAX },
	{ "value-size", 's', XO_U32, offsetof(struct load_opts, value_size), "V",
	  "generated value length (default 128, at most the store's)", 1, XKV_VAL_MAX },
	{ "seed", 0, XO_U64, offsetof(struct load_opts, seed), "S",
	  "generation number written into generated values (default 0)" },
	LOAD_COMMON_OPTS,
	XO_END,
};

/* One batch being filled: keys packed at key_size, entries at entry_size. */
struct batch {
	struct xkv_store *s;
	__u8 *keys, *ents;
	__u32 n, cap;
	__u64 now;
	/* totals */
	unsigned long long seen, stored, failed;
	int reason;           /* first -errno of a store that failed */
	const char *cmd;      /* load or import */
	/* progress */
	bool bar;
	double t0, last_bar;
	unsigned long long total;   /* items (generate) or bytes (file), 0 unknown */
	unsigned long long done;    /* in the same unit as total */
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void progress(struct batch *b, bool final)
{
	double t = now_s();
	if (!b->bar || (!final && t - b->last_bar < 0.1))
		return;
	b->last_bar = t;
	double rate = t > b->t0 ? (double)b->seen / (t - b->t0) : 0;
	if (b->total) {
		const int w = 30;
		double f = (double)b->done / (double)b->total;
		int fill = (int)(f * w);
		fprintf(stderr, "\rloading [%.*s%*s] %3.0f%% %llu items %.0f items/s ", fill,
			"##############################", w - fill, "", f * 100, b->seen, rate);
	} else {
		fprintf(stderr, "\rloading %llu items %.0f items/s ", b->seen, rate);
	}
	if (final)
		fputc('\n', stderr);
}

/* Send the batch to the store; counts stored and failed items.  0 or an exit code. */
static int flush(struct batch *b)
{
	struct xkv_store *s = b->s;
	if (!b->n)
		return 0;
	long r = xkv_store_set_batch(s, b->keys, b->ents, b->n);
	if (r < 0 && r != -ENOMEM && r != -E2BIG && r != -EBUSY)
		return sys_fail(b->cmd, "storing a batch", (int)r);
	__u32 ok = r < 0 ? 0 : (__u32)r;
	b->stored += ok;
	if (ok < b->n && !b->reason) {
		/* learn why from the first item not stored (batches stop at the first
		 * error); if it goes in now, count it */
		const struct xkv_entry *e = (const void *)(b->ents + (size_t)ok * s->cfg.entry_size);
		const __u8 *k = b->keys + (size_t)ok * s->cfg.key_size;
		int e2 = s->L->set(s, k, e->klen, e);
		b->reason = r < 0 ? (int)r : e2;
		if (!e2)
			ok++, b->stored++;
	}
	b->failed += b->n - ok;
	b->n = 0;
	b->now = xkv_now_ns();
	progress(b, false);
	return 0;
}

/* Append one item (cas: its cas unique from a dump, 0: a new write stamp).
 * 0, an exit code, or -1 for a bad item (counted as failed). */
static int add(struct batch *b, const char *key, __u32 klen, __u32 flags, long long exptime,
	       __u64 cas, const void *val, __u32 vlen)
{
	struct xkv_store *s = b->s;
	b->seen++;
	__u8 *k = b->keys + (size_t)b->n * s->cfg.key_size;
	struct xkv_entry *e = (void *)(b->ents + (size_t)b->n * s->cfg.entry_size);

	if (vlen > xkv_val_max(s) || xkv_key_check(&s->cfg, key, klen) != XKV_OK ||
	    xkv_key_pack(&s->cfg, key, klen, k)) {
		b->failed++;
		return -1;
	}
	struct xkv_entry hdr = { .expire_ns = xkv_expire_ns(exptime, b->now, s->cfg.realtime_off_ns),
				 .wtime_ns = xkv_restore_stamp(cas, vlen > s->cfg.val_cap), .flags = flags,
				 .len = vlen };
	if (vlen > s->cfg.val_cap) {
		/* above --value-size: its chunks, then its entry, now (not batched) */
		int r = xkv_big_carry(NULL, s, key, klen, &hdr, val, e);
		if (!r && (r = s->L->set(s, key, klen, e)))
			xkv_big_del(s, key, klen, hdr.wtime_ns, vlen);
		memset(e, 0, s->cfg.entry_size);
		if (r) {
			b->reason = b->reason ? b->reason : r;
			b->failed++;
		} else {
			b->stored++;
		}
		return 0;
	}
	xkv_big_carry(NULL, s, key, klen, &hdr, val, e); /* inline: a copy, cannot fail */
	if (++b->n == b->cap)
		return flush(b);
	return 0;
}

static int batch_init(struct batch *b, struct xkv_store *s, unsigned cap, bool bar)
{
	memset(b, 0, sizeof(*b));
	b->s = s;
	b->cap = cap;
	b->keys = calloc(cap, s->cfg.key_size);
	b->ents = calloc(cap, s->cfg.entry_size);
	b->now = xkv_now_ns();
	b->bar = bar;
	b->t0 = b->last_bar = now_s();
	return b->keys && b->ents ? 0 : -ENOMEM;
}

/* ---- sources ---- */

static int gen_items(struct batch *b, const struct load_opts *o, unsigned K, unsigned V)
{
	char key[XKV_KEY_MAX + 1];
	char *val = malloc(V ? V : 1);
	int rc = 0;

	if (!val)
		return sys_fail("load", "allocating", -ENOMEM);
	b->total = o->generate;
	for (unsigned long long i = 0; i < o->generate && rc <= 0; i++) {
		xkv_gen_key(key, K, i);
		xkv_gen_value(val, V, key, K, o->seed);
		rc = add(b, key, K, 0, 0, 0, val, V);
		b->done = i + 1;
	}
	free(val);
	return rc > 0 ? rc : flush(b);
}

/* Split a line into key, flags, exptime, value.  0 ok, -1 malformed. */
static int parse_line(char *line, char **key, __u32 *flags, long long *exptime, char **val)
{
	char *p = line, *end;
	*flags = 0;
	*exptime = 0;
	while (*p == ' ' || *p == '\t')
		p++;
	*key = p;
	while (*p && *p != ' ' && *p != '\t')
		p++;
	if (!*p)
		return -1; /* no value */
	*p++ = 0;
	while (*p == ' ' || *p == '\t')
		p++;
	*val = p;
	/* KEY FLAGS EXPTIME VALUE when the next two words are numbers */
	unsigned long f = strtoul(p, &end, 10);
	if (end == p || (*end != ' ' && *end != '\t') || f > 0xffffffffUL || *p == '-')
		return 0;
	char *q = end;
	while (*q == ' ' || *q == '\t')
		q++;
	long long t = strtoll(q, &end, 10);
	if (end == q || (*end != ' ' && *end != '\t'))
		return 0;
	while (*end == ' ' || *end == '\t')
		end++;
	*flags = (__u32)f;
	*exptime = t;
	*val = end;
	return 0;
}

/* FILE, or stdin for "-"; NULL (said) if it cannot be opened: an I/O error */
static FILE *open_input(const char *cmd, const char *file)
{
	if (!strcmp(file, "-"))
		return stdin;
	FILE *f = fopen(file, "r");
	if (!f)
		xerr("%s: cannot open %s: %s", cmd, file, strerror(errno));
	return f;
}

static int file_items(struct batch *b, const struct load_opts *o, FILE *f)
{
	bool in = f == stdin;
	char *line = NULL;
	size_t cap = 0;
	unsigned long long lineno = 0, bad = 0;
	ssize_t n;
	int rc = 0;
	struct stat st;

	if (!fstat(fileno(f), &st) && S_ISREG(st.st_mode))
		b->total = (unsigned long long)st.st_size;
	while (rc <= 0 && (n = getline(&line, &cap, f)) >= 0) {
		char *key = NULL, *val = NULL;
		__u32 flags = 0;
		long long exptime = 0;

		lineno++;
		b->done += (unsigned long long)n;
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		if (!n || (line[0] == '#' && !o->import))
			continue;
		const char *why = "want 'KEY VALUE' or 'KEY FLAGS EXPTIME VALUE' with a valid key and a "
				  "value within --value-size";
		struct jsonl_item it;
		if (o->import ? jsonl_parse(line, &it, &why) : parse_line(line, &key, &flags, &exptime, &val)) {
			rc = -1;
			b->seen++;
			b->failed++;
		} else if (o->import) {
			rc = add(b, it.key, (__u32)it.klen, it.flags, it.exptime, it.cas, it.val, (__u32)it.vlen);
			why = "the key or value does not fit this store (or the key is not valid here)";
		} else {
			rc = add(b, key, (__u32)strlen(key), flags, exptime, 0, val, (__u32)strlen(val));
		}
		if (rc < 0 && ++bad <= 5)
			xerr("%s: %s:%llu: skipped: %s", b->cmd, in ? "stdin" : o->file,
			     lineno, why);
	}
	if (bad > 5)
		xerr("%s: %llu more bad lines skipped", b->cmd, bad - 5);
	if (ferror(f))
		rc = sys_fail(b->cmd, o->file, -errno);
	free(line);
	return rc > 0 ? rc : flush(b);
}

/* ---- command ---- */

static int check_sizes(const struct load_opts *o, const struct xkv_config *c, unsigned *K, unsigned *V)
{
	unsigned need = 4 + xkv_gen_digits(o->generate - 1);
	*K = o->key_size ? o->key_size : (c->key_cap < 16 ? c->key_cap : 16);
	if (!o->key_size && *K < need)
		*K = need;
	*V = o->value_size ? o->value_size : (c->val_cap < 128 ? c->val_cap : 128);
	if (*K > c->key_cap) {
		xerr("load: --key-size %u is larger than this store's keys (%u)", *K, c->key_cap);
		return EXIT_USAGE;
	}
	if (*K < need) {
		xerr("load: --key-size %u is too short for %llu keys: 'key:' and %u digits need %u",
		     *K, o->generate, need - 4, need);
		return EXIT_USAGE;
	}
	if (*V > c->val_cap) {
		xerr("load: --value-size %u is larger than this store's values (%u)", *V, c->val_cap);
		return EXIT_USAGE;
	}
	return 0;
}

/* On stdout when the command did its job (exit 0 or 1); after a failure
 * (exit 3: a read error midway) on stderr, and no JSON (main prints the
 * error's). */
static void summary(const struct batch *b, const struct load_opts *o, double secs, int rc)
{
	double rate = secs > 0 ? (double)b->stored / secs : 0;
	const char *why = b->reason == -ENOMEM || b->reason == -E2BIG ? "store full"
			  : b->reason ? strerror(-b->reason) : "";
	FILE *out = rc >= EXIT_USAGE ? stderr : stdout;

	if (o->json && out == stdout) {
		printf("{\"items\":%llu,\"stored\":%llu,\"failures\":%llu,\"seconds\":%.3f,"
		       "\"items_per_s\":%.0f,\"reason\":", b->seen, b->stored, b->failed, secs, rate);
		json_cstr(stdout, b->failed ? (b->reason ? why : "bad input") : "");
		printf("}\n");
		return;
	}
	fprintf(out, "%s%s %llu of %llu items in %.3f s (%.0f items/s), %llu failures",
		out == stderr ? "xdpkv: before that: " : "", strcmp(b->cmd, "import") ? "loaded" : "imported",
		b->stored, b->seen, secs, rate, b->failed);
	if (b->failed && b->reason)
		fprintf(out, " (first store error: %s)", why);
	fprintf(out, "\n");
}

static int run_load(void *vo, const struct global_opts *g)
{
	struct load_opts *o = vo;
	const char *cmd = o->import ? "import" : "load";
	struct xkv_store s;
	struct batch b;
	unsigned K = 0, V = 0;
	int rc;

	if (!o->generate == !o->file) {
		xerr("load: give either FILE or --generate N");
		fprintf(stderr, "usage: xdpkv load %s\n", cmd_load.synopsis);
		return EXIT_USAGE;
	}
	if (o->file && (o->key_size || o->value_size || o->seed)) {
		xerr("load: --key-size, --value-size and --seed apply to --generate only");
		return EXIT_USAGE;
	}
	/* a missing input fails before anything is opened or printed */
	FILE *in = NULL;
	if (o->file && !(in = open_input(cmd, o->file)))
		return EXIT_SYS;
	if ((rc = open_pinned(&s, cmd, o->ifc.name))) {
		if (in && in != stdin)
			fclose(in);
		return rc;
	}
	if (s.L->bench_only) {
		xerr("%s: %s runs the %s store (%s): it keeps nothing to load", cmd, o->ifc.name,
		     s.L->name, s.L->loses);
		rc = EXIT_USAGE;
		goto out;
	}
	if (o->generate && (rc = check_sizes(o, &s.cfg, &K, &V)))
		goto out;
	if (batch_init(&b, &s, o->batch, o->progress || isatty(STDERR_FILENO))) {
		free(b.keys);
		free(b.ents);
		rc = sys_fail(cmd, "allocating the batch", -ENOMEM);
		goto out;
	}
	b.cmd = cmd;
	rc = o->generate ? gen_items(&b, o, K, V) : file_items(&b, o, in);
	progress(&b, true);
	summary(&b, o, now_s() - b.t0, rc);
	if (!rc && b.failed)
		rc = EXIT_MISS;
	free(b.keys);
	free(b.ents);
out:
	if (in && in != stdin)
		fclose(in);
	xkv_store_close(&s);
	return rc;
}

const struct cmd cmd_load = {
	.name = "load",
	.synopsis = "IFACE (--generate N [--key-size K] [--value-size V] [--seed S] | FILE) "
		    "[--batch B] [--progress] [--json]",
	.summary = "bulk-load items, generated or from a file",
	.doc = "Stores items in batches.  Generated item i has the key 'key:' + i zero-padded to K\n"
	       "bytes and the value '<key>/<seed>/' repeated to V bytes (the tests and benchmarks\n"
	       "rebuild them).  A file has one item per line, 'KEY VALUE' or 'KEY FLAGS EXPTIME\n"
	       "VALUE'; empty lines and lines starting with '#' are skipped.\n"
	       "Exit status 1 when some items were not stored (e.g. hash_map is full).\n\n"
	       "Examples: xdpkv load veth0 --generate 100000 --value-size 64\n"
	       "          printf 'a 1\\nb 7 0 two\\n' | xdpkv load veth0 -",
	.opts = load_table,
	.opts_size = sizeof(struct load_opts),
	.defaults = &load_defaults,
	.run = run_load,
};

/* ---- import: dump's JSON lines (cli/snapshot.c writes them) ---- */

static const struct load_opts import_defaults = { .batch = 4096, .import = true };

static const struct xo import_table[] = {
	LOAD_IFACE,
	{ "FILE", 0, XO_STR, offsetof(struct load_opts, file), NULL,
	  "JSON lines as 'xdpkv dump' writes them; '-' reads stdin", .flags = XO_POS | XO_REQ },
	LOAD_COMMON_OPTS,
	XO_END,
};

const struct cmd cmd_import = {
	.name = "import",
	.synopsis = "IFACE FILE|- [--batch B] [--progress] [--json]",
	.summary = "store the items of a dump (JSON lines)",
	.doc = "Reads what 'xdpkv dump' writes: one object per line with \"key\" or \"key_b64\",\n"
	       "\"value\" or \"value_b64\", \"flags\" and \"exptime\" (absolute unix seconds, 0 = never;\n"
	       "like memcached, up to 30 days is taken as relative); other fields are ignored.\n"
	       "Bad lines are counted as failures (the first five are reported).  Exit status 1\n"
	       "when some items were not stored, as for load.\n\n"
	       "Example: xdpkv dump veth0 items.jsonl; xdpkv import veth1 items.jsonl",
	.opts = import_table,
	.opts_size = sizeof(struct load_opts),
	.defaults = &import_defaults,
	.run = run_load,
};
