# bench/capacity.sh: every layout's server capacity as a ratio to a bare XDP
# reflector, same run, same path.  A short smoke run whose JSON is checked
# (tests/capacity/capacity.sh).  Root, CPUs 0 and 1: one benchmark at a time (RESOURCE_LOCK bench_cpus).
#
#   ctest --test-dir build -L bench -R capacity
# bench/ is configured after tests/: its outputs are named by path.
if(TARGET xdpkv)
  set(XKV_CAP_CLI $<TARGET_FILE:xdpkv>)
else()
  set(XKV_CAP_CLI ${CMAKE_BINARY_DIR}/cli/xdpkv)
endif()
string(MD5 h capacity_smoke)
string(SUBSTRING ${h} 0 6 h)
add_test(NAME capacity_smoke COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/capacity/capacity.sh)
set_tests_properties(capacity_smoke PROPERTIES
  ENVIRONMENT "XDPKV=${XKV_CAP_CLI};XDPGEN=${CMAKE_BINARY_DIR}/bench/xdpgen/xdpgen;REFLECTOR_OBJ=${CMAKE_BINARY_DIR}/bench/reflector/reflector.bpf.o;TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o;CAP_PREFIX=xc${h}"
  RESOURCE_LOCK bench_cpus
  TIMEOUT 180
  LABELS "e2e;bench;capacity")

# The reflector itself: IPv4 and IPv6 requests come back swapped, checksums valid.
string(MD5 h reflector)
string(SUBSTRING ${h} 0 6 h)
add_test(NAME reflector_e2e COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/capacity/reflector.sh)
set_tests_properties(reflector_e2e PROPERTIES
  ENVIRONMENT "REFLECTOR_OBJ=${CMAKE_BINARY_DIR}/bench/reflector/reflector.bpf.o;TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o;CAP_PREFIX=xr${h}"
  RESOURCE_LOCK bench_cpus
  TIMEOUT 60
  LABELS "e2e;bench;capacity")
