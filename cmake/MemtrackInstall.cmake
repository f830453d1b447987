# Install rules: another CMake project can find_package(memtrack) and link memtrack::codec / memtrack::pipeline /
# memtrack::analysis, and memtrack::control (memtrack/control.h; memtrack::control_static the archive).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_memtrack_export_targets memtrack_codec)
if(TARGET memtrack_pipeline)
  list(APPEND _memtrack_export_targets memtrack_pipeline)
endif()
if(TARGET memtrack_analysis)
  list(APPEND _memtrack_export_targets memtrack_analysis)
endif()
if(TARGET memtrack_control_shared)
  list(APPEND _memtrack_export_targets memtrack_control_shared memtrack_control_static)
endif()
install(TARGETS ${_memtrack_export_targets} EXPORT memtrackTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY codec/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(EXISTS ${PROJECT_SOURCE_DIR}/pipeline/include)
  install(DIRECTORY pipeline/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
if(EXISTS ${PROJECT_SOURCE_DIR}/analysis/include)
  install(DIRECTORY analysis/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
if(EXISTS ${PROJECT_SOURCE_DIR}/control/include)
  install(DIRECTORY control/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
install(EXPORT memtrackTargets NAMESPACE memtrack:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memtrack)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/memtrackConfig.cmake.in
  ${PROJECT_BINARY_DIR}/memtrackConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memtrack)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/memtrackConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/memtrackConfig.cmake ${PROJECT_BINARY_DIR}/memtrackConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memtrack)

# `cpack -G DEB` in the build directory: one package, memtrack, with everything installed above (the tool,
# the preload and control libraries, headers and CMake config), under /usr. Its Depends come from
# dpkg-shlibdeps (Debian's dpkg-dev): the packages that ship the shared libraries its ELF files link.
set(CPACK_PACKAGE_NAME memtrack)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "memtrack maintainers <memtrack@localhost>")
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
include(CPack)
