# The parser's shortcuts against the parser (userspace, no BPF).
add_executable(test_parse ${CMAKE_CURRENT_SOURCE_DIR}/test_parse.c)
target_include_directories(test_parse PRIVATE ${PROJECT_SOURCE_DIR}/common)
add_test(NAME parse_quick_get COMMAND test_parse)
