/* SPDX-License-Identifier: MIT */
/* The slow path's listening sockets (sock.c), for serve.c's UDP loop and
 * its TCP server. */
#ifndef XDPKV_SERVER_SOCK_H
#define XDPKV_SERVER_SOCK_H

#include <stddef.h>
#include <linux/types.h>

#define SERVE_POLL_MS 100 /* how often *stop is looked at (a UDP socket's receive timeout) */

/* A socket bound to port on ifname, dual-stack where the kernel has IPv6
 * (*v6 says which): type SOCK_DGRAM for the UDP slow path, SOCK_STREAM for
 * a non-blocking TCP listener (SO_REUSEPORT: call it once per TCP worker).
 * The fd, or <0 with a message in err. */
int xkv_serve_socket(const char *ifname, __u16 port, int type, int *v6, char *err, size_t errlen);

#endif
