# The layer rule (docs/architecture.md): no include from a lower folder to a
# higher one, no header name found twice on the include path.
add_test(NAME lint_layers COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/lint/layers.py)
set_tests_properties(lint_layers PROPERTIES TIMEOUT 60 LABELS "unit;lint")
# No circle between modules (issue 18): the C modules of the library and the
# CLI (symbols, nm on the build's objects) and the Python modules under
# bench/ and tests/ (imports).
add_test(NAME lint_cycles COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/lint/cycles.py ${CMAKE_BINARY_DIR})
set_tests_properties(lint_cycles PROPERTIES TIMEOUT 60 LABELS "unit;lint")
