// SPDX-License-Identifier: MIT
/* The slow path's counters: a thread's delta added to the stats map. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "push.h"

/* The stats map's slow-path slot is read, added to and written back: the
 * threads of this process take turns. */
static pthread_mutex_t push_mu = PTHREAD_MUTEX_INITIALIZER;

void xkv_serve_push(struct xkv_store *s, struct xkv_stats *delta, int verbose)
{
	pthread_mutex_lock(&push_mu);
	int e = xkv_stats_slow_add(s, delta);
	pthread_mutex_unlock(&push_mu);
	if (e && verbose)
		fprintf(stderr, "xdpkv slow path: cannot update counters: %s\n", strerror(-e));
	memset(delta, 0, sizeof(*delta));
}
