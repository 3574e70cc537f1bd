#!/bin/bash
# A/B: the microbenchmark before (baa910c: one-CPU preload) and after (preload moves across CPUs)
f='^get_hit(_shared)?/(null|lru|lru_no_common_lru|lru_percpu)/manual_time(/threads:2)?$'
for round in 1 2; do
  for v in old new; do
    b=/tmp/mb-old/build/bench/microbench; [[ $v == new ]] && b=/work/main/build/bench/microbench
    $b --xkv_entries=262144 --xkv_keys=2048 --xkv_max_threads=2 --benchmark_filter="$f" \
      --benchmark_repetitions=3 --benchmark_min_time=0.05 --benchmark_report_aggregates_only=true \
      --benchmark_out=/tmp/ex11-$v-$round.json --benchmark_out_format=json >/dev/null 2>/tmp/ex11-$v-$round.err
    echo "$v $round $(uptime)"
  done
done
