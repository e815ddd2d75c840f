# FindCUDNN: cuDNN headers and library (the graph/backend C API of cuDNN >= 9).
#
# Searches, in order: CUDNN_ROOT (CMake or environment variable), CUDAToolkit_ROOT /
# CUDAToolkit's include and library directories, /usr/local/cuda, then the system's standard
# paths (Debian/Ubuntu libcudnn9-dev-cuda-*, pip's nvidia-cudnn-cu* when CUDNN_ROOT points at it).
# The search itself is sv_find_cuda_lib's (sv_find_cuda_lib.cmake).
#
# Result variables: CUDNN_FOUND, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY, CUDNN_VERSION.
# Imported target: CUDNN::cudnn.
include(${CMAKE_CURRENT_LIST_DIR}/sv_find_cuda_lib.cmake)

sv_find_cuda_lib(CUDNN TARGET CUDNN::cudnn
  HEADER cudnn.h INCLUDE_SUFFIXES include/x86_64-linux-gnu
  LIBRARY_NAMES cudnn libcudnn.so.9
  VERSION_HEADERS cudnn_version.h cudnn.h VERSION_PARTS MAJOR MINOR PATCHLEVEL)
