# aotwheel CMake entry point: find_package(aotwheel CONFIG).
#
# Works from an installed aotwheel (site-packages/aotwheel/cmake/, found through the
# scikit-build-core "cmake.root" entry point) and from a source checkout (<repo>/cmake/).
# Devlist semantics live in Python (aotwheel.devlist); CMake only asks the resolver.
#
# This file is the core, and names no vendor: what every vendor's build shares lives here
# (the resolver, the build plan's edges, the manifest, the _aot.py hook, the remote-cache settings,
# the check that every listed vendor is built). Each vendor's own functions live in its file
# beside this one, aotwheel-<name>.cmake, which this file includes at its end (every such file: a
# new vendor is a new file, with no edit here) and which registers its vendor with
# _aotwheel_register_vendor().
#
# A new vendor's file, aotwheel-<name>.cmake (tests/test_cmake_layout.py checks 1 and 2):
#   1. include_guard(GLOBAL), then `_aotwheel_register_vendor(<vendor> WORDS "<its targets, in
#      words>" CALLS "<its function>()")`, <vendor> its backend's name (aotwheel.backends.names()).
#   2. Names no other vendor's words or functions; this file names none.
#   3. Its function: _aotwheel_check_device_code_args; the list from aotwheel_resolve_devlist (its
#      own <out>_<KEY> variables: its backend's DevlistPart.cmake_variables()); _aotwheel_vendors_built(<vendor>)
#      and _aotwheel_vendors_wanted(<fn> <prefix>); _aotwheel_remote_settings; its configure step
#      through _aotwheel_python(<fn> <vendor> configure ...) writing a build plan; _aotwheel_plan_edges.
#   4. Its images' records on the target for whichever call writes the manifest:
#      set_property(TARGET <t> APPEND PROPERTY AOTWHEEL_IMAGES_<vendor> <plan_RECORD>) and
#      AOTWHEEL_IMAGE_FILES_<vendor> <the files they describe>; with DESTINATION,
#      _aotwheel_target_manifest(...) (its backend's build module gets the records in manifest_part).
#
# Public:  aotwheel_resolve_devlist
# Private, for the vendor files: _aotwheel_python, _aotwheel_register_vendor, _aotwheel_vendors_built,
#   _aotwheel_vendors_wanted, _aotwheel_check_device_code_args, _aotwheel_check_switch,
#   _aotwheel_field_switch, _aotwheel_plan_edges, _aotwheel_remote_settings, _aotwheel_write_if_changed,
#   _aotwheel_compress_edges, _aotwheel_manifest_edge, _aotwheel_install_hook, _aotwheel_target_manifest,
#   _aotwheel_call_targets, _aotwheel_call_manifest, _aotwheel_claim_manifest, _aotwheel_json_field, _aotwheel_json_members, _aotwheel_json_bool, _aotwheel_json_string.
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
# Runs one aotwheel step at configure time (`resolve`, a vendor's `<vendor> configure`, ...). On failure
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

# aotwheel_resolve_devlist(<out> [DEVLIST <text>] [JIT_FALLBACK ON|OFF] [TOOLCHAIN <tool>])
#
# Resolves the device list with aotwheel's resolver, every vendor's tokens alike (CMake never
# parses a devlist). The list comes from the first that is set and not empty of: DEVLIST, the
# variable USE_AOT_DEVLIST (cache or normal), $ENV{USE_AOT_DEVLIST}, the variable
# TORCH_XPU_ARCH_LIST, $ENV{TORCH_XPU_ARCH_LIST}, the resolver's default
# (aotwheel.devlist.DEFAULT_DEVLIST); configure prints one line naming which. JIT fallback:
# JIT_FALLBACK, else the variable USE_AOT_JIT_FALLBACK, else the resolver
# ($ENV{USE_AOT_JIT_FALLBACK}, default ON). Field defaults (the compiler options IPEX and
# torch-xpu-ops pass): the variable USE_AOT_FIELD_DEFAULTS, else $ENV{...}, default ON.
# Sets in the caller's scope:
#   <out>_JIT_FALLBACK  ON or OFF
#   <out>_SYCL_TARGETS  the value for -fsycl-targets= (every vendor's entries)
#   <out>_SYCL_VENDORS  the vendors whose targets -fsycl-targets names
#   <out>_VENDORS       the vendors whose build steps the list needs
#   <out>_JIT_SUMMARY   what JIT fallback means for this list, for messages
#   <out>_JSON          the resolver's full JSON result
# and each vendor's own variables, as its backend's DevlistPart.cmake_variables() names them (the
# resolver's JSON "cmake" section; each vendor's aotwheel-<name>.cmake lists its own, <out> itself
# among them).
# Bad input stops configure with the resolver's one-line message.
function(aotwheel_resolve_devlist out)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "DEVLIST;JIT_FALLBACK;TOOLCHAIN" "")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "aotwheel_resolve_devlist: unexpected arguments '${ARG_UNPARSED_ARGUMENTS}'. "
                        "Usage: aotwheel_resolve_devlist(<out> [DEVLIST <text>] [JIT_FALLBACK ON|OFF] [TOOLCHAIN <tool>])")
  endif()
  _aotwheel_resolve_args(args)
  _aotwheel_python(aotwheel_resolve_devlist ${args} OUTPUT json)
  _aotwheel_resolve_results(${out} "${json}" names)
  foreach(name IN LISTS names)
    set(${name} "${${name}}" PARENT_SCOPE)
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
  if(DEFINED USE_AOT_COMPRESS AND NOT USE_AOT_COMPRESS STREQUAL "")  # checked by the device-code functions
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

# _aotwheel_resolve_results(<out> <json> <names>): the variables of aotwheel_resolve_devlist() from
# the resolver's JSON, set in the caller's scope; <names>: the variables set.
function(_aotwheel_resolve_results out json names_var)
  _aotwheel_json_bool(fallback "${json}" jit_fallback)
  string(JSON sycl_targets GET "${json}" sycl_targets)
  _aotwheel_json_field(sycl_vendors "${json}" "" sycl_vendors)
  _aotwheel_json_field(vendors "${json}" "" vendors)
  string(JSON jit_summary GET "${json}" jit_summary)
  string(JSON source GET "${json}" source)
  string(JSON input GET "${json}" input)
  _aotwheel_devlist_note("${source}" "${input}")
  set(names "")
  foreach(pair IN ITEMS JIT_FALLBACK=fallback SYCL_TARGETS=sycl_targets SYCL_VENDORS=sycl_vendors VENDORS=vendors
                        JIT_SUMMARY=jit_summary JSON=json)
    string(REPLACE "=" ";" pair "${pair}")
    list(GET pair 0 suffix)
    list(GET pair 1 local)
    set(${out}_${suffix} "${${local}}" PARENT_SCOPE)
    list(APPEND names ${out}_${suffix})
  endforeach()
  # Each vendor's variables, by the names its backend gives them ("" is <out> itself).
  _aotwheel_json_members(vendors "${json}" cmake)
  foreach(vendor IN LISTS vendors)
    string(JSON section GET "${json}" cmake ${vendor})
    _aotwheel_json_members(keys "${section}")
    list(LENGTH keys n_keys)
    string(JSON n_all LENGTH "${section}")
    if(n_keys LESS n_all)  # the empty key, which a CMake list cannot hold
      list(APPEND keys "<out>")
    endif()
    foreach(key IN LISTS keys)
      set(name "${out}_${key}")
      if(key STREQUAL "<out>")
        set(key "")
        set(name "${out}")
      endif()
      string(JSON type TYPE "${section}" "${key}")
      set(value "")
      if(type STREQUAL "ARRAY")
        string(JSON count LENGTH "${section}" "${key}")
        if(count GREATER 0)
          math(EXPR last "${count} - 1")
          foreach(i RANGE ${last})
            string(JSON item GET "${section}" "${key}" ${i})
            list(APPEND value "${item}")
          endforeach()
        endif()
      else()  # a string, a number, or a bool (string(JSON) gives ON or OFF)
        string(JSON value GET "${section}" "${key}")
      endif()
      set(${name} "${value}" PARENT_SCOPE)
      list(APPEND names ${name})
    endforeach()
  endforeach()
  set(${names_var} "${names}" PARENT_SCOPE)
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

# _aotwheel_json_members(<out> <json> <object path>...): the member names of an object (a CMake
# list: an empty name is left out).
function(_aotwheel_json_members out json)
  set(names "")
  string(JSON count LENGTH "${json}" ${ARGN})
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON name MEMBER "${json}" ${ARGN} ${i})
      if(NOT name STREQUAL "")
        list(APPEND names "${name}")
      endif()
    endforeach()
  endif()
  set(${out} "${names}" PARENT_SCOPE)
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

# Every vendor a device list names needs a build step in the project: a listed vendor whose
# device-code function the project never calls is never dropped silently. The device-code
# functions record what they build (_aotwheel_vendors_built) and what the lists they read name
# (_aotwheel_vendors_wanted); at the end of the top-level CMakeLists.txt, _aotwheel_check_vendors
# stops configure with one line naming the call to add (the vendor's words and calls, as its file
# registered them). The opt-out, AOTWHEEL_ALLOW_UNBUILT=<vendor>[;<vendor>] (CMake variable or
# environment: vendor names, or ON for all), turns that into a warning.

# _aotwheel_register_vendor(<vendor> [WORDS <phrase>] [CALLS <call>...]): a vendor file's line in
# the registry. <vendor> is the backend's name (aotwheel.backends.names()): the manifest step gets
# its image records (target property AOTWHEEL_IMAGES_<vendor>), and configure's check names the
# list's targets with WORDS ("<vendor> devices") and the calls that build them with CALLS (each
# file of the vendor adds its own; a vendor may be registered by several files).
function(_aotwheel_register_vendor vendor)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "WORDS" "CALLS")
  if(arg_UNPARSED_ARGUMENTS OR NOT vendor MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "_aotwheel_register_vendor: usage: _aotwheel_register_vendor(<vendor> [WORDS <phrase>] [CALLS <call>...]), <vendor> a backend name")
  endif()
  get_property(vendors GLOBAL PROPERTY AOTWHEEL_VENDORS)
  if(NOT vendor IN_LIST vendors)
    set_property(GLOBAL APPEND PROPERTY AOTWHEEL_VENDORS ${vendor})
  endif()
  if(DEFINED arg_WORDS)
    set_property(GLOBAL PROPERTY _AOTWHEEL_VENDOR_WORDS_${vendor} "${arg_WORDS}")
  endif()
  set_property(GLOBAL APPEND PROPERTY _AOTWHEEL_VENDOR_CALLS_${vendor} ${arg_CALLS})
endfunction()

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
    _aotwheel_json_field(names "${${prefix}_JSON}" "" listed ${vendor})  # its targets, else what its JIT keeps
    list(JOIN names ", " names)
    set_property(GLOBAL APPEND PROPERTY AOTWHEEL_VENDORS_WANTED "${vendor}|${fn}|${names}")
  endforeach()
  _aotwheel_defer_vendor_check()
endfunction()

# _aotwheel_call_targets(<fn> <out> <key>): the tokens of one vendor a device-code call asks for:
# the caller's ARG_TARGETS, else <ARG_DEVLIST>_<key>, else <key> of USE_AOT_DEVLIST through
# aotwheel_resolve_devlist() (<key>: the vendor's list variable, its DevlistPart.cmake_variables());
# <out>_JSON: the resolver's JSON of that list (for the manifest), empty for TARGETS.
function(_aotwheel_call_targets fn out key)
  if(DEFINED ARG_TARGETS)
    set(${out} "${ARG_TARGETS}" PARENT_SCOPE)
    set(${out}_JSON "" PARENT_SCOPE)
    return()
  elseif(DEFINED ARG_DEVLIST)
    if(NOT DEFINED ${ARG_DEVLIST}_JSON)
      message(FATAL_ERROR "${fn}: DEVLIST ${ARG_DEVLIST} is not set. Call aotwheel_resolve_devlist(${ARG_DEVLIST}) first.")
    endif()
    set(dl "${ARG_DEVLIST}")
  else()
    aotwheel_resolve_devlist(_aotw_${key})
    set(dl _aotw_${key})
  endif()
  _aotwheel_vendors_wanted(${fn} ${dl})
  set(${out} "${${dl}_${key}}" PARENT_SCOPE)
  set(${out}_JSON "${${dl}_JSON}" PARENT_SCOPE)
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
    get_property(words GLOBAL PROPERTY _AOTWHEEL_VENDOR_WORDS_${vendor})
    get_property(calls GLOBAL PROPERTY _AOTWHEEL_VENDOR_CALLS_${vendor})
    if(NOT words)
      set(words "${vendor} targets")
    endif()
    list(JOIN calls " or " calls)
    if(calls STREQUAL "")  # no file of this aotwheel registers the vendor: nothing here can build it
      set(calls "device-code function of aotwheel for ${vendor}")
    endif()
    set(text "${fn}: USE_AOT_DEVLIST names ${words} (${names}) but no ${calls} call in this project builds them; add one, drop them from the list, or set AOTWHEEL_ALLOW_UNBUILT=${vendor} to build without them")
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

# _aotwheel_remote_settings(<path>): AOTWHEEL_REMOTE_CACHE, _READONLY and _TIMEOUT from the CMake
# cache (-D, -C cmake.define.X=...) or else the environment, and the token and signing secret from
# the CMake cache only (from the environment the steps read them themselves), as NAME=value lines
# in <path> (rewritten only on change): a file, not arguments, so no secret reaches build.ninja or
# `ninja -v`. It can hold a URL's password, a token or the secret (the steps ninja runs see no -D
# value otherwise), so it is created empty with mode 0600 before anything is written into it
# (docs/reliability.md). Every vendor's configure and compile steps read it with --settings.
function(_aotwheel_remote_settings path)
  set(text "")
  foreach(var IN ITEMS AOTWHEEL_REMOTE_CACHE AOTWHEEL_REMOTE_CACHE_READONLY AOTWHEEL_REMOTE_CACHE_TIMEOUT
                       AOTWHEEL_REMOTE_CACHE_TOKEN AOTWHEEL_REMOTE_CACHE_SECRET)
    if(DEFINED ${var})
      string(APPEND text "${var}=${${var}}\n")
    elseif(DEFINED ENV{${var}} AND NOT var MATCHES "_(TOKEN|SECRET)$")
      string(APPEND text "${var}=$ENV{${var}}\n")
    endif()
  endforeach()
  if(NOT EXISTS "${path}")
    file(TOUCH "${path}")
  endif()
  file(CHMOD "${path}" PERMISSIONS OWNER_READ OWNER_WRITE)  # before the text: never readable by others
  _aotwheel_write_if_changed("${path}" "${text}")
endfunction()

# _aotwheel_write_if_changed(<path> <text>): write <path> only when its content differs, so that
# ninja reruns nothing that depends on an unchanged file.
function(_aotwheel_write_if_changed path text)
  set(old "<none>")
  if(EXISTS "${path}")
    file(READ "${path}" old)
  endif()
  if(NOT old STREQUAL "${text}")
    file(WRITE "${path}" "${text}")
  endif()
endfunction()

# _aotwheel_compress_edges(<compress> <out_embedded> <out_zsts> <image>...): with <compress> ON,
# one compress edge per <image> (triple=source=path) writing <path>.zst, one zstd frame;
# <out_embedded> is then the images with those paths (what an embedding .incbin's), else the
# images as given; <out_zsts> the .zst files.
function(_aotwheel_compress_edges compress out_embedded out_zsts)
  set(embedded "")
  set(zsts "")
  foreach(spec IN LISTS ARGN)
    if(NOT compress)
      list(APPEND embedded "${spec}")
      continue()
    endif()
    string(REGEX MATCH "^([^=]*)=([^=]*)=(.*)$" _ "${spec}")
    set(path "${CMAKE_MATCH_3}")
    get_filename_component(base "${path}" NAME)
    add_custom_command(
      OUTPUT "${path}.zst"
      COMMAND ${_AOTWHEEL_STEP_COMMAND} compress --input "${path}" --output "${path}.zst"
      DEPENDS "${path}"
      COMMENT "aotwheel: zstd ${base}"
      VERBATIM)
    list(APPEND embedded "${CMAKE_MATCH_1}=${CMAKE_MATCH_2}=${path}.zst")
    list(APPEND zsts "${path}.zst")
  endforeach()
  set(${out_embedded} "${embedded}" PARENT_SCOPE)
  set(${out_zsts} "${zsts}" PARENT_SCOPE)
endfunction()

# _aotwheel_manifest_edge(<target> <work> <out> NAME <name> [CUSTOM_TARGET <name>] [JIT_FALLBACK ON|OFF]
#                         [OPTIONS <options>] [COMPRESS ON|OFF] [TGTSYM <file>]
#                         [IMAGES <triple=source=path>...] [DEPENDS <file>...])
# The one manifest step of every device-code function: <work>/_aot_manifest.json from
# <work>/devlist.json and <work>/toolchain.json, the IMAGES the calling function embeds (as
# <path>.zst with COMPRESS ON), the kernel names of TGTSYM, and every registered vendor's image
# records on <target> (AOTWHEEL_IMAGES_<vendor>, and the files they describe,
# AOTWHEEL_IMAGE_FILES_<vendor>: read at generate time, so the call order does not matter), built
# by CUSTOM_TARGET (default <name>_aot_manifest); sets <out> to its path and appends it to
# <target>'s AOTWHEEL_MANIFESTS.
function(_aotwheel_manifest_edge target work out)
  # OPTIONS and TGTSYM take one value that may be empty: multi-value keywords, which keep it (and
  # warn of nothing) whatever the project's policy CMP0174.
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "NAME;CUSTOM_TARGET;JIT_FALLBACK;COMPRESS" "OPTIONS;TGTSYM;IMAGES;DEPENDS")
  set(custom "${arg_NAME}_aot_manifest")
  if(DEFINED arg_CUSTOM_TARGET)
    set(custom "${arg_CUSTOM_TARGET}")
  endif()
  set(manifest "${work}/_aot_manifest.json")
  if(arg_JIT_FALLBACK)
    set(jit_word on)  # JIT_FALLBACK may override what the devlist said
  else()
    set(jit_word off)
  endif()
  list(TRANSFORM arg_IMAGES PREPEND "--image;" OUTPUT_VARIABLE image_args)
  _aotwheel_record_lists("${target}" "${work}" record_args record_depends)
  add_custom_command(
    OUTPUT "${manifest}"
    COMMAND ${_AOTWHEEL_STEP_COMMAND} manifest --name "${arg_NAME}" --output "${manifest}" --devlist "${work}/devlist.json"
            --toolchain "${work}/toolchain.json" "--options=${arg_OPTIONS}" --jit-fallback "${jit_word}" --tgtsym "${arg_TGTSYM}"
            ${record_args} --compress "$<IF:$<BOOL:${arg_COMPRESS}>,on,off>" ${image_args}
    DEPENDS ${arg_DEPENDS} ${arg_TGTSYM} "${work}/devlist.json" "${work}/toolchain.json" ${record_depends}
    COMMENT "aotwheel: ${arg_NAME} manifest"
    VERBATIM)
  add_custom_target(${custom} ALL DEPENDS "${manifest}")
  if(NOT TARGET aotwheel_device_code)  # all device code, no C compiler: `aotwheel build warm` builds it
    add_custom_target(aotwheel_device_code)
  endif()
  add_dependencies(aotwheel_device_code ${custom})
  set_property(TARGET ${target} APPEND PROPERTY AOTWHEEL_MANIFESTS "${manifest}")
  set(${out} "${manifest}" PARENT_SCOPE)
endfunction()

# _aotwheel_record_lists(<target> <work> <out_args> <out_depends>): per registered vendor, the file
# <work>/<vendor>_records.txt naming the image records on <target> (one JSON file a line, written
# at generate time), as the manifest step's `--records <vendor>=<file>` arguments, and what the
# manifest edge depends on for them.
function(_aotwheel_record_lists target work out_args out_depends)
  get_property(vendors GLOBAL PROPERTY AOTWHEEL_VENDORS)
  set(args "")
  set(depends "")
  foreach(vendor IN LISTS vendors)
    set(list_file "${work}/${vendor}_records.txt")
    file(GENERATE OUTPUT "${list_file}" CONTENT "$<JOIN:$<TARGET_PROPERTY:${target},AOTWHEEL_IMAGES_${vendor}>,\n>")
    list(APPEND args --records "${vendor}=${list_file}")
    list(APPEND depends "${list_file}" "$<TARGET_PROPERTY:${target},AOTWHEEL_IMAGES_${vendor}>"
                        "$<TARGET_PROPERTY:${target},AOTWHEEL_IMAGE_FILES_${vendor}>")
  endforeach()
  set(${out_args} "${args}" PARENT_SCOPE)
  set(${out_depends} "${depends}" PARENT_SCOPE)
endfunction()

# _aotwheel_install_hook(<target> <work> <manifest> NAME <name> DESTINATION <dir> [PACKAGE <package>]):
# install the manifest into DESTINATION, with the run-time hook <package>/_aot.py (default package:
# DESTINATION with '.' for '/') when this aotwheel has aotwheel.hook; the one hook step of every
# device-code function.
function(_aotwheel_install_hook target work manifest)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "NAME;DESTINATION;PACKAGE" "")
  install(FILES "${manifest}" DESTINATION "${arg_DESTINATION}")
  if(NOT EXISTS "${_AOTWHEEL_PYTHONPATH}/aotwheel/hook.py")
    return()
  endif()
  set(package "${arg_PACKAGE}")
  if(NOT DEFINED arg_PACKAGE)
    string(REPLACE "/" "." package "${arg_DESTINATION}")
  endif()
  get_target_property(ext_name ${target} OUTPUT_NAME)
  if(NOT ext_name)
    set(ext_name "${target}")
  endif()
  set(hook "${work}/_aot.py")
  add_custom_command(
    OUTPUT "${hook}"
    COMMAND ${_AOTWHEEL_STEP_COMMAND} hook --extension "${ext_name}" --package "${package}" --out "${hook}"
    DEPENDS "${_AOTWHEEL_PYTHONPATH}/aotwheel/hook.py"
    COMMENT "aotwheel: ${package}._aot hook"
    VERBATIM)
  add_custom_target(${arg_NAME}_aot_hook ALL DEPENDS "${hook}")
  install(FILES "${hook}" DESTINATION "${arg_DESTINATION}")
endfunction()

# _aotwheel_target_manifest(<fn> <target> <work> <devlist json> <toolchain json> NAME <name>
#                           CUSTOM_TARGET <name> [JIT_FALLBACK ON|OFF] [OPTIONS <options>]
#                           DESTINATION <dir> [PACKAGE <package>])
# A device-code call's DESTINATION when it embeds no image list of its own (its images are records
# on <target>, or in the binary alone): <target>'s manifest comes from this call
# (_aotwheel_claim_manifest), written from the resolver's JSON of the list and the tool facts
# (JSON; empty: {}), and installed into DESTINATION with _aot.py.
function(_aotwheel_target_manifest fn target work devlist toolchain)
  cmake_parse_arguments(PARSE_ARGV 5 arg "" "NAME;CUSTOM_TARGET;JIT_FALLBACK;DESTINATION;PACKAGE" "OPTIONS")
  _aotwheel_claim_manifest(${fn} ${target})
  file(MAKE_DIRECTORY "${work}")
  if(toolchain STREQUAL "")
    set(toolchain "{}")
  endif()
  _aotwheel_write_if_changed("${work}/devlist.json" "${devlist}\n")
  _aotwheel_write_if_changed("${work}/toolchain.json" "${toolchain}\n")
  _aotwheel_manifest_edge("${target}" "${work}" manifest NAME "${arg_NAME}" CUSTOM_TARGET ${arg_CUSTOM_TARGET}
                          JIT_FALLBACK "${arg_JIT_FALLBACK}" OPTIONS "${arg_OPTIONS}")
  set(package_arg "")
  if(DEFINED arg_PACKAGE)
    set(package_arg PACKAGE "${arg_PACKAGE}")
  endif()
  _aotwheel_install_hook("${target}" "${work}" "${manifest}" NAME "${arg_NAME}" DESTINATION "${arg_DESTINATION}" ${package_arg})
endfunction()

# _aotwheel_call_manifest(<fn> <target> <work> <devlist json> <toolchain json> <custom target>):
# _aotwheel_target_manifest for a device-code call that keeps no IR of its own (JIT_FALLBACK OFF),
# with the caller's NAME, DESTINATION and PACKAGE; an empty <devlist json>: the caller's TARGETS,
# resolved here (what _aotwheel_call_targets leaves for TARGETS).
function(_aotwheel_call_manifest fn target work devlist toolchain custom_target)
  if(devlist STREQUAL "")
    list(JOIN ARG_TARGETS "," csv)
    aotwheel_resolve_devlist(explicit DEVLIST "${csv}")
    set(devlist "${explicit_JSON}")
  endif()
  set(package_arg "")
  if(DEFINED ARG_PACKAGE)
    set(package_arg PACKAGE "${ARG_PACKAGE}")
  endif()
  _aotwheel_target_manifest(${fn} "${target}" "${work}" "${devlist}" "${toolchain}" NAME "${ARG_NAME}"
                            CUSTOM_TARGET ${custom_target} JIT_FALLBACK OFF
                            DESTINATION "${ARG_DESTINATION}" ${package_arg})
endfunction()

# Each vendor's file: every aotwheel-<name>.cmake beside this one (a new vendor is a new file),
# in name order; each registers its vendor with _aotwheel_register_vendor().
file(GLOB _aotwheel_vendor_files "${CMAKE_CURRENT_LIST_DIR}/aotwheel-*.cmake")
list(FILTER _aotwheel_vendor_files EXCLUDE REGEX "/aotwheel-config[^/]*\\.cmake$")
list(SORT _aotwheel_vendor_files)
foreach(_aotwheel_vendor_file IN LISTS _aotwheel_vendor_files)
  include("${_aotwheel_vendor_file}")
endforeach()
unset(_aotwheel_vendor_file)
unset(_aotwheel_vendor_files)
