// SPDX-License-Identifier: MIT
/* Before a command touches BPF: its privileges, the bpffs this process sees,
 * and a pinned store opened with the reasons when it cannot be. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include "cli.h"

#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static bool have_cap(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

int need_privileges(const char *cmd)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};

	if (syscall(SYS_capget, &h, d)) {
		xerr("%s: cannot read this process's capabilities: %s", cmd, strerror(errno));
		return EXIT_SYS;
	}
	bool bpf = have_cap(d, CAP_BPF) || have_cap(d, CAP_SYS_ADMIN);
	bool net = have_cap(d, CAP_NET_ADMIN);
	if (bpf && net)
		return 0;
	xerr("%s: needs %s%s%s (running as uid %u)", cmd, bpf ? "" : "CAP_BPF (or CAP_SYS_ADMIN)",
	     !bpf && !net ? " and " : "", net ? "" : "CAP_NET_ADMIN", (unsigned)geteuid());
	xhint("run it as root: sudo xdpkv %s ...", cmd);
	return EXIT_SYS;
}

int sys_fail(const char *cmd, const char *what, int e)
{
	if (e > 0)
		e = -e;
	xerr("%s: %s: %s", cmd, what, strerror(-e));
	if (e == -EPERM || e == -EACCES)
		xhint("BPF maps and XDP need root (CAP_BPF and CAP_NET_ADMIN)");
	return EXIT_SYS;
}

/* 'ip netns exec NAME' remounts /sys (source: NAME) in a private mount
 * namespace, so /sys/fs/bpf there is not the system's bpffs. */
bool bpffs_hidden(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[1024], src[256] = "", path[300];
	bool hidden = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char mnt[256], type[64], source[256];
		const char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %255s", type, source) != 2)
			continue;
		if (!strcmp(mnt, "/sys") && !strcmp(type, "sysfs"))
			snprintf(src, sizeof(src), "%s", source); /* the last one wins */
	}
	fclose(f);
	if (src[0] && !strchr(src, '/')) {
		snprintf(path, sizeof(path), "/run/netns/%s", src);
		hidden = access(path, F_OK) == 0;
	}
	return hidden;
}

static void hint_hidden_bpffs(void)
{
	xhint("this process sees another /sys/fs/bpf than the system's ('ip netns exec' "
	      "remounts /sys): use 'nsenter --net=/run/netns/NAME xdpkv ...' instead");
}

int open_pinned(struct xkv_store *s, const char *cmd, const char *ifname)
{
	char err[XKV_ERRLEN];
	int e = xkv_store_open_pinned(s, ifname, err, sizeof(err));
	if (!e)
		return 0;
	xerr("%s: %s", cmd, err);
	if (e == -ENOENT) {
		if (bpffs_hidden()) {
			hint_hidden_bpffs();
			return EXIT_MISS;
		}
		xhint("attach it first: xdpkv attach %s  ('xdpkv status' lists attached interfaces)",
		      ifname);
		return EXIT_MISS;
	}
	if (e == -EPERM || e == -EACCES)
		xhint("BPF maps need root (CAP_BPF)");
	return EXIT_SYS;
}
