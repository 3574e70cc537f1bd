# The generic helpers of lib/ (JSON writer, base64, logger) against known vectors.
add_executable(test_lib ${CMAKE_CURRENT_SOURCE_DIR}/test_lib.c)
target_link_libraries(test_lib PRIVATE xdpkv_core)
add_test(NAME lib_unit COMMAND test_lib)
set_tests_properties(lib_unit PROPERTIES LABELS unit)

# The in-process layout loader (store/inproc.c); needs root, else skipped.
add_executable(test_inproc ${CMAKE_CURRENT_SOURCE_DIR}/test_inproc.c)
target_link_libraries(test_inproc PRIVATE xdpkv_core)
add_test(NAME inproc_unit COMMAND test_inproc)
set_tests_properties(inproc_unit PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 120)

# TCP in the driver hook (common/tcpx_*.bpf.h): the XDP segment program and
# the TC egress program through BPF_PROG_TEST_RUN over written flow states,
# and a replay on a loopback connection; needs root, else skipped.
add_executable(test_tcpx ${CMAKE_CURRENT_SOURCE_DIR}/test_tcpx.c ${CMAKE_CURRENT_SOURCE_DIR}/tcpx_ingress.c
  ${CMAKE_CURRENT_SOURCE_DIR}/tcpx_pipe.c)
target_link_libraries(test_tcpx PRIVATE xdpkv_core)
add_test(NAME tcpx_unit COMMAND test_tcpx)
set_tests_properties(tcpx_unit PROPERTIES LABELS "unit;quick" SKIP_RETURN_CODE 77 TIMEOUT 120)
