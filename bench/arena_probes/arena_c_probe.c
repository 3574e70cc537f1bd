// SPDX-License-Identifier: MIT
/* arena_c_probe: can an XDP program written in C use a BPF arena with the
 * toolchain at hand (clang >= 18 for the program, the system libbpf for the
 * loader)?  bench/arena_probes/arena_probe asks the kernel with hand-assembled programs;
 * this asks the compiler and libbpf.  docs/layouts-buckets-arena.md ("BPF
 * arena: the probe") records what it printed.
 *
 * The program (arena_c_probe.bpf.c) reads word 0 of the arena's page 0,
 * writes it back + 1 at word 1, and writes what page 3 (never faulted in)
 * reads + 7 at word 2.  Three ways to load it, each from a fresh open:
 *   A. libbpf alone: the arena map as declared in BTF, nothing else;
 *   B. libbpf creates the arena at a fixed user address (map_extra), the
 *      program gets that address in rodata, userspace mmaps it after load;
 *   C. userspace creates the arena (bpf_map_create), mmaps it, hands the fd
 *      to libbpf (bpf_map__reuse_fd) and the address through rodata.
 * Each prints one line: the step that failed with libbpf's or the
 * verifier's words, or what the test run read and wrote.  Last, a JSON line.
 * Exit 0 when B and C both work in both directions (A cannot: the verifier
 * wants the arena's user address before load), 2 when the probe ran but
 * found fewer ways working, 1 when the probe itself failed, 77 when not
 * root or when this kernel has no arena maps at all (or does not permit
 * them: a SKIP line says which). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "arena_c_probe.skel.h"
#include "arena_probe.h"
#include "log.h"

#define PAGES ARENA_PROBE_PAGES
#define MAGIC 0x5eedf00dcafe0002ull
/* way B's fixed address: page aligned, the arena inside one 4 GiB window */
#define FIXED_ADDR 0x7e0000000000ull

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static char msgs[1 << 16]; /* libbpf's messages for the current way */
static size_t msgs_len;
static char vlog[1 << 16]; /* the verifier's log */

/* libbpf's messages but its debug ones (lib/log.c's hook, at XKV_LOG_INFO) */
static void on_print(enum xkv_log_level level, const char *fmt, va_list ap)
{
	if (msgs_len >= sizeof(msgs) - 1)
		return;
	int n = vsnprintf(msgs + msgs_len, sizeof(msgs) - msgs_len, fmt, ap);
	if (n > 0)
		msgs_len += (size_t)n < sizeof(msgs) - msgs_len ? (size_t)n : sizeof(msgs) - msgs_len - 1;
}

/* why a load failed: the verifier's reason when it ran, libbpf's otherwise */
static const char *why(void)
{
	return vlog[0] ? arena_probe_reason(vlog) : arena_probe_reason(msgs);
}

static struct arena_c_probe *open_fresh(void)
{
	msgs_len = 0;
	msgs[0] = 0;
	vlog[0] = 0;
	struct arena_c_probe *s = arena_c_probe__open();
	if (s)
		bpf_program__set_log_buf(s->progs.arena_rw, vlog, sizeof(vlog));
	return s;
}

/* run the program once on mm (the arena as userspace sees it); print and
 * append to the JSON what it read and wrote; 0 when both directions work */
static int run_and_check(const char *way, struct arena_c_probe *s, volatile __u64 *mm, char *json, size_t cap)
{
	mm[0] = MAGIC;
	mm[1] = mm[2] = 0;
	__u8 pkt[64] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = pkt, .data_size_in = sizeof(pkt), .repeat = 1);
	int e = bpf_prog_test_run_opts(bpf_program__fd(s->progs.arena_rw), &t);
	int ok = !e && t.retval == XDP_PASS && mm[1] == MAGIC + 1 && mm[2] == 7;
	printf("%s: loaded; test run %s, returned %u; read userspace's value and wrote it back +1: %s; "
	       "page 3 (never faulted in) read as %llu\n",
	       way, e ? strerror(errno) : "ok", t.retval, mm[1] == MAGIC + 1 ? "yes" : "NO",
	       (unsigned long long)(mm[2] - 7));
	snprintf(json + strlen(json), cap - strlen(json),
		 ",\"%s\":{\"loaded\":true,\"run\":%s,\"user_to_xdp_to_user\":%s,\"untouched_page_reads\":%llu}", way,
		 e ? "false" : "true", mm[1] == MAGIC + 1 ? "true" : "false", (unsigned long long)(mm[2] - 7));
	return ok ? 0 : -1;
}

static void refused(const char *way, const char *step, char *json, size_t cap)
{
	const char *r = why();
	printf("%s: %s failed: %s\n", way, step, r);
	snprintf(json + strlen(json), cap - strlen(json), ",\"%s\":{\"loaded\":false,\"step\":\"%s\",\"error\":\"%s\"}",
		 way, step, r);
}

int main(void)
{
	char json[8192] = "{";
	int works = 0;

	if (geteuid() != 0) {
		fprintf(stderr, "arena_c_probe: needs root (BPF maps and programs)\n");
		return 77;
	}
	void *mm0;
	int fd0 = arena_probe_create("probe_any", &mm0);
	if (fd0 < 0) {
		printf("SKIP arena_c_probe: this kernel refuses BPF_MAP_TYPE_ARENA maps: %s\n", strerror(errno));
		return 77;
	}
	if (mm0 != MAP_FAILED)
		munmap(mm0, ARENA_PROBE_PAGES * 4096);
	close(fd0);
	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	xkv_log_set_level(XKV_LOG_INFO);
	xkv_log_set_sink(on_print);
	xkv_log_libbpf();

	/* how libbpf reads the BTF map definition */
	struct arena_c_probe *s = open_fresh();
	if (!s) {
		printf("open: failed: %s\n", arena_probe_reason(msgs));
		printf("{\"open\":false,\"error\":\"%s\"}\n", arena_probe_reason(msgs));
		return 1;
	}
	struct bpf_map *m = s->maps.arena;
	printf("open: libbpf %s parsed the arena map: type %d, key %u, value %u, max_entries %u, flags %#x\n",
	       libbpf_version_string(), bpf_map__type(m), bpf_map__key_size(m), bpf_map__value_size(m),
	       bpf_map__max_entries(m), bpf_map__map_flags(m));
	snprintf(json + strlen(json), sizeof(json) - strlen(json),
		 "\"libbpf\":\"%s\",\"open\":true,\"parsed_type\":%d", libbpf_version_string(), bpf_map__type(m));

	/* A. libbpf alone */
	int e = arena_c_probe__load(s);
	if (e)
		refused("A_libbpf_alone", "load", json, sizeof(json));
	else
		printf("A_libbpf_alone: loaded (not run: no user address to reach the arena at)\n");
	arena_c_probe__destroy(s);

	/* B. libbpf creates the arena at a fixed user address */
	s = open_fresh();
	if (!s)
		return 1;
	bpf_map__set_map_extra(s->maps.arena, FIXED_ADDR);
	s->rodata->arena_base = FIXED_ADDR;
	if (arena_c_probe__load(s)) {
		refused("B_map_extra", "load", json, sizeof(json));
	} else {
		void *mm = mmap((void *)FIXED_ADDR, PAGES * 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
				bpf_map__fd(s->maps.arena), 0);
		if (mm == MAP_FAILED) {
			printf("B_map_extra: loaded, but mmap at %#llx failed: %s\n", FIXED_ADDR, strerror(errno));
			snprintf(json + strlen(json), sizeof(json) - strlen(json),
				 ",\"B_map_extra\":{\"loaded\":true,\"mmap_errno\":%d}", errno);
		} else {
			works += !run_and_check("B_map_extra", s, mm, json, sizeof(json));
			munmap(mm, PAGES * 4096);
		}
	}
	arena_c_probe__destroy(s);

	/* C. userspace creates and mmaps the arena, libbpf reuses its fd */
	s = open_fresh();
	if (!s)
		return 1;
	void *mm;
	int fd = arena_probe_create("arena", &mm);
	if (fd < 0) {
		printf("C_reuse_fd: bpf_map_create failed: %s\n", strerror(errno));
		printf("%s,\"C_reuse_fd\":{\"created\":false}}\n", json);
		return 1;
	}
	if (mm == MAP_FAILED) {
		perror("arena_c_probe: mmap");
		return 1;
	}
	if (bpf_map__reuse_fd(s->maps.arena, fd)) {
		refused("C_reuse_fd", "bpf_map__reuse_fd", json, sizeof(json));
	} else {
		s->rodata->arena_base = (__u64)(unsigned long)mm;
		if (arena_c_probe__load(s))
			refused("C_reuse_fd", "load", json, sizeof(json));
		else
			works += !run_and_check("C_reuse_fd", s, mm, json, sizeof(json));
	}
	arena_c_probe__destroy(s);
	munmap(mm, PAGES * 4096);
	close(fd);

	printf("%s,\"ways_that_work\":%d}\n", json, works);
	return works == 2 ? 0 : 2;
}
