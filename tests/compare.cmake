# xdpkv compare (bench/compare, docs/compare.md): a --smoke run of the whole
# engine on the veth testbed (every layout, memcached over UDP and Redis;
# experiments a, h, i), then a check of its output.  Root; one benchmark at a time (RESOURCE_LOCK bench_cpus).
#
#   ctest --test-dir build -R compare_smoke --output-on-failure

if(TARGET xdpkv)
  set(XKV_CMP_CLI $<TARGET_FILE:xdpkv>)
else()
  set(XKV_CMP_CLI ${CMAKE_BINARY_DIR}/cli/xdpkv)
endif()
set(XKV_CMP_OUT ${CMAKE_CURRENT_BINARY_DIR}/compare_smoke)
# every layout compare knows (the registry's, `xdpkv layouts`), lru --no-common-lru included,
# and arena where it is built (a clang >= 18: CLANG_ARENA)
set(XKV_CMP_LAYOUTS hash_map,array_fnv,lru,lru_no_common_lru,percpu,lru_percpu,set_assoc,sieve,s3fifo)
if(CLANG_ARENA)
  string(APPEND XKV_CMP_LAYOUTS ",arena")
endif()
set(XKV_CMP_BASELINES memcached-udp,redis)

# xdpkv over TCP with the kernel's paths off (xdpkv-tcp: no sk_skb verdict,
# no XDP TCP responder) and on (xdpkv-tcp-kernel): both answer, and each row
# says which path did
add_test(NAME compare_tcp_smoke
  COMMAND sh -c "rm -rf \"$1\" && \"$0\" compare --smoke --prefix xct$$ --layouts hash_map --baselines xdpkv-tcp,xdpkv-tcp-kernel --out \"$1\" && /usr/bin/python3 \"$2\" \"$1\" --layouts hash_map --baselines xdpkv-tcp,xdpkv-tcp-kernel && /usr/bin/python3 -c 'import json,sys; r={x[\"system\"]: x for x in json.load(open(sys.argv[1]))[\"rows\"] if x[\"system\"].startswith(\"xdpkv-tcp\")}; print(r); u=r[\"xdpkv-tcp\"]; k=r[\"xdpkv-tcp-kernel\"]; sys.exit(0 if u[\"tcp_kernel\"]==0 and u[\"tcp_xdp\"]==0 and u[\"tcp_userspace\"]>0 and k[\"tcp_kernel\"]+k[\"tcp_xdp\"]+k[\"tcp_userspace\"]>0 and u[\"throughput_ops\"]>0 and k[\"throughput_ops\"]>0 else 1)' \"$1/results.json\""
          ${XKV_CMP_CLI} ${CMAKE_CURRENT_BINARY_DIR}/compare_tcp_smoke ${CMAKE_SOURCE_DIR}/bench/compare/check.py)
set_tests_properties(compare_tcp_smoke PROPERTIES
  ENVIRONMENT "TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o"
  RESOURCE_LOCK bench_cpus TIMEOUT 180 LABELS "e2e;compare")

add_test(NAME compare_smoke
  COMMAND sh -c "rm -rf \"$1\" && \"$0\" compare --smoke --prefix xcsm$$ --layouts \"$2\" --baselines \"$3\" --out \"$1\" && /usr/bin/python3 \"$4\" \"$1\" --layouts \"$2\" --baselines \"$3\""
          ${XKV_CMP_CLI} ${XKV_CMP_OUT} ${XKV_CMP_LAYOUTS} ${XKV_CMP_BASELINES}
          ${CMAKE_SOURCE_DIR}/bench/compare/check.py)
# Alone (RUN_SERIAL): its 1 s socket-client runs got no reply in time, or
# none inside the window, in 3 of 5 suite runs side by side at load 7-10
# on 2 cores (a hash_map, lru, then s3fifo row with 0 operations).
set_tests_properties(compare_smoke PROPERTIES
  ENVIRONMENT "TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o"
  RUN_SERIAL TRUE
  TIMEOUT 180
  LABELS "e2e;compare")

# (j) on this machine's cores: the reflector, the null store, hash_map and set_assoc at
# every core count the machine allows (one on 2 CPUs), four mixes, checked
# by check.py --experiments j (capacity > 0, as many NAPI threads at work as
# cores, SVG beside the PNG, start and end recorded).
set(XKV_CMP_SCALING_OUT ${CMAKE_CURRENT_BINARY_DIR}/compare_scaling_smoke)
add_test(NAME compare_scaling_smoke
  COMMAND sh -c "rm -rf \"$1\" && \"$0\" compare --smoke --experiments j --prefix xcs$$ --layouts hash_map,set_assoc --baselines none --out \"$1\" && /usr/bin/python3 \"$2\" \"$1\" --layouts hash_map,set_assoc --baselines '' --experiments j"
          ${XKV_CMP_CLI} ${XKV_CMP_SCALING_OUT} ${CMAKE_SOURCE_DIR}/bench/compare/check.py)
set_tests_properties(compare_scaling_smoke PROPERTIES
  ENVIRONMENT "TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o"
  RESOURCE_LOCK bench_cpus
  TIMEOUT 180
  LABELS "e2e;compare")

# (k) persistence alone, tiny: xdpkv snapshot/restore and Redis BGSAVE/RDB load
# on the smoke dataset; every system must have its row, all items, times > 0.
add_test(NAME compare_persistence_smoke
  COMMAND sh -c "rm -rf \"$1\" && \"$0\" compare --smoke --prefix xcp$$ --experiments k --layouts hash_map --baselines redis --out \"$1\" && /usr/bin/python3 -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1]))[\"rows\"] if x[\"experiment\"]==\"k\"]; print(r); ok=sorted(x[\"system\"] for x in r)==[\"redis\",\"xdpkv/hash_map\"] and all(x[\"items\"]==10000 and x[\"snapshot_s\"]>0 and x[\"restore_s\"]>0 and x[\"file_bytes\"] for x in r); sys.exit(0 if ok else 1)' \"$1/results.json\""
          ${XKV_CMP_CLI} ${CMAKE_CURRENT_BINARY_DIR}/compare_persist)
set_tests_properties(compare_persistence_smoke PROPERTIES
  ENVIRONMENT "TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o"
  RESOURCE_LOCK bench_cpus
  TIMEOUT 120
  LABELS "e2e;compare")

# (l) the in-kernel microbenchmark from compare: the null store and every
# layout at 1 ... nproc threads (GET hit, SET; disjoint and shared keys), two
# repetitions of a few hundred runs each (--smoke: --benchmark_min_time
# 0.0005), checked by check.py --experiments l (every point, ns > 0, both
# repetitions, replies validated, table and plot).  Needs bench/microbench
# (Google Benchmark; bench/ is added after tests/, so its condition is
# checked here the same way).
find_package(benchmark QUIET)
if(benchmark_FOUND)
  set(XKV_CMP_MB_OUT ${CMAKE_CURRENT_BINARY_DIR}/compare_microbench_smoke)
  add_test(NAME compare_microbench_smoke
    COMMAND sh -c "rm -rf \"$1\" && \"$0\" compare --smoke --experiments l --repeat 2 --prefix xcm$$ --layouts \"$2\" --baselines none --out \"$1\" && /usr/bin/python3 \"$3\" \"$1\" --layouts \"$2\" --baselines '' --experiments l"
            ${XKV_CMP_CLI} ${XKV_CMP_MB_OUT} ${XKV_CMP_LAYOUTS} ${CMAKE_SOURCE_DIR}/bench/compare/check.py)
  set_tests_properties(compare_microbench_smoke PROPERTIES
    ENVIRONMENT "TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o"
    RESOURCE_LOCK bench_cpus
    TIMEOUT 240
    LABELS "e2e;compare")
endif()

# (m) hit ratio per byte, tiny (1024 keys, budgets 1/8 and 1, Zipf 0.99 and
# uniform, 3 seeds; 20-45 s on the shared 2-CPU VM, mostly map loads): lru
# (the kernel's approximate LRU) and set_assoc (libCacheSim CLOCK per set);
# array_fnv's exact model is kvexp_hitratio_smoke's.  Checked by check.py
# --experiments m (every point and seed, spreads and hits per MiB consistent,
# set_assoc within 0.5 points of the model of its exact placement and
# policy, Zipf above uniform, the MRC figure and the agreement in the
# report).  The simulators
# are libCacheSim where bench/.venv has it, else the own models (the report
# says which).
add_test(NAME compare_hitratio_smoke
  COMMAND sh -c "rm -rf \"$1\" && \"$0\" compare --smoke --experiments m --prefix xch$$ --layouts lru,set_assoc --baselines none --out \"$1\" && /usr/bin/python3 \"$2\" \"$1\" --layouts lru,set_assoc --baselines '' --experiments m"
          ${XKV_CMP_CLI} ${CMAKE_CURRENT_BINARY_DIR}/compare_hitratio_smoke ${CMAKE_SOURCE_DIR}/bench/compare/check.py)
set_tests_properties(compare_hitratio_smoke PROPERTIES
  ENVIRONMENT "TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o"
  RESOURCE_LOCK bench_cpus
  TIMEOUT 120
  LABELS "e2e;compare")

# (n) TCP scaling with third-party clients, tiny (1 s a run, one thread on
# this VM): memaslap against memcached and xdpkv (kernel path on and off),
# redis-benchmark against Redis, through bench/tcpscale.sh; checked by
# check.py --experiments n (a validated row per system, the client named,
# the kernel's share > 0 with its path on and 0 with it off, the plot).
set(XKV_CMP_TCPS memcached-tcp,xdpkv-tcp-kernel,xdpkv-tcp,redis)
add_test(NAME compare_tcpscale_smoke
  COMMAND sh -c "rm -rf \"$1\" && \"$0\" compare --smoke --experiments n --prefix xcn$$ --layouts hash_map --baselines \"$2\" --out \"$1\" && /usr/bin/python3 \"$3\" \"$1\" --layouts '' --baselines \"$2\" --experiments n"
          ${XKV_CMP_CLI} ${CMAKE_CURRENT_BINARY_DIR}/compare_tcpscale_smoke ${XKV_CMP_TCPS}
          ${CMAKE_SOURCE_DIR}/bench/compare/check.py)
set_tests_properties(compare_tcpscale_smoke PROPERTIES
  ENVIRONMENT "TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o"
  RESOURCE_LOCK bench_cpus
  TIMEOUT 180
  LABELS "e2e;compare")

# (p) proxied and pipelined TCP clients, tiny (1 s a run): bench/clients/clients.sh
# for nutcracker_8 and pymemcache_get_many (--smoke's rows), xdpkv and memcached
# in one sitting per row (~12 s); checked by check.py --experiments p (each
# row's two lines with their checks passed, or skipped with the reason where
# a client is not installed; the report's table per row and the figure).
add_test(NAME compare_clientmix_smoke
  COMMAND sh -c "rm -rf \"$1\" && \"$0\" compare --smoke --experiments p --prefix xcq$$ --layouts hash_map --baselines none --out \"$1\" && /usr/bin/python3 \"$2\" \"$1\" --layouts '' --baselines '' --experiments p"
          ${XKV_CMP_CLI} ${CMAKE_CURRENT_BINARY_DIR}/compare_clientmix_smoke ${CMAKE_SOURCE_DIR}/bench/compare/check.py)
set_tests_properties(compare_clientmix_smoke PROPERTIES
  ENVIRONMENT "TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o"
  RESOURCE_LOCK bench_cpus
  TIMEOUT 120
  LABELS "e2e;compare")

# bench/devkit.sh + bench/devkit-run.sh: the kit for a machine without
# compiler or iproute2 is complete (every library inside it), and (l) and (j)
# run from it alone in a minimal environment (tests/devkit_smoke.sh).
add_test(NAME devkit_smoke
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/devkit_smoke.sh ${CMAKE_BINARY_DIR})
set_tests_properties(devkit_smoke PROPERTIES
  RESOURCE_LOCK bench_cpus
  TIMEOUT 240
  LABELS "e2e;compare")

# The headline (bench/compare/headline.py) of a saved run (docs/compare-quick),
# rendered again without root: check_headline.py must pass it and fail each
# tampered copy (a cell removed, emptied, changed or unlabelled, an estimate
# unmarked, a source row of another load, a system missing, the report
# printing another number).  A few seconds, no testbed.
# compare_clientmix: (p)'s report and check the same way: clients.sh lines
# (bench/compare/clientmix_sample.jsonl) added to that run as (p)'s rows and
# rendered; check.py --experiments p must pass it and fail each tampered copy
# (a row's section or lines gone, a number changed, a skipped row's reason or
# the figure dropped).  ~10 s.
foreach(t headline clientmix)
  add_test(NAME compare_${t}
    COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/bench/compare/${t}_selftest.py
            ${XKV_CMP_CLI} ${CMAKE_SOURCE_DIR}/docs/compare-quick)
  set_tests_properties(compare_${t} PROPERTIES TIMEOUT 120 LABELS "unit;compare")
endforeach()

# (b) latency, tiny: hash_map and memcached-udp at the common load with the
# default client and kernel receive timestamps (xkv-loadgen --kernel-stamps),
# beside the testbed's floor (the reflector, xkv-loadgen --echo); checked by
# check.py --experiments b (every row with replies and sane percentiles, the
# drops of every stage recorded, the report's floor and tables).  With it
# memcached's (g): filled under a memory limit, 2x what it holds set and read back.
# Alone (RUN_SERIAL): its load is a share of a capacity measured moments
# before, and the suite's other tests on the same two CPUs (the fault test's
# 36 clients) made it an overload: p50 3.5 s on the reflector, 5.1 % of
# memcached's drops unattributed, in two full runs of three.
add_test(NAME compare_latency_smoke
  COMMAND sh -c "rm -rf \"$1\" && \"$0\" compare --smoke --experiments a,b,g --prefix xcl$$ --layouts hash_map --baselines memcached-udp --out \"$1\" && /usr/bin/python3 \"$2\" \"$1\" --layouts hash_map --baselines memcached-udp --experiments b,g"
          ${XKV_CMP_CLI} ${CMAKE_CURRENT_BINARY_DIR}/compare_latency_smoke ${CMAKE_SOURCE_DIR}/bench/compare/check.py)
set_tests_properties(compare_latency_smoke PROPERTIES
  ENVIRONMENT "TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o"
  RESOURCE_LOCK bench_cpus
  RUN_SERIAL TRUE
  TIMEOUT 120
  LABELS "e2e;compare")

# (o) BMC beside hash_map, when a BMC build is present: BMC's repository
# built as docs/compare.md ("BMC") says, in $XKV_BMC_DIR (default
# /var/cache/xdpkv-bmc/build); xdpkv ships none of its code, so without a
# build the test is skipped (77) with the reason.  Short points (0.3 s, five
# runs at two mixes, and BMC's 128-byte probe); checked by check.py
# --experiments o (both mixes with replies, BMC's own counters, the report's
# table and where BMC does not take part).
set(XKV_BMC_DIR "$ENV{XKV_BMC_DIR}")
if(NOT XKV_BMC_DIR)
  set(XKV_BMC_DIR /var/cache/xdpkv-bmc/build)
endif()
add_test(NAME compare_bmc_smoke
  COMMAND sh -c "test -x \"$3/bmc\" && test -f \"$3/bmc_kern.o\" || { echo \"SKIP no BMC build in $3 (bmc and bmc_kern.o; docs/compare.md, BMC, gives the steps)\"; exit 77; }; rm -rf \"$1\" && \"$0\" compare --smoke --duration 0.3 --experiments o --prefix xcb$$ --layouts hash_map --baselines none --bmc-dir \"$3\" --out \"$1\" && /usr/bin/python3 \"$2\" \"$1\" --layouts hash_map --baselines bmc --experiments o"
          ${XKV_CMP_CLI} ${CMAKE_CURRENT_BINARY_DIR}/compare_bmc_smoke ${CMAKE_SOURCE_DIR}/bench/compare/check.py ${XKV_BMC_DIR})
set_tests_properties(compare_bmc_smoke PROPERTIES
  RESOURCE_LOCK bench_cpus SKIP_RETURN_CODE 77 TIMEOUT 180 LABELS "e2e;compare")

# The options: bad values are refused with a message (exit 2), not replaced
# by defaults; no root, no testbed (the checks come before either).
add_test(NAME compare_args
  COMMAND sh -c "for a in '--keys -5 --duration -1' '--keys 0' '--duration 0' '--quick --smoke' '--baselines bmc' '--bmc-dir /nonexistent' '--client-rows nosuch'; do out=$(\"$0\" compare $a 2>&1); rc=$?; [ $rc = 2 ] && echo \"$out\" | grep -q 'error: --' || { echo \"FAIL xdpkv compare $a: exit $rc, $out\"; exit 1; }; echo \"PASS xdpkv compare $a refused: $(echo \"$out\" | tail -1)\"; done"
          ${XKV_CMP_CLI})
set_tests_properties(compare_args PROPERTIES TIMEOUT 60 LABELS "unit;compare")
