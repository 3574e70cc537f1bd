/* SPDX-License-Identifier: MIT */
/* What the two arena probes share (bench/arena_probes/arena_probe.c, the kernel asked with
 * hand-assembled programs; bench/arena_probes/arena_c_probe.c, a C program through
 * libbpf): the map type's number, the probe arena, and the reason a load
 * failed read from a log. */
#ifndef XKV_ARENA_PROBE_H
#define XKV_ARENA_PROBE_H

#include <string.h>
#include <sys/mman.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>

#define MAP_TYPE_ARENA 33 /* enum bpf_map_type, Linux 6.9; not in libbpf 1.1's headers */
#define ARENA_PROBE_PAGES 4

/* an arena of ARENA_PROBE_PAGES pages created and mmapped anywhere (which
 * sets its user address); the map fd, or -1 with errno set when the kernel
 * refuses the map; *mm is MAP_FAILED when only the mmap failed */
static inline int arena_probe_create(const char *name, void **mm)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	int fd = bpf_map_create(MAP_TYPE_ARENA, name, 0, 0, ARENA_PROBE_PAGES, &mo);
	*mm = fd < 0 ? MAP_FAILED :
		       mmap(NULL, ARENA_PROBE_PAGES * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return fd;
}

/* the reason in a verifier's or libbpf's log: its last line that is not the
 * "processed N insns" summary nor libbpf's framing around a log it dumps
 * (quotes made safe for a JSON line); cuts buf */
static inline const char *arena_probe_reason(char *buf)
{
	static const char *const framing[] = { "processed ", "libbpf: prog '", "-- END",
						"failed to load object", "failed to load program" };
	for (;;) {
		size_t n = strlen(buf);
		while (n && buf[n - 1] == '\n')
			buf[--n] = 0;
		char *p = strrchr(buf, '\n');
		char *line = p ? p + 1 : buf;
		int skip = 0;
		for (size_t i = 0; i < sizeof(framing) / sizeof(framing[0]); i++)
			skip |= strstr(line, framing[i]) != NULL;
		if (!skip || line == buf) {
			for (char *q = line; *q; q++)
				if (*q == '"' || *q == '\\')
					*q = '\'';
			return line;
		}
		*p = 0;
	}
}

#endif
