// SPDX-License-Identifier: MIT
/* The parser's shortcut for "get <key>\r\n" (xkv_quick_get, common/parse.h)
 * against the parser itself (xkv_parse): on every input the shortcut claims
 * a request only when the parser reads it as one get of one key ending the
 * datagram, and then with the same key; and it claims nearly all of those
 * (it may leave odd spacing, "get k \r\n", to the parser).  Edge cases first, then random
 * requests and random mutations of valid ones (seeded; the seed is printed).
 *   test_parse [SEED] [ROUNDS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#pragma GCC diagnostic ignored "-Wunused-function" /* parse.h: what only BPF uses */
#include "parse.h"

static unsigned long checked, claimed, singles, failures;

/* The buffer the BPF side parses from: XKV_PARSE_SPAN bytes + 8 slack. */
static __u8 buf[XKV_PARSE_SPAN + 8];
/* the key rule xkv_parse applies (the shortcuts claim plain keys, which both
 * rules take): every check runs under both */
static __u32 binary_keys;

static void check(const __u8 *req, __u32 len, __u32 key_cap, const char *what)
{
	struct xkv_req r;
	memset(buf, 0xa5, sizeof(buf)); /* bytes past len must not matter */
	memcpy(buf, req, len);
	__u64 key[(XKV_KEY_MAX + 7) / 8 + 1];
	__u32 key_size = (key_cap + 7) & ~7u;
	memset(key, 0xa5, sizeof(key));
	__u32 k = xkv_quick_get(buf, len, key_cap, key, key_size);
	/* the key, zero padded to key_size, and nothing written past that */
	__u8 want[sizeof(key)];
	memset(want, 0xa5, sizeof(want));
	memset(want, 0, key_size);
	if (k)
		memcpy(want, req + 4, k);
	int key_ok = !k || !memcmp(key, want, sizeof(key));
	memset(&r, 0, sizeof(r));
	r.key_cap = key_cap;
	r.val_cap = 1024;
	r.binary_keys = binary_keys;
	int err = xkv_parse(buf, len, &r);
	int single = err == XKV_OK && r.op == XKV_OP_GET && r.ntok == 2 && !r.too_many &&
		     r.next == len && r.tok[1].off == 4;
	checked++;
	if (!binary_keys) { /* the shortcut's share: of plain-rule parses (it takes no control byte) */
		claimed += k > 0;
		singles += single;
	}
	if ((k > 0 && !single) || (k && r.tok[1].len != k) || !key_ok) {
		failures++;
		if (failures <= 10) {
			printf("FAIL %s: len %u key_cap %u: quick_get %u%s, xkv_parse err %d op %u ntok %u next %u "
			       "tok1 {%u,%u}; bytes:", what, len, key_cap, k, key_ok ? "" : " (wrong key bytes)", err, r.op, r.ntok, r.next,
			       r.tok[1].off, r.tok[1].len);
			for (__u32 i = 0; i < len && i < 48; i++)
				printf(" %02x", req[i]);
			printf("\n");
		}
	}
}

/* A byte for a key: mostly plain, sometimes one the parser treats apart. */
static __u8 key_byte(void)
{
	static const __u8 odd[] = { ' ', '\r', '\n', '\t', 0, 0x7f, 0x80, 0xff, 0x20, 0x21, 0x1f };
	int x = rand() % 100;
	if (x < 4)
		return odd[rand() % sizeof(odd)];
	if (x < 8)
		return (__u8)(0x80 + rand() % 128);
	return (__u8)(0x21 + rand() % (0x7f - 0x21));
}

/* The same for xkv_quick_set: a claim must be xkv_parse's reading of one
 * set filling the datagram, field by field, with the key packed. */
static unsigned long set_checked, set_claimed, set_singles;

static void check_set(const __u8 *req, __u32 len, __u32 key_cap, __u32 val_cap, const char *what)
{
	struct xkv_req q, r;
	__u64 key[(XKV_KEY_MAX + 7) / 8 + 1];
	__u32 key_size = (key_cap + 7) & ~7u;
	memset(buf, 0xa5, sizeof(buf));
	memcpy(buf, req, len);
	memset(key, 0xa5, sizeof(key));
	memset(&q, 0x5a, sizeof(q));
	q.key_cap = key_cap;
	q.val_cap = val_cap;
	int k = xkv_quick_set(buf, len, &q, key, key_size);
	memset(&r, 0, sizeof(r));
	r.key_cap = key_cap;
	r.val_cap = val_cap;
	r.binary_keys = binary_keys;
	int err = xkv_parse(buf, len, &r);
	int single = err == XKV_OK && r.op == XKV_OP_SET && r.next == len && r.tok[1].off == 4;
	set_checked++;
	if (!binary_keys) {
		set_claimed += k;
		set_singles += single;
	}
	if (!k)
		return;
	__u8 want[sizeof(key)];
	memset(want, 0xa5, sizeof(want));
	memset(want, 0, key_size);
	memcpy(want, req + 4, r.tok[1].len < sizeof(want) ? r.tok[1].len : 0);
	const char *bad = !single ? "not a single set to xkv_parse"
			  : q.op != r.op || q.err != r.err ? "op/err"
			  : q.tok[1].off != r.tok[1].off || q.tok[1].len != r.tok[1].len ? "key token"
			  : q.flags != r.flags ? "flags"
			  : q.exptime != r.exptime ? "exptime"
			  : q.bytes != r.bytes ? "bytes"
			  : q.noreply != r.noreply ? "noreply"
			  : q.data_off != r.data_off ? "data_off"
			  : q.line_len != r.line_len ? "line_len"
			  : q.next != r.next || q.too_many ? "next"
			  : memcmp(key, want, sizeof(key)) ? "packed key"
			  : NULL;
	if (bad) {
		failures++;
		if (failures <= 10) {
			printf("FAIL set %s: len %u key_cap %u: %s differs (xkv_parse err %d); bytes:", what, len,
			       key_cap, bad, err);
			for (__u32 i = 0; i < len && i < 64; i++)
				printf(" %02x", req[i]);
			printf("\n");
		}
	}
}

static void check_set_str(const char *s, __u32 key_cap, __u32 val_cap)
{
	check_set((const __u8 *)s, (__u32)strlen(s), key_cap, val_cap, s);
}

/* A random set request, mostly well formed. */
static __u32 random_set(__u8 *req)
{
	char line[600];
	char key[260];
	__u32 kl = 1 + (__u32)(rand() % (rand() % 4 ? 40 : 255));
	for (__u32 i = 0; i < kl; i++)
		key[i] = (char)key_byte();
	key[kl] = 0;
	static const char *nums[] = { "0", "1", "42", "4294967295", "4294967296", "9999999999",
				      "99999999999", "-1", "007", "", "1x", "18446744073709551616" };
	const char *f = rand() % 4 ? nums[rand() % 3] : nums[rand() % 12];
	const char *e = rand() % 4 ? nums[rand() % 3] : nums[rand() % 12];
	__u32 bytes = (__u32)(rand() % 300);
	int nr = rand() % 4 == 0;
	int n = snprintf(line, sizeof(line), "set %s %s %s %u%s%s\r\n", key, f, e, bytes,
			 nr ? " noreply" : "", rand() % 20 ? "" : " ");
	if (rand() % 10 == 0) /* a wrong <bytes> */
		bytes += (__u32)(rand() % 3) - 1;
	__u32 len = 0;
	memcpy(req, line, (size_t)n);
	len = (__u32)n;
	for (__u32 i = 0; i < bytes && len < XKV_PARSE_SPAN - 2; i++)
		req[len++] = (__u8)rand();
	if (rand() % 10)
		req[len++] = '\r';
	if (rand() % 10)
		req[len++] = '\n';
	if (rand() % 8 == 0) { /* a mutation anywhere */
		__u32 at = (__u32)(rand() % len);
		req[at] = key_byte();
	}
	return len;
}

static void check_str(const char *s, __u32 key_cap)
{
	check((const __u8 *)s, (__u32)strlen(s), key_cap, s);
}

int main(int argc, char **argv)
{
	unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : (unsigned)time(NULL);
	unsigned long rounds = argc > 2 ? strtoul(argv[2], NULL, 0) : 200000;
	printf("seed %u, %lu random rounds\n", seed, rounds);
	srand(seed);

	const char *edge[] = {
		"get k\r\n", "get key:000000000001\r\n", "get k\n", "get k\r", "get \r\n", "get\r\n",
		"get  k\r\n", "get k \r\n", "get k k\r\n", "gets k\r\n", "GET k\r\n", "get k\r\nget k\r\n",
		"get k\r\n\r\n", "get\tk\r\n", "get k\x7f\r\n", "get \x80\xff\r\n", "get k\rx\r\n",
		"get 12345678\r\n", "get 1234567\r\n", "get 123456789\r\n", "get noreply\r\n", "",
		"g", "get", "get 1", "get 12",
	};
	for (binary_keys = 0; binary_keys < 2; binary_keys++)
		for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
			for (__u32 cap = 1; cap <= 250; cap = cap * 2 + 1)
				check_str(edge[i], cap);
	binary_keys = 0;
	/* every key length around the word boundaries and the caps */
	static __u8 req[XKV_PARSE_SPAN + 600];
	for (__u32 kl = 0; kl <= 256; kl++) {
		memcpy(req, "get ", 4);
		memset(req + 4, 'a' + kl % 26, kl);
		memcpy(req + 4 + kl, "\r\n", 2);
		for (__u32 cap = 0; cap <= 251; cap += (cap < 20 ? 1 : 23))
			check(req, kl + 6, cap, "key length sweep");
		check(req, kl + 6, 250, "key length sweep");
	}
	for (unsigned long n = 0; n < rounds; n++) {
		binary_keys = n & 1;
		__u32 kl = (__u32)(rand() % 260);
		__u32 len = 0;
		memcpy(req, rand() % 8 ? "get " : "gets", 4);
		len = 4;
		for (__u32 i = 0; i < kl; i++)
			req[len++] = key_byte();
		if (rand() % 10)
			req[len++] = '\r';
		if (rand() % 10)
			req[len++] = '\n';
		if (rand() % 8 == 0) { /* a mutation anywhere */
			__u32 at = (__u32)(rand() % (len ? len : 1));
			req[at] = key_byte();
		}
		__u32 cap = rand() % 3 ? 250 : (__u32)(1 + rand() % 250);
		check(req, len, cap, "random");
	}
	const char *sets[] = {
		"set k 0 0 1\r\nx\r\n", "set k 0 0 1 noreply\r\nx\r\n", "set k 0 0 0\r\n\r\n",
		"set k 0 0 1\r\nxx\r\n", "set k 0 0 2\r\nx\r\n", "set k 0 0 1\r\nx\r\nget k\r\n",
		"set  k 0 0 1\r\nx\r\n", "set k  0 0 1\r\nx\r\n", "set k 0 0 1 \r\nx\r\n",
		"set k 0 -1 1\r\nx\r\n", "set k 4294967296 0 1\r\nx\r\n", "set k 4294967295 0 1\r\nx\r\n",
		"set k 0 0 1 noreply \r\nx\r\n", "set k 0 0 1 noreplx\r\nx\r\n", "set k 0 0 1\nx\r\n",
		"set k 0 0\r\n", "set k 0 0 1\r\nx\n", "set k\x01 0 0 1\r\nx\r\n",
		"set 12345678 0 0 1\r\nx\r\n", "set 1234567 0 0 1\r\nx\r\n", "set k 0 0 5\r\n\r\n\r\n\r\n",
		"set k 00 0000000000 0000000001\r\nx\r\n", "set k 0 0 99999\r\nx\r\n", "SET k 0 0 1\r\nx\r\n",
	};
	for (binary_keys = 0; binary_keys < 2; binary_keys++)
		for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
			for (__u32 cap = 1; cap <= 250; cap = cap * 2 + 1)
				check_set_str(sets[i], cap, i % 2 ? 1024 : 4);
	for (unsigned long n = 0; n < rounds; n++) {
		binary_keys = n & 1;
		__u32 len = random_set(req);
		__u32 cap = rand() % 3 ? 250 : (__u32)(1 + rand() % 250);
		check_set(req, len, cap, rand() % 4 ? 1024 : (__u32)(rand() % 300), "random");
	}
	printf("sets: %lu inputs checked, %lu single sets by xkv_parse, %lu claimed by the shortcut\n",
	       set_checked, set_singles, set_claimed);
	if (set_claimed == 0 || set_claimed < set_singles * 8 / 10) {
		printf("FAIL the set shortcut left more than a fifth of the single sets to the parser\n");
		return 1;
	}
	printf("%lu inputs checked, %lu single-key gets by xkv_parse, %lu claimed by the shortcut, "
	       "%lu wrong claims (gets and sets)\n", checked, singles, claimed, failures);
	if (claimed == 0 || claimed < singles * 9 / 10) {
		printf("FAIL the shortcut left more than a tenth of the single-key gets to the parser\n");
		return 1;
	}
	return failures ? 1 : 0;
}
