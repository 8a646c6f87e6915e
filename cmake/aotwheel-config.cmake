# aotwheel CMake entry point: find_package(aotwheel CONFIG).
#
# Works from an installed aotwheel (site-packages/aotwheel/cmake/, found through the
# scikit-build-core "cmake.root" entry point) and from a source checkout (<repo>/cmake/).
# Devlist semantics live in Python (aotwheel.devlist); CMake only asks the resolver.
include_guard(GLOBAL)

set(aotwheel_FOUND TRUE)

# Where the `aotwheel` Python package that owns this file lives.
if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/../__init__.py")
  get_filename_component(_AOTWHEEL_PYTHONPATH "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
else()
  get_filename_component(_AOTWHEEL_PYTHONPATH "${CMAKE_CURRENT_LIST_DIR}/../python" ABSOLUTE)
endif()
set(_AOTWHEEL_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

if(NOT DEFINED Python_EXECUTABLE)
  find_package(Python 3.10 COMPONENTS Interpreter)
  if(NOT Python_Interpreter_FOUND)
    message(FATAL_ERROR "aotwheel: Python >= 3.10 not found. Try: set Python_EXECUTABLE or apt-get install python3")
  endif()
endif()

# Every call into Python, at configure time and on the build edges, runs this one command:
# `python -m aotwheel.buildsteps <step> ...` of the aotwheel that owns this file, run as its
# buildsteps/__main__.py, which puts this aotwheel first on sys.path itself (the environment's
# PYTHONPATH after it). No `cmake -E env PYTHONPATH=...` process around it (7 ms of CPU per edge
# with pip's cmake 4.4, median of 40), and nothing on PYTHONPATH for pip's isolated build
# environment to trip over (its sitecustomize asserts its overlay is not on sys.path yet, issue 30).
# Steps: the core's (compress, manifest, hook, resolve, ...), and a vendor's as
# `<vendor> <step>` (python/aotwheel/buildsteps/__main__.py dispatches them to the backend).
set(_AOTWHEEL_STEP_COMMAND "${Python_EXECUTABLE}" "${_AOTWHEEL_PYTHONPATH}/aotwheel/buildsteps/__main__.py")

# _aotwheel_python(<fn> <step> [<arg>...] [OUTPUT <var>])
# Runs one aotwheel step at configure time (`resolve`, `intel embed`, `nvidia configure`, ...). On failure
# configure stops with one line, "<fn>: <message>", <fn> being the public function the user called
# and <message> the step's own "aotwheel: error: <message>" line, which says what to do (this is the
# one place that prefix is stripped). OUTPUT <var>: the step's stdout, trailing whitespace stripped.
function(_aotwheel_python fn step)
  cmake_parse_arguments(PARSE_ARGV 2 _aotwheel_py "" "OUTPUT" "")
  execute_process(
    COMMAND ${_AOTWHEEL_STEP_COMMAND} ${step} ${_aotwheel_py_UNPARSED_ARGUMENTS}
    RESULT_VARIABLE result
    OUTPUT_VARIABLE output
    ERROR_VARIABLE error
    OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT result EQUAL 0)
    if(error MATCHES "aotwheel: error: ")
      string(REGEX REPLACE "^.*aotwheel: error: " "" error "${error}")  # the last error line: the step's own
    else()  # no message of ours (a crash, a broken install): its last line, and where to look
      string(REGEX REPLACE "^.*\n" "" error "${error}")
      set(error "the aotwheel step '${step}' failed (exit ${result}: ${error}). Check that ${Python_EXECUTABLE} runs aotwheel: ${Python_EXECUTABLE} ${_AOTWHEEL_PYTHONPATH}/aotwheel/buildsteps/__main__.py ${step} --help")
    endif()
    # The leading space keeps CMake from wrapping the line (it prints indented text as is).
    message(FATAL_ERROR " ${fn}: ${error}")
  endif()
  if(DEFINED _aotwheel_py_OUTPUT)
    set(${_aotwheel_py_OUTPUT} "${output}" PARENT_SCOPE)
  endif()
endfunction()

# aotwheel_resolve_devlist(<out> [DEVLIST <text>] [JIT_FALLBACK ON|OFF] [TOOLCHAIN ocloc])
#
# Resolves the device list with aotwheel's resolver, Intel and NVIDIA tokens alike (CMake never
# parses a devlist). The list comes from the first that is set and not empty of: DEVLIST, the
# variable USE_AOT_DEVLIST (cache or normal), $ENV{USE_AOT_DEVLIST}, the variable
# TORCH_XPU_ARCH_LIST, $ENV{TORCH_XPU_ARCH_LIST}, the resolver's default
# (aotwheel.devlist.DEFAULT_DEVLIST); configure prints one line naming which. JIT fallback:
# JIT_FALLBACK, else the variable USE_AOT_JIT_FALLBACK, else the resolver
# ($ENV{USE_AOT_JIT_FALLBACK}, default ON). Field defaults (the ocloc/icpx options IPEX and
# torch-xpu-ops pass): the variable USE_AOT_FIELD_DEFAULTS, else $ENV{...}, default ON.
# Sets in the caller's scope:
#   <out>               canonical target names (a CMake list; empty for `none`)
#   <out>_IPS           their IP versions (maj.min.rev)
#   <out>_JIT_FALLBACK  ON or OFF
#   <out>_OCLOC_DEVICE  the value for `ocloc -device` (comma-separated): one word per planned image (`bmg` where one
#                       image serves the bmg devices: native coverage, USE_AOT_MIN_DRIVER)
#   <out>_SYCL_TARGETS  the value for -fsycl-targets=
#   <out>_CUDA          NVIDIA images (sm_XY cubins, compute_XY PTX; empty if none listed)
#   <out>_CUDA_ARCHITECTURES  the same set in CMake's CUDA_ARCHITECTURES form (80-real;90)
#   <out>_SPIRV         ON when SPIR-V is kept for Intel JIT (JIT fallback on and the list names
#                       Intel devices or none at all; an NVIDIA-only list keeps none)
#   <out>_VENDORS       the vendors whose build steps the list needs (intel, nvidia)
#   <out>_JIT_SUMMARY   what JIT fallback means for this list, for messages
#   <out>_JSON          the resolver's full JSON result
#   <out>_FIELD_DEFAULTS       ON or OFF (USE_AOT_FIELD_DEFAULTS)
#   <out>_FIELD_OCLOC_OPTIONS  the ocloc options IPEX/torch-xpu-ops pass (empty when OFF or no device)
#   <out>_FIELD_SYCL_COMPILE   icpx compile options of the field for this list (-fsycl-fp64-conv-emu)
#   <out>_FIELD_SYCL_LINK      icpx link options of the field (-fsycl-fp64-conv-emu, -flink-huge-device-code)
#   <out>_NO_FP64              the listed devices without fp64 (double)
# Bad input stops configure with the resolver's one-line message.
function(aotwheel_resolve_devlist out)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "DEVLIST;JIT_FALLBACK;TOOLCHAIN" "")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "aotwheel_resolve_devlist: unexpected arguments '${ARG_UNPARSED_ARGUMENTS}'. "
                        "Usage: aotwheel_resolve_devlist(<out> [DEVLIST <text>] [JIT_FALLBACK ON|OFF] [TOOLCHAIN ocloc])")
  endif()
  _aotwheel_resolve_args(args)
  _aotwheel_python(aotwheel_resolve_devlist ${args} OUTPUT json)
  _aotwheel_resolve_results(${out} "${json}")
  foreach(_aotwheel_suffix "" _IPS _JIT_FALLBACK _OCLOC_DEVICE _SYCL_TARGETS _CUDA _CUDA_ARCHITECTURES _SPIRV
                           _VENDORS _JIT_SUMMARY _JSON _FIELD_DEFAULTS _FIELD_OCLOC_OPTIONS _FIELD_SYCL_COMPILE
                           _FIELD_SYCL_LINK _NO_FP64)
    set(${out}${_aotwheel_suffix} "${${out}${_aotwheel_suffix}}" PARENT_SCOPE)
  endforeach()
endfunction()

# _aotwheel_resolve_args(<out>): `aotwheel resolve` arguments for the caller's parsed ARG_DEVLIST,
# ARG_JIT_FALLBACK and ARG_TOOLCHAIN, or the USE_AOT_DEVLIST / USE_AOT_JIT_FALLBACK variables.
# This is the one place CMake reads those two variables.
function(_aotwheel_resolve_args out)
  set(args resolve --json)
  if(DEFINED ARG_DEVLIST)
    set(text "${ARG_DEVLIST}")
    list(APPEND args "--devlist-from=the DEVICES argument")
  elseif(DEFINED USE_AOT_DEVLIST)
    set(text "${USE_AOT_DEVLIST}")
    list(APPEND args "--devlist-from=USE_AOT_DEVLIST (CMake variable)")
  endif()
  if(DEFINED text)
    # One "--devlist=<text>" argument: a value starting with '-' stays a device list, and an
    # escaped ';' reaches the resolver (which rejects it). An empty value counts as unset there
    # (then $USE_AOT_DEVLIST, TORCH_XPU_ARCH_LIST, the default: aotwheel.config.devlist_choice).
    string(REPLACE ";" "\\;" text "${text}")
    list(APPEND args "--devlist=${text}")
  endif()
  if(DEFINED TORCH_XPU_ARCH_LIST)  # PyTorch's variable, as torch-xpu-ops reads it (after USE_AOT_DEVLIST)
    string(REPLACE ";" "\\;" torch_list "${TORCH_XPU_ARCH_LIST}")
    list(APPEND args "--torch-xpu-arch-list=${torch_list}")  # named "TORCH_XPU_ARCH_LIST (CMake variable)"
  endif()
  if(DEFINED USE_AOT_FIELD_DEFAULTS AND NOT USE_AOT_FIELD_DEFAULTS STREQUAL "")
    if(USE_AOT_FIELD_DEFAULTS)
      list(APPEND args --field-defaults)
    else()
      list(APPEND args --no-field-defaults)
    endif()
  endif()
  if(DEFINED USE_AOT_COMPRESS AND NOT USE_AOT_COMPRESS STREQUAL "")  # checked by aotwheel_add_device_code
    list(APPEND args "--compress=${USE_AOT_COMPRESS}")
  endif()
  if(DEFINED ARG_JIT_FALLBACK)
    set(jit "${ARG_JIT_FALLBACK}")
  elseif(DEFINED USE_AOT_JIT_FALLBACK)
    set(jit "${USE_AOT_JIT_FALLBACK}")
  endif()
  if(DEFINED jit AND jit)
    list(INSERT args 1 --jit-fallback)
  elseif(DEFINED jit)
    list(INSERT args 1 --no-jit-fallback)
  endif()
  if(ARG_TOOLCHAIN)
    list(INSERT args 1 --toolchain "${ARG_TOOLCHAIN}")
  endif()
  # The resolver stops configure on a USE_AOT_* / AOTWHEEL_* / TORCH_XPU_* name close to one of
  # aotwheel's (a typo): the environment's names, and these CMake variables' (aotwheel.varcheck).
  get_cmake_property(names VARIABLES)
  list(FILTER names INCLUDE REGEX "^(USE_AOT_|AOTWHEEL_|TORCH_XPU_)")
  list(JOIN names "," names)
  list(APPEND args "--check-variables=${names}")
  set(${out} "${args}" PARENT_SCOPE)
endfunction()

# _aotwheel_resolve_results(<out> <json>): the variables of aotwheel_resolve_devlist() from the
# resolver's JSON, set in the caller's scope.
function(_aotwheel_resolve_results out json)
  _aotwheel_json_field(names "${json}" name targets)
  _aotwheel_json_field(ips "${json}" ip targets)
  set(cuda_names "")
  set(cuda_archs "")
  string(JSON cuda_type TYPE "${json}" cuda)
  if(cuda_type STREQUAL "OBJECT")
    string(JSON cuda_archs GET "${json}" cuda cmake_architectures)
    _aotwheel_json_field(cuda_names "${json}" name cuda targets)
  endif()
  _aotwheel_json_bool(fallback "${json}" jit_fallback)
  string(JSON ocloc_device GET "${json}" ocloc_device)
  string(JSON sycl_targets GET "${json}" sycl_targets)
  _aotwheel_json_bool(spirv "${json}" spirv)
  _aotwheel_json_field(vendors "${json}" "" vendors)
  string(JSON jit_summary GET "${json}" jit_summary)
  set(${out}_SPIRV "${spirv}" PARENT_SCOPE)
  set(${out}_VENDORS "${vendors}" PARENT_SCOPE)
  set(${out}_JIT_SUMMARY "${jit_summary}" PARENT_SCOPE)
  string(JSON source GET "${json}" source)
  string(JSON input GET "${json}" input)
  _aotwheel_devlist_note("${source}" "${input}")
  _aotwheel_json_bool(field_on "${json}" field_defaults enabled)
  _aotwheel_json_field(field_ocloc "${json}" "" field_defaults ocloc_options)
  _aotwheel_json_field(field_compile "${json}" "" field_defaults sycl_compile_options)
  _aotwheel_json_field(field_link "${json}" "" field_defaults sycl_link_options)
  _aotwheel_json_field(no_fp64 "${json}" "" no_fp64)
  set(${out}_FIELD_DEFAULTS "${field_on}" PARENT_SCOPE)
  set(${out}_FIELD_OCLOC_OPTIONS "${field_ocloc}" PARENT_SCOPE)
  set(${out}_FIELD_SYCL_COMPILE "${field_compile}" PARENT_SCOPE)
  set(${out}_FIELD_SYCL_LINK "${field_link}" PARENT_SCOPE)
  set(${out}_NO_FP64 "${no_fp64}" PARENT_SCOPE)
  set(${out} "${names}" PARENT_SCOPE)
  set(${out}_IPS "${ips}" PARENT_SCOPE)
  set(${out}_JIT_FALLBACK "${fallback}" PARENT_SCOPE)
  set(${out}_OCLOC_DEVICE "${ocloc_device}" PARENT_SCOPE)
  set(${out}_SYCL_TARGETS "${sycl_targets}" PARENT_SCOPE)
  set(${out}_CUDA "${cuda_names}" PARENT_SCOPE)
  set(${out}_CUDA_ARCHITECTURES "${cuda_archs}" PARENT_SCOPE)
  set(${out}_JSON "${json}" PARENT_SCOPE)
endfunction()

# _aotwheel_devlist_note(<source> <input>): the one configure line saying which variable gave the
# device list (once per distinct list and source, however many targets resolve it).
function(_aotwheel_devlist_note source input)
  set(note "aotwheel: device list '${input}' from ${source}")
  get_property(said GLOBAL PROPERTY _AOTWHEEL_DEVLIST_NOTES)
  if(NOT note IN_LIST said)
    set_property(GLOBAL APPEND PROPERTY _AOTWHEEL_DEVLIST_NOTES "${note}")
    message(STATUS "${note}")
  endif()
endfunction()

# _aotwheel_json_bool(<out> <json> <path>...): a JSON true/false as ON or OFF.
function(_aotwheel_json_bool out json)
  string(JSON value GET "${json}" ${ARGN})
  if(value)
    set(${out} ON PARENT_SCOPE)
  else()
    set(${out} OFF PARENT_SCOPE)
  endif()
endfunction()

# _aotwheel_json_field(<out> <json> <field> <array path>...): <field> of every object in the array
# (an empty <field>: the array's items themselves).
function(_aotwheel_json_field out json field)
  set(values "")
  string(JSON count LENGTH "${json}" ${ARGN})
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON value GET "${json}" ${ARGN} ${i} ${field})
      list(APPEND values "${value}")
    endforeach()
  endif()
  set(${out} "${values}" PARENT_SCOPE)
endfunction()

# _aotwheel_plan_edges(<prefix> <plan>): one ninja edge per edge of the build plan <plan> (JSON
# that a vendor's configure step wrote: python/aotwheel/buildsteps/plan.py), as the plan gives it:
# its outputs, inputs, depfile, comment and job pool (`aotwheel_<pool>`, where one is defined);
# each runs `<vendor> <step> --plan <plan> --edge <id> --digest <digest>` (a changed entry is a
# changed command: ninja reruns that edge alone). CMake parses no target name and makes no file
# name here. Sets in the caller: <prefix>_OUTPUTS (the fat binaries, one per source),
# <prefix>_TARGETS (canonical target names), <prefix>_IMAGES (the images to embed, as
# triple=source=path), <prefix>_RECORD (the images' record for the manifest), <prefix>_NOTE (a line
# to print) and <prefix>_STEP_<step> (the outputs of the edges of each step, e.g. _STEP_spirv).
function(_aotwheel_plan_edges prefix plan)
  file(READ "${plan}" json)
  string(JSON vendor GET "${json}" vendor)
  string(JSON count LENGTH "${json}" edges)
  get_property(pools GLOBAL PROPERTY JOB_POOLS)
  set(steps "")
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON edge GET "${json}" edges ${i})  # one edge's own text: the fields below parse only it
      foreach(field IN ITEMS id step source depfile comment pool digest)
        string(JSON ${field} GET "${edge}" ${field})
      endforeach()
      _aotwheel_json_field(outputs "${edge}" "" outputs)
      _aotwheel_json_field(inputs "${edge}" "" inputs)
      set(extra "")
      if(NOT depfile STREQUAL "")
        list(APPEND extra DEPFILE "${depfile}")
      endif()
      if(NOT pool STREQUAL "" AND pools MATCHES "(^|;)aotwheel_${pool}=")
        list(APPEND extra JOB_POOL "aotwheel_${pool}")
      endif()
      add_custom_command(
        OUTPUT ${outputs}
        COMMAND ${_AOTWHEEL_STEP_COMMAND} ${vendor} ${step} --plan "${plan}" --edge "${id}" --digest "${digest}"
        DEPENDS "${source}" ${inputs}
        ${extra}
        COMMENT "aotwheel: ${comment}"
        VERBATIM)
      list(APPEND step_${step} ${outputs})
      list(APPEND steps ${step})
    endforeach()
  endif()
  list(REMOVE_DUPLICATES steps)
  foreach(step IN LISTS steps)
    set(${prefix}_STEP_${step} "${step_${step}}" PARENT_SCOPE)
  endforeach()
  set(images "")
  string(JSON count LENGTH "${json}" images)
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      foreach(field IN ITEMS triple source path)
        string(JSON ${field} GET "${json}" images ${i} ${field})
      endforeach()
      list(APPEND images "${triple}=${source}=${path}")
    endforeach()
  endif()
  _aotwheel_json_field(outputs "${json}" "" outputs)
  _aotwheel_json_field(targets "${json}" "" targets)
  foreach(field IN ITEMS record note)
    string(JSON ${field} GET "${json}" ${field})
  endforeach()
  set(${prefix}_OUTPUTS "${outputs}" PARENT_SCOPE)
  set(${prefix}_TARGETS "${targets}" PARENT_SCOPE)
  set(${prefix}_IMAGES "${images}" PARENT_SCOPE)
  set(${prefix}_RECORD "${record}" PARENT_SCOPE)
  set(${prefix}_NOTE "${note}" PARENT_SCOPE)
endfunction()

# Every vendor a device list names needs a build step in the project: an sm_90 with no
# aotwheel_add_cuda_device_code() call, or a pvc with only that call, is never dropped silently.
# The device-code functions record what they build (_aotwheel_vendors_built) and what the lists
# they read name (_aotwheel_vendors_wanted); at the end of the top-level CMakeLists.txt,
# _aotwheel_check_vendors stops configure with one line naming the call to add. The opt-out,
# AOTWHEEL_ALLOW_UNBUILT=<vendor>[;<vendor>] (CMake variable or environment: intel, nvidia, or ON
# for all), turns that into a warning.
set(_AOTWHEEL_VENDOR_CALLS_intel "aotwheel_add_device_code() or aotwheel_target_sycl()")
set(_AOTWHEEL_VENDOR_CALLS_nvidia "aotwheel_add_cuda_device_code()")
set(_AOTWHEEL_VENDOR_WORDS_intel "Intel devices")
set(_AOTWHEEL_VENDOR_WORDS_nvidia "NVIDIA targets")

# _aotwheel_vendors_built(<vendor>...): this project has a build step for these vendors.
function(_aotwheel_vendors_built)
  set_property(GLOBAL APPEND PROPERTY AOTWHEEL_VENDORS_BUILT ${ARGN})
  _aotwheel_defer_vendor_check()
endfunction()

# _aotwheel_vendors_wanted(<fn> <prefix>): the vendors the resolved list <prefix> names, if the
# user named it (USE_AOT_DEVLIST or DEVLIST/DEVICES; the built-in default list asks for nothing).
function(_aotwheel_vendors_wanted fn prefix)
  string(JSON given ERROR_VARIABLE err GET "${${prefix}_JSON}" given)
  if(err OR NOT given)
    return()
  endif()
  foreach(vendor IN LISTS ${prefix}_VENDORS)
    if(vendor STREQUAL "nvidia")
      list(JOIN ${prefix}_CUDA ", " names)
    elseif(${prefix})
      list(JOIN ${prefix} ", " names)
    else()
      set(names "SPIR-V for JIT")
    endif()
    set_property(GLOBAL APPEND PROPERTY AOTWHEEL_VENDORS_WANTED "${vendor}|${fn}|${names}")
  endforeach()
  _aotwheel_defer_vendor_check()
endfunction()

function(_aotwheel_defer_vendor_check)
  get_property(deferred GLOBAL PROPERTY _AOTWHEEL_VENDOR_CHECK_DEFERRED)
  if(NOT deferred)
    set_property(GLOBAL PROPERTY _AOTWHEEL_VENDOR_CHECK_DEFERRED TRUE)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _aotwheel_check_vendors)
  endif()
endfunction()

function(_aotwheel_check_vendors)
  get_property(built GLOBAL PROPERTY AOTWHEEL_VENDORS_BUILT)
  get_property(wanted GLOBAL PROPERTY AOTWHEEL_VENDORS_WANTED)
  set(allow "$ENV{AOTWHEEL_ALLOW_UNBUILT}")
  if(DEFINED AOTWHEEL_ALLOW_UNBUILT)
    set(allow "${AOTWHEEL_ALLOW_UNBUILT}")
  endif()
  string(REPLACE "," ";" allow "${allow}")
  string(TOLOWER "${allow}" allow)
  foreach(record IN LISTS wanted)
    string(REPLACE "|" ";" fields "${record}")
    list(GET fields 0 vendor)
    list(GET fields 1 fn)
    list(GET fields 2 names)
    if(vendor IN_LIST built OR vendor IN_LIST done)
      continue()
    endif()
    list(APPEND done "${vendor}")
    set(text "${fn}: USE_AOT_DEVLIST names ${_AOTWHEEL_VENDOR_WORDS_${vendor}} (${names}) but no ${_AOTWHEEL_VENDOR_CALLS_${vendor}} call in this project builds them; add one, drop them from the list, or set AOTWHEEL_ALLOW_UNBUILT=${vendor} to build without them")
    if(vendor IN_LIST allow OR "on" IN_LIST allow OR "1" IN_LIST allow)
      message(WARNING " ${text}")
    else()
      message(FATAL_ERROR " ${text}")  # the leading space keeps CMake from wrapping the line
    endif()
  endforeach()
endfunction()

# _aotwheel_json_string(<out> <text>): <text> as a JSON string literal (quotes and backslashes escaped).
function(_aotwheel_json_string out text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  set(${out} "\"${text}\"" PARENT_SCOPE)
endfunction()

# _aotwheel_check_device_code_args(<fn> <target> <sources hint>)
# Checks shared by the aotwheel_add_*_device_code functions, on the caller's parsed ARG_SOURCES
# and ARG_NAME (a macro, so it sees them); ARG_NAME defaults to the target as a C identifier.
macro(_aotwheel_check_device_code_args fn target sources_hint)
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "${fn}: '${target}' is not a target. Create it first (e.g. Python_add_library) and pass its name.")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "${fn}: no SOURCES given. ${sources_hint}")
  endif()
  if(NOT DEFINED ARG_NAME)
    string(MAKE_C_IDENTIFIER "${target}" ARG_NAME)
  endif()
  if(NOT ARG_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${fn}: NAME '${ARG_NAME}' must be a C identifier (letters, digits, '_').")
  endif()
endmacro()

include("${CMAKE_CURRENT_LIST_DIR}/aotwheel-build.cmake" OPTIONAL)
include("${CMAKE_CURRENT_LIST_DIR}/aotwheel-sycl.cmake" OPTIONAL)
include("${CMAKE_CURRENT_LIST_DIR}/aotwheel-cuda.cmake" OPTIONAL)

# _aotwheel_check_switch(<fn> <name> <value>): stop configure unless <value> is a CMake boolean word.
function(_aotwheel_check_switch fn name value)
  if(NOT value MATCHES "^(ON|OFF|TRUE|FALSE|YES|NO|1|0|on|off|true|false|yes|no)$")
    message(FATAL_ERROR "${fn}: ${name} is '${value}'. Try: ${name} ON or ${name} OFF")
  endif()
endfunction()

# _aotwheel_field_switch(<fn> <out> <resolved>): whether the field defaults apply: the caller's
# parsed FIELD_DEFAULTS argument (ARG_ or arg_, checked) over <resolved> (the resolver's answer for
# USE_AOT_FIELD_DEFAULTS).
function(_aotwheel_field_switch fn out resolved)
  set(value "${resolved}")
  foreach(given IN ITEMS ARG_FIELD_DEFAULTS arg_FIELD_DEFAULTS)
    if(DEFINED ${given})
      _aotwheel_check_switch(${fn} FIELD_DEFAULTS "${${given}}")
      set(value "${${given}}")
    endif()
  endforeach()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# _aotwheel_claim_manifest(<fn> <target>): <target>'s _aot_manifest.json and _aot.py come from
# this call; a second call giving DESTINATION for the same target stops configure.
function(_aotwheel_claim_manifest fn target)
  get_target_property(owner ${target} AOTWHEEL_MANIFEST_OWNER)
  if(owner)
    message(FATAL_ERROR "${fn}: ${target} already has a manifest from ${owner}; give DESTINATION to one call per target")
  endif()
  set_property(TARGET ${target} PROPERTY AOTWHEEL_MANIFEST_OWNER ${fn})
endfunction()
