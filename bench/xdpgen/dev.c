// SPDX-License-Identifier: MIT
/* xdpgen: the device it sends from, its source address, and the server's
 * MAC from the neighbour table. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <math.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xg.h"
#include "lg.h"
#include "wire.h"
#include "fnv.h"
#include "loadgen.h"

int dev_info(const struct opts *o, struct netinfo *ni)
{
	struct ifreq ifr = { 0 };
	int fd, rc = -1;

	ni->ifindex = (int)if_nametoindex(o->dev);
	if (!ni->ifindex) {
		fprintf(stderr, "xdpgen: device %s not found in this network namespace "
				"(run xdpgen where DEV lives: nsenter --net=/run/netns/NS xdpgen ...)\n",
			o->dev);
		return -1;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("xdpgen: socket");
		return -1;
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", o->dev);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr)) {
		fprintf(stderr, "xdpgen: %s: cannot read the MAC address: %s\n", o->dev, strerror(errno));
		goto out;
	}
	memcpy(ni->mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	if (ioctl(fd, SIOCGIFMTU, &ifr)) {
		fprintf(stderr, "xdpgen: %s: cannot read the MTU: %s\n", o->dev, strerror(errno));
		goto out;
	}
	ni->mtu = (unsigned)ifr.ifr_mtu;
	rc = 0;
out:
	close(fd);
	return rc;
}

int src_ip_of(const char *dev, struct in_addr *ip)
{
	struct ifaddrs *ifa, *i;
	int rc = -1;

	if (getifaddrs(&ifa)) {
		perror("xdpgen: getifaddrs");
		return -1;
	}
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !strcmp(i->ifa_name, dev)) {
			*ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			rc = 0;
			break;
		}
	}
	freeifaddrs(ifa);
	if (rc)
		fprintf(stderr, "xdpgen: %s has no IPv4 address: give --src-ip\n", dev);
	return rc;
}

/* The ARP entry for ip on dev (/proc/net/arp of this namespace). */
static int arp_read(const char *dev, struct in_addr ip, __u8 *mac)
{
	char want[INET_ADDRSTRLEN], line[256], addr[64], hw[64], ifn[IFNAMSIZ + 8];
	unsigned type, flags;
	FILE *f = fopen("/proc/net/arp", "r");
	int rc = -1;

	inet_ntop(AF_INET, &ip, want, sizeof(want));
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%63s 0x%x 0x%x %63s %*s %23s", addr, &type, &flags, hw, ifn) != 5)
				continue;
			if (!strcmp(addr, want) && !strcmp(ifn, dev) && (flags & 0x2) && !parse_mac(hw, mac)) {
				rc = 0;
				break;
			}
		}
		fclose(f);
	}
	return rc;
}

/* Make the kernel resolve ip: one empty datagram to the discard port. */
static void arp_poke(const char *dev, struct in_addr ip)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = ip, .sin_port = htons(9) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, (socklen_t)strlen(dev));
	sendto(fd, "", 0, 0, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
}

/* The server's MAC: its ARP entry on dev, resolved if need be (1 s). */
int arp_lookup(const char *dev, struct in_addr ip, __u8 *mac)
{
	char want[INET_ADDRSTRLEN];

	for (int i = 0; i < 100; i++) {
		if (!arp_read(dev, ip, mac))
			return 0;
		if (i % 25 == 0)
			arp_poke(dev, ip);
		usleep(10000);
	}
	inet_ntop(AF_INET, &ip, want, sizeof(want));
	fprintf(stderr, "xdpgen: %s does not resolve to a MAC address on %s: give --dst-mac\n",
		want, dev);
	return -1;
}
