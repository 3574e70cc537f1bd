// SPDX-License-Identifier: MIT
/* xdpkv detach: take the XDP program off an interface and remove its pins. */
#include "cli.h"

struct iface_opts {
	struct xo_iface ifc;
};

static const struct xo detach_table[] = {
	{ "IFACE", 0, XO_IFACE, offsetof(struct iface_opts, ifc), NULL,
	  "interface to detach from (may be gone: its stale pins are still removed)",
	  .flags = XO_POS | XO_REQ | XO_IF_ANY },
	XO_END,
};

static int run_detach(void *vo, const struct global_opts *g)
{
	struct iface_opts *o = vo;
	char dir[256];
	unsigned id = 0;
	int rc, did = 0;

	if ((rc = need_privileges("detach")))
		return rc;
	xkv_pin_dir(o->ifc.name, dir, sizeof(dir));
	if (o->ifc.ifindex) {
		int e = detach_ours(o->ifc.ifindex, 0, &id);
		if (e < 0) {
			xlog_dump();
			return sys_fail("detach", o->ifc.name, e);
		}
		if (e > 0) {
			printf("detached xdpkv (program id %u) from %s\n", id, o->ifc.name);
			did = 1;
		} else {
			printf("no xdpkv program is attached to %s\n", o->ifc.name);
		}
	} else {
		printf("interface %s does not exist (here); nothing to detach\n", o->ifc.name);
	}
	if (xkv_pins_exist(o->ifc.name)) {
		int n = xkv_pins_remove(o->ifc.name);
		if (n < 0)
			return sys_fail("detach", "removing pins", n);
		printf("removed %s%s\n", dir, did ? "" : " (stale pins)");
		did = 1;
	}
	return did ? EXIT_OK : EXIT_MISS;
}

const struct cmd cmd_detach = {
	.name = "detach",
	.synopsis = "IFACE",
	.summary = "take the XDP store off an interface and remove its pins",
	.doc = "Finds the xdpkv program on IFACE (alone or under libxdp's dispatcher), detaches it\n"
	       "and removes /sys/fs/bpf/xdpkv/IFACE.  Stale pins are removed even when no program\n"
	       "is attached.  Exit status 1 when there was nothing to remove.\n\n"
	       "Example: xdpkv detach veth0",
	.opts = detach_table,
	.opts_size = sizeof(struct iface_opts),
	.run = run_detach,
};
