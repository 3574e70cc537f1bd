# Packet fixtures through BPF_PROG_TEST_RUN, one ctest per layout.
add_executable(test_fixtures
  ${CMAKE_CURRENT_LIST_DIR}/test_fixtures.c
  ${CMAKE_CURRENT_LIST_DIR}/pktbuild.c
  ${CMAKE_CURRENT_LIST_DIR}/refmodel.c)
target_include_directories(test_fixtures PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_fixtures PRIVATE xdpkv_core)
foreach(layout hash_map array_fnv lru percpu)
  add_test(NAME fixtures_${layout} COMMAND test_fixtures --layout ${layout})
endforeach()
