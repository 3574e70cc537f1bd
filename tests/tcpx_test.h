/* SPDX-License-Identifier: MIT */
/* The TCP-in-XDP fixtures' shared pieces (test_tcpx.c): a segment builder,
 * a BPF_PROG_TEST_RUN call, the flow written and read back.  The rows on
 * a real socket are tcpx_ingress.c's. */
#ifndef XDPKV_TESTS_TCPX_TEST_H
#define XDPKV_TESTS_TCPX_TEST_H

#include <stddef.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "xdpkv.h"
#include "tcpx.h"

#define PORT 11211
#define CPORT 40001
#define F_ACK 0x10
#define F_PSH 0x08
#define F_RST 0x04
#define F_SYN 0x02
#define F_FIN 0x01

struct seg {
	__u32 saddr, daddr;     /* network order */
	__u16 sport, dport;     /* host order */
	__u32 seq, ack;
	__u8 flags;
	__u16 win;              /* 0: 4096 */
	__u32 tsval, tsecr;     /* both 0: no timestamps */
	__u32 sack[4][2];
	int nsack;
	int ts_last;            /* the timestamps after the SACK blocks */
	int bad_csum, bad_ipsum;
	const char *payload;
	size_t plen;            /* the payload's bytes; 0: strlen (text) */
};

struct out {
	int ret;
	__u8 f[4096];
	__u32 len;
};

int csum_ok(const __u8 *f, size_t n);
size_t build(const struct seg *g, __u8 *f);
__u32 rd32(const __u8 *p);
void run(int prog, const __u8 *in, size_t n, struct out *o);
void run_meta(int prog, const __u8 *in, size_t n, __u32 meta, struct out *o);
const __u8 *tcp_of(const struct out *o);
__u64 counter(const struct xkv_store *s, enum xkv_stat i);
struct xkv_tcpx_key key_of(__u32 client, __u16 cport, __u32 server);
/* A flow after one answer: the request [1000, 1010) consumed (dc 10, 5
 * before), its reply [5000, 5030) injected at the kernel's 4980 (ds 20
 * before, 50 after); reply: its text (NULL: 30 bytes of nothing). */
void put_flow(int fd, const struct xkv_tcpx_key *k, __u32 flags, const char *reply);
int get_flow(int fd, const struct xkv_tcpx_key *k, struct xkv_tcpx_flow *f);

/* tcpx_ingress.c: the responder's rows, on a socket made in repair mode;
 * its failed checks. */
int tcpx_ingress_cases(const char *L, struct bpf_object *obj, struct xkv_store *s);
/* A socket 127.0.0.1:PORT <- 127.0.0.2:cport, established in repair mode
 * (nothing sent), timestamps on, windows 65535; -1 when it cannot be. */
int repaired(__u16 cport, __u32 rcv_nxt, __u32 snd_nxt);
/* The socket as one serve accepted: its cookie in tcp_slots at slot. */
void serve_it(const struct xkv_store *s, int fd, __u32 slot);
/* tcpx_pipe.c: segments of several requests, against the slow path's
 * replies; its failed checks. */
int tcpx_pipe_cases(const char *L, struct bpf_object *obj, struct xkv_store *s);

#endif
