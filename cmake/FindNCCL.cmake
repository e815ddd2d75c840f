# FindNCCL: NCCL headers and library.
#
# Searches, in order: NCCL_ROOT (CMake or environment variable), CUDAToolkit_ROOT /
# CUDAToolkit's include and library directories, /usr/local/cuda, then the system's standard
# paths (Debian/Ubuntu libnccl-dev, pip's nvidia-nccl-cu* when NCCL_ROOT points at it).
#
# Result variables: NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_VERSION.
# Imported target: NCCL::nccl.
include(FindPackageHandleStandardArgs)

set(_nccl_hints)
foreach(_root IN ITEMS "${NCCL_ROOT}" "$ENV{NCCL_ROOT}" "${CUDAToolkit_ROOT}" "$ENV{CUDAToolkit_ROOT}"
                       "${CUDAToolkit_LIBRARY_ROOT}" /usr/local/cuda)
  if(_root)
    list(APPEND _nccl_hints "${_root}")
  endif()
endforeach()

find_path(NCCL_INCLUDE_DIR NAMES nccl.h
  HINTS ${_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS}
  PATH_SUFFIXES include targets/x86_64-linux/include targets/sbsa-linux/include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
  HINTS ${_nccl_hints} ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu targets/x86_64-linux/lib targets/sbsa-linux/lib)

if(NCCL_INCLUDE_DIR)
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_lines REGEX "#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${_part} +([0-9]+)" _m "${_nccl_lines}")
    set(_nccl_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
endif()

find_package_handle_standard_args(NCCL
  REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
  VERSION_VAR NCCL_VERSION)

if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
