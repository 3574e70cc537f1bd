// SPDX-License-Identifier: MIT
/* attach: when the kernel refuses a program.  Each program of the
 * configuration is loaded alone (store/verify.c) to learn which: an
 * optional one (the TCP responder, the TCP verdict) is left out with one
 * line and the attach goes on; the XDP program itself is named with the
 * verifier's own reason and what to try. */
#include <errno.h>
#include <string.h>
#include <sys/utsname.h>
#include "cli.h"
#include "attach.h"

/* The optional features: their programs and the flag that leaves them out. */
static const struct {
	const char *prog;
	__u32 flag;
	const char *feature, *without, *opt;
} optional[] = {
	{ "xdpkv_tcpx", XKV_CFG_NO_XDP_TCP, "the TCP responder in the driver hook",
	  "TCP is answered by serve (and the TCP verdict)", "--no-xdp-tcp" },
	{ "xdpkv_tcpx_run", XKV_CFG_NO_XDP_TCP, "the TCP responder in the driver hook",
	  "TCP is answered by serve (and the TCP verdict)", "--no-xdp-tcp" },
	{ "xdpkv_tcpx_bin", XKV_CFG_NO_XDP_TCP, "the TCP responder in the driver hook",
	  "TCP is answered by serve (and the TCP verdict)", "--no-xdp-tcp" },
	{ "xdpkv_tcpx_meta", XKV_CFG_NO_XDP_TCP, "the TCP responder in the driver hook",
	  "TCP is answered by serve (and the TCP verdict)", "--no-xdp-tcp" },
	{ "xdpkv_tcpx_fin", XKV_CFG_NO_XDP_TCP, "the TCP responder in the driver hook",
	  "TCP is answered by serve (and the TCP verdict)", "--no-xdp-tcp" },
	{ "xdpkv_tcpx_egress", XKV_CFG_NO_XDP_TCP, "the TCP responder in the driver hook",
	  "TCP is answered by serve (and the TCP verdict)", "--no-xdp-tcp" },
	{ "xdpkv_tcp", XKV_CFG_NO_TCP_FAST, "the TCP verdict on serve's connections",
	  "serve answers TCP in userspace", "--no-tcp-fast-path" },
};

struct refusals {
	__u32 leave_out;         /* XKV_CFG_* flags of the features refused */
	int main_refused;        /* the XDP program itself */
	char main_reason[256];
	char reason[sizeof(optional) / sizeof(optional[0])][256]; /* per optional[] entry */
	int n;                   /* programs refused */
};

static int note_refusal(void *arg, const struct xkv_prog_cost *c)
{
	struct refusals *r = arg;

	if (!c->err)
		return 0;
	r->n++;
	if (!strcmp(c->name, "xdpkv")) {
		r->main_refused = 1;
		snprintf(r->main_reason, sizeof(r->main_reason), "%s", c->reason);
		return 0;
	}
	for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++)
		if (!strcmp(c->name, optional[i].prog)) {
			r->leave_out |= optional[i].flag;
			snprintf(r->reason[i], sizeof(r->reason[i]), "%s", c->reason);
		}
	return 0;
}

int attach_load_failed(struct bpf_object *obj, struct xkv_config *cfg, int e, const struct xo_iface *ifc,
		       int mode)
{
	struct refusals r = {};
	char err[XKV_ERRLEN];
	struct utsname u;

	uname(&u);
	const struct xkv_layout *L = xkv_layout_find_any(cfg->layout);
	if (L && xkv_layout_probe(L, err, sizeof(err)) == 0) {
		/* not a program: the store itself (arena where arenas are missing) */
		xerr("attach: layout %s is not available on this kernel (%s): %s", cfg->layout, u.release, err);
		xhint("'xdpkv layouts' lists the layouts this kernel can hold (docs/kernels.md)");
		return -1;
	}
	if (xkv_verify_layout(cfg, note_refusal, &r, err, sizeof(err)) || !r.n) {
		/* every program loads alone: the attach itself failed */
		print_load_failure(obj, e, ifc, mode);
		return -1;
	}
	if (r.main_refused) {
		xerr("attach: this kernel (%s) refuses the XDP program 'xdpkv' of layout %s "
		     "(keys <= %u B, values <= %u B): %s", u.release, cfg->layout, cfg->key_cap, cfg->val_cap,
		     r.main_reason);
		xhint("'xdpkv --layout %s verify -k %u -s %u' shows each program's verifier cost; a smaller "
		      "--value-size or --key-size, another layout, or a kernel docs/install.md lists may load",
		      cfg->layout, cfg->key_cap, cfg->val_cap);
		return -1;
	}
	/* only optional programs: leave them out, one line a feature */
	for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++) {
		if (!r.reason[i][0])
			continue;
		bool first = true;
		for (size_t j = 0; j < i; j++)
			if (optional[j].flag == optional[i].flag && r.reason[j][0])
				first = false;
		if (first)
			printf("attach: left out %s: this kernel (%s) refuses %s (%s); %s ('%s' says so "
			       "and skips the check)\n", optional[i].feature, u.release, optional[i].prog,
			       r.reason[i], optional[i].without, optional[i].opt);
	}
	cfg->flags |= r.leave_out;
	return 0;
}
