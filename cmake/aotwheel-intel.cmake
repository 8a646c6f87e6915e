# aotwheel's Intel GPU build with the open toolchain: clang, llvm-spirv and ocloc (included by
# aotwheel-config.cmake, which holds what every vendor shares; this file names no other vendor).
#
#   aotwheel_add_device_code(<target> SOURCES <file.cl>...
#                            [DEVLIST <prefix>]          # variables set by aotwheel_resolve_devlist(<prefix>)
#                            [DEVICES <name>...]         # or explicit devices (resolved by aotwheel)
#                            [JIT_FALLBACK ON|OFF]
#                            [FIELD_DEFAULTS ON|OFF]     # default USE_AOT_FIELD_DEFAULTS, else ON
#                            [COMPRESS ON|OFF]           # default USE_AOT_COMPRESS, else ON
#                            [OPTIONS <ocloc -options string>]  # added to the field defaults
#                            [CLANG_OPTIONS <arg>...]
#                            [NAME <image set name>]     # C identifier; default: the target name
#                            [DESTINATION <package dir>] # install _aot_manifest.json (+ _aot.py) there
#                            [PACKAGE <python package>]) # for the _aot.py hook; default from DESTINATION
#
# AOTWHEEL_OCLOC_JOBS (CMake variable or environment): at most this many ocloc edges at once
# (a Ninja job pool), for big kernels whose ocloc runs need many GB each; default: ninja's -j.
#
# AOTWHEEL_OCLOC_GROUPS (CMake variable or environment): ocloc edges per kernel source; default
# planned at configure time (one per source unless splitting one shortens the build on this
# machine's cores). Each edge runs one ocloc for its group's devices that no cache holds.
#
# AOTWHEEL_SHARD=i/n (CMake variable, else the environment at configure time): the graph holds
# only this shard's slice of the (source, device) jobs (aotwheel.buildsteps.shard's plan): the
# SPIR-V, ocloc and fat-binary edges of its sources, with their devices of this shard only.
#
# Per kernel source: clang + llvm-spirv -> SPIR-V; one ocloc edge per (source, group of devices),
# each device looked up in aotwheel's device-code cache first (per-device entries, the same as
# `aotwheel compile` uses); one ocloc-compatible fat binary (ar) per source, written by the
# source's ocloc edge when it has one, else by a fatbin edge;
# all images embedded in <target> through a generated C file (.incbin, .tgtimg, .tgtsym); with
# COMPRESS ON each image (fat binary, SPIR-V) is embedded as one zstd frame, as icpx's
# --offload-compress stores them (readers: aotwheel.opencl, the selftest, `aotwheel inspect`).
# The generated header "<NAME>_aot.h" (on the target's include path) declares
#   aotwheel_<NAME>_images[], aotwheel_<NAME>_image_count, aotwheel_<NAME>_tgtsym[_end].
# With no DEVLIST/DEVICES the devlist comes from aotwheel_resolve_devlist() (USE_AOT_DEVLIST).
#
# aotwheel_resolve_devlist(<out>) sets this vendor's variables (Intel's DevlistPart.cmake_variables()):
#   <out>               canonical Intel device names (a CMake list; empty for `none`)
#   <out>_IPS           their IP versions (maj.min.rev)
#   <out>_OCLOC_DEVICE  the value for `ocloc -device` (comma-separated): one word per planned image (`bmg` where one
#                       image serves the bmg devices: native coverage, USE_AOT_MIN_DRIVER)
#   <out>_SPIRV         ON when SPIR-V is kept for Intel JIT (JIT fallback on and the list names
#                       Intel devices or none at all; a list of other vendors' targets only keeps none)
#   <out>_FIELD_DEFAULTS       ON or OFF (USE_AOT_FIELD_DEFAULTS)
#   <out>_FIELD_OCLOC_OPTIONS  the ocloc options IPEX/torch-xpu-ops pass (empty when OFF or no device)
#   <out>_FIELD_SYCL_COMPILE   icpx compile options of the field for this list (-fsycl-fp64-conv-emu)
#   <out>_FIELD_SYCL_LINK      icpx link options of the field (-fsycl-fp64-conv-emu, -flink-huge-device-code)
#   <out>_NO_FP64              the listed devices without fp64 (double)
#
# Only the Intel part of the list is built here: a list naming no Intel device keeps no SPIR-V
# either (JIT fallback is per vendor), so the call then needs no clang, llvm-spirv or ocloc and
# embeds no image; it still writes the manifest (with the images other vendors' calls record on
# the target, before or after this call) and, with DESTINATION, installs it and _aot.py. The other
# vendors a list names need their own calls in the project (configure says so).
#
# Private steps, in the order aotwheel_add_device_code() runs them:
#   _aotwheel_embed_language    C or C++ for the generated embedding file
#   _aotwheel_device_list       the resolved devices (DEVLIST, DEVICES or USE_AOT_DEVLIST)
#   _aotwheel_field_options     the field's ocloc options before the user's OPTIONS
#   _aotwheel_check_sources     kernel file names usable as build outputs
#   _aotwheel_ocloc_pool        AOTWHEEL_OCLOC_JOBS: the ocloc edges' job pool
#   _aotwheel_remote_settings   the remote-cache settings file the edges read
#   _aotwheel_intel_plan        configure-time toolchain check and the build plan (Python: every
#                               edge, its devices, files and options; AOTWHEEL_SHARD's slice)
#   _aotwheel_plan_edges        the plan's edges (aotwheel-config.cmake), per kernel source:
#                                 source -> SPIR-V (through the SPIR-V cache)
#                                 SPIR-V -> native images, one edge per planned group of devices -> fat binary
#   _aotwheel_compress_edges    COMPRESS ON: each image -> <image>.zst, the embedded bytes (aotwheel-config.cmake)
#   _aotwheel_tgtsym_edge       kernel names (.tgtsym)
#   _aotwheel_manifest_edge     _aot_manifest.json (aotwheel-config.cmake)
#   _aotwheel_install_hook      install the manifest and render <pkg>/_aot.py (aotwheel-config.cmake)
include_guard(GLOBAL)

if(NOT DEFINED _AOTWHEEL_STEP_COMMAND)
  include("${CMAKE_CURRENT_LIST_DIR}/aotwheel-config.cmake")
endif()

_aotwheel_register_vendor(intel WORDS "Intel devices" CALLS "aotwheel_add_device_code()")

# The open toolchain's build steps (python/aotwheel/backends/intel/build/steps.py), through the one
# step command of aotwheel-config.cmake.
set(_AOTWHEEL_INTEL_COMMAND ${_AOTWHEEL_STEP_COMMAND} intel)

function(aotwheel_add_device_code target)
  set(fn aotwheel_add_device_code)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "DEVLIST;JIT_FALLBACK;FIELD_DEFAULTS;COMPRESS;OPTIONS;NAME;DESTINATION;PACKAGE"
                        "SOURCES;DEVICES;CLANG_OPTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unexpected arguments '${ARG_UNPARSED_ARGUMENTS}'. "
                        "Usage: ${fn}(<target> SOURCES <file.cl>... [DEVLIST <prefix>|DEVICES <names>...] "
                        "[JIT_FALLBACK ON|OFF] [FIELD_DEFAULTS ON|OFF] [COMPRESS ON|OFF] [OPTIONS <ocloc options>] [NAME <id>] [DESTINATION <dir>])")
  endif()
  _aotwheel_embed_language(${fn} embed_ext)
  _aotwheel_check_device_code_args(${fn} "${target}" "Pass the OpenCL C kernel files, e.g. SOURCES kernels/vadd.cl")
  _aotwheel_device_list(${fn} dev)
  _aotwheel_field_options(${fn} ARG_OPTIONS)
  _aotwheel_compress_setting(${fn} compress)
  _aotwheel_check_sources(${fn} ${ARG_SOURCES})
  set(work "${CMAKE_CURRENT_BINARY_DIR}/aotwheel/${ARG_NAME}")
  file(MAKE_DIRECTORY "${work}")
  _aotwheel_write_if_changed("${work}/devlist.json" "${dev_JSON}\n")
  set(spvs "")
  set(fatbins "")
  set(images "")
  if(dev OR dev_SPIRV)
    _aotwheel_ocloc_pool(${fn})
    _aotwheel_remote_settings("${work}/remote-settings")
    set(has_devices OFF)
    if(dev)
      set(has_devices ON)
    endif()
    list(TRANSFORM ARG_CLANG_OPTIONS PREPEND "--clang-arg=" OUTPUT_VARIABLE clang_args)
    _aotwheel_intel_plan(${fn} "${work}" NAME "${ARG_NAME}" SOURCES ${ARG_SOURCES} OPTIONS "${ARG_OPTIONS}"
                         IR "${dev_SPIRV}" SHARD ${has_devices} CLANG_ARGS ${clang_args})
    _aotwheel_plan_edges(plan "${work}/plan.json")
    if(NOT plan_NOTE STREQUAL "")
      message(STATUS "${plan_NOTE}")
    endif()
    set(spvs "${plan_STEP_spirv}")
    set(fatbins "${plan_OUTPUTS}")
    set(images "${plan_IMAGES}")  # triple=source=path: fat binaries first (the SYCL runtime prefers them), then SPIR-V
  else()  # nothing for Intel GPUs in this list: no Intel tool is looked for
    _aotwheel_write_if_changed("${work}/toolchain.json" "{}\n")
  endif()
  _aotwheel_compress_edges("${compress}" embedded zsts ${images})
  _aotwheel_tgtsym_edge("${work}" tgtsym)
  set(embed_c "${work}/${ARG_NAME}_aot_embed.${embed_ext}")
  list(TRANSFORM embedded PREPEND "--image;" OUTPUT_VARIABLE image_args)
  _aotwheel_python(${fn} intel embed --name "${ARG_NAME}" --out-c "${embed_c}" --out-h "${work}/${ARG_NAME}_aot.h"
                       --tgtsym "${tgtsym}" ${image_args})
  _aotwheel_manifest_edge("${target}" "${work}" manifest NAME "${ARG_NAME}" JIT_FALLBACK "${dev_JIT}" OPTIONS "${ARG_OPTIONS}"
                          COMPRESS "${compress}" TGTSYM "${tgtsym}" IMAGES ${images} DEPENDS ${fatbins} ${spvs} ${zsts})
  # The .incbin'd files are not seen by the C compiler's dependency scan: declare them.
  set_source_files_properties("${embed_c}" PROPERTIES OBJECT_DEPENDS "${fatbins};${spvs};${zsts};${tgtsym}")
  target_sources(${target} PRIVATE "${embed_c}")
  target_include_directories(${target} PRIVATE "${work}")
  if(DEFINED ARG_DESTINATION)
    _aotwheel_claim_manifest(${fn} ${target})
    set(package_arg "")
    if(DEFINED ARG_PACKAGE)
      set(package_arg PACKAGE "${ARG_PACKAGE}")
    endif()
    _aotwheel_install_hook("${target}" "${work}" "${manifest}" NAME "${ARG_NAME}" DESTINATION "${ARG_DESTINATION}" ${package_arg})
  endif()
endfunction()

# _aotwheel_embed_language(<fn> <out>): `c` or `cpp`, the language of the generated embedding
# file; stops configure where the embedding (GNU as on ELF: .incbin, .pushsection) cannot work.
function(_aotwheel_embed_language fn out)
  if(WIN32 OR APPLE OR NOT CMAKE_SYSTEM_NAME MATCHES "Linux|BSD")
    message(FATAL_ERROR "${fn}: embedding device code needs an ELF platform (Linux); ${CMAKE_SYSTEM_NAME} is not supported yet. Use the icpx backend (aotwheel_target_sycl) there.")
  endif()
  get_property(langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("C" IN_LIST langs)
    set(${out} c PARENT_SCOPE)
  elseif("CXX" IN_LIST langs)
    set(${out} cpp PARENT_SCOPE)
  else()
    message(FATAL_ERROR "${fn}: enable C or CXX first (project(<name> LANGUAGES C)); the embedding is a generated C/C++ file.")
  endif()
endfunction()

# _aotwheel_compress_setting(<fn> <out>): ON or OFF, whether images are embedded zstd-compressed:
# the caller's COMPRESS argument, else USE_AOT_COMPRESS (CMake variable, then environment: the
# resolver's "compress" in dev_JSON; CMake reads no USE_AOT_* environment variable itself), else ON
# (aotwheel.config.COMPRESS's default, which the resolver also writes when neither is set).
function(_aotwheel_compress_setting fn out)
  set(value ON)
  set(from "USE_AOT_COMPRESS")
  set(said "USE_AOT_COMPRESS ON (aotwheel's default when unset)")
  if(DEFINED ARG_COMPRESS)
    set(value "${ARG_COMPRESS}")
    set(from "COMPRESS")
    set(said "COMPRESS ON")
  else()  # USE_AOT_COMPRESS: the CMake variable, else the environment, as the resolver passed them on
    string(JSON word ERROR_VARIABLE err GET "${dev_JSON}" compress)
    if(NOT err AND NOT word STREQUAL "")
      set(value "${word}")
    endif()
  endif()
  _aotwheel_check_switch(${fn} ${from} "${value}")
  if(NOT value OR NOT (dev OR dev_SPIRV))  # a list with no Intel device embeds no image here
    set(${out} OFF PARENT_SCOPE)
    return()
  endif()
  # The compress edges run in the build's Python: without zstandard there (pip's isolated build
  # environment of a project that does not require it) they would fail at build time, edge by edge.
  execute_process(COMMAND "${Python_EXECUTABLE}" -c "import zstandard" RESULT_VARIABLE missing OUTPUT_QUIET ERROR_QUIET)
  if(NOT missing EQUAL 0)
    message(FATAL_ERROR "${fn}: ${said} needs the Python module zstandard in ${Python_EXECUTABLE}. "
                        "Add \"zstandard\" to build-system.requires (or pip install zstandard), or set ${from} OFF.")
  endif()
  set(${out} ON PARENT_SCOPE)
endfunction()

# _aotwheel_device_list(<fn> <out>): the devices of the caller's parsed ARG_DEVLIST / ARG_DEVICES /
# ARG_JIT_FALLBACK, always from aotwheel's resolver. Sets <out> (names), <out>_IPS, <out>_JIT
# (JIT_FALLBACK wins over the devlist's), <out>_SPIRV (SPIR-V kept for Intel JIT) and <out>_JSON
# in the caller, and records the vendors this call builds and its list names.
function(_aotwheel_device_list fn out)
  set(jit_args "")
  if(DEFINED ARG_JIT_FALLBACK)
    set(jit_args JIT_FALLBACK "${ARG_JIT_FALLBACK}")
  endif()
  set(dl _aotw)
  if(DEFINED ARG_DEVLIST)
    if(NOT DEFINED ${ARG_DEVLIST}_JSON)
      message(FATAL_ERROR "${fn}: DEVLIST ${ARG_DEVLIST} is not set. Call aotwheel_resolve_devlist(${ARG_DEVLIST}) first.")
    endif()
    set(dl "${ARG_DEVLIST}")
  elseif(DEFINED ARG_DEVICES)
    list(JOIN ARG_DEVICES "," joined)
    aotwheel_resolve_devlist(_aotw DEVLIST "${joined}" ${jit_args})
  elseif("DEVICES" IN_LIST ARG_KEYWORDS_MISSING_VALUES)
    aotwheel_resolve_devlist(_aotw DEVLIST none ${jit_args})  # DEVICES given but empty
  else()
    aotwheel_resolve_devlist(_aotw ${jit_args})
  endif()
  set(names "${${dl}}")
  string(JSON ${dl}_JSON_INPUT GET "${${dl}_JSON}" input)
  set(jit "${${dl}_JIT_FALLBACK}")
  if(DEFINED ARG_JIT_FALLBACK)
    set(jit "${ARG_JIT_FALLBACK}")
  endif()
  # SPIR-V for Intel JIT: with JIT fallback, when the list names Intel devices or nothing at all
  # (no other vendor's targets either).
  set(others ${${dl}_VENDORS})
  list(REMOVE_ITEM others intel)
  set(spirv OFF)
  if(jit AND (names OR NOT others))
    set(spirv ON)
  endif()
  if(NOT names AND NOT spirv AND NOT others)
    message(FATAL_ERROR "${fn}: the device list ('${${dl}_JSON_INPUT}') names no device and JIT fallback is OFF: no device code to build. Name devices in it or set JIT_FALLBACK ON.")
  endif()
  _aotwheel_vendors_built(intel)
  _aotwheel_vendors_wanted(${fn} ${dl})
  set(${out} "${names}" PARENT_SCOPE)
  set(${out}_IPS "${${dl}_IPS}" PARENT_SCOPE)
  set(${out}_JIT "${jit}" PARENT_SCOPE)
  set(${out}_SPIRV "${spirv}" PARENT_SCOPE)
  set(${out}_JSON "${${dl}_JSON}" PARENT_SCOPE)
  set(${out}_FIELD_DEFAULTS "${${dl}_FIELD_DEFAULTS}" PARENT_SCOPE)
  set(${out}_FIELD_OCLOC_OPTIONS "${${dl}_FIELD_OCLOC_OPTIONS}" PARENT_SCOPE)
endfunction()

# _aotwheel_field_options(<fn> <options var>): prepend the field's ocloc options (those IPEX and
# torch-xpu-ops pass: fp64 poisoning, auto large GRF, > 4 GB buffers) to the caller's <options
# var> (the user's OPTIONS string), unless FIELD_DEFAULTS OFF (argument, else the resolver's
# USE_AOT_FIELD_DEFAULTS); an option the user already gives is not repeated.
function(_aotwheel_field_options fn var)
  _aotwheel_field_switch(${fn} enabled "${dev_FIELD_DEFAULTS}")
  if(NOT enabled)
    return()
  endif()
  separate_arguments(user UNIX_COMMAND "${${var}}")
  set(options "")
  foreach(option IN LISTS dev_FIELD_OCLOC_OPTIONS)
    if(NOT option IN_LIST user)
      list(APPEND options "${option}")
    endif()
  endforeach()
  if(NOT "${${var}}" STREQUAL "")
    list(APPEND options "${${var}}")
  endif()
  list(JOIN options " " text)
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

# _aotwheel_check_sources(<fn> <source>...): every kernel file name can name build outputs.
function(_aotwheel_check_sources fn)
  set(seen "")
  foreach(src IN LISTS ARGN)
    get_filename_component(base "${src}" NAME)
    get_filename_component(stem "${src}" NAME_WE)
    if(base MATCHES "[=;]")
      message(FATAL_ERROR "${fn}: kernel source name '${base}' contains '=' or ';'. Rename the file.")
    endif()
    if(stem IN_LIST seen)
      message(FATAL_ERROR "${fn}: two SOURCES share the name '${stem}'; their outputs would collide. Rename one of them.")
    endif()
    list(APPEND seen "${stem}")
  endforeach()
endfunction()

# _aotwheel_intel_plan(<fn> <work> NAME <name> SOURCES <file>... [OPTIONS <ocloc options>]
#                      [IR ON|OFF] [SHARD ON|OFF] [CLANG_ARGS --clang-arg=<arg>...])
# The tools found and checked now (configure fails here, with one line, when one is missing) into
# <work>/toolchain.json, and the build plan of SOURCES for the devices of <work>/devlist.json (IR ON:
# SPIR-V kept for JIT) into <work>/plan.json
# (python/aotwheel/backends/intel/build/plan.py): per source its SPIR-V edge, its ocloc edges (one
# per source unless splitting a source's devices shortens the build on this machine's cores;
# AOTWHEEL_OCLOC_GROUPS, CMake variable or environment, groups per source), and a fat-binary edge
# for a split source. AOTWHEEL_SHARD=i/n (CMake variable, else the environment): the plan holds only
# this shard's slice of the (source, device) jobs, weighed by the ocloc costs earlier builds
# recorded in the remote stores of <work>/remote-settings (buildsteps/history.py); SHARD OFF (a list
# with no device: no ocloc jobs to share out) ignores it. USE_AOT_IMAGE_FORMAT (CMake variable, else
# the environment): zebin images (the default: `--format zebin` on every ocloc that offers it) or
# legacy (patch-token images, where the ocloc still writes them; configure stops on one that cannot).
function(_aotwheel_intel_plan fn work)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "NAME;IR;SHARD" "OPTIONS;SOURCES;CLANG_ARGS")  # OPTIONS: one value, maybe empty
  set(args "")
  set(sources "")
  foreach(src IN LISTS arg_SOURCES)
    get_filename_component(src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND sources "${src}")
    list(APPEND args "--source=${src}")
  endforeach()
  list(APPEND args ${arg_CLANG_ARGS})  # each --clang-arg=<arg>: no user word can read as a keyword here
  if(arg_IR)
    list(APPEND args --ir)
  endif()
  foreach(var IN ITEMS AOTWHEEL_OCLOC_GROUPS AOTWHEEL_SHARD USE_AOT_IMAGE_FORMAT)
    set(${var}_value "$ENV{${var}}")
    if(DEFINED ${var})
      set(${var}_value "${${var}}")
    endif()
  endforeach()
  string(STRIP "${AOTWHEEL_SHARD_value}" shard)
  if(NOT shard STREQUAL "" AND arg_SHARD)
    list(APPEND args "--shard=${shard}")
    # The plan weighs the sources by size: an edited source re-plans (CMake re-runs on it).
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${sources})
  endif()
  _aotwheel_python(${fn} intel configure --devlist "${work}/devlist.json" --out "${work}/toolchain.json"
                   --plan "${work}/plan.json" --name "${arg_NAME}" "--groups=${AOTWHEEL_OCLOC_GROUPS_value}"
                   "--options=${arg_OPTIONS}" "--image-format=${USE_AOT_IMAGE_FORMAT_value}"
                   --settings "${work}/remote-settings" --cost-prefix "${PROJECT_NAME}/${arg_NAME}"
                   --source-root "${CMAKE_SOURCE_DIR}" --build-root "${CMAKE_BINARY_DIR}" ${args})
endfunction()

# _aotwheel_ocloc_pool(<fn>): AOTWHEEL_OCLOC_JOBS (CMake variable or environment): the Ninja job
# pool aotwheel_ocloc of that depth, which the plan's ocloc edges join (pool "ocloc").
function(_aotwheel_ocloc_pool fn)
  if(NOT DEFINED AOTWHEEL_OCLOC_JOBS AND DEFINED ENV{AOTWHEEL_OCLOC_JOBS})
    set(AOTWHEEL_OCLOC_JOBS "$ENV{AOTWHEEL_OCLOC_JOBS}")
  endif()
  if(DEFINED AOTWHEEL_OCLOC_JOBS AND NOT AOTWHEEL_OCLOC_JOBS STREQUAL "")
    if(NOT AOTWHEEL_OCLOC_JOBS MATCHES "^[1-9][0-9]*$")
      message(FATAL_ERROR "${fn}: AOTWHEEL_OCLOC_JOBS='${AOTWHEEL_OCLOC_JOBS}' is not a positive integer. Set it to e.g. 2.")
    endif()
    get_property(pools GLOBAL PROPERTY JOB_POOLS)
    if(NOT pools MATCHES "(^|;)aotwheel_ocloc=")
      set_property(GLOBAL APPEND PROPERTY JOB_POOLS "aotwheel_ocloc=${AOTWHEEL_OCLOC_JOBS}")
    endif()
  endif()
endfunction()

# _aotwheel_tgtsym_edge(<work> <out>): the kernel-name table (.tgtsym) of the caller's spvs, one
# entry per embedded triple, in embedding order; sets <out> to its path.
function(_aotwheel_tgtsym_edge work out)
  set(triples "")
  if(dev)
    list(APPEND triples spir64_gen)
  endif()
  if(dev_SPIRV)
    list(APPEND triples spir64)
  endif()
  list(JOIN triples "," triples)
  set(tgtsym "${work}/${ARG_NAME}.tgtsym")
  add_custom_command(
    OUTPUT "${tgtsym}"
    COMMAND ${_AOTWHEEL_INTEL_COMMAND} tgtsym --output "${tgtsym}" --triples "${triples}" ${spvs}
    DEPENDS ${spvs}
    COMMENT "aotwheel: kernel names for ${ARG_NAME}"
    VERBATIM)
  set(${out} "${tgtsym}" PARENT_SCOPE)
endfunction()

