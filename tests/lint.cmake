# The layer rule (docs/architecture.md): no include from a lower folder to a
# higher one, no header name found twice on the include path.
add_test(NAME lint_layers COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/lint/layers.py)
set_tests_properties(lint_layers PROPERTIES TIMEOUT 60 LABELS "unit;lint")
