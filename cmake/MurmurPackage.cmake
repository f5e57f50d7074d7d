# Installation and the Debian package (docs/daemon.md, "Installing").
#
#   ./dev deb                        # build/package/murmur_<version>_<arch>.deb
#   cmake --install build/package    # the same files, from a build tree
#
# The package holds /usr/bin/murmur and /usr/bin/murmurd, the sandboxed
# systemd unit, an example config (a conffile), man pages made by help2man
# from each program's --help, and the copyright and changelog; its Depends
# come from the binaries' shared libraries (dpkg-shlibdeps). A package for
# other machines is built with MURMUR_NATIVE=OFF (the `package` preset):
# -march=native would tie it to the build machine's CPU.
# The unit's ExecStart and the config's folder come from the install prefix
# when CMake configures; the presets set /usr, the package's prefix.
include(GNUInstallDirs)

if(NOT TARGET murmurd)
  return()
endif()
install(TARGETS murmur murmurd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(MURMURD_PATH ${CMAKE_INSTALL_FULL_BINDIR}/murmurd)
configure_file(${PROJECT_SOURCE_DIR}/packaging/murmurd.service.in ${PROJECT_BINARY_DIR}/packaging/murmurd.service
               @ONLY)
# Debian 12 keeps package units in /lib/systemd/system; systemd also reads
# PREFIX/lib/systemd/system for /usr/local.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(murmur_unit_dir /lib/systemd/system)
else()
  set(murmur_unit_dir ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
endif()
install(FILES ${PROJECT_BINARY_DIR}/packaging/murmurd.service DESTINATION ${murmur_unit_dir})
install(FILES ${PROJECT_SOURCE_DIR}/packaging/murmurd.textproto.example
        DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/murmur)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/prometheus/murmur-alerts.yml
              ${PROJECT_SOURCE_DIR}/packaging/grafana/murmur-dashboard.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/murmur)

# Man pages: help2man runs each program's --help and --version (in a cross
# build through the emulator, by a wrapper script).
find_program(MURMUR_HELP2MAN help2man)
if(MURMUR_HELP2MAN AND CMAKE_CROSSCOMPILING AND NOT CMAKE_CROSSCOMPILING_EMULATOR)
  message(STATUS "murmur: cross build without an emulator: no man pages")
elseif(MURMUR_HELP2MAN)
  set(man_dir ${PROJECT_BINARY_DIR}/packaging/man)
  set(murmur_man_name "the murmur simulator, operator commands and tools")
  set(murmurd_man_name "the murmur daemon: one node of a decentralized or federated learning fleet")
  foreach(program murmur murmurd)
    set(run $<TARGET_FILE:${program}>)
    if(CMAKE_CROSSCOMPILING)
      list(JOIN CMAKE_CROSSCOMPILING_EMULATOR " " emulator)
      set(run ${PROJECT_BINARY_DIR}/packaging/run-${program})
      file(GENERATE OUTPUT ${run} CONTENT "#!/bin/sh\nexec ${emulator} $<TARGET_FILE:${program}> \"$@\"\n"
           FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
    endif()
    add_custom_command(
      OUTPUT ${man_dir}/${program}.1.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${man_dir}
      COMMAND ${MURMUR_HELP2MAN} --no-info --section=1 --version-string=${PROJECT_VERSION}
              --name=${${program}_man_name} --output=${man_dir}/${program}.1 ${run}
      COMMAND gzip -9nf ${man_dir}/${program}.1
      DEPENDS ${program}
      VERBATIM)
    list(APPEND murmur_man_pages ${man_dir}/${program}.1.gz)
  endforeach()
  add_custom_target(murmur_man ALL DEPENDS ${murmur_man_pages})
  install(FILES ${murmur_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "murmur: help2man not found; no man pages (apt-get install help2man)")
endif()

set(doc_dir ${PROJECT_BINARY_DIR}/packaging/doc)
file(MAKE_DIRECTORY ${doc_dir})
add_custom_command(
  OUTPUT ${doc_dir}/changelog.gz
  COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/packaging/debian/changelog > ${doc_dir}/changelog.gz
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/debian/changelog
  VERBATIM)
add_custom_target(murmur_changelog ALL DEPENDS ${doc_dir}/changelog.gz)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/copyright ${doc_dir}/changelog.gz
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME murmur)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Seed 765a02fa maintainers <maintainers@users.noreply.a-seed-765a02fa.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "decentralized and federated learning for edge devices")
set(CPACK_PACKAGE_DESCRIPTION
    "murmur trains models over gossip (D-PSGD, CHOCO-SGD, push-sum, DSGT,\ngossip learning) and federated rounds (FedAvg and its relatives, SecAgg+,\ndifferential privacy, robust aggregation). murmurd runs one node of a\nfleet over a Noise XX transport with SWIM membership and checkpoints;\nmurmur is the simulator, the operator's commands and the tools.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A cross build's package is for the target's Debian architecture (dpkg-shlibdeps
# then reads the Depends from that architecture's multiarch libraries).
if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "dataset-fashion-mnist")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus, gnuplot-nox")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_SOURCE_IGNORE_FILES "/build/;/\\\\.git/")
include(CPack)
