# FindNCCL: NCCL headers and library.
#
# Searches, in order: NCCL_ROOT (CMake or environment variable), CUDAToolkit_ROOT /
# CUDAToolkit's include and library directories, /usr/local/cuda, then the system's standard
# paths (Debian/Ubuntu libnccl-dev, pip's nvidia-nccl-cu* when NCCL_ROOT points at it).
# The search itself is sv_find_cuda_lib's (sv_find_cuda_lib.cmake).
#
# Result variables: NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_VERSION.
# Imported target: NCCL::nccl.
include(${CMAKE_CURRENT_LIST_DIR}/sv_find_cuda_lib.cmake)

sv_find_cuda_lib(NCCL TARGET NCCL::nccl
  HEADER nccl.h
  LIBRARY_NAMES nccl libnccl.so.2
  VERSION_HEADERS nccl.h VERSION_PARTS MAJOR MINOR PATCH)
