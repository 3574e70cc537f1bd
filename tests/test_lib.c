// SPDX-License-Identifier: MIT
/* test_lib: the generic helpers of lib/ against known vectors: the JSON
 * string writer's escaping in each mode, base64 (RFC 4648 vectors, round
 * trips, what each rule rejects), the logger's levels, sink, ring and the
 * libbpf/libxdp hooks. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "base64.h"
#include "json.h"
#include "log.h"
#include "unit_check.h"

/* ---- JSON ---- */

static void json_case(const char *in, size_t len, unsigned how, const char *want)
{
	char *out = NULL;
	size_t olen = 0;
	FILE *f = open_memstream(&out, &olen);
	xkv_json_str(f, in, len, how);
	fclose(f);
	CHECK(olen == strlen(want) && !memcmp(out, want, olen), "json(how %u): got %s, want %s", how,
	      out, want);
	free(out);
}

static void test_json(void)
{
	/* every escape, in each mode the callers use */
	static const char in[] = "a\"b\\c\nd\re\tf\x01g\x1fh\x7fi\xc3\xa9j\xff";
	size_t n = sizeof(in) - 1;
	json_case(in, n, XKV_JSON_BYTES,
		  "\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u001fh\\u007fi\\u00c3\\u00a9j\\u00ff\"");
	json_case(in, n, XKV_JSON_TEXT,
		  "\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u001fh\\u007fi\xc3\xa9j\xff\"");
	json_case(in, n, XKV_JSON_MINIMAL, "\"a\\\"b\\\\c\\u000ad\\u000de\\u0009f\\u0001g\\u001fh\x7fi\xc3\xa9j\xff\"");
	json_case("", 0, XKV_JSON_BYTES, "\"\"");
	json_case("a\0b", 3, XKV_JSON_BYTES, "\"a\\u0000b\"");
	json_case("plain text / ok ~", 17, XKV_JSON_TEXT, "\"plain text / ok ~\"");

	char *out = NULL;
	size_t olen = 0;
	FILE *f = open_memstream(&out, &olen);
	xkv_json_cstr(f, "x\"y", XKV_JSON_BYTES);
	fclose(f);
	CHECK(!strcmp(out, "\"x\\\"y\""), "json_cstr: got %s", out);
	free(out);
}

/* ---- base64 ---- */

static void test_b64(void)
{
	/* RFC 4648 section 10 */
	static const char *const vec[][2] = {
		{ "", "" },         { "f", "Zg==" },        { "fo", "Zm8=" },         { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
	};
	char enc[64], dec[64];
	for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		size_t n = strlen(vec[i][0]);
		size_t m = xkv_b64_encode(enc, vec[i][0], n);
		CHECK(m == XKV_B64_LEN(n) && m == strlen(vec[i][1]) && !memcmp(enc, vec[i][1], m),
		      "encode %s: got %.*s", vec[i][0], (int)m, enc);
		for (int rule = XKV_B64_STRICT; rule <= XKV_B64_LOOSE; rule++) {
			long d = xkv_b64_decode(vec[i][1], m, dec, sizeof(dec), rule);
			if (rule == XKV_B64_STRICT && !n) {
				CHECK(d == -1, "strict decode of \"\": %ld, want -1", d);
				continue;
			}
			CHECK(d == (long)n && !memcmp(dec, vec[i][0], n), "decode %s (rule %d): %ld",
			      vec[i][1], rule, d);
		}
	}
	/* the alphabet's last two characters, and every byte value */
	CHECK(xkv_b64_encode(enc, "\xfb\xff", 2) == 4 && !memcmp(enc, "+/8=", 4), "encode +/: %.4s",
	      enc);
	unsigned char all[256], back[256];
	char big[XKV_B64_LEN(256)];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)(255 - i);
	for (size_t n = 0; n <= 256; n += 1 + n / 8) {
		size_t m = xkv_b64_encode(big, all, n);
		long d = xkv_b64_decode(big, m, back, sizeof(back), XKV_B64_LOOSE);
		CHECK(d == (long)n && !memcmp(back, all, n), "round trip %zu: %ld", n, d);
		if (n) {
			d = xkv_b64_decode(big, m, back, sizeof(back), XKV_B64_STRICT);
			CHECK(d == (long)n && !memcmp(back, all, n), "strict round trip %zu: %ld", n, d);
			CHECK(xkv_b64_decode(big, m, back, n - 1, XKV_B64_STRICT) == -1,
			      "round trip %zu into %zu bytes: not refused", n, n - 1);
		}
	}
	/* in place */
	char inplace[] = "Zm9vYmFy";
	CHECK(xkv_b64_decode(inplace, 8, inplace, 8, XKV_B64_LOOSE) == 6 && !memcmp(inplace, "foobar", 6),
	      "in place");

	/* what the meta flag b refuses (engine/meta.c, tests/refmodel_meta.c) */
	static const char *const strict_bad[] = {
		"", "Zg", "Zg=", "Zm9", "Zm9vY", "Z===", "Zg=A", "=Zg=", "Zm9v=Zg=", "Zm9vZg==Zg==",
		"Zm9v\n", "Zm 9", "Zm-v", "Zm_v", "Zm9v====", "Zg==Zm9v",
	};
	for (size_t i = 0; i < sizeof(strict_bad) / sizeof(strict_bad[0]); i++)
		CHECK(xkv_b64_decode(strict_bad[i], strlen(strict_bad[i]), dec, sizeof(dec),
				     XKV_B64_STRICT) == -1,
		      "strict accepts \"%s\"", strict_bad[i]);
	CHECK(xkv_b64_decode("Zm\0v", 4, dec, sizeof(dec), XKV_B64_STRICT) == -1, "strict NUL");
	CHECK(xkv_b64_decode("Zm9vYmFy", 8, dec, 5, XKV_B64_STRICT) == -1, "strict over cap");

	/* what import has always read and refused (cli/jsonl.c) */
	static const struct {
		const char *in;
		long want;
	} loose[] = {
		{ "", 0 },       { "Zg", 1 },      { "Zg=", 1 },     { "Zm9", 2 },      { "Z", 0 },
		{ "Zg=A", 2 },   { "Zm9vZg=", 4 }, { "==", 0 },      { "Zm9v=Zg=", -1 }, { "=Zg=", -1 },
		{ "Zm9vZg==Zg==", -1 }, { "Zm=vZ", -1 }, { "Zm-v", -1 }, { "Zm 9", -1 }, { "Zm9v\n", -1 },
	};
	for (size_t i = 0; i < sizeof(loose) / sizeof(loose[0]); i++) {
		long d = xkv_b64_decode(loose[i].in, strlen(loose[i].in), dec, sizeof(dec), XKV_B64_LOOSE);
		CHECK(d == loose[i].want, "loose \"%s\": %ld, want %ld", loose[i].in, d, loose[i].want);
	}
	CHECK(xkv_b64_decode("Zm\0v", 4, dec, sizeof(dec), XKV_B64_LOOSE) == -1, "loose NUL");
}

/* ---- the logger ---- */

static char seen[1024];

static void capture(enum xkv_log_level level, const char *fmt, va_list ap)
{
	size_t n = strlen(seen);
	n += (size_t)snprintf(seen + n, sizeof(seen) - n, "%d:", level);
	vsnprintf(seen + n, sizeof(seen) - n, fmt, ap);
}

/* Call libbpf's hook b, or else libxdp's x, as the library would. */
static void call_hook(libbpf_print_fn_t b, libxdp_print_fn_t x, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (b)
		b((enum libbpf_print_level)level, fmt, ap);
	else
		x((enum libxdp_print_level)level, fmt, ap);
	va_end(ap);
}

/* One message at each level through each hook (when there is one). */
static void feed_hooks(libbpf_print_fn_t b, libxdp_print_fn_t x)
{
	static const struct {
		int level;
		const char *msg;
	} bmsg[] = { { LIBBPF_WARN, "bw " }, { LIBBPF_INFO, "bi " }, { LIBBPF_DEBUG, "bd " } },
	  xmsg[] = { { LIBXDP_WARN, "xw " }, { LIBXDP_INFO, "xi " }, { LIBXDP_DEBUG, "xd " } };

	for (int i = 0; b && i < 3; i++)
		call_hook(b, NULL, bmsg[i].level, "%s", bmsg[i].msg);
	for (int i = 0; x && i < 3; i++)
		call_hook(NULL, x, xmsg[i].level, "%s", xmsg[i].msg);
}

static void join(void *arg, const char *line)
{
	strcat(arg, line);
	strcat(arg, "|");
}

static void test_log(void)
{
	CHECK(xkv_log_get_level() == XKV_LOG_WARN, "default level %d", xkv_log_get_level());
	xkv_log_set_sink(capture);
	xkv_log(XKV_LOG_ERROR, "e%d ", 1);
	xkv_log(XKV_LOG_WARN, "w ");
	xkv_log(XKV_LOG_INFO, "i ");
	xkv_log(XKV_LOG_DEBUG, "d ");
	CHECK(!strcmp(seen, "0:e1 1:w "), "at WARN: %s", seen);
	seen[0] = 0;
	xkv_log_set_verbose(1);
	xkv_log(XKV_LOG_INFO, "i ");
	xkv_log(XKV_LOG_DEBUG, "d ");
	CHECK(!strcmp(seen, "2:i 3:d "), "verbose: %s", seen);
	xkv_log_set_verbose(0);
	CHECK(xkv_log_get_level() == XKV_LOG_WARN, "not verbose: level %d", xkv_log_get_level());

	/* libbpf's and libxdp's levels land on ours */
	xkv_log_libbpf();
	libbpf_print_fn_t hook = libbpf_set_print(NULL);
	CHECK(hook != NULL, "no libbpf hook");
	xkv_log_libxdp();
	libxdp_print_fn_t xhook = libxdp_set_print(NULL);
	CHECK(xhook != NULL, "no libxdp hook");
	xkv_log_set_level(XKV_LOG_DEBUG);
	seen[0] = 0;
	feed_hooks(hook, xhook);
	CHECK(!strcmp(seen, "1:bw 2:bi 3:bd 1:xw 2:xi 3:xd "), "hooks: %s", seen);
	/* by default the libraries' warnings show, their info and debug do not */
	xkv_log_set_level(XKV_LOG_WARN);
	seen[0] = 0;
	feed_hooks(hook, xhook);
	CHECK(!strcmp(seen, "1:bw 1:xw "), "hooks at WARN: %s", seen);

	/* the ring: the latest 24 lines, trailing newlines dropped */
	xkv_log_set_sink(xkv_log_keep);
	xkv_log_set_level(XKV_LOG_INFO);
	CHECK(xkv_log_kept(NULL, NULL) == 0, "ring not empty at start");
	for (int i = 0; i < 30; i++)
		xkv_log(i % 2 ? XKV_LOG_INFO : XKV_LOG_DEBUG, "line %d\n\n", i);
	char all[1024] = "";
	unsigned n = xkv_log_kept(join, all);
	CHECK(n == 15 && !strncmp(all, "line 1|line 3|", 14) && strstr(all, "|line 29|"),
	      "ring: %u lines: %s", n, all);
	for (int i = 0; i < 30; i++)
		xkv_log(XKV_LOG_WARN, "w%d", i);
	all[0] = 0;
	n = xkv_log_kept(join, all);
	CHECK(n == 24 && !strncmp(all, "w6|w7|", 6), "ring full: %u lines: %s", n, all);
	char longline[400];
	memset(longline, 'x', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = 0;
	xkv_log_kept_clear();
	xkv_log(XKV_LOG_WARN, "%s", longline);
	all[0] = 0;
	n = xkv_log_kept(join, all);
	CHECK(n == 1 && strlen(all) == 256, "long line: %u lines, %zu chars", n, strlen(all));
	xkv_log_kept_clear();
	CHECK(xkv_log_kept(NULL, NULL) == 0, "ring not empty after clear");
	xkv_log_set_sink(NULL);
	xkv_log_set_level(XKV_LOG_WARN);
}

int main(void)
{
	test_json();
	test_b64();
	test_log();
	return unit_done("test_lib");
}
