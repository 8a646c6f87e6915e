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
# `hipcc --offload-arch=<target> --genco --no-gpu-bundle-output` (with HIP_PLATFORM=amd: hipcc
# never turns to another vendor's compiler it finds on PATH), each looked up in aotwheel's
# device-code cache first; one `clang-offload-bundler` edge per source (the bundler hipcc's clang
# names, the empty host entry first, as hipcc writes it); all bundles land page-aligned in
# <target>'s `.hip_fatbin` section (where hipcc puts them, so roc-obj-ls, clang-offload-bundler
# and `aotwheel inspect` read them) through a generated C file. Its header "<NAME>_hip.h" declares
#   struct aotwheel_hip_image { const unsigned char *start, *end; };
#   aotwheel_<NAME>_hip_images[], aotwheel_<NAME>_hip_image_count
# each image being one hipModuleLoadData() argument (with no AMD target: none, and no hipcc
# needed). Nothing links against ROCm: the extension imports without a GPU.
#
# Targets: TARGETS, else <DEVLIST>_AMD, else the AMD part of USE_AOT_DEVLIST as
# aotwheel_resolve_devlist() resolves it (Python parses every token; CMake never does). A bad
# token, a processor the installed hipcc cannot build or a missing hipcc stops configure with one
# line naming the fix.
#
# aotwheel_resolve_devlist(<out>) sets this vendor's variable (AMD's DevlistPart.cmake_variables()):
#   <out>_AMD   the AMD target ids listed (gfx90a;gfx1030; empty if none)
#
# Each call records its images on <target> (property AOTWHEEL_IMAGES_amd: a JSON file per call;
# AOTWHEEL_IMAGE_FILES_amd: the bundles) so that whichever call on the target writes
# _aot_manifest.json lists them. A project built by hipcc alone passes DESTINATION here: the same
# manifest and _aot.py (one call per target may own them).
include_guard(GLOBAL)

if(NOT DEFINED _AOTWHEEL_STEP_COMMAND)
  include("${CMAKE_CURRENT_LIST_DIR}/aotwheel-config.cmake")
endif()

_aotwheel_register_vendor(amd WORDS "AMD targets" CALLS "aotwheel_add_hip_device_code()")

function(aotwheel_add_hip_device_code target)
  set(fn aotwheel_add_hip_device_code)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "DEVLIST;NAME;OUT_TARGETS;DESTINATION;PACKAGE" "SOURCES;TARGETS;HIPCC_OPTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unexpected arguments '${ARG_UNPARSED_ARGUMENTS}'. "
                        "Usage: ${fn}(<target> SOURCES <file.hip>... [TARGETS gfx90a ...|DEVLIST <prefix>] [NAME <id>] "
                        "[HIPCC_OPTIONS <arg>...] [DESTINATION <dir> [PACKAGE <pkg>]])")
  endif()
  _aotwheel_check_device_code_args(${fn} "${target}" "Pass the HIP sources, e.g. SOURCES csrc/hip/elementwise.hip")
  _aotwheel_call_targets(${fn} tokens AMD)
  _aotwheel_vendors_built(amd)
  set(work "${CMAKE_CURRENT_BINARY_DIR}/aotwheel/${ARG_NAME}_amd")
  file(MAKE_DIRECTORY "${work}")
  set(bundles "")
  set(facts "")
  if(NOT tokens)
    message(STATUS "aotwheel: no AMD targets in the device list; ${ARG_NAME} gets no HIP code objects")
    set(plan_TARGETS "")
  else()
    _aotwheel_remote_settings("${work}/remote-settings")  # -C cmake.define.AOTWHEEL_REMOTE_CACHE=... reaches hipcc steps too
    list(JOIN tokens "," csv)
    set(args "")
    foreach(src IN LISTS ARG_SOURCES)
      get_filename_component(src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      list(APPEND args "--source=${src}")
    endforeach()
    list(TRANSFORM ARG_HIPCC_OPTIONS PREPEND "--option=" OUTPUT_VARIABLE hipcc_args)  # no user word reads as a keyword
    # hipcc found and asked (--version, one -### dry run), every target checked, the plan written.
    _aotwheel_python(${fn} amd configure --targets "${csv}" --out "${work}/amd.json" --plan "${work}/plan.json"
                     --name "${ARG_NAME}" --settings "${work}/remote-settings" ${args} ${hipcc_args})
    _aotwheel_plan_edges(plan "${work}/plan.json")
    message(STATUS "aotwheel: ${ARG_NAME} HIP code objects [${plan_TARGETS}]")
    set(bundles "${plan_OUTPUTS}")
    # What this call builds per source (its bundle and the code objects in it), for the manifest.
    set_property(TARGET ${target} APPEND PROPERTY AOTWHEEL_IMAGES_amd "${plan_RECORD}")
    set_property(TARGET ${target} APPEND PROPERTY AOTWHEEL_IMAGE_FILES_amd "${bundles}")
    file(READ "${work}/amd.json" facts)  # hipcc's facts: the manifest's toolchain when this call owns it
    string(STRIP "${facts}" facts)
  endif()
  if(ARG_OUT_TARGETS)
    set(${ARG_OUT_TARGETS} "${plan_TARGETS}" PARENT_SCOPE)
  endif()
  # The generated C file that .incbin's the bundles into .hip_fatbin, and its header.
  set(embed_c "${work}/${ARG_NAME}_hip_embed.c")
  _aotwheel_python(${fn} amd embed --name "${ARG_NAME}" --out-c "${embed_c}" --out-h "${work}/${ARG_NAME}_hip.h" ${bundles})
  set_source_files_properties("${embed_c}" PROPERTIES OBJECT_DEPENDS "${bundles}")  # .incbin is invisible to the scanner
  target_sources(${target} PRIVATE "${embed_c}")
  target_include_directories(${target} PRIVATE "${work}")
  if(DEFINED ARG_DESTINATION)
    _aotwheel_call_manifest(${fn} "${target}" "${work}" "${tokens_JSON}" "${facts}" ${ARG_NAME}_hip_aot_manifest)
  endif()
endfunction()
