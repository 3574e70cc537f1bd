# Packet fixtures through BPF_PROG_TEST_RUN, one ctest per layout.
# The reference model (tests/refmodel*.c), for test_fixtures and test_slowpath.
set(XKV_REFMODEL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/refmodel.c
  ${CMAKE_CURRENT_LIST_DIR}/refmodel_store.c
  ${CMAKE_CURRENT_LIST_DIR}/refmodel_text.c
  ${CMAKE_CURRENT_LIST_DIR}/refmodel_bin.c
  ${CMAKE_CURRENT_LIST_DIR}/refmodel_slow.c
  ${CMAKE_CURRENT_LIST_DIR}/refmodel_meta.c)
add_executable(test_fixtures
  ${CMAKE_CURRENT_LIST_DIR}/test_fixtures.c
  ${CMAKE_CURRENT_LIST_DIR}/fixtures_settings.c
  ${CMAKE_CURRENT_LIST_DIR}/fixtures_run.c
  ${CMAKE_CURRENT_LIST_DIR}/fixtures_bin.c
  ${CMAKE_CURRENT_LIST_DIR}/fixtures_cases_slots.c
  ${CMAKE_CURRENT_LIST_DIR}/fixtures_cases_lru.c
  ${CMAKE_CURRENT_LIST_DIR}/pktbuild.c
  ${XKV_REFMODEL_SOURCES})
target_include_directories(test_fixtures PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_fixtures PRIVATE xdpkv_core)
foreach(layout ${XKV_LAYOUTS})
  add_test(NAME fixtures_${layout} COMMAND test_fixtures --layout ${layout})
endforeach()

# array_fnv: no torn value while writers on another CPU replace it.
add_executable(test_torn ${CMAKE_CURRENT_LIST_DIR}/test_torn.c ${CMAKE_CURRENT_LIST_DIR}/pktbuild.c)
target_include_directories(test_torn PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_torn PRIVATE xdpkv_core pthread)
add_test(NAME torn_array_fnv COMMAND test_torn --layout array_fnv --seconds 2)
# set_assoc, sieve, s3fifo (one bucket code): the same promise, through the
# per-way sequence counters.
foreach(l set_assoc sieve s3fifo)
  add_test(NAME torn_${l} COMMAND test_torn --layout ${l} --seconds 2)
endforeach()
# arena: the same, with a store holding two counters (home slot, then its slot).
if(CLANG_ARENA)
  add_test(NAME torn_arena COMMAND test_torn --layout arena --seconds 2)
endif()

# array_fnv: a userspace writer killed inside a slot does not wedge it for good.
add_executable(test_wedge ${CMAKE_CURRENT_LIST_DIR}/test_wedge.c ${CMAKE_CURRENT_LIST_DIR}/pktbuild.c)
target_include_directories(test_wedge PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_wedge PRIVATE xdpkv_core)
add_test(NAME wedge_array_fnv COMMAND test_wedge)
set_tests_properties(wedge_array_fnv PROPERTIES TIMEOUT 60)
# set_assoc, sieve, s3fifo: the same with a writer killed inside a bucket.
foreach(l set_assoc sieve s3fifo)
  add_test(NAME wedge_${l} COMMAND test_wedge --layout ${l})
  set_tests_properties(wedge_${l} PROPERTIES TIMEOUT 60)
endforeach()
# arena: a writer killed inside a slot (array_fnv's repair, over the arena's mmap).
if(CLANG_ARENA)
  add_test(NAME wedge_arena COMMAND test_wedge --layout arena)
  set_tests_properties(wedge_arena PROPERTIES TIMEOUT 60)
endif()
