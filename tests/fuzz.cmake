# Coverage-guided fuzzing (tests/fuzz/README.md): libFuzzer targets built with
# clang, ASan and UBSan.  They build only with -DXKV_FUZZ=ON, in a build
# directory of their own (build-fuzz/, which tests/fuzz/run.sh configures);
# the normal build runs that script as the short CI run.
option(XKV_FUZZ "Build the libFuzzer targets of tests/fuzz (clang; build-fuzz/ only)" OFF)
if(XKV_FUZZ)
  add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/fuzz ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
else()
  # Builds the targets with clang in this build dir's name plus -fuzz
  # (build/ -> build-fuzz/), replays every corpus and crash input, then
  # fuzzes each target for 3 s; any crash or sanitizer report fails it.  The replay is what
  # the suite relies on (every kept crash stays fixed); the 3 s only show
  # that each target fuzzes (longer runs explore: tests/fuzz/README.md).
  # An input may take 120 s of wall clock (--timeout): beside other tests a
  # snapshot input once waited 26 s for 1 s of CPU.
  # At the suite's priority (--nice 0), not below the tests beside it.
  add_test(NAME fuzz_short COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run.sh --seconds 3 --timeout 120
           --build-dir ${CMAKE_BINARY_DIR}-fuzz --nice 0)
  set_tests_properties(fuzz_short PROPERTIES TIMEOUT 900 LABELS "fuzz")
endif()
