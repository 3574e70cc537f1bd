// SPDX-License-Identifier: MIT
/* Slow path tests: keys longer than the store's --key-size and not than
 * memcached's 250 bytes (docs/protocol.md, "Keys").  memcached would hold
 * such an item; this store cannot, so the slow path serves them as keys no
 * item has: every read misses, a write that would store is refused as too
 * large for the store, and over TCP the data block is read, the connection
 * kept.  On every layout (the engine decides before any layout is asked). */
#include "slowpath_test.h"
#include "layout_skip.h"

#define CAP 32

static void keycap_cases(struct env *e)
{
	char k[CAP + 2], req[512], want[512];
	memset(k, 'L', CAP + 1);
	k[CAP + 1] = 0;

	/* the datagram entry (what XDP passes on) */
#define DG(what, fmt, w)                                                        \
	do {                                                                    \
		snprintf(req, sizeof(req), fmt, k);                             \
		expect_n(e, what, req, strlen(req), w, strlen(w));              \
	} while (0)
	DG("get of a 33-byte key: a miss", "get %s\r\n", "END\r\n");
	DG("set of it: too large for this store", "set %s 0 0 1\r\nx\r\n",
	   "SERVER_ERROR object too large for cache\r\n");
	DG("add", "add %s 0 0 1\r\nx\r\n", "SERVER_ERROR object too large for cache\r\n");
	DG("replace: no item", "replace %s 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
	DG("append: no item", "append %s 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
	DG("cas: no item", "cas %s 0 0 1 7\r\nx\r\n", "NOT_FOUND\r\n");
	DG("delete: no item", "delete %s\r\n", "NOT_FOUND\r\n");
	DG("incr: no item", "incr %s 1\r\n", "NOT_FOUND\r\n");
	DG("touch: no item", "touch %s 10\r\n", "NOT_FOUND\r\n");
	DG("gat: a miss", "gat 10 %s\r\n", "END\r\n");
	DG("mg: EN", "mg %s v\r\n", "EN\r\n");
	DG("ms: too large", "ms %s 1\r\nx\r\n", "SERVER_ERROR object too large for cache\r\n");
	DG("ms R: NS", "ms %s 1 MR\r\nx\r\n", "NS\r\n");
	DG("md: NF", "md %s\r\n", "NF\r\n");
	DG("ma: NF", "ma %s\r\n", "NF\r\n");
	DG("mg N (vivify): too large", "mg %s N30 v\r\n", "SERVER_ERROR object too large for cache\r\n");
	DG("set noreply: silent", "set %s 0 0 1 noreply\r\nx\r\n", "");
#undef DG
	/* among other keys: those answer as ever */
	snprintf(req, sizeof(req), "set a 0 0 1\r\nA\r\n");
	expect_n(e, "set a", req, strlen(req), "STORED\r\n", 8);
	snprintf(req, sizeof(req), "get a %s a\r\n", k);
	snprintf(want, sizeof(want), "VALUE a 0 1\r\nA\r\nVALUE a 0 1\r\nA\r\nEND\r\n");
	expect_n(e, "get a <33-byte key> a: the hits, no more", req, strlen(req), want, strlen(want));
	/* the stream: the data block read, the connection in step */
	snprintf(req, sizeof(req), "set %s 0 0 9\r\nflush_all\r\nget a\r\n", k);
	expect(e, "TCP: set of a 33-byte key whose value is a command: refused, its data read, "
	       "the next request served", req,
	       "SERVER_ERROR object too large for cache\r\nVALUE a 0 1\r\nA\r\nEND\r\n", 0);
	/* and the store's own keys at its cap as ever */
	memset(k, 'C', CAP);
	k[CAP] = 0;
	snprintf(req, sizeof(req), "set %s 0 0 1\r\nc\r\nget %s\r\n", k, k);
	snprintf(want, sizeof(want), "STORED\r\nVALUE %s 0 1\r\nc\r\nEND\r\n", k);
	expect(e, "TCP: a key of exactly --key-size stores and reads", req, want, 0);
}

void t_key_cap(void)
{
	env_key_cap = CAP;
	for (int i = 0; xkv_layouts[i]; i++) {
		struct env e;
		const char *name = xkv_layouts[i]->name;
		printf("== %s, --key-size %d\n", name, CAP);
		if (layout_unavailable(name))
			continue;
		if (env_open(&e, name, ENTRIES, VAL_CAP)) {
			n_fail++;
			continue;
		}
		keycap_cases(&e);
		env_close(&e);
	}
	env_key_cap = 0;
}
