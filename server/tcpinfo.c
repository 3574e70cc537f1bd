// SPDX-License-Identifier: MIT
/* TCP_INFO fields glibc's <netinet/tcp.h> does not declare, from the
 * kernel's <linux/tcp.h> (the two cannot be included together). */
#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/tcp.h>
#include "tcpfast.h"

int xkv_tcp_bytes_acked(int fd, __u64 *acked)
{
	struct tcp_info ti = { 0 };
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
		return -errno;
	if (len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(ti.tcpi_bytes_acked))
		return -ENOTSUP;
	*acked = ti.tcpi_bytes_acked;
	return 0;
}
