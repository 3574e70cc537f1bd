# The verifier's budget (docs/kernels.md): every program of every layout this
# kernel can hold loads within 250,000 processed instructions, a quarter of
# the kernel's limit, at the widest settings (keys of 250 bytes, values of
# 16384, text and binary keys) and at the defaults.  xdpkv verify loads each
# program alone with log level 4 and exits 1 over the budget, 3 on a refusal;
# a layout the kernel cannot hold is listed with its reason, not failed.
add_test(NAME verifier_budget COMMAND ${CMAKE_COMMAND} -E env
  sh -c "set -e; x=$<TARGET_FILE:xdpkv>; $x verify --all -k 250 -s 16384; $x verify --all -k 250 -s 16384 --strict-keys; $x verify --all; $x verify --all --strict-keys")
set_tests_properties(verifier_budget PROPERTIES TIMEOUT 300)
