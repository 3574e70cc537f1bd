# Snapshot files and restore (docs/snapshots.md): the format alone, then
# through real stores (root: BPF maps loaded, not attached).
add_executable(test_snapshot ${CMAKE_CURRENT_SOURCE_DIR}/test_snapshot.c)
target_link_libraries(test_snapshot PRIVATE xdpkv_core)
add_test(NAME snapshot_format COMMAND test_snapshot format)
add_test(NAME snapshot_store COMMAND test_snapshot store)
set_tests_properties(snapshot_format snapshot_store PROPERTIES TIMEOUT 120)
