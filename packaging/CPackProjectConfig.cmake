# Read by cpack for every generator (CPACK_PROJECT_CONFIG_FILE): a package
# installs under CPACK_PACKAGING_INSTALL_PREFIX, and the tree must have been
# configured for that prefix: GNUInstallDirs puts the config in /etc only
# for a /usr prefix, and the daemon falls back to the configured plugin
# folder where it cannot find its own (no /proc).
if(CPACK_GENERATOR STREQUAL "DEB" AND
   NOT CPACK_JRPCD_BUILD_PREFIX STREQUAL CPACK_PACKAGING_INSTALL_PREFIX)
  message(FATAL_ERROR
    "jrpcd: this tree was configured with CMAKE_INSTALL_PREFIX="
    "${CPACK_JRPCD_BUILD_PREFIX}, but the package installs to "
    "${CPACK_PACKAGING_INSTALL_PREFIX}; configure a tree with "
    "-DCMAKE_INSTALL_PREFIX=${CPACK_PACKAGING_INSTALL_PREFIX} to package it")
endif()
