# FindCUDNN: cuDNN headers and library (the graph/backend C API of cuDNN >= 9).
#
# Searches, in order: CUDNN_ROOT (CMake or environment variable), CUDAToolkit_ROOT /
# CUDAToolkit's include and library directories, /usr/local/cuda, then the system's standard
# paths (Debian/Ubuntu libcudnn9-dev-cuda-*, pip's nvidia-cudnn-cu* when CUDNN_ROOT points at it).
#
# Result variables: CUDNN_FOUND, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY, CUDNN_VERSION.
# Imported target: CUDNN::cudnn.
include(FindPackageHandleStandardArgs)

set(_cudnn_hints)
foreach(_root IN ITEMS "${CUDNN_ROOT}" "$ENV{CUDNN_ROOT}" "${CUDAToolkit_ROOT}" "$ENV{CUDAToolkit_ROOT}"
                       "${CUDAToolkit_LIBRARY_ROOT}" /usr/local/cuda)
  if(_root)
    list(APPEND _cudnn_hints "${_root}")
  endif()
endforeach()

find_path(CUDNN_INCLUDE_DIR NAMES cudnn.h
  HINTS ${_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS}
  PATH_SUFFIXES include targets/x86_64-linux/include targets/sbsa-linux/include include/x86_64-linux-gnu)
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
  HINTS ${_cudnn_hints} ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu targets/x86_64-linux/lib targets/sbsa-linux/lib)

if(CUDNN_INCLUDE_DIR)
  set(_cudnn_ver_h "${CUDNN_INCLUDE_DIR}/cudnn_version.h")
  if(NOT EXISTS "${_cudnn_ver_h}")
    set(_cudnn_ver_h "${CUDNN_INCLUDE_DIR}/cudnn.h")
  endif()
  file(STRINGS "${_cudnn_ver_h}" _cudnn_lines REGEX "#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
  foreach(_part MAJOR MINOR PATCHLEVEL)
    string(REGEX MATCH "CUDNN_${_part} +([0-9]+)" _m "${_cudnn_lines}")
    set(_cudnn_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(CUDNN_VERSION "${_cudnn_MAJOR}.${_cudnn_MINOR}.${_cudnn_PATCHLEVEL}")
endif()

find_package_handle_standard_args(CUDNN
  REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR
  VERSION_VAR CUDNN_VERSION)

if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
