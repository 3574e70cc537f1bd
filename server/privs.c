// SPDX-License-Identifier: MIT
/* Dropping privileges once the slow path holds what it needs: its bound
 * socket and its map fds.  Measured on Linux 6.18 with
 * kernel.unprivileged_bpf_disabled = 2: lookups, updates, deletes and
 * get_next_key on already-open hash, LRU, LPM-trie and per-CPU array fds
 * succeed as uid 65534 with no capabilities at all (since 6.5 the
 * unprivileged check sits in map_create and prog_load, not at the syscall's
 * entry), as do the mmapped array_fnv slots, /proc/self/fdinfo (map_bytes)
 * and getifaddrs (host sync).  So no capability is kept. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include "slowpath.h"

/* The effective set as cap_to_text writes it ("=" for none). */
static void caps_text(char *buf, size_t len)
{
	cap_t c = cap_get_proc();
	char *t = c ? cap_to_text(c, NULL) : NULL;
	snprintf(buf, len, "%s", t ? t : "?");
	cap_free(t);
	cap_free(c);
}

int xkv_drop_privileges(const char *user, char *msg, size_t msglen)
{
	char before[256];
	uid_t uid = getuid(), uid0 = uid;
	gid_t gid = getgid(), gid0 = gid;
	int bound = 0;

	caps_text(before, sizeof(before));
	if (user) {
		/* looked up first: NSS may need files the new user cannot read */
		struct passwd *pw = getpwnam(user);
		if (!pw)
			return xkv_errf(msg, msglen, -ENOENT, "no such user: %s", user);
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	/* The bounding set: nothing this process runs later gets a capability
	 * back (uid 0 regains the full set on exec otherwise).  Needs
	 * CAP_SETPCAP, which a non-root caller may lack: then it stays. */
	if (CAP_IS_SUPPORTED(CAP_SETPCAP) && cap_get_bound(CAP_SETPCAP) == 1) {
		for (cap_value_t v = 0; v < (cap_value_t)cap_max_bits(); v++)
			if (cap_get_bound(v) == 1 && !cap_drop_bound(v))
				bound++;
	}
	if (user) {
		if (setgroups(1, &gid))
			return xkv_errf(msg, msglen, -errno, "setgroups: %s", strerror(errno));
		if (setresgid(gid, gid, gid))
			return xkv_errf(msg, msglen, -errno, "setresgid(%u): %s", (unsigned)gid, strerror(errno));
		if (setresuid(uid, uid, uid))
			return xkv_errf(msg, msglen, -errno, "setresuid(%u): %s", (unsigned)uid, strerror(errno));
		/* the change must hold: a way back to root means it did not */
		if (uid != 0 && (!setuid(0) || !seteuid(0)))
			return xkv_errf(msg, msglen, -EPERM, "uid 0 is still reachable after setresuid");
	}
	/* what the uid change left (or all of it, keeping the user) */
	cap_t none = cap_init();
	if (!none)
		return xkv_errf(msg, msglen, -errno, "cap_init: %s", strerror(errno));
	int e = cap_set_proc(none);
	cap_free(none);
	if (e)
		return xkv_errf(msg, msglen, -errno, "cannot clear the capabilities: %s", strerror(errno));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return xkv_errf(msg, msglen, -errno, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));

	char after[256];
	caps_text(after, sizeof(after));
	xkv_errf(msg, msglen, 0,
	      "dropped privileges: uid %u -> %u, gid %u -> %u%s%s, capabilities '%s' -> '%s'"
	      ", %d dropped from the bounding set, no_new_privs set",
	      (unsigned)uid0, (unsigned)uid, (unsigned)gid0, (unsigned)gid, user ? " as " : "",
	      user ? user : "", before, after, bound);
	return 0;
}
