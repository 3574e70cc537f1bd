// SPDX-License-Identifier: MIT
/* Our XDP program on an interface, through libxdp: finding it, putting it on
 * (fresh or in place of an earlier one) and taking it off; with it the TC
 * egress program of the XDP TCP responder (common/tcpx_tc.bpf.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <xdp/libxdp.h>
#include "cli.h"
#include "tcpx.h" /* the responder's programs, by slot */

#define XKV_PROG_NAME "xdpkv"

/* ---- finding our program on an interface ---- */

/* The multiprog view of ifindex, or NULL when no XDP program is attached. */
static struct xdp_multiprog *get_mp(int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (libxdp_get_error(mp))
		return NULL;
	return mp;
}

static bool is_ours(struct xdp_program *p, unsigned id)
{
	return !strcmp(xdp_program__name(p), XKV_PROG_NAME) && (!id || xdp_program__id(p) == id);
}

/* Our program in mp (program id `id`, or any when 0): the legacy main program
 * or one under the dispatcher. */
static struct xdp_program *find_ours(struct xdp_multiprog *mp, unsigned id, const char **other)
{
	struct xdp_program *p;

	*other = NULL;
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		if (p && is_ours(p, id))
			return p;
		*other = p ? xdp_program__name(p) : "?";
		return NULL;
	}
	for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp)) {
		if (is_ours(p, id))
			return p;
		*other = xdp_program__name(p);
	}
	return NULL;
}

int xdpkv_prog_on(int ifindex, unsigned *prog_id, bool *legacy, char *other, size_t olen)
{
	struct xdp_multiprog *mp = ifindex ? get_mp(ifindex) : NULL;
	const char *oth = NULL;
	int found = 0;

	if (other && olen)
		other[0] = 0;
	if (!mp)
		return 0;
	struct xdp_program *p = find_ours(mp, 0, &oth);
	if (p) {
		found = 1;
		*prog_id = xdp_program__id(p);
		*legacy = xdp_multiprog__is_legacy(mp);
	} else if (oth && other) {
		snprintf(other, olen, "%s", oth);
	}
	xdp_multiprog__close(mp);
	return found;
}

/* Take our program (program id `only`, or any when 0) off ifindex.
 * 1 detached, 0 none there, <0 -errno. */
/* ---- the TC egress half of TCP answered in XDP ---- */

#define XKV_TC_HANDLE 0x786b /* "xk" */
#define XKV_TC_PRIO 0x786b

int tcpx_egress_attach(struct bpf_object *obj, int ifindex, char *err, size_t errlen)
{
	struct bpf_program *p = bpf_object__find_program_by_name(obj, "xdpkv_tcpx_egress");
	struct bpf_map *progs = bpf_object__find_map_by_name(obj, "tcpx_progs");
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
	static const char *const tail[] = XKV_TCPX_PROG_NAMES; /* by slot */

	if (!p || !progs)
		return xkv_errf(err, errlen, -ENOENT, "the BPF object has no TCP responder");
	/* the XDP program's tail calls to the responder (the array is pinned:
	 * it keeps its entries after this process) */
	for (__u32 i = 0; i < sizeof(tail) / sizeof(tail[0]); i++) {
		struct bpf_program *x = bpf_object__find_program_by_name(obj, tail[i]);
		int xfd = x ? bpf_program__fd(x) : -1;
		if (xfd < 0 || bpf_map_update_elem(bpf_map__fd(progs), &i, &xfd, BPF_ANY)) {
			int e = xfd < 0 ? -ENOENT : -errno;
			/* none of a reused array's entries (an older program's, on
			 * an older store) stays: TCP goes to the kernel */
			for (__u32 j = 0; j < sizeof(tail) / sizeof(tail[0]); j++)
				bpf_map_delete_elem(bpf_map__fd(progs), &j);
			return xkv_errf(err, errlen, e, "cannot put the TCP responder's %s in tcpx_progs: %s",
					tail[i], xfd < 0 ? "not in the object" : strerror(-e));
		}
	}
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XKV_TC_HANDLE, .priority = XKV_TC_PRIO,
			    .prog_fd = bpf_program__fd(p), .flags = BPF_TC_F_REPLACE);
	int e = bpf_tc_hook_create(&hook);
	if (e && e != -EEXIST)
		xkv_errf(err, errlen, e, "cannot add a clsact qdisc for the TCP egress program: %s",
			 strerror(-e));
	else if ((e = bpf_tc_attach(&hook, &opts)))
		xkv_errf(err, errlen, e, "cannot attach the TCP egress program: %s", strerror(-e));
	else
		return 0;
	/* no translation on the way out: nothing may be answered on the way in */
	for (__u32 j = 0; j < sizeof(tail) / sizeof(tail[0]); j++)
		bpf_map_delete_elem(bpf_map__fd(progs), &j);
	return e;
}

int tcpx_egress_detach(int ifindex)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XKV_TC_HANDLE, .priority = XKV_TC_PRIO);
	int e = bpf_tc_detach(&hook, &opts);
	return e == -ENOENT || e == -EINVAL ? 0 : e;
}

int detach_ours(int ifindex, unsigned only, unsigned *id_out)
{
	if (!only)
		tcpx_egress_detach(ifindex);
	struct xdp_multiprog *mp = get_mp(ifindex);
	const char *other;
	int e;

	if (!mp)
		return 0;
	struct xdp_program *p = find_ours(mp, only, &other);
	if (!p) {
		xdp_multiprog__close(mp);
		return 0;
	}
	*id_out = xdp_program__id(p);
	if (xdp_multiprog__is_legacy(mp))
		e = xdp_multiprog__detach(mp);
	else
		e = xdp_program__detach(p, ifindex, xdp_multiprog__attach_mode(mp), 0);
	xdp_multiprog__close(mp);
	return e ? e : 1;
}

bool attach_prior(const struct xo_iface *ifc, struct prior *pr, char *other, size_t olen)
{
	bool leg = false;
	memset(pr, 0, sizeof(*pr));
	other[0] = 0;
	pr->ours = xdpkv_prog_on(ifc->ifindex, &pr->id, &pr->legacy, other, olen);
	pr->pins = xkv_pins_exist(ifc->name);
	struct xdp_multiprog *mp = get_mp(ifc->ifindex);
	if (mp) {
		leg = xdp_multiprog__is_legacy(mp);
		pr->xmode = xdp_multiprog__attach_mode(mp);
		xdp_multiprog__close(mp);
	}
	return leg;
}

void print_load_failure(struct bpf_object *obj, int e, const struct xo_iface *ifc, int mode)
{
	char tail[3072];

	xerr("attach: loading or attaching the XDP program on %s failed: %s", ifc->name,
	     strerror(-e));
	xkv_object_log_tail(obj, tail, sizeof(tail));
	if (tail[0])
		fprintf(stderr, "verifier log (tail):\n%s\n", tail);
	xlog_dump();
	if (e == -EOPNOTSUPP && mode == XKV_MODE_NATIVE)
		xhint("the driver of %s may lack native XDP: try --mode skb", ifc->name);
	else if (e == -EBUSY || e == -EEXIST)
		xhint("another XDP program is on %s: 'xdp-loader status %s'", ifc->name, ifc->name);
	else if (e == -ERANGE || e == -EINVAL)
		xhint("the device MTU may be too large for native XDP, or try --mode skb");
}

/* Which way libxdp attached us (it tries its dispatcher first). */
const char *attach_path(int ifindex, unsigned *id)
{
	bool legacy = true;
	*id = 0;
	if (!xdpkv_prog_on(ifindex, id, &legacy, NULL, 0))
		return "unknown (program not found after attach)";
	return legacy ? "single program" : "libxdp dispatcher (multi-program)";
}


/* Put obj's program on the interface: fresh through libxdp, or in place of
 * our program there (pr) without a moment where neither runs.  *how says
 * which way.  0 or -errno (printed). */
int put_prog(struct bpf_object *obj, const struct xo_iface *ifc, int mode, const struct prior *pr,
	     int xmode, const char **how)
{
	char err[XKV_ERRLEN];
	unsigned id;
	int e;

	if (pr->ours && pr->legacy && pr->xmode == xmode) {
		/* libxdp will not replace a program it attached alone (-EBUSY):
		 * the kernel swaps it in one step, XDP_FLAGS_REPLACE naming the
		 * old one (a concurrent change makes it fail, not clobber) */
		if ((e = xkv_object_load(obj, err, sizeof(err))))
			return e; /* the caller says why (attach_load_failed) */
		int old = bpf_prog_get_fd_by_id(pr->id);
		if (old < 0) {
			e = -errno;
			xerr("attach: cannot open the attached program id %u: %s", pr->id, strerror(-e));
			return e;
		}
		LIBBPF_OPTS(bpf_xdp_attach_opts, ao, .old_prog_fd = old);
		__u32 fl = XDP_FLAGS_REPLACE | (xmode == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
		e = bpf_xdp_attach(ifc->ifindex, bpf_program__fd(xkv_object_prog(obj)), fl, &ao);
		close(old);
		*how = "swapped in one step (XDP_FLAGS_REPLACE)";
		return e;
	}
	DECLARE_LIBXDP_OPTS(xdp_program_opts, xo, .obj = obj, .prog_name = XKV_PROG_NAME);
	struct xdp_program *prog = xdp_program__create(&xo);
	if ((e = (int)libxdp_get_error(prog))) {
		xerr("attach: libxdp cannot use the BPF object: %s", strerror(-e));
		xlog_dump();
		return e;
	}
	*how = NULL;
	if (pr->ours && pr->xmode != xmode) {
		/* an interface runs a native or a generic program, never both */
		if ((e = detach_ours(ifc->ifindex, pr->id, &id)) < 0)
			xerr("attach: detaching program id %u: %s", pr->id, strerror(-e));
		*how = "detached, then the new one attached (--mode changed: a moment without XDP)";
	}
	/* Ours tail-calls the TCP responder (tcpx_progs): under libxdp's
	 * dispatcher it would be an extension program, and the kernel keeps XDP
	 * programs out of an extension's tail-call array (6.1: the responder's
	 * programs fail to load, EINVAL) or refuses the extension itself (6.12,
	 * --no-xdp-tcp too).  So it always goes on alone. */
	bool alone = !getenv("LIBXDP_SKIP_DISPATCHER");
	if (alone)
		setenv("LIBXDP_SKIP_DISPATCHER", "1", 1);
	if (!(e = e < 0 ? e : xdp_program__attach(prog, ifc->ifindex, xmode, 0)) && pr->ours && !*how) {
		/* under libxdp's dispatcher: the new one joined it, the old one leaves */
		if ((e = detach_ours(ifc->ifindex, pr->id, &id)) < 0)
			xerr("attach: removing program id %u from the dispatcher: %s", pr->id, strerror(-e));
		e = e < 0 ? e : 0;
		*how = "added to libxdp's dispatcher, then the old one removed";
	}
	if (alone)
		unsetenv("LIBXDP_SKIP_DISPATCHER");
	xdp_program__close(prog);
	return e;
}
