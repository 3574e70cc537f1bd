# The .deb and the man page (issue 8; cli/packaging.cmake).  Fast, no root:
#   ctest --test-dir build -L package
add_test(NAME package_deb COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/package/check-deb.sh
         ${CMAKE_BINARY_DIR} ${CMAKE_INSTALL_PREFIX} ${PROJECT_VERSION})
add_test(NAME package_man COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/package/check-man.sh
         $<TARGET_FILE:xdpkv> ${CMAKE_BINARY_DIR}/xdpkv.8)
# cpack builds (its preinstall step) and installs in the build tree: not beside
# another test that builds or installs there (RESOURCE_LOCK build_tree:
# e2e_quickstart's cmake --build, e2e_systemd_unit's cmake --install;
# package_compare, the other cpack, runs alone)
set_tests_properties(package_deb package_man PROPERTIES TIMEOUT 120 LABELS package)
set_tests_properties(package_deb PROPERTIES RESOURCE_LOCK build_tree)

# xdpkv compare --smoke from the unpacked .deb (dpkg -x into a temporary
# root): the scripts' modes, the package's own tools, a checked report.
# Root and the testbed; ~1 min.
add_test(NAME package_compare COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/package/check-compare.sh
         ${CMAKE_BINARY_DIR} ${CMAKE_INSTALL_PREFIX} ${PROJECT_VERSION})
set_tests_properties(package_compare PROPERTIES TIMEOUT 240 RUN_SERIAL TRUE LABELS "package;e2e;compare")

# The .deb installed, and removed by apt-get and dpkg, in a container on an
# overlay of this machine's root (a tmpfs on top: nothing stays):
# the prerm detaches every store, XDPKV_KEEP_ON_REMOVE=yes keeps one, purge
# takes it off.  Root and the testbed.
string(MD5 h package_lifecycle)
string(SUBSTRING ${h} 0 6 h)
add_test(NAME package_lifecycle COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/package/lifecycle.sh
         ${CMAKE_BINARY_DIR} ${PROJECT_VERSION})
set_tests_properties(package_lifecycle PROPERTIES TIMEOUT 300 LABELS "package;e2e"
  RESOURCE_LOCK build_tree
  ENVIRONMENT "XDPKV=$<TARGET_FILE:xdpkv>;E2E_PREFIX=xe${h};TB_XDP_PASS_OBJ=${CMAKE_BINARY_DIR}/tests/xdp_pass.bpf.o")
