# xdpkv compare (bench/compare, docs/compare.md): a --smoke run of the whole
# engine on the veth testbed (every layout, memcached over UDP and Redis;
# experiments a, h, i), then a check of its output.  Root, RUN_SERIAL.
#
#   ctest --test-dir build -R compare_smoke --output-on-failure

if(TARGET xdpkv)
  set(XKV_CMP_CLI $<TARGET_FILE:xdpkv>)
else()
  set(XKV_CMP_CLI ${CMAKE_BINARY_DIR}/cli/xdpkv)
endif()
set(XKV_CMP_OUT ${CMAKE_CURRENT_BINARY_DIR}/compare_smoke)
set(XKV_CMP_LAYOUTS hash_map,array_fnv,lru,percpu)
set(XKV_CMP_BASELINES memcached-udp,redis)

add_test(NAME compare_smoke
  COMMAND sh -c "rm -rf \"$1\" && \"$0\" compare --smoke --prefix xcsmoke --layouts \"$2\" --baselines \"$3\" --out \"$1\" && /usr/bin/python3 \"$4\" \"$1\" --layouts \"$2\" --baselines \"$3\""
          ${XKV_CMP_CLI} ${XKV_CMP_OUT} ${XKV_CMP_LAYOUTS} ${XKV_CMP_BASELINES}
          ${CMAKE_SOURCE_DIR}/bench/compare/check.py)
set_tests_properties(compare_smoke PROPERTIES
  ENVIRONMENT "TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o"
  RUN_SERIAL TRUE
  TIMEOUT 120
  LABELS "e2e;compare")

# (j) on this machine's cores: the reflector, the null store and hash_map at
# every core count the machine allows (one on 2 CPUs), four mixes, checked
# by check.py --experiments j (capacity > 0, as many NAPI threads at work as
# cores, SVG beside the PNG, start and end recorded).
set(XKV_CMP_SCALING_OUT ${CMAKE_CURRENT_BINARY_DIR}/compare_scaling_smoke)
add_test(NAME compare_scaling_smoke
  COMMAND sh -c "rm -rf \"$1\" && \"$0\" compare --smoke --experiments j --prefix xcs$$ --layouts hash_map --baselines none --out \"$1\" && /usr/bin/python3 \"$2\" \"$1\" --layouts hash_map --baselines '' --experiments j"
          ${XKV_CMP_CLI} ${XKV_CMP_SCALING_OUT} ${CMAKE_SOURCE_DIR}/bench/compare/check.py)
set_tests_properties(compare_scaling_smoke PROPERTIES
  ENVIRONMENT "TB_XDP_PASS_OBJ=${CMAKE_CURRENT_BINARY_DIR}/xdp_pass.bpf.o"
  RUN_SERIAL TRUE
  TIMEOUT 180
  LABELS "e2e;compare")
