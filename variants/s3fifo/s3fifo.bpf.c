// SPDX-License-Identifier: MIT
/* s3fifo: the bucketed store of set_assoc (set_assoc/bucket_store.bpf.h)
 * with S3-FIFO in each bucket (s3fifo.h). */
#include "prelude.bpf.h"
#include "s3fifo/s3fifo.h"
#include "set_assoc/bucket_store.bpf.h"
