# xkv-loadgen (bench/loadgen): unit test and runs against real servers on
# loopback (tests/loadgen/run.sh); each case starts and kills its own server.
# (tests/ is configured before bench/: test for what bench/loadgen needs.)
find_path(XXHASH_INCLUDE_DIR xxhash.h)
find_library(XXHASH_LIBRARY xxhash)
if(NOT XXHASH_INCLUDE_DIR OR NOT XXHASH_LIBRARY)
  return()
endif()

add_test(NAME loadgen_unit COMMAND loadgen_unit)
set_tests_properties(loadgen_unit PROPERTIES TIMEOUT 30 LABELS loadgen)

foreach(case mc-udp mc-tcp redis open-loop zipf corrupt workload)
  add_test(NAME loadgen_${case}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/loadgen/run.sh $<TARGET_FILE:xkv-loadgen> ${case})
  set_tests_properties(loadgen_${case} PROPERTIES TIMEOUT 30 SKIP_RETURN_CODE 77 LABELS loadgen)
endforeach()
# two servers, two preloads and two 2-s runs: 10 s on an idle 2-CPU VM,
# 26 s at load average 13
set_tests_properties(loadgen_workload PROPERTIES TIMEOUT 60)
