// SPDX-License-Identifier: MIT
/* LD_PRELOAD shim for memaslap (memcaslap): SO_REUSEADDR on a UDP socket
 * becomes a no-op.  memaslap sets it on every socket and never binds its
 * UDP ones; the kernel's port choice then treats a port held by another
 * SO_REUSEADDR socket as free (udp_lib_lport_inuse), so two of its
 * connections can share one ephemeral port, and the socket bound last reads
 * the other's replies and aborts on their request id (assert in
 * ms_sort_udp_packet; about one run in 250 with 16 sockets, against
 * memcached too).  Without the option each socket gets a port of its own.
 * TCP sockets are left alone.  tests/e2e/memaslap.sh, bench/quickstart.sh. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/socket.h>

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	static int (*real)(int, int, int, const void *, socklen_t);
	int type;
	socklen_t tl = sizeof(type);

	if (!real)
		real = (int (*)(int, int, int, const void *, socklen_t))dlsym(RTLD_NEXT, "setsockopt");
	if (level == SOL_SOCKET && name == SO_REUSEADDR &&
	    !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) && type == SOCK_DGRAM)
		return 0;
	return real(fd, level, name, val, len);
}
