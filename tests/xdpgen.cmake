# xdpgen (bench/xdpgen): the in-kernel request generator against xdpkv over
# the veth testbed.  Root, CPUs 0 and 1: one benchmark at a time (RESOURCE_LOCK bench_cpus).
#
#   ctest --test-dir build -L xdpgen
# bench/ is configured after tests/: name the binary by its path (the
# script says so clearly when it is not built).
set(XKV_XG_BIN ${CMAKE_BINARY_DIR}/bench/xdpgen/xdpgen)
if(TARGET xdpkv)
  set(XKV_XG_CLI $<TARGET_FILE:xdpkv>)
else()
  set(XKV_XG_CLI ${CMAKE_BINARY_DIR}/cli/xdpkv)
endif()
foreach(layout hash_map array_fnv)
  string(MD5 h xdpgen_${layout})
  string(SUBSTRING ${h} 0 6 h)
  add_test(NAME xdpgen_${layout}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/xdpgen/xdpgen.sh ${layout})
  set_tests_properties(xdpgen_${layout} PROPERTIES
    ENVIRONMENT "XDPKV=${XKV_XG_CLI};XDPGEN=${XKV_XG_BIN};XG_PREFIX=xg${h};TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o"
    RESOURCE_LOCK bench_cpus
    TIMEOUT 90
    LABELS "e2e;xdpgen")
endforeach()
