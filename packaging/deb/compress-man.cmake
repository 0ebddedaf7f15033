# CPACK_PRE_BUILD_SCRIPTS: runs on the staged files before cpack packs them.
# Debian policy 12.1: manual pages are compressed with gzip -9n (no name
# or time stamp, so the result is reproducible). A plain `cmake --install`
# keeps them as written; only the package gets .gz pages.
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
find_program(JRPCD_GZIP gzip REQUIRED)
file(GLOB_RECURSE pages LIST_DIRECTORIES FALSE
     "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/share/man/man[1-9]/*")
foreach(page ${pages})
  if(page MATCHES "\\.gz$" OR IS_SYMLINK "${page}")
    continue()
  endif()
  execute_process(COMMAND ${JRPCD_GZIP} -9nf "${page}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip -9n ${page} failed")
  endif()
  get_filename_component(name "${page}" NAME)
  message(STATUS "CPackDeb: gzip -9n ${name}")
endforeach()
