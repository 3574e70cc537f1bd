// SPDX-License-Identifier: MIT
/* xkv-kvexp's shared helpers (kvexp.h): moved out of kvexp.c unchanged so
 * that hitratio.c uses the same loader, request frames and reply checks. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/utsname.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include "kvexp.h"

/* ---- small helpers --------------------------------------------------------- */

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "xkv-kvexp: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

void progress(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "# ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int pin_cpu(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	return sched_getcpu() == cpu ? 0 : -EAGAIN;
}

/* "key:%012u" padded with '-' to klen bytes (klen >= 16). */
void key_text(char *buf, __u32 id, __u32 klen)
{
	char b[32];
	snprintf(b, sizeof(b), "key:%012u", id);
	memset(buf, '-', klen);
	memcpy(buf, b, 16);
	buf[klen] = 0;
}

/* vlen bytes: "v%010u." (the version) then a pattern depending on id, so a
 * reply carrying another key's bytes is caught.  vlen >= 16. */
void value_for(char *buf, __u32 id, __u32 version, __u32 vlen)
{
	char b[16];
	for (__u32 j = 0; j < vlen; j++)
		buf[j] = (char)('a' + (id * 7 + j) % 26);
	snprintf(b, sizeof(b), "v%010u.", version);
	memcpy(buf, b, 12);
}

/* ---- the machine ----------------------------------------------------------- */

void cpu_model(char *buf, size_t len)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");
	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');
		if (strncmp(line, "model name", 10) || !p)
			continue;
		p += 2;
		p[strcspn(p, "\n")] = 0;
		snprintf(buf, len, "%s", p);
		break;
	}
	fclose(f);
}

void json_head(const char *cmd)
{
	struct utsname u;
	char model[128];
	time_t t = time(NULL);
	char date[32];
	uname(&u);
	cpu_model(model, sizeof(model));
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S%z", localtime(&t));
	printf("{\n  \"tool\": \"xkv-kvexp\",\n  \"subcommand\": \"%s\",\n", cmd);
	printf("  \"machine\": {\"nproc\": %ld, \"cpu_model\": ", sysconf(_SC_NPROCESSORS_ONLN));
	xkv_json_cstr(stdout, model, XKV_JSON_MINIMAL);
	printf(", \"kernel\": ");
	xkv_json_cstr(stdout, u.release, XKV_JSON_MINIMAL);
	printf(", \"possible_cpus\": %d, \"date\": \"%s\"},\n", libbpf_num_possible_cpus(), date);
}

/* ---- a layout loaded in this process -------------------------------------- */


void kv_close(struct kv *kv)
{
	if (kv->have_store)
		xkv_store_close(&kv->s);
	bpf_object__close(kv->obj);
	memset(kv, 0, sizeof(*kv));
}

/* "lru_no_common_lru" is lru loaded with --no-common-lru (BPF_F_NO_COMMON_LRU),
 * named as the microbenchmark and compare name it: the registry's layout
 * and the flag it adds, or NULL. */
const char *kv_layout_base(const char *layout, __u32 *flags)
{
	if (!strcmp(layout, KV_NO_COMMON_LRU)) {
		*flags |= XKV_CFG_NO_COMMON_LRU;
		return "lru";
	}
	return xkv_layout_find(layout) ? layout : NULL;
}

const char *kv_registry_layouts(bool shared_only)
{
	static char buf[2][512];
	char *out = buf[shared_only];
	size_t n = 0;
	out[0] = 0;
	for (int i = 0; xkv_layouts[i]; i++) {
		char why[200];
		if (shared_only && xkv_map_percpu(xkv_layouts[i]->map_type))
			continue;
		/* what this kernel cannot hold is left out of the default list, said */
		if (xkv_layout_probe(xkv_layouts[i], why, sizeof(why)) == 0) {
			fprintf(stderr, "# skipped %s: not available on this kernel: %s\n", xkv_layouts[i]->name, why);
			continue;
		}
		int w = snprintf(out + n, sizeof(buf[0]) - n, "%s%s", n ? "," : "", xkv_layouts[i]->name);
		if (w < 0 || (size_t)w >= sizeof(buf[0]) - n)
			die("too many layouts for the default list");
		n += (size_t)w;
	}
	return out;
}

int kv_load(struct kv *kv, const char *layout, __u32 entries, __u32 klen, __u32 vlen,
		   __u32 flags, char *err, size_t errlen)
{
	struct xkv_config cfg;
	memset(kv, 0, sizeof(*kv));
	const char *base = kv_layout_base(layout, &flags);
	if (!base) {
		snprintf(err, errlen, "unknown layout %s", layout);
		return -EINVAL;
	}
	layout = base;
	kv->L = xkv_layout_find(layout);
	if (!kv->L || xkv_config_defaults(&cfg, layout)) {
		snprintf(err, errlen, "unknown layout %s", layout);
		return -EINVAL;
	}
	cfg.entries = entries;
	cfg.key_cap = klen;
	cfg.val_cap = vlen;
	cfg.mode = XKV_MODE_TEST;
	cfg.flags |= flags;
	if (kv->L->hash_seeded) /* keyed, as attach makes them (fixed here: runs alike) */
		cfg.hash_seed = 0x6a09e667f3bcc908ull;
	if (xkv_inproc_load(&cfg, kv->L, &kv->obj, &kv->s, err, errlen)) {
		kv_close(kv);
		return -EINVAL;
	}
	kv->prog_fd = bpf_program__fd(xkv_object_prog(kv->obj));
	kv->have_store = true;
	if (xkv_policy_open_all(&kv->s)) { /* measuring layouts, not access control */
		snprintf(err, errlen, "cannot open the access policy");
		kv_close(kv);
		return -EINVAL;
	}
	return 0;
}

/* Items with ids [from, to) through the userspace batch accessor, version 0. */
long kv_fill(struct kv *kv, __u32 from, __u32 to, __u32 klen, __u32 vlen)
{
	const struct xkv_config *c = &kv->s.cfg;
	__u8 *keys = calloc(BATCH, c->key_size), *ents = calloc(BATCH, c->entry_size);
	char kt[XKV_KEY_MAX + 1];
	__u64 now = xkv_now_ns();
	long stored = 0;

	if (!keys || !ents) {
		free(keys);
		free(ents);
		return -ENOMEM;
	}
	for (__u32 base = from; base < to; base += BATCH) {
		__u32 n = to - base < BATCH ? to - base : BATCH;
		memset(keys, 0, (size_t)BATCH * c->key_size);
		memset(ents, 0, (size_t)BATCH * c->entry_size);
		for (__u32 i = 0; i < n; i++) {
			struct xkv_entry *e = (void *)(ents + (size_t)i * c->entry_size);
			key_text(kt, base + i, klen);
			memcpy(keys + (size_t)i * c->key_size, kt, klen);
			e->wtime_ns = now;
			e->len = vlen;
			e->klen = klen;
			value_for((char *)e->data, base + i, 0, vlen);
		}
		long r = xkv_store_set_batch(&kv->s, keys, ents, n);
		if (r < 0) {
			stored = r;
			break;
		}
		stored += r;
	}
	free(keys);
	free(ents);
	return stored;
}

/* ---- requests through BPF_PROG_TEST_RUN ----------------------------------- */


__u16 csum16(const void *p, size_t n)
{
	const __u8 *b = p;
	__u32 s = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (__u32)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		s += (__u32)b[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

/* Ethernet / IPv4 / UDP to port 11211 / frame header / text. */
void pkt_build(struct pkt *p, const char *text, __u32 tlen, __u16 req_id)
{
	static const __u8 cmac[ETH_ALEN] = {2, 0, 0, 0, 0, 2}, smac[ETH_ALEN] = {2, 0, 0, 0, 0, 1};
	struct ethhdr *eth = (void *)p->b;
	struct iphdr *ip = (void *)(p->b + ETH_HLEN);
	struct udphdr *udp = (void *)(p->b + ETH_HLEN + 20);
	struct xkv_udp_hdr *fh = (void *)(p->b + ETH_HLEN + 28);

	memset(p->b, 0, HDR_LEN);
	p->len = HDR_LEN + tlen;
	memcpy(eth->h_dest, smac, ETH_ALEN);
	memcpy(eth->h_source, cmac, ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons((__u16)(p->len - ETH_HLEN));
	ip->id = htons(req_id);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = htonl(0xc0000202); /* 192.0.2.2, TEST-NET-1: a source the program accepts */
	ip->daddr = htonl(0xc0000201);
	ip->check = htons(csum16(ip, 20));
	udp->source = htons(CLIENT_PORT);
	udp->dest = htons(XKV_DEFAULT_PORT);
	udp->len = htons((__u16)(p->len - ETH_HLEN - 20));
	fh->req_id = htons(req_id);
	fh->total = htons(1);
	memcpy(p->b + HDR_LEN, text, tlen);
}


/* One request; 0 or -errno.  On XDP_TX, r->text is the reply text. */
int run_req(int prog_fd, const struct pkt *p, struct reply *r)
{
	__u8 out[OUT_MAX];
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = p->b, .data_size_in = p->len, .data_out = out,
		    .data_size_out = sizeof(out), .repeat = 1);
	if (bpf_prog_test_run_opts(prog_fd, &t))
		return -errno;
	r->action = t.retval;
	r->tlen = 0;
	r->text[0] = 0;
	if (t.retval == XDP_TX && t.data_size_out >= HDR_LEN) {
		r->tlen = t.data_size_out - HDR_LEN;
		if (r->tlen >= sizeof(r->text))
			r->tlen = sizeof(r->text) - 1;
		memcpy(r->text, out + HDR_LEN, r->tlen);
		r->text[r->tlen] = 0;
	}
	return 0;
}

int xdp_set(int prog_fd, __u32 id, __u32 version, __u32 klen, __u32 vlen, struct reply *r)
{
	char text[XKV_REQ_MAX], kt[XKV_KEY_MAX + 1];
	struct pkt p;
	key_text(kt, id, klen);
	int n = snprintf(text, sizeof(text), "set %s 0 0 %u\r\n", kt, vlen);
	if (n < 0 || n + vlen + 2 > sizeof(text))
		return -E2BIG;
	value_for(text + n, id, version, vlen);
	memcpy(text + n + vlen, "\r\n", 2);
	pkt_build(&p, text, n + vlen + 2, (__u16)id);
	return run_req(prog_fd, &p, r);
}

int xdp_get(int prog_fd, __u32 id, __u32 klen, struct reply *r)
{
	char text[XKV_KEY_MAX + 16], kt[XKV_KEY_MAX + 1];
	struct pkt p;
	key_text(kt, id, klen);
	int n = snprintf(text, sizeof(text), "get %s\r\n", kt);
	pkt_build(&p, text, n, (__u16)id);
	return run_req(prog_fd, &p, r);
}


/* Classify a get reply for key id; *version gets the version of a hit. */
int get_verdict(const struct reply *r, __u32 id, __u32 klen, __u32 vlen, __u32 *version)
{
	char kt[XKV_KEY_MAX + 1], head[XKV_KEY_MAX + 64], want[XKV_VAL_MAX + 1];
	if (r->action != XDP_TX)
		return GET_WRONG;
	if (!strcmp(r->text, XKV_R_END))
		return GET_MISS;
	key_text(kt, id, klen);
	int n = snprintf(head, sizeof(head), "VALUE %s 0 %u\r\n", kt, vlen);
	if (r->tlen != n + vlen + strlen(XKV_R_DATA_END) || memcmp(r->text, head, n) ||
	    strcmp(r->text + n + vlen, XKV_R_DATA_END) || r->text[n] != 'v')
		return GET_WRONG;
	*version = (__u32)strtoul(r->text + n + 1, NULL, 10);
	value_for(want, id, *version, vlen);
	return memcmp(r->text + n, want, vlen) ? GET_WRONG : GET_HIT;
}

int stats_delta(const struct kv *kv, const struct xkv_stats *before, struct xkv_stats *d)
{
	struct xkv_stats now;
	int e = xkv_stats_read(&kv->s, XKV_STATS_FAST, &now, NULL);
	if (e)
		return e;
	for (int i = 0; i < XKV_STAT__MAX; i++)
		d->v[i] = now.v[i] - before->v[i];
	return 0;
}
