# lib/opts: the one option parser every tool uses (tests/test_opts.c).
add_executable(test_opts ${CMAKE_CURRENT_SOURCE_DIR}/test_opts.c ${PROJECT_SOURCE_DIR}/lib/opts.c)
target_include_directories(test_opts PRIVATE ${PROJECT_SOURCE_DIR}/lib)
add_test(NAME opts_unit COMMAND test_opts)
set_tests_properties(opts_unit PROPERTIES LABELS unit)
