/* SPDX-License-Identifier: MIT */
/* xkv-kvexp's shared helpers (kvexp_util.c): a layout loaded in process,
 * real memcached request frames run through the XDP program with
 * BPF_PROG_TEST_RUN, JSON heads.  Used by kvexp.c (memory, lost, stale) and
 * hitratio.c (hitratio). */
#ifndef XDPKV_KVEXP_H
#define XDPKV_KVEXP_H
#include <stdbool.h>
#include <stdio.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "inproc.h"
#include "json.h"
#include "log.h"
#include "xdpkv.h"


#define HDR_LEN (ETH_HLEN + 20 + 8 + XKV_UDP_HDR_LEN)
#define PKT_MAX (HDR_LEN + XKV_REQ_MAX)
#define OUT_MAX 4096
#define BATCH 8192
#define CLIENT_PORT 40000

struct kv {
	const struct xkv_layout *L;
	struct bpf_object *obj;
	int prog_fd;
	struct xkv_store s;
	bool have_store;
};

struct pkt {
	__u8 b[PKT_MAX];
	__u32 len;
};

struct reply {
	__u32 action;
	__u32 tlen;          /* reply text bytes (after the frame header) */
	char text[OUT_MAX];  /* NUL terminated */
};

enum get_result { GET_MISS, GET_HIT, GET_WRONG };

#define KV_NO_COMMON_LRU "lru_no_common_lru"

__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void progress(const char *fmt, ...);
double now_s(void);
int pin_cpu(int cpu);
void key_text(char *buf, __u32 id, __u32 klen);
void value_for(char *buf, __u32 id, __u32 version, __u32 vlen);
void cpu_model(char *buf, size_t len);
void json_head(const char *cmd);
void kv_close(struct kv *kv);
const char *kv_layout_base(const char *layout, __u32 *flags);
/* The registry's layouts (variants/registry.c, what `xdpkv layouts` lists),
 * comma-separated; shared_only: without the per-CPU ones. */
const char *kv_registry_layouts(bool shared_only);
int kv_load(struct kv *kv, const char *layout, __u32 entries, __u32 klen, __u32 vlen,
	    __u32 flags, char *err, size_t errlen);
long kv_fill(struct kv *kv, __u32 from, __u32 to, __u32 klen, __u32 vlen);
void pkt_build(struct pkt *p, const char *text, __u32 tlen, __u16 req_id);
int run_req(int prog_fd, const struct pkt *p, struct reply *r);
int xdp_set(int prog_fd, __u32 id, __u32 version, __u32 klen, __u32 vlen, struct reply *r);
int xdp_get(int prog_fd, __u32 id, __u32 klen, struct reply *r);
int get_verdict(const struct reply *r, __u32 id, __u32 klen, __u32 vlen, __u32 *version);
int stats_delta(const struct kv *kv, const struct xkv_stats *before, struct xkv_stats *d);

/* hitratio.c: the whole subcommand, its own options (argv[0] is "hitratio") */
int cmd_hitratio(int argc, char **argv);

#endif
