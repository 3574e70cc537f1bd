// SPDX-License-Identifier: MIT
/* The slow path's sockets: one UDP or TCP listening socket bound to a port
 * on the interface, dual-stack where the kernel has IPv6. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "xdpkv.h"
#include "sock.h"

#define SERVE_SOCKBUF (16 << 20)

static void set_bufsize(int fd, int opt_force, int opt)
{
	int v = SERVE_SOCKBUF;
	if (setsockopt(fd, SOL_SOCKET, opt_force, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v)); /* capped by rmem_max */
}

static int bind_error(int e, const char *proto, const char *ifname, __u16 port, char *err,
		      size_t errlen)
{
	if (e == EADDRINUSE)
		return xkv_errf(err, errlen, -e,
				  "%s port %u is already in use on %s (another slow path or memcached running?)",
				  proto, port, ifname);
	if (e == EACCES || e == EPERM)
		return xkv_errf(err, errlen, -e, "binding %s port %u needs root", proto, port);
	return xkv_errf(err, errlen, -e, "cannot bind %s port %u on %s: %s", proto, port, ifname,
			strerror(e));
}

/* A dual-stack socket (IPv4 arrives as mapped addresses), or IPv4 only
 * where the kernel has no IPv6, bound to the port on ifname: the UDP one
 * (large buffers, a receive timeout, the destination of each datagram) or,
 * with type SOCK_STREAM, the TCP listener (non-blocking). */
int xkv_serve_socket(const char *ifname, __u16 port, int type, int *v6, char *err, size_t errlen)
{
	int one = 1, zero = 0;
	bool udp = type == SOCK_DGRAM;
	const char *proto = udp ? "UDP" : "TCP";
	int flags = SOCK_CLOEXEC | (udp ? 0 : SOCK_NONBLOCK);
	int fd = socket(AF_INET6, type | flags, 0);

	*v6 = fd >= 0;
	if (fd < 0 && errno == EAFNOSUPPORT)
		fd = socket(AF_INET, type | flags, 0);
	if (fd < 0)
		return xkv_errf(err, errlen, -errno, "cannot create a %s socket: %s", proto, strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, strlen(ifname) + 1)) {
		int e = errno;
		close(fd);
		if (e == EPERM)
			return xkv_errf(err, errlen, -e, "binding to interface %s needs root (CAP_NET_RAW)", ifname);
		if (e == ENODEV)
			return xkv_errf(err, errlen, -e, "no such interface: %s", ifname);
		return xkv_errf(err, errlen, -e, "cannot bind to interface %s: %s", ifname, strerror(e));
	}
	if (udp) {
		set_bufsize(fd, SO_RCVBUFFORCE, SO_RCVBUF);
		struct timeval tv = { .tv_sec = 0, .tv_usec = SERVE_POLL_MS * 1000 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)); /* lets the loop see *stop */
		set_bufsize(fd, SO_SNDBUFFORCE, SO_SNDBUF);
	} else {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)); /* restart over TIME_WAIT */
		/* one listener per TCP worker, the kernel spreading connections
		 * over them by their addresses (serve_tcp.c); only sockets of
		 * this user (root, before the privileges go) can join the group,
		 * and the UDP socket, bound first without it, keeps a second
		 * serve off the port */
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	}

	int rc;
	if (*v6) {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port),
					  .sin6_addr = IN6ADDR_ANY_INIT };
		rc = setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) ||
		     (udp && setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)));
		if (!rc)
			rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
		rc = udp && setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
		if (!rc)
			rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
	}
	if (!rc && !udp)
		rc = listen(fd, SOMAXCONN);
	if (rc) {
		int e = errno;
		close(fd);
		return bind_error(e, proto, ifname, port, err, errlen);
	}
	return fd;
}
