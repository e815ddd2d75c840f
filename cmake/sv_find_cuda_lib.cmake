# sv_find_cuda_lib: the search FindCUDNN.cmake and FindNCCL.cmake share, for a library that ships
# with (or beside) the CUDA toolkit.
#
#   sv_find_cuda_lib(<PKG> TARGET <ns::name> HEADER <h> LIBRARY_NAMES <name>...
#                    VERSION_HEADERS <h>... VERSION_PARTS <major> <minor> <patch>
#                    [INCLUDE_SUFFIXES <dir>...])
#
# Searches, in order: <PKG>_ROOT (CMake or environment variable), CUDAToolkit_ROOT (both),
# CUDAToolkit_LIBRARY_ROOT, /usr/local/cuda, CUDAToolkit's include and library directories, then
# the system's standard paths; INCLUDE_SUFFIXES are extra suffixes for the header search.
# The version is read from the first of VERSION_HEADERS (names in the include directory) that
# exists: its "#define <PKG>_<part> N" lines for the three parts, joined with dots.
# Result: <PKG>_INCLUDE_DIR and <PKG>_LIBRARY (cache, advanced), <PKG>_FOUND and <PKG>_VERSION in
# the caller's scope (find_package_handle_standard_args, so REQUIRED and QUIET apply), and the
# imported target when found.
include(FindPackageHandleStandardArgs)

function(sv_find_cuda_lib pkg)
  cmake_parse_arguments(A "" "TARGET;HEADER" "LIBRARY_NAMES;VERSION_HEADERS;VERSION_PARTS;INCLUDE_SUFFIXES" ${ARGN})
  set(hints)
  foreach(root IN ITEMS "${${pkg}_ROOT}" "$ENV{${pkg}_ROOT}" "${CUDAToolkit_ROOT}" "$ENV{CUDAToolkit_ROOT}"
                        "${CUDAToolkit_LIBRARY_ROOT}" /usr/local/cuda)
    if(root)
      list(APPEND hints "${root}")
    endif()
  endforeach()

  find_path(${pkg}_INCLUDE_DIR NAMES ${A_HEADER}
    HINTS ${hints} ${CUDAToolkit_INCLUDE_DIRS}
    PATH_SUFFIXES include targets/x86_64-linux/include targets/sbsa-linux/include ${A_INCLUDE_SUFFIXES})
  find_library(${pkg}_LIBRARY NAMES ${A_LIBRARY_NAMES}
    HINTS ${hints} ${CUDAToolkit_LIBRARY_DIR}
    PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu targets/x86_64-linux/lib targets/sbsa-linux/lib)

  if(${pkg}_INCLUDE_DIR)
    foreach(h IN LISTS A_VERSION_HEADERS)
      set(ver_h "${${pkg}_INCLUDE_DIR}/${h}")
      if(EXISTS "${ver_h}")
        break()
      endif()
    endforeach()
    list(JOIN A_VERSION_PARTS "|" alternatives)
    file(STRINGS "${ver_h}" lines REGEX "#define ${pkg}_(${alternatives}) +[0-9]+")
    set(${pkg}_VERSION)
    foreach(part IN LISTS A_VERSION_PARTS)
      string(REGEX MATCH "${pkg}_${part} +([0-9]+)" m "${lines}")
      if(DEFINED ${pkg}_VERSION)
        string(APPEND ${pkg}_VERSION ".${CMAKE_MATCH_1}")
      else()
        set(${pkg}_VERSION "${CMAKE_MATCH_1}")
      endif()
    endforeach()
    set(${pkg}_VERSION "${${pkg}_VERSION}" PARENT_SCOPE)
  endif()

  find_package_handle_standard_args(${pkg}
    REQUIRED_VARS ${pkg}_LIBRARY ${pkg}_INCLUDE_DIR
    VERSION_VAR ${pkg}_VERSION)
  set(${pkg}_FOUND "${${pkg}_FOUND}" PARENT_SCOPE)

  if(${pkg}_FOUND AND NOT TARGET ${A_TARGET})
    add_library(${A_TARGET} UNKNOWN IMPORTED)
    set_target_properties(${A_TARGET} PROPERTIES
      IMPORTED_LOCATION "${${pkg}_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${${pkg}_INCLUDE_DIR}")
  endif()
  mark_as_advanced(${pkg}_INCLUDE_DIR ${pkg}_LIBRARY)
endfunction()
