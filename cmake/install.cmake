# Installation: the libraries (libamber_runtime.so / .a, libamber.so) with SONAMEs following
# the project version, the headers under include/amber/, the amber tool and
# amber-torch2safetensors, the CMake package
# (find_package(Amber) -> Amber::runtime, Amber::runtime_static, Amber::amber) and pkg-config
# files (amber-runtime.pc, amber.pc).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS amber_runtime amber_runtime_static amber amber_headers EXPORT AmberTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS amber_cli amber_import amber_export_onnx amber_quantize RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# PyTorch state_dict -> safetensors converter (needs only torch; Debian has no safetensors).
install(PROGRAMS ${CMAKE_SOURCE_DIR}/tools/torch2safetensors.py DESTINATION ${CMAKE_INSTALL_BINDIR}
        RENAME amber-torch2safetensors)
foreach(folder core schema graph serialize loader nn tracer)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/${folder}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/amber/${folder}
          FILES_MATCHING PATTERN "*.h" PATTERN "passes" EXCLUDE)
endforeach()
install(FILES ${CMAKE_SOURCE_DIR}/onnx/import.h ${CMAKE_SOURCE_DIR}/onnx/export.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/amber/onnx)
install(FILES ${CMAKE_BINARY_DIR}/umbrella/amber/amber.h ${CMAKE_BINARY_DIR}/umbrella/amber/runtime.h
              ${CMAKE_BINARY_DIR}/umbrella/amber/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/amber)

set(AMBER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Amber)
install(EXPORT AmberTargets NAMESPACE Amber:: DESTINATION ${AMBER_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/AmberConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/cmake/AmberConfig.cmake INSTALL_DESTINATION ${AMBER_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/AmberConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/AmberConfig.cmake ${CMAKE_BINARY_DIR}/cmake/AmberConfigVersion.cmake
        DESTINATION ${AMBER_CMAKE_DIR})

# Relocatable .pc files: the prefix is found from the .pc file's own folder.
file(RELATIVE_PATH AMBER_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" AMBER_PC_TO_PREFIX "${AMBER_PC_TO_PREFIX}")
list(TRANSFORM AMBER_STATIC_SYSTEM_LIBS PREPEND "-l" OUTPUT_VARIABLE AMBER_PC_PRIVATE_LIBS)
list(JOIN AMBER_PC_PRIVATE_LIBS " " AMBER_PC_PRIVATE_LIBS)
foreach(pc amber-runtime amber)
  configure_file(${CMAKE_SOURCE_DIR}/cmake/${pc}.pc.in ${CMAKE_BINARY_DIR}/cmake/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/cmake/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
