// SPDX-License-Identifier: MIT
/* The request generator, run by BPF_PROG_TEST_RUN in live-frames mode.
 *
 * Live frames come from a page pool and are recycled; between two uses the
 * kernel resets only the data pointers, not the bytes.  Here the server
 * rewrites the frame into its reply in place before the page comes back, so
 * every run writes the whole request (headers and text) again from the
 * table, and sets the length to the table entry's. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "xdpgen.h"

const volatile struct xg_gen_cfg gcfg = { .nframes = 1, .frame_max = 64 };

/* The request sequence: one whole frame per entry.  value_size and
 * max_entries are set at load time (value type left out on purpose). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, XG_FRAME_OFF + 64);
} table SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xg_gen_state);
} state SEC(".maps");

SEC("xdp")
int xdpgen(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct xg_gen_state *s = bpf_map_lookup_elem(&state, &zero);

	if (!s)
		return XDP_ABORTED;
	/* pacing: a frame that is early goes straight back to the pool; after
	 * a stall (the thread was preempted) catch up by at most one burst */
	if (gcfg.interval_ns) {
		__u64 now = bpf_ktime_get_ns();
		if (now < s->next_ns)
			return XDP_DROP;
		if (now - s->next_ns > gcfg.burst_ns)
			s->next_ns = now - gcfg.burst_ns;
		s->next_ns += gcfg.interval_ns;
	}
	if (gcfg.static_frame) {
		s->sent++;
		return XDP_TX;
	}

	__u32 i = (__u32)(s->pos++ % gcfg.nframes);
	struct xg_frame *f = bpf_map_lookup_elem(&table, &i);
	if (!f)
		goto bad;
	__u32 len = f->len;
	if (len < 14 || len > gcfg.frame_max)
		goto bad;
	int cur = (int)(ctx->data_end - ctx->data);
	if ((int)len != cur && bpf_xdp_adjust_tail(ctx, (int)len - cur))
		goto bad;
	if (bpf_xdp_store_bytes(ctx, 0, f->data, len))
		goto bad;
	s->sent++;
	return XDP_TX;
bad:
	s->bad++;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
