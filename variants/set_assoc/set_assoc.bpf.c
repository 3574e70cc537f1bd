// SPDX-License-Identifier: MIT
/* set_assoc: the bucketed store (bucket_store.bpf.h) with CLOCK in each
 * bucket (clock.h). */
#include "prelude.bpf.h"
#include "set_assoc/clock.h"
#include "set_assoc/bucket_store.bpf.h"
