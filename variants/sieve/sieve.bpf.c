// SPDX-License-Identifier: MIT
/* sieve: the bucketed store of set_assoc (set_assoc/bucket_store.bpf.h) with
 * SIEVE in each bucket (sieve.h). */
#include "prelude.bpf.h"
#include "sieve/sieve.h"
#include "set_assoc/bucket_store.bpf.h"
