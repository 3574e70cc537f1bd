// SPDX-License-Identifier: MIT
/* arena_c_probe.bpf.c: the arena probe's XDP program written in C, for a
 * compiler with BPF address spaces (clang >= 18: __BPF_FEATURE_ADDR_SPACE_CAST).
 * bench/arena_probes/arena_c_probe.c loads it with the system libbpf and reports which step
 * works (docs/layouts-buckets-arena.md, "BPF arena: the probe").
 *
 * The arena's base comes from rodata (userspace writes the arena's user
 * address there before load), not from an __arena global: globals in
 * address space 1 need libbpf >= 1.4 to be placed in the arena. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef __BPF_FEATURE_ADDR_SPACE_CAST
#error "arena_c_probe.bpf.c needs a clang with BPF address spaces (clang >= 18)"
#endif

#define __arena __attribute__((address_space(1)))
#define MAP_TYPE_ARENA 33 /* enum bpf_map_type, Linux 6.9; not in libbpf 1.1's headers */
#define ARENA_PAGES 4
#define WORDS_PER_PAGE (4096 / 8)

struct {
	__uint(type, MAP_TYPE_ARENA);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, ARENA_PAGES); /* pages */
} arena SEC(".maps");

/* the arena's user address (its user_vm_start); only the low 32 bits
 * matter to the kernel's cast, but the whole address is kept */
const volatile __u64 arena_base;

SEC("xdp")
int arena_rw(struct xdp_md *ctx)
{
	/* Referencing the map makes it the program's arena: without it the
	 * verifier refuses the address-space cast. */
	asm volatile("" : : "r"(&arena));
	__u64 __arena *w = (__u64 __arena *)arena_base;

	/* LLVM casts each access through an __arena pointer to the kernel's
	 * view (addr_space_cast) by itself */
	w[1] = w[0] + 1;                        /* page 0: userspace's value + 1 */
	w[2] = w[3 * WORDS_PER_PAGE] + 7;       /* page 3: never faulted in */
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
