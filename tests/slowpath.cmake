# Slow path: protocol logic in-process for every layout, then the socket
# server on lo (needs root: BPF maps and SO_BINDTODEVICE).
find_package(Threads REQUIRED)
add_executable(test_slowpath ${CMAKE_CURRENT_SOURCE_DIR}/test_slowpath.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_test.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_classic.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_stats.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_flush.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_access.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_meta.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_atomic.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_stream.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_mget.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_model.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_daemon.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_bigvals.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_migrate.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_keycap.c
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_exact.c
  ${XKV_REFMODEL_SOURCES})
target_include_directories(test_slowpath PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_slowpath PRIVATE xdpkv_core Threads::Threads)
# One test per layout (side by side), and the cases on a 64-entry hash_map
# once; `test_slowpath unit` alone runs them all in turn.
foreach(l ${XKV_LAYOUTS})
  add_test(NAME slowpath_unit_${l} COMMAND test_slowpath unit ${l})
  set_tests_properties(slowpath_unit_${l} PROPERTIES TIMEOUT 120)
endforeach()
add_test(NAME slowpath_unit_once COMMAND test_slowpath unit once)
set_tests_properties(slowpath_unit_once PROPERTIES TIMEOUT 120)
add_test(NAME slowpath_daemon COMMAND test_slowpath daemon)
set_tests_properties(slowpath_daemon PROPERTIES TIMEOUT 120)
# The stream entry the TCP server uses (xkv_slow_stream), in-process.
add_test(NAME slowpath_stream COMMAND test_slowpath stream)
set_tests_properties(slowpath_stream PROPERTIES TIMEOUT 120)
# Random request streams, every layout, TCP and UDP entries, each reply
# against the reference model (tests/refmodel.c); the seed is printed.
add_test(NAME slowpath_model COMMAND test_slowpath model)
# Values above --value-size (the big map), every layout, TCP and UDP entries.
# One test per layout, and the full big map once.
foreach(l ${XKV_LAYOUTS} once)
  add_test(NAME slowpath_bigvals_${l} COMMAND test_slowpath bigvals ${l})
  set_tests_properties(slowpath_bigvals_${l} PROPERTIES TIMEOUT 120)
endforeach()
set_tests_properties(slowpath_model PROPERTIES TIMEOUT 120)
# The meta fixture table above, against the real memcached (Debian's 1.6.18):
# every fixture answers as the table says, or is listed with its reason.
add_test(NAME meta_vs_memcached COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/meta_vs_memcached.py
  ${CMAKE_CURRENT_SOURCE_DIR}/slowpath_meta.c)
set_tests_properties(meta_vs_memcached PROPERTIES TIMEOUT 60)
# memcached's binary protocol (engine/binproto.c), every layout, in-process.
add_executable(test_binproto ${CMAKE_CURRENT_SOURCE_DIR}/test_binproto.c
  ${CMAKE_CURRENT_SOURCE_DIR}/binproto_test.c
  ${CMAKE_CURRENT_SOURCE_DIR}/binproto_conn.c)
target_link_libraries(test_binproto PRIVATE xdpkv_core)
add_test(NAME binproto_unit COMMAND test_binproto)
set_tests_properties(binproto_unit PROPERTIES TIMEOUT 120)
