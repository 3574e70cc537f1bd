/* SPDX-License-Identifier: MIT */
/* The slow path's counters (push.c), pushed by the UDP loop and the TCP
 * workers alike. */
#ifndef XDPKV_SERVER_PUSH_H
#define XDPKV_SERVER_PUSH_H

#include "xdpkv.h"

/* Add delta to the stats map's slow-path slot (one thread at a time, so
 * that no delta is lost) and zero it. */
void xkv_serve_push(struct xkv_store *s, struct xkv_stats *delta, int verbose);

#endif
