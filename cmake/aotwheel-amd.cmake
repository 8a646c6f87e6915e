# aotwheel hipcc backend (included by aotwheel-config.cmake, or on its own after it).
#
#   aotwheel_add_hip_device_code(<target> SOURCES <file.hip>...
#                                [TARGETS <token>...]      # gfx90a gfx1030 gfx90a:xnack- ...
#                                [DEVLIST <prefix>]        # use <prefix>_AMD from aotwheel_resolve_devlist
#                                [NAME <image set name>]   # C identifier; default: the target name
#                                [HIPCC_OPTIONS <arg>...]  # extra hipcc arguments, e.g. -O3
#                                [OUT_TARGETS <var>]       # set to the resolved target ids
#                                [DESTINATION <package dir>] # install _aot_manifest.json (+ _aot.py) there
#                                [PACKAGE <python package>]) # for the _aot.py hook; default from DESTINATION
#
# HIP C++ sources, compiled for the device only. One ninja edge per (source, target):
# `hipcc --offload-arch=<target> --genco --no-gpu-bundle-output` (HIP_PLATFORM=amd, so an nvcc on
# PATH never takes over), each looked up in aotwheel's device-code cache first; one
# `clang-offload-bundler` per source (the bundler hipcc's clang names); all bundles land
# page-aligned in <target>'s `.hip_fatbin` section (where hipcc puts them, so roc-obj-ls,
# clang-offload-bundler and `aotwheel inspect` read them) through a generated C file. Its header
# "<NAME>_hip.h" declares
#   struct aotwheel_hip_image { const unsigned char *start, *end; };
#   aotwheel_<NAME>_hip_images[], aotwheel_<NAME>_hip_image_count
# each image being one hipModuleLoadData() argument. Nothing links against ROCm: the extension
# imports without a GPU, and the HIP runtime is needed only when a program loads the images.
#
# Targets: TARGETS, else <DEVLIST>_AMD (set by aotwheel_resolve_devlist(<DEVLIST>)), else the AMD
# part of USE_AOT_DEVLIST as aotwheel_resolve_devlist() resolves it (Python parses every token;
# CMake never does). No AMD target: no hipcc is needed, and the header declares no image. A bad token, a
# processor the installed hipcc cannot build or a missing hipcc stops configure with one line.
#
# Each call records its images on <target> (property AOTWHEEL_AMD_IMAGES: a JSON file per call)
# for the manifest; a project built by hipcc alone passes DESTINATION here instead.
include_guard(GLOBAL)

if(NOT DEFINED _AOTWHEEL_STEP_COMMAND)
  include("${CMAKE_CURRENT_LIST_DIR}/aotwheel-config.cmake")
endif()

set(_AOTWHEEL_VENDOR_CALLS_amd "aotwheel_add_hip_device_code()")
set(_AOTWHEEL_VENDOR_WORDS_amd "AMD targets")

function(aotwheel_add_hip_device_code target)
  set(fn aotwheel_add_hip_device_code)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "DEVLIST;NAME;OUT_TARGETS;DESTINATION;PACKAGE" "SOURCES;TARGETS;HIPCC_OPTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unexpected arguments '${ARG_UNPARSED_ARGUMENTS}'. "
                        "Usage: ${fn}(<target> SOURCES <file.hip>... [TARGETS gfx90a ...|DEVLIST <prefix>] [NAME <id>] "
                        "[HIPCC_OPTIONS <arg>...] [DESTINATION <dir> [PACKAGE <pkg>]])")
  endif()
  _aotwheel_check_device_code_args(${fn} "${target}" "Pass the HIP sources, e.g. SOURCES csrc/hip/vadd.hip")
  _aotwheel_amd_targets(${fn} tokens)
  _aotwheel_vendors_built(amd)
  set(work "${CMAKE_CURRENT_BINARY_DIR}/aotwheel/${ARG_NAME}_amd")
  file(MAKE_DIRECTORY "${work}")
  set(bundles "")
  if(NOT tokens)
    message(STATUS "aotwheel: no AMD targets in the device list; ${ARG_NAME} gets no HIP code objects")
    set(plan_TARGETS "")
  else()
    _aotwheel_remote_settings("${work}/remote-settings")
    list(JOIN tokens "," csv)
    set(args "")
    foreach(src IN LISTS ARG_SOURCES)
      get_filename_component(src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      list(APPEND args "--source=${src}")
    endforeach()
    list(TRANSFORM ARG_HIPCC_OPTIONS PREPEND "--option=" OUTPUT_VARIABLE hipcc_args)  # no user word reads as a keyword
    _aotwheel_python(${fn} amd configure --targets "${csv}" --out "${work}/amd.json" --plan "${work}/plan.json"
                     --name "${ARG_NAME}" --settings "${work}/remote-settings" ${args} ${hipcc_args})
    _aotwheel_plan_edges(plan "${work}/plan.json")
    message(STATUS "aotwheel: ${ARG_NAME} HIP code objects [${plan_TARGETS}]")
    set(bundles "${plan_OUTPUTS}")
    set_property(TARGET ${target} APPEND PROPERTY AOTWHEEL_AMD_BUNDLES "${bundles}")
    set_property(TARGET ${target} APPEND PROPERTY AOTWHEEL_AMD_IMAGES "${plan_RECORD}")
  endif()
  if(ARG_OUT_TARGETS)
    set(${ARG_OUT_TARGETS} "${plan_TARGETS}" PARENT_SCOPE)
  endif()
  # The generated C file that .incbin's the bundles into .hip_fatbin, and its header: with no
  # bundle too (a count of 0), so the project's code compiles whatever the list names.
  set(embed_c "${work}/${ARG_NAME}_hip_embed.c")
  _aotwheel_python(${fn} amd embed --name "${ARG_NAME}" --out-c "${embed_c}" --out-h "${work}/${ARG_NAME}_hip.h" ${bundles})
  set_source_files_properties("${embed_c}" PROPERTIES OBJECT_DEPENDS "${bundles}")  # .incbin is invisible to the scanner
  target_sources(${target} PRIVATE "${embed_c}")
  target_include_directories(${target} PRIVATE "${work}")
endfunction()

# _aotwheel_amd_targets(<fn> <out>): the AMD tokens asked for: the caller's ARG_TARGETS, else
# <ARG_DEVLIST>_AMD, else the AMD part of USE_AOT_DEVLIST through aotwheel_resolve_devlist().
function(_aotwheel_amd_targets fn out)
  if(DEFINED ARG_TARGETS)
    set(${out} "${ARG_TARGETS}" PARENT_SCOPE)
    return()
  elseif(DEFINED ARG_DEVLIST)
    if(NOT DEFINED ${ARG_DEVLIST}_JSON)
      message(FATAL_ERROR "${fn}: DEVLIST ${ARG_DEVLIST} is not set. Call aotwheel_resolve_devlist(${ARG_DEVLIST}) first.")
    endif()
    set(dl "${ARG_DEVLIST}")
  else()
    aotwheel_resolve_devlist(_aotw_hdl)
    set(dl _aotw_hdl)
  endif()
  _aotwheel_vendors_wanted(${fn} ${dl})
  # The resolver's JSON, read here until the core sets <dl>_AMD itself.
  string(JSON type ERROR_VARIABLE err TYPE "${${dl}_JSON}" amd)
  set(names "")
  if(type STREQUAL "OBJECT")
    _aotwheel_json_field(names "${${dl}_JSON}" "" amd targets)
  endif()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()
