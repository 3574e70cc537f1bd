# xkv-kvexp (bench/kvexp): every subcommand at tiny sizes, JSON checked
# against each layout's contract (bench/kvexp/check_kvexp.py).  The matrix
# of bench/microbench at a few cells: every op and layout, replies validated.
# Exit 77 (not root) is a skip.
add_test(NAME kvexp_smoke
  COMMAND python3 ${CMAKE_SOURCE_DIR}/bench/kvexp/check_kvexp.py $<TARGET_FILE:xkv-kvexp>)
# (9 layouts since sieve and s3fifo: 228 s measured on the 2-vCPU machine at load average 14-19)
set_tests_properties(kvexp_smoke PROPERTIES TIMEOUT 360 SKIP_RETURN_CODE 77 LABELS bench)

# xkv-kvexp hitratio --quick on lru, array_fnv, sieve and s3fifo (about 30 s on an idle 2-vCPU VM, 2 min at load average 15): sane rows, the
# request sequence the simulators regenerate, hit ratio rising with memory,
# each layout within tolerance of its own Python reference
# (bench/kvexp/check_hitratio.py; the libCacheSim check is
# bench/kvexp/hitratio_vs_cachesim.py, not a test: it needs PyPI).
add_test(NAME kvexp_hitratio_smoke
  COMMAND python3 ${CMAKE_SOURCE_DIR}/bench/kvexp/check_hitratio.py $<TARGET_FILE:xkv-kvexp>)
set_tests_properties(kvexp_hitratio_smoke PROPERTIES TIMEOUT 360 SKIP_RETURN_CODE 77 LABELS bench)

find_package(benchmark QUIET)
if(benchmark_FOUND)
  add_test(NAME bench_matrix_smoke
    COMMAND $<TARGET_FILE:microbench> "--benchmark_filter=^matrix/"
            --xkv_capacity=16384 --xkv_matrix_keys=128 --xkv_iters=256
            --xkv_key_sizes=16,250 --xkv_value_sizes=1024 --xkv_fills=50)
  # 8 layouts in the matrix since sieve and s3fifo
  set_tests_properties(bench_matrix_smoke PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77 LABELS bench)
endif()
