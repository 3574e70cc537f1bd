# Installing xdpkv and packaging it as a .deb (docs/install.md).  Included
# from the top CMakeLists.txt after every target exists.
#
#   ninja -C build install            to CMAKE_INSTALL_PREFIX (default /usr)
#   (cd build && cpack -G DEB)        build/xdpkv_<version>_<arch>.deb
#
# The BPF programs are compiled into the binaries (skeletons): nothing to
# install for them.  'xdpkv compare' finds its scripts, testbed and tools
# relative to the installed binary (cli/compare.c), so those are installed too.
include(GNUInstallDirs)

set(XKV_SBINDIR ${CMAKE_INSTALL_FULL_SBINDIR})
set(XKV_LIBEXECDIR ${CMAKE_INSTALL_FULL_LIBEXECDIR}/xdpkv)
set(XKV_CONFDIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/xdpkv)
set(XKV_DOCDIR ${CMAKE_INSTALL_FULL_DOCDIR})
set(XKV_SYSTEMD_DIR lib/systemd/system)

# xdpkv(8), from the same tables as --help (cli/man.c)
set(XKV_MAN ${CMAKE_BINARY_DIR}/xdpkv.8)
add_custom_command(OUTPUT ${XKV_MAN}
  COMMAND xdpkv --man > ${XKV_MAN}
  DEPENDS xdpkv
  COMMENT "man page xdpkv.8")
# the package's copy compressed, as Debian wants it (gzip -n: no name or time in it)
add_custom_command(OUTPUT ${XKV_MAN}.gz
  COMMAND gzip -9nc ${XKV_MAN} > ${XKV_MAN}.gz
  DEPENDS ${XKV_MAN})
add_custom_target(xdpkv_man ALL DEPENDS ${XKV_MAN} ${XKV_MAN}.gz)

configure_file(${CMAKE_SOURCE_DIR}/cli/systemd/xdpkv@.service.in
               ${CMAKE_BINARY_DIR}/systemd/xdpkv@.service @ONLY)
configure_file(${CMAKE_SOURCE_DIR}/cli/systemd/xdpkv-service.in
               ${CMAKE_BINARY_DIR}/systemd/xdpkv-service @ONLY)
configure_file(${CMAKE_SOURCE_DIR}/cli/systemd/prerm.in
               ${CMAKE_BINARY_DIR}/debian-control/prerm @ONLY)

install(TARGETS xdpkv RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
install(FILES ${XKV_MAN}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES ${CMAKE_BINARY_DIR}/systemd/xdpkv@.service DESTINATION ${XKV_SYSTEMD_DIR})
install(PROGRAMS ${CMAKE_BINARY_DIR}/systemd/xdpkv-service DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/xdpkv)
install(FILES ${CMAKE_SOURCE_DIR}/cli/systemd/example.conf DESTINATION ${XKV_CONFDIR})
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/cli/systemd/copyright
        ${CMAKE_BINARY_DIR}/debian-control/changelog.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${CMAKE_SOURCE_DIR}/cli/systemd/lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME xdpkv)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}
        FILES_MATCHING PATTERN "*.md" PATTERN "compare-*" EXCLUDE PATTERN "data" EXCLUDE)

# xdpkv compare: bench/compare and the testbed it sources (../../tests/lib),
# the same relative layout under share/xdpkv; the tools under libexec/xdpkv.
# compare executes its shell scripts (tb-call.sh, testbed-run.sh) and
# bench/tcpscale.sh directly: they are installed executable (0755), the
# Python modules and the sourced testbed.sh as data (0644).
install(DIRECTORY ${CMAKE_SOURCE_DIR}/bench/compare/ DESTINATION ${CMAKE_INSTALL_DATADIR}/xdpkv/bench/compare
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(PROGRAMS ${CMAKE_SOURCE_DIR}/bench/compare/tb-call.sh ${CMAKE_SOURCE_DIR}/bench/compare/testbed-run.sh
        DESTINATION ${CMAKE_INSTALL_DATADIR}/xdpkv/bench/compare)
install(PROGRAMS ${CMAKE_SOURCE_DIR}/bench/tcpscale.sh DESTINATION ${CMAKE_INSTALL_DATADIR}/xdpkv/bench)
# (p): the client matrix, its script executable, its client side as data
install(PROGRAMS ${CMAKE_SOURCE_DIR}/bench/clients/clients.sh DESTINATION ${CMAKE_INSTALL_DATADIR}/xdpkv/bench/clients)
install(FILES ${CMAKE_SOURCE_DIR}/bench/clients/clients.py DESTINATION ${CMAKE_INSTALL_DATADIR}/xdpkv/bench/clients)
# (m): the simulators where compare's hitratio.py looks for them, and the
# script that puts libCacheSim into share/xdpkv/bench/.venv
install(PROGRAMS ${CMAKE_SOURCE_DIR}/bench/kvexp/setup-cachesim.sh DESTINATION ${CMAKE_INSTALL_DATADIR}/xdpkv/bench/kvexp)
install(FILES ${CMAKE_SOURCE_DIR}/bench/kvexp/hitratio_vs_cachesim.py ${CMAKE_SOURCE_DIR}/bench/kvexp/cachesim_models.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/xdpkv/bench/kvexp)
install(FILES ${CMAKE_SOURCE_DIR}/tests/lib/testbed.sh ${CMAKE_SOURCE_DIR}/tests/lib/xdp_pass.bpf.c
        ${CMAKE_BINARY_DIR}/tests/xdp_pass.bpf.o DESTINATION ${CMAKE_INSTALL_DATADIR}/xdpkv/tests/lib)
install(TARGETS xkv-loadgen xdpgen xkv-kvexp RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/xdpkv)
# the reflector ((a), (j)'s ceiling) and, where Google Benchmark was found, the microbenchmark (l)
install(FILES ${CMAKE_BINARY_DIR}/bench/reflector/reflector.bpf.o DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/xdpkv)
if(TARGET microbench)
  install(TARGETS microbench RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/xdpkv)
endif()

# ---- the .deb ----
set(CPACK_PACKAGE_NAME xdpkv)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# Who distributes the package and where its home is: the project names no
# public home yet, so the defaults are placeholders in the reserved
# example.org domain; whoever publishes a package sets both:
#   cmake -DXKV_MAINTAINER="Name <address>" -DXKV_HOMEPAGE=https://...
set(XKV_MAINTAINER "xdpkv maintainers <maintainers@xdpkv.example.org>" CACHE STRING
    "the .deb's Maintainer field")
set(XKV_HOMEPAGE "https://xdpkv.example.org/" CACHE STRING "the .deb's Homepage field")
set(CPACK_PACKAGE_CONTACT "${XKV_MAINTAINER}")
# A native package's changelog (lintian: no-changelog), dated when cmake ran
string(TIMESTAMP XKV_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
configure_file(${CMAKE_SOURCE_DIR}/cli/systemd/changelog.in ${CMAKE_BINARY_DIR}/debian-control/changelog @ONLY)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/debian-control/changelog.gz
  COMMAND gzip -9nc ${CMAKE_BINARY_DIR}/debian-control/changelog > ${CMAKE_BINARY_DIR}/debian-control/changelog.gz
  DEPENDS ${CMAKE_BINARY_DIR}/debian-control/changelog)
add_custom_target(xdpkv_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/debian-control/changelog.gz)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "memcached-compatible key-value store in XDP")
set(CPACK_PACKAGE_DESCRIPTION "xdpkv answers memcached get/set/delete inside the XDP hook, before the network
stack, over UDP and over the TCP connections its slow path accepted, from BPF
maps in one of nine storage layouts. The userspace slow path (xdpkv serve)
answers the rest, over UDP and TCP, from the same maps.
Includes the xdpkv@.service systemd template unit, snapshots and restore.")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${XKV_HOMEPAGE}")
# Depends: dpkg-shlibdeps reads the binaries' libraries (libbpf1, libxdp1,
# libelf1, zlib1g, libcap2, libzstd1, liblz4-1, libc6 ...); adduser for the
# postinst's system user.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3, python3-matplotlib, python3-venv, memcached, redis-server, libmemcached-tools, iproute2")
file(WRITE ${CMAKE_BINARY_DIR}/debian-control/conffiles "${XKV_CONFDIR}/example.conf\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${CMAKE_BINARY_DIR}/debian-control/conffiles
  ${CMAKE_BINARY_DIR}/debian-control/prerm
  ${CMAKE_SOURCE_DIR}/cli/systemd/postinst
  ${CMAKE_SOURCE_DIR}/cli/systemd/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# stripped binaries (lintian: unstripped-binary-or-object); the build keeps its own
set(CPACK_STRIP_FILES TRUE)
include(CPack)
