# aotwheel's NVIDIA build with nvcc (included by aotwheel-config.cmake, which holds what every
# vendor shares, or on its own after it; this file names no other vendor).
#
#   aotwheel_add_cuda_device_code(<target> SOURCES <file.cl|file.cu>...
#                                 [TARGETS <token>...]      # sm_90 sm_80 compute_80 ptx ...
#                                 [DEVLIST <prefix>]        # use <prefix>_CUDA from aotwheel_resolve_devlist
#                                 [NAME <image set name>]   # C identifier; default: the target name
#                                 [NVCC_OPTIONS <arg>...]   # extra nvcc arguments, e.g. -O3 -lineinfo
#                                 [COMPRESS_MODE default|size|speed|balance|none]
#                                 [OUT_TARGETS <var>]       # set to the resolved target names
#                                 [DESTINATION <package dir>] # install _aot_manifest.json (+ _aot.py) there
#                                 [PACKAGE <python package>]) # for the _aot.py hook; default from DESTINATION
#
# OpenCL C kernels (the sources other vendors' calls build too): each source compiles as CUDA C++ through
# csrc/aotwheel_portable.h (nvcc -x cu -include ...). One ninja edge per (source, target):
# `nvcc -cubin -gencode=arch=compute_90,code=sm_90` or `nvcc -ptx ...`, each looked up in
# aotwheel's device-code cache first; one `fatbinary --create` per source; all fat binaries land
# in <target>'s `.nv_fatbin` section (where nvcc puts them, so cuobjdump and `aotwheel inspect`
# read them) through a generated C file. Its header "<NAME>_cuda.h" declares
#   struct aotwheel_cuda_image { const unsigned char *start, *end; };
#   aotwheel_<NAME>_cuda_images[], aotwheel_<NAME>_cuda_image_count
# each image being one cuModuleLoadData() argument. Nothing links against CUDA: the extension
# imports without a GPU, and the driver is needed only when a program loads the images.
#
# Targets: TARGETS, else <DEVLIST>_CUDA (set by aotwheel_resolve_devlist(<DEVLIST>)), else the
# NVIDIA part of USE_AOT_DEVLIST as aotwheel_resolve_devlist() resolves it (Python parses every
# token; CMake never does). No NVIDIA target: the function does nothing (a list of other vendors'
# devices needs no nvcc). A bad token or a missing nvcc stops configure with aotwheel's one-line message.
#
# aotwheel_resolve_devlist(<out>) sets this vendor's variables (NVIDIA's DevlistPart.cmake_variables()):
#   <out>_CUDA                NVIDIA images (sm_XY cubins, compute_XY PTX; empty if none listed)
#   <out>_CUDA_ARCHITECTURES  the same set in CMake's CUDA_ARCHITECTURES form (80-real;90)
#
# Each call records its images on <target> (property AOTWHEEL_IMAGES_nvidia: a JSON file per call;
# AOTWHEEL_IMAGE_FILES_nvidia: the fat binaries) so that whichever call on the target writes
# _aot_manifest.json lists them. A project built by nvcc alone passes DESTINATION here: the same
# manifest and _aot.py (one call per target may own them). The other vendors a list names need
# their own calls in the project (configure says so; aotwheel-config.cmake).
#
# Private steps, in the order aotwheel_add_cuda_device_code() runs them:
#   _aotwheel_call_targets      the requested tokens (TARGETS, DEVLIST or the resolver; aotwheel-config.cmake)
#   _aotwheel_cuda_configure    nvcc found, every target checked, the build plan written (Python)
#   _aotwheel_plan_edges        the plan's edges (aotwheel-config.cmake): per source one nvcc edge
#                               per target, then `fatbinary`
#   _aotwheel_cuda_embed        the .nv_fatbin embedding, wired into the target
# The plan's record of the images (<work>/images.json, written with the plan) goes on the target
# for the manifest.
include_guard(GLOBAL)

if(NOT DEFINED _AOTWHEEL_STEP_COMMAND)
  include("${CMAKE_CURRENT_LIST_DIR}/aotwheel-config.cmake")
endif()

_aotwheel_register_vendor(nvidia WORDS "NVIDIA targets" CALLS "aotwheel_add_cuda_device_code()")

# The nvcc build steps (python/aotwheel/backends/nvidia/buildsteps.py), through the one step command.
set(_AOTWHEEL_CUDA_COMMAND ${_AOTWHEEL_STEP_COMMAND} nvidia)

# The portability header: a source checkout's csrc/, or include/ of an installed aotwheel.
foreach(_aotwheel_h "${CMAKE_CURRENT_LIST_DIR}/../csrc/aotwheel_portable.h"
                    "${CMAKE_CURRENT_LIST_DIR}/../include/aotwheel_portable.h")
  if(EXISTS "${_aotwheel_h}" AND NOT DEFINED _AOTWHEEL_PORTABLE_HEADER)
    get_filename_component(_AOTWHEEL_PORTABLE_HEADER "${_aotwheel_h}" ABSOLUTE)
  endif()
endforeach()
unset(_aotwheel_h)

function(aotwheel_add_cuda_device_code target)
  set(fn aotwheel_add_cuda_device_code)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "DEVLIST;NAME;COMPRESS_MODE;OUT_TARGETS;DESTINATION;PACKAGE"
                        "SOURCES;TARGETS;NVCC_OPTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unexpected arguments '${ARG_UNPARSED_ARGUMENTS}'. "
                        "Usage: ${fn}(<target> SOURCES <file>... [TARGETS sm_90 ...|DEVLIST <prefix>] [NAME <id>] "
                        "[NVCC_OPTIONS <arg>...] [COMPRESS_MODE <mode>] [DESTINATION <dir> [PACKAGE <pkg>]])")
  endif()
  _aotwheel_check_device_code_args(${fn} "${target}" "Pass the kernel files, e.g. SOURCES csrc/kernels/vadd.cl")
  _aotwheel_call_targets(${fn} tokens CUDA)
  _aotwheel_vendors_built(nvidia)
  set(work "${CMAKE_CURRENT_BINARY_DIR}/aotwheel/${ARG_NAME}_cuda")
  if(NOT tokens)
    message(STATUS "aotwheel: no NVIDIA targets in the device list; ${ARG_NAME} gets no CUDA images")
    if(ARG_OUT_TARGETS)
      set(${ARG_OUT_TARGETS} "" PARENT_SCOPE)
    endif()
    if(DEFINED ARG_DESTINATION)
      _aotwheel_cuda_manifest(${fn} "${target}" "${work}" "" "${tokens_JSON}")
    endif()
    return()
  endif()
  file(MAKE_DIRECTORY "${work}")
  _aotwheel_remote_settings("${work}/remote-settings")  # -C cmake.define.AOTWHEEL_REMOTE_CACHE=... reaches nvcc steps too
  list(TRANSFORM ARG_NVCC_OPTIONS PREPEND "--option=" OUTPUT_VARIABLE nvcc_args)
  _aotwheel_cuda_configure(${fn} "${work}" "${tokens}" NAME "${ARG_NAME}" SOURCES ${ARG_SOURCES}
                           COMPRESS_MODE "${ARG_COMPRESS_MODE}" NVCC_ARGS ${nvcc_args})
  _aotwheel_plan_edges(plan "${work}/plan.json")
  message(STATUS "aotwheel: ${ARG_NAME} CUDA images [${plan_TARGETS}]")
  if(ARG_OUT_TARGETS)
    set(${ARG_OUT_TARGETS} "${plan_TARGETS}" PARENT_SCOPE)
  endif()
  _aotwheel_cuda_embed(${fn} "${target}" "${work}" "${plan_OUTPUTS}")
  # What this call builds per source (its fat binary and the cubins/PTX in it), for the manifest.
  set_property(TARGET ${target} APPEND PROPERTY AOTWHEEL_IMAGES_nvidia "${plan_RECORD}")
  if(DEFINED ARG_DESTINATION)
    _aotwheel_cuda_manifest(${fn} "${target}" "${work}" "${work}/cuda.json" "${tokens_JSON}")
  endif()
endfunction()

# _aotwheel_cuda_manifest(<fn> <target> <work> <toolchain json> <devlist json>): _aot_manifest.json
# of <target> (its CUDA images, and those other vendors' calls record on it) installed into the
# caller's ARG_DESTINATION with _aot.py: a target built by nvcc alone gets both too (aotwheel-config.cmake's
# _aotwheel_target_manifest). <toolchain json>: nvcc's facts (path, version, targets), a file, or
# empty; <devlist json>: the resolver's JSON of the list; empty: the caller's TARGETS, resolved here.
function(_aotwheel_cuda_manifest fn target work toolchain devlist)
  set(facts "")
  if(NOT toolchain STREQUAL "")
    file(READ "${toolchain}" facts)
    string(STRIP "${facts}" facts)
  endif()
  _aotwheel_call_manifest(${fn} "${target}" "${work}" "${devlist}" "${facts}" ${ARG_NAME}_cuda_aot_manifest)
endfunction()

# _aotwheel_cuda_configure(<fn> <work> <tokens> NAME <name> SOURCES <file>... [COMPRESS_MODE <mode>]
#                          [NVCC_ARGS --option=<arg>...])
# nvcc found and every target checked against it (one-line errors) into <work>/cuda.json, and the
# build plan of SOURCES into <work>/plan.json (python/aotwheel/backends/nvidia/plan.py:
# one nvcc edge per (source, target), then one `fatbinary` edge per source, and the images' record
# <work>/images.json for the manifest).
function(_aotwheel_cuda_configure fn work tokens)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "NAME" "COMPRESS_MODE;SOURCES;NVCC_ARGS")  # COMPRESS_MODE: one value, maybe empty
  if(NOT DEFINED _AOTWHEEL_PORTABLE_HEADER)
    message(FATAL_ERROR "${fn}: aotwheel_portable.h not found next to ${CMAKE_CURRENT_FUNCTION_LIST_DIR}; reinstall aotwheel")
  endif()
  file(MAKE_DIRECTORY "${work}")
  list(JOIN tokens "," csv)
  set(args "")
  if(DEFINED CMAKE_CUDA_COMPILER AND NOT CMAKE_CUDA_COMPILER STREQUAL "")
    list(APPEND args --nvcc "${CMAKE_CUDA_COMPILER}")
  endif()
  foreach(src IN LISTS arg_SOURCES)
    get_filename_component(src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND args "--source=${src}")
  endforeach()
  list(APPEND args ${arg_NVCC_ARGS})  # each --option=<arg>: no user word can read as a keyword here
  if(arg_COMPRESS_MODE)
    list(APPEND args "--compress-mode=${arg_COMPRESS_MODE}")
  endif()
  _aotwheel_python(${fn} nvidia configure --targets "${csv}" --header "${_AOTWHEEL_PORTABLE_HEADER}" --out "${work}/cuda.json"
                   --plan "${work}/plan.json" --name "${arg_NAME}" --settings "${work}/remote-settings" ${args})
endfunction()

# _aotwheel_cuda_embed(<fn> <target> <work> <fatbins>): the generated C file that puts the fat
# binaries into <target>'s .nv_fatbin, and its header "<NAME>_cuda.h".
function(_aotwheel_cuda_embed fn target work fatbins)
  set(embed_c "${work}/${ARG_NAME}_cuda_embed.c")
  _aotwheel_python(${fn} nvidia embed --name "${ARG_NAME}" --out-c "${embed_c}" --out-h "${work}/${ARG_NAME}_cuda.h" ${fatbins})
  # The .incbin'd fat binaries are invisible to the C compiler's dependency scan: declare them.
  set_source_files_properties("${embed_c}" PROPERTIES OBJECT_DEPENDS "${fatbins}")
  target_sources(${target} PRIVATE "${embed_c}")
  target_include_directories(${target} PRIVATE "${work}")
  set_property(TARGET ${target} APPEND PROPERTY AOTWHEEL_IMAGE_FILES_nvidia "${fatbins}")
endfunction()
