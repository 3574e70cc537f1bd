// SPDX-License-Identifier: MIT
/* arena_probe: can an XDP program use a BPF arena (BPF_MAP_TYPE_ARENA) on
 * this kernel?  docs/layouts-buckets-arena.md ("BPF arena: the probe")
 * records what it printed on the project's machine.
 *
 * It needs no compiler with BPF address spaces (the default clang here is 14,
 * which cannot emit the address-space cast; arena_c_probe.c does the same in C
 * with clang >= 18), so it talks to the kernel directly: it creates the map
 * with bpf_map_create and loads hand-assembled programs with bpf_prog_load.
 *
 *   1. create an arena of 4 pages (BPF_F_MMAPABLE), mmap it, write page 0
 *      from userspace (the page is allocated by the fault);
 *   2. an XDP program reads page 0 through the arena pointer
 *      (ld_imm64 of the arena + addr_space_cast), writes page 0, and reads
 *      page 3, which nobody has touched; run through BPF_PROG_TEST_RUN;
 *   3. an XDP program calling bpf_arena_alloc_pages: accepted or not (the
 *      verifier's words);
 *   4. the same kfunc from a sleepable BPF_PROG_TYPE_SYSCALL program, run
 *      once: the page it returns, seen from userspace.
 * Prints one line per finding and, last, a JSON line.  Exit 0 when every
 * step ran (whatever it found), 1 when the probe itself failed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "arena_probe.h"

#define ADDR_SPACE_CAST 1        /* insn.off of BPF_ALU64|BPF_MOV|BPF_X, Linux 6.9 */
#define PAGES ARENA_PROBE_PAGES
#define MAGIC 0x5eedf00dcafe0001ull

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
#define LD_IMM64(d, s, i) INSN(BPF_LD | BPF_DW | BPF_IMM, d, s, 0, i), INSN(0, 0, 0, 0, 0)
#define MOV64_IMM(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define ADD64_IMM(d, i) INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define CAST_KERN(d, s) INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, ADDR_SPACE_CAST, 1)
#define LDX64(d, s, o) INSN(BPF_LDX | BPF_MEM | BPF_DW, d, s, o, 0)
#define STX64(d, s, o) INSN(BPF_STX | BPF_MEM | BPF_DW, d, s, o, 0)
#define KFUNC(id) INSN(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_KFUNC_CALL, 0, id)
#define EXIT() INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

static char vlog[1 << 16];

/* the verifier's reason for the last refusal */
static const char *log_tail(void)
{
	return arena_probe_reason(vlog);
}

static int load(enum bpf_prog_type type, __u32 flags, const struct bpf_insn *insns, size_t n)
{
	LIBBPF_OPTS(bpf_prog_load_opts, o, .log_buf = vlog, .log_size = sizeof(vlog), .log_level = 1,
		    .prog_flags = flags);
	vlog[0] = 0;
	return bpf_prog_load(type, "arena_probe", "GPL", insns, n, &o);
}

int main(void)
{
	char json[2048];
	int n = 0;

	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	/* 1. the map, mmapped; page 0 written from userspace */
	void *m;
	int arena = arena_probe_create("probe_arena", &m);
	if (arena < 0) {
		printf("arena map: cannot create (%s): this kernel has no BPF arena\n", strerror(errno));
		printf("{\"arena_map\":false,\"errno\":%d}\n", errno);
		return 0;
	}
	__u8 *mm = m;
	if (m == MAP_FAILED) {
		perror("arena_probe: mmap");
		return 1;
	}
	((volatile __u64 *)mm)[0] = MAGIC;
	printf("arena map: created (%d pages), mmapped at %p; page 0 written from userspace\n", PAGES, mm);
	n += snprintf(json + n, sizeof(json) - n, "{\"arena_map\":true");

	/* 2. XDP reads and writes through the arena pointer */
	struct bpf_insn xdp_rw[] = {
		LD_IMM64(BPF_REG_1, BPF_PSEUDO_MAP_VALUE, arena), /* the arena's user address */
		CAST_KERN(BPF_REG_1, BPF_REG_1),
		LDX64(BPF_REG_2, BPF_REG_1, 0),              /* userspace's MAGIC */
		ADD64_IMM(BPF_REG_2, 1),
		STX64(BPF_REG_1, BPF_REG_2, 8),              /* page 0, word 1: MAGIC + 1 */
		LDX64(BPF_REG_3, BPF_REG_1, 3 * 4096),       /* page 3: never touched */
		ADD64_IMM(BPF_REG_3, 7),
		STX64(BPF_REG_1, BPF_REG_3, 16),             /* page 0, word 2: what page 3 read + 7 */
		MOV64_IMM(BPF_REG_0, XDP_PASS),
		EXIT(),
	};
	/* the immediate of a BPF_PSEUDO_MAP_VALUE ld_imm64: map fd, then offset */
	int fd = load(BPF_PROG_TYPE_XDP, 0, xdp_rw, sizeof(xdp_rw) / sizeof(xdp_rw[0]));
	if (fd < 0) {
		printf("XDP program using arena pointers: REJECTED: %s\n", log_tail());
		n += snprintf(json + n, sizeof(json) - n, ",\"xdp_access\":false,\"xdp_access_log\":\"%s\"",
			      log_tail());
	} else {
		__u8 pkt[64] = { 0 };
		LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = pkt, .data_size_in = sizeof(pkt), .repeat = 1);
		int e = bpf_prog_test_run_opts(fd, &t);
		__u64 w1 = ((volatile __u64 *)mm)[1], w2 = ((volatile __u64 *)mm)[2];
		printf("XDP program using arena pointers: loaded; test run %s, returned %u; it read userspace's "
		       "value and wrote %s; page 3 (never faulted in) read as %llu\n",
		       e ? strerror(errno) : "ok", t.retval, w1 == MAGIC + 1 ? "it back (+1) where userspace sees it" :
		       "something else", (unsigned long long)(w2 - 7));
		n += snprintf(json + n, sizeof(json) - n,
			      ",\"xdp_access\":true,\"xdp_run\":%s,\"xdp_read_user_page\":%s,\"xdp_untouched_page_reads\":%llu",
			      e ? "false" : "true", w1 == MAGIC + 1 ? "true" : "false", (unsigned long long)(w2 - 7));
		close(fd);
	}

	/* 3, 4. bpf_arena_alloc_pages from XDP, then from a sleepable program */
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int kf = vmlinux ? btf__find_by_name_kind(vmlinux, "bpf_arena_alloc_pages", BTF_KIND_FUNC) : -1;
	if (kf < 0) {
		printf("bpf_arena_alloc_pages: not in the kernel's BTF\n");
		n += snprintf(json + n, sizeof(json) - n, ",\"alloc_kfunc\":false}");
		printf("%s\n", json);
		return 0;
	}
	struct bpf_insn alloc[] = {
		LD_IMM64(BPF_REG_1, BPF_PSEUDO_MAP_FD, arena),
		MOV64_IMM(BPF_REG_2, 0),  /* addr__ign: anywhere */
		MOV64_IMM(BPF_REG_3, 1),  /* one page */
		MOV64_IMM(BPF_REG_4, -1), /* NUMA_NO_NODE */
		MOV64_IMM(BPF_REG_5, 0),
		KFUNC(kf),
		MOV64_IMM(BPF_REG_0, XDP_PASS),
		EXIT(),
	};
	fd = load(BPF_PROG_TYPE_XDP, 0, alloc, sizeof(alloc) / sizeof(alloc[0]));
	printf("XDP program calling bpf_arena_alloc_pages: %s%s\n", fd < 0 ? "REJECTED: " : "loaded",
	       fd < 0 ? log_tail() : "");
	n += snprintf(json + n, sizeof(json) - n, ",\"xdp_alloc\":%s,\"xdp_alloc_log\":\"%s\"",
		      fd < 0 ? "false" : "true", fd < 0 ? log_tail() : "");
	if (fd >= 0)
		close(fd);
	/* the syscall program returns the page's address (its low 32 bits) */
	struct bpf_insn salloc[] = {
		LD_IMM64(BPF_REG_1, BPF_PSEUDO_MAP_FD, arena),
		MOV64_IMM(BPF_REG_2, 0),
		MOV64_IMM(BPF_REG_3, 1),
		MOV64_IMM(BPF_REG_4, -1),
		MOV64_IMM(BPF_REG_5, 0),
		KFUNC(kf),
		EXIT(),
	};
	fd = load(BPF_PROG_TYPE_SYSCALL, BPF_F_SLEEPABLE, salloc, sizeof(salloc) / sizeof(salloc[0]));
	if (fd < 0) {
		printf("sleepable syscall program calling bpf_arena_alloc_pages: REJECTED: %s\n", log_tail());
		n += snprintf(json + n, sizeof(json) - n, ",\"syscall_alloc\":false");
	} else {
		LIBBPF_OPTS(bpf_test_run_opts, t);
		int e = bpf_prog_test_run_opts(fd, &t);
		__u32 off = t.retval - (__u32)(unsigned long)mm;
		printf("sleepable syscall program calling bpf_arena_alloc_pages: loaded; run %s, page at "
		       "arena offset %u (userspace address %p)\n", e ? strerror(errno) : "ok", off,
		       (void *)(mm + off));
		n += snprintf(json + n, sizeof(json) - n, ",\"syscall_alloc\":%s,\"syscall_alloc_off\":%u",
			      e || !t.retval ? "false" : "true", off);
		close(fd);
	}
	btf__free(vmlinux);
	snprintf(json + n, sizeof(json) - n, "}");
	printf("%s\n", json);
	munmap(mm, PAGES * 4096);
	close(arena);
	return 0;
}
