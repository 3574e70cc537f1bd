// SPDX-License-Identifier: MIT
/* The slow path's per-source rate limit (ratelimit.h). */
#include <string.h>
#include "ratelimit.h"
#include "fnv.h"
#include "policy.h"

void xkv_rl_init(struct xkv_rl *rl, __u32 rate, __u32 burst)
{
	memset(rl, 0, sizeof(*rl));
	pthread_mutex_init(&rl->mu, NULL);
	if (!rate)
		return;
	rl->period_ns = 1000000000ull / rate;
	rl->tau_ns = rl->period_ns * ((burst ? burst : 1) - 1);
}

void xkv_rl_destroy(struct xkv_rl *rl)
{
	pthread_mutex_destroy(&rl->mu);
}

bool xkv_rl_ok(struct xkv_rl *rl, const __u8 addr[16], __u64 now)
{
	if (!rl->period_ns)
		return true;
	/* the source's /24 (IPv4, mapped) or /64, as the XDP program keys it */
	__u8 k[16];
	memcpy(k, addr, 16);
	if (xkv_addr_is_v4(addr))
		k[15] = 0;
	else
		memset(k + 8, 0, 8);
	__u32 i = (__u32)(xkv_fnv1a(k, 16) % XKV_RL_USER_SLOTS);
	bool ok = true;

	pthread_mutex_lock(&rl->mu);
	if (memcmp(rl->slot[i].key, k, 16) || !rl->slot[i].tat) {
		memcpy(rl->slot[i].key, k, 16);
		rl->slot[i].tat = now + rl->period_ns;
	} else {
		__u64 t = rl->slot[i].tat > now ? rl->slot[i].tat : now;
		if (t - now > rl->tau_ns)
			ok = false;
		else
			rl->slot[i].tat = t + rl->period_ns;
	}
	pthread_mutex_unlock(&rl->mu);
	return ok;
}
