/* SPDX-License-Identifier: MIT */
/* xdpgen's userspace parts and what they share: the options (opts.c), the
 * device and its neighbour (dev.c), the request sequence (frames.c); main
 * and the run are in xdpgen.c. */
#ifndef XDPGEN_XG_H
#define XDPGEN_XG_H

#include <stdbool.h>
#include <netinet/in.h>
#include <linux/if_ether.h>
#include <linux/types.h>
#include "xdpgen.h"

#define XG_CPUS_MAX 64

enum dist { DIST_UNIFORM, DIST_ZIPF };

struct opts {
	const char *dev;
	struct in_addr dst_ip, src_ip;
	bool have_dst_ip, have_src_ip, have_dst_mac;
	__u8 dst_mac[ETH_ALEN];
	unsigned port, src_port;
	unsigned key_size, value_size, value_seed;
	unsigned long long keys, key_base;
	enum dist dist;
	double theta, write_ratio;
	unsigned seq_len;
	double duration;
	int cpus[XG_CPUS_MAX];
	int ncpus;
	int server_cpus[XG_CPUS_MAX];
	int nserver;
	double rate;
	unsigned batch;
	unsigned long long seed;
	bool json, static_frame, verbose, no_csum;
};

/* opts.c: the command line into o (defaults first).  0, or -1 after a
 * message. */
int parse_args(int argc, char **argv, struct opts *o);
/* opts.c: "aa:bb:cc:dd:ee:ff" into mac.  0 or -1. */
int parse_mac(const char *s, __u8 *mac);

/* ---- the device (dev.c) ---- */

struct netinfo {
	int ifindex;
	unsigned mtu;
	__u8 mac[ETH_ALEN];
};

/* DEV's ifindex, MTU and MAC.  0, or -1 after a message. */
int dev_info(const struct opts *o, struct netinfo *ni);
/* DEV's first IPv4 address.  0, or -1 after a message. */
int src_ip_of(const char *dev, struct in_addr *ip);
/* The MAC of ip on dev from the neighbour table (asked for when missing).
 * 0, or -1 after a message. */
int arp_lookup(const char *dev, struct in_addr ip, __u8 *mac);

/* ---- the request sequence (frames.c) ---- */

struct frame_src {
	const __u8 *src_mac, *dst_mac;
	struct in_addr src_ip, dst_ip;
	unsigned src_port, port;
};

/* Fill the table map with the sequence (*nsets: how many are sets).  0, or
 * -1 after a message. */
int fill_table(int map_fd, __u32 value_size, const struct frame_src *fs,
	       const struct opts *o, unsigned *nsets);
/* The longest request the options can produce, built into f: its length. */
unsigned longest_frame(const struct frame_src *fs, const struct opts *o, struct xg_frame *f);

#endif
