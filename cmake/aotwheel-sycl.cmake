# aotwheel's Intel build with icpx (oneAPI DPC++/SYCL), included by aotwheel-config.cmake; this
# file names no other vendor: -fsycl-targets entries of other vendors come from the resolver.
#
#   aotwheel_target_sycl(<target>
#                        [DEVICES <devlist>]          # default: USE_AOT_DEVLIST, see aotwheel_resolve_devlist
#                        [JIT_FALLBACK ON|OFF]        # keep generic SPIR-V (spir64) for JIT; default from the resolver
#                        [FIELD_DEFAULTS ON|OFF]      # the field's options (below); default USE_AOT_FIELD_DEFAULTS, else ON
#                        [OPTIONS <ocloc-option>...]  # passed as -Xs "-device <list> -options '<options>'", after the field's
#                        [COMPRESS ON|OFF]            # --offload-compress; default USE_AOT_COMPRESS, else ON
#                        [PARALLEL_LINK_JOBS <n>]     # -fsycl-max-parallel-link-jobs=<n>; default with field
#                                                     # defaults: $ENV{MAX_JOBS} if <= the CPU count, else the CPU count
#                        [DESTINATION <package dir>]  # install _aot_manifest.json (+ _aot.py) there
#                        [PACKAGE <python package>])  # for the _aot.py hook; default from DESTINATION
#
# Field defaults (what IPEX cmake/gpu/SYCL.cmake and torch-xpu-ops cmake/BuildFlags.cmake pass;
# docs/formats.md quotes the lines), for a devlist naming Intel devices:
#   ocloc -options '-cl-intel-enable-auto-large-GRF-mode -cl-poison-unsupported-fp64-kernels
#                   -cl-intel-greater-than-4GB-buffer-required'
#   -fsycl-fp64-conv-emu (compile and link) when a listed device is DG2/ATS-M (no fp64)
#   -flink-huge-device-code (link), -fsycl-max-parallel-link-jobs=<n> (link)
#
# Adds -fsycl to the target's C++ compile and the AOT link options IPEX and torch use:
#   -fsycl-targets=spir64_gen,spir64   (AOT + JIT fallback)
#   -fsycl-targets=spir64_gen          (JIT_FALLBACK OFF)
#   -fsycl-targets=spir64              (devlist "none": no -Xs at all, since ocloc crashes on
#                                       spir64_gen without a device)
#   -Xs "-device pvc,acm-g10 -options '...'"   (device list before the options)
#   --offload-compress  -fsycl-max-parallel-link-jobs=<n>
# Other vendors' tokens in the devlist append their SYCL targets (oneAPI plug-ins), as the
# resolver names them (<out>_SYCL_TARGETS):
#   -fsycl-targets=spir64_gen,spir64,<their targets>
#   -Xsycl-target-backend=spir64_gen "-device pvc"    (the ocloc arguments for spir64_gen only)
#
# The devlist is resolved by the Python resolver through aotwheel_resolve_devlist()
# (aotwheel-config.cmake); this file never parses a devlist itself. It only validates that
# what it puts on a command line is made of plain characters (defence in depth: ninja runs
# link lines through /bin/sh).
#
# Public: aotwheel_*; private: _aotwheel_*. _aotwheel_sycl_flags() needs neither a compiler nor
# Python, so `cmake -P` scripts (the icpx-golden tests) can call it. Its steps:
#   _aotwheel_sycl_check_inputs   arguments well-formed and shell-safe
#   _aotwheel_sycl_targets        the -fsycl-targets value (checked or computed)
# and aotwheel_target_sycl()'s: _aotwheel_sycl_check_target, _aotwheel_sycl_resolve,
# _aotwheel_sycl_flags, _aotwheel_sycl_link_items.

include_guard(GLOBAL)

# Configure's check names aotwheel_target_sycl() among the calls that build Intel devices; a call
# also counts as a build step of the other vendors whose targets its -fsycl-targets names
# (<out>_SYCL_VENDORS, from the resolver).
if(COMMAND _aotwheel_register_vendor)  # not in `cmake -P` scripts that include this file alone
  _aotwheel_register_vendor(intel CALLS "aotwheel_target_sycl()")
endif()

# Characters allowed in a device name and in one ocloc option. No quotes, backslashes, '$',
# spaces or ';', so the -Xs argument can be quoted once, safely, for every shell CMake targets.
set(_AOTWHEEL_SYCL_DEVICE_RE "^[A-Za-z0-9][A-Za-z0-9._-]*$")
set(_AOTWHEEL_SYCL_OPTION_RE "^-[A-Za-z0-9_=.,:+/-]+$")

# _aotwheel_sycl_flags(<out_compile> <out_link>
#                      DEVICES <name>...           # canonical Intel names from the resolver; empty = none
#                      [JIT_FALLBACK ON|OFF]       # default ON
#                      [SYCL_TARGETS <targets>]    # the resolver's <out>_SYCL_TARGETS; computed if absent
#                      [OPTIONS <option>...]
#                      [COMPRESS ON|OFF]           # default ON
#                      [PARALLEL_LINK_JOBS <n>]
#                      [EXTRA_COMPILE <option>...] # icpx compile options after -fsycl-targets (field defaults)
#                      [EXTRA_LINK <option>...]    # icpx link options at the end (field defaults)
#                      [FUNCTION <name>])          # prefix for error messages
#
# Sets <out_compile> and <out_link> in the caller to the compiler arguments, one list item per
# argv element (the -Xs value is one item: "-device a,b -options '-x -y'").
# SYCL_TARGETS may hold other vendors' targets besides spir64_gen/spir64 (the resolver's, from
# their tokens); the ocloc arguments then go to spir64_gen alone, as
# -Xsycl-target-backend=spir64_gen "<value>" (plain -Xs would hand -device to their back ends as well).
function(_aotwheel_sycl_flags out_compile out_link)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "JIT_FALLBACK;SYCL_TARGETS;COMPRESS;PARALLEL_LINK_JOBS;FUNCTION"
                        "DEVICES;OPTIONS;EXTRA_COMPILE;EXTRA_LINK")
  set(fn "${arg_FUNCTION}")
  if(fn STREQUAL "")
    set(fn "_aotwheel_sycl_flags")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unknown arguments '${arg_UNPARSED_ARGUMENTS}'. Try: DEVICES, JIT_FALLBACK, OPTIONS, COMPRESS, PARALLEL_LINK_JOBS")
  endif()
  _aotwheel_sycl_check_inputs(${fn})
  _aotwheel_sycl_targets(${fn} targets others)

  set(compile -fsycl "-fsycl-targets=${targets}" ${arg_EXTRA_COMPILE})
  set(link -fsycl "-fsycl-targets=${targets}")
  list(LENGTH arg_DEVICES n_devices)
  if(n_devices GREATER 0)
    list(JOIN arg_DEVICES "," device_csv)
    set(backend "-device ${device_csv}")
    if(arg_OPTIONS)
      list(JOIN arg_OPTIONS " " option_text)
      string(APPEND backend " -options '${option_text}'")
    endif()
    if(others)
      list(APPEND link -Xsycl-target-backend=spir64_gen "${backend}")
    else()
      list(APPEND link -Xs "${backend}")
    endif()
  elseif(arg_OPTIONS)
    # With no spir64_gen nothing runs ocloc at build time; -Xs would reach the run-time JIT instead.
    message(WARNING "${fn}: OPTIONS '${arg_OPTIONS}' are ignored because the devlist names no Intel device (no AOT compile)")
  endif()
  if(arg_COMPRESS)
    list(APPEND link --offload-compress)
  endif()
  if(DEFINED arg_PARALLEL_LINK_JOBS)
    list(APPEND link "-fsycl-max-parallel-link-jobs=${arg_PARALLEL_LINK_JOBS}")
  endif()
  list(APPEND link ${arg_EXTRA_LINK})
  set(${out_compile} "${compile}" PARENT_SCOPE)
  set(${out_link} "${link}" PARENT_SCOPE)
endfunction()

# _aotwheel_sycl_check_inputs(<fn>): the caller's parsed arg_* are well-formed and safe to put on
# a command line; JIT_FALLBACK and COMPRESS default to ON (set in the caller).
function(_aotwheel_sycl_check_inputs fn)
  foreach(name IN ITEMS JIT_FALLBACK COMPRESS)
    if(NOT DEFINED arg_${name} OR arg_${name} STREQUAL "")
      set(arg_${name} ON)
      set(arg_${name} ON PARENT_SCOPE)
    endif()
    # _aotwheel_check_switch's words, spelt out: this file's flag functions also run alone (cmake -P)
    if(NOT arg_${name} MATCHES "^(ON|OFF|TRUE|FALSE|YES|NO|1|0|on|off|true|false|yes|no)$")
      message(FATAL_ERROR "${fn}: ${name} is '${arg_${name}}'. Try: ${name} ON or ${name} OFF")
    endif()
  endforeach()
  foreach(device IN LISTS arg_DEVICES)
    if(NOT device MATCHES "${_AOTWHEEL_SYCL_DEVICE_RE}")
      message(FATAL_ERROR "${fn}: device '${device}' is not a resolved device name. Try: pass the list aotwheel_resolve_devlist() returns")
    endif()
  endforeach()
  foreach(option IN LISTS arg_OPTIONS arg_EXTRA_COMPILE arg_EXTRA_LINK)
    if(NOT option MATCHES "${_AOTWHEEL_SYCL_OPTION_RE}")
      message(FATAL_ERROR "${fn}: ocloc option '${option}' has characters other than letters, digits and -_=.,:+/. Try: one option per list item, e.g. OPTIONS -cl-intel-enable-auto-large-GRF-mode")
    endif()
  endforeach()
  if(DEFINED arg_PARALLEL_LINK_JOBS AND NOT arg_PARALLEL_LINK_JOBS MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "${fn}: PARALLEL_LINK_JOBS is '${arg_PARALLEL_LINK_JOBS}'. Try: a positive integer such as PARALLEL_LINK_JOBS 8")
  endif()
endfunction()

# _aotwheel_sycl_targets(<fn> <out> <out_others>): the -fsycl-targets value, the caller's
# arg_SYCL_TARGETS checked (Intel's forms; any other entry, another vendor's target as the
# resolver wrote it, only for being one plain word) or computed from arg_DEVICES and
# arg_JIT_FALLBACK; <out_others> is TRUE when it names other vendors' targets.
function(_aotwheel_sycl_targets fn out out_others)
  list(LENGTH arg_DEVICES n_devices)
  set(others FALSE)
  if(DEFINED arg_SYCL_TARGETS AND NOT arg_SYCL_TARGETS STREQUAL "")
    set(targets "${arg_SYCL_TARGETS}")
    string(REPLACE "," ";" parts "${targets}")
    set(intel "")
    set(plain TRUE)
    foreach(part IN LISTS parts)
      if(part MATCHES "^spir64(_gen)?$")
        list(APPEND intel "${part}")
      elseif(part MATCHES "^[a-z][a-z0-9_]*$")
        set(others TRUE)
      else()
        set(plain FALSE)
      endif()
    endforeach()
    list(JOIN intel "," intel)
    if(NOT intel MATCHES "^(spir64_gen,spir64|spir64_gen|spir64)?$" OR NOT plain OR targets MATCHES ";")
      message(FATAL_ERROR "${fn}: SYCL_TARGETS is '${targets}'. Try: spir64_gen,spir64 | spir64_gen | spir64, then other vendors' targets as aotwheel_resolve_devlist() gives them")
    endif()
  elseif(n_devices EQUAL 0)
    if(NOT arg_JIT_FALLBACK)
      message(FATAL_ERROR "${fn}: the devlist is 'none' and JIT_FALLBACK is OFF, so there would be no device code. Try: USE_AOT_DEVLIST=pvc (or another device) or JIT_FALLBACK ON")
    endif()
    set(targets "spir64")
  elseif(arg_JIT_FALLBACK)
    set(targets "spir64_gen,spir64")
  else()
    set(targets "spir64_gen")
  endif()
  # Cross-check the two inputs: spir64_gen needs devices, and devices need spir64_gen.
  if(targets MATCHES "spir64_gen" AND n_devices EQUAL 0)
    message(FATAL_ERROR "${fn}: SYCL_TARGETS '${targets}' needs devices but DEVICES is empty (ocloc crashes on spir64_gen without -device). Try: USE_AOT_DEVLIST=pvc")
  elseif(NOT targets MATCHES "spir64_gen" AND n_devices GREATER 0)
    message(FATAL_ERROR "${fn}: SYCL_TARGETS '${targets}' has no spir64_gen but DEVICES is '${arg_DEVICES}'. Try: pass the resolver's <out>_SYCL_TARGETS unchanged")
  endif()
  set(${out} "${targets}" PARENT_SCOPE)
  set(${out_others} ${others} PARENT_SCOPE)
endfunction()

# _aotwheel_sycl_link_items(<out> <arg>...): argv elements as target_link_options() items.
# "-Xs <value>" (or "-Xsycl-target-backend=<triple> <value>") becomes one SHELL: item so CMake
# neither de-duplicates the flag nor splits the pair; the value is quoted once
# (_aotwheel_sycl_flags guarantees it holds no quote, backslash or '$').
function(_aotwheel_sycl_link_items out)
  set(items "")
  set(pending "")
  foreach(arg IN LISTS ARGN)
    if(NOT pending STREQUAL "")
      list(APPEND items "SHELL:${pending} \"${arg}\"")
      set(pending "")
    elseif(arg MATCHES "^(-Xs|-Xsycl-target-backend=spir64_gen)$")
      set(pending "${arg}")
    else()
      list(APPEND items "${arg}")
    endif()
  endforeach()
  set(${out} "${items}" PARENT_SCOPE)
endfunction()

# aotwheel_target_sycl(<target> ...): see the top of this file.
function(aotwheel_target_sycl target)
  set(fn "aotwheel_target_sycl")
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DEVICES;JIT_FALLBACK;FIELD_DEFAULTS;COMPRESS;PARALLEL_LINK_JOBS;DESTINATION;PACKAGE" "OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unknown arguments '${arg_UNPARSED_ARGUMENTS}'. Try: DEVICES, JIT_FALLBACK, FIELD_DEFAULTS, OPTIONS, COMPRESS, PARALLEL_LINK_JOBS, DESTINATION, PACKAGE")
  endif()
  _aotwheel_sycl_check_target(${fn} "${target}")
  _aotwheel_sycl_resolve(dl)
  _aotwheel_vendors_built(${dl_SYCL_VENDORS})  # -fsycl-targets carries every vendor's targets it names
  _aotwheel_sycl_field(${fn} field)
  if(NOT DEFINED arg_COMPRESS)  # USE_AOT_COMPRESS, as the resolver passed it on (else its default, ON):
    # one switch for icpx's --offload-compress and aotwheel_add_device_code's own images
    string(JSON word ERROR_VARIABLE err GET "${dl_JSON}" compress)
    if(NOT err AND NOT word STREQUAL "")
      _aotwheel_check_switch(${fn} USE_AOT_COMPRESS "${word}")
      set(arg_COMPRESS "${word}")
    endif()
  endif()
  set(extra "")
  foreach(name IN ITEMS COMPRESS PARALLEL_LINK_JOBS)
    if(DEFINED arg_${name})
      list(APPEND extra ${name} "${arg_${name}}")
    endif()
  endforeach()
  _aotwheel_sycl_flags(compile link FUNCTION "${fn}" DEVICES ${dl} JIT_FALLBACK "${dl_JIT_FALLBACK}"
                       SYCL_TARGETS "${dl_SYCL_TARGETS}" OPTIONS ${field_OPTIONS} ${arg_OPTIONS} ${extra}
                       EXTRA_COMPILE ${field_COMPILE} EXTRA_LINK ${field_LINK})
  _aotwheel_sycl_link_items(link_items ${link})

  # -fsycl only for C++ sources: a target may also hold C glue (e.g. a CPython module init).
  target_compile_options("${target}" PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${compile}>")
  target_link_options("${target}" PRIVATE ${link_items})
  set_target_properties("${target}" PROPERTIES
    AOTWHEEL_DEVLIST "${dl}"
    AOTWHEEL_OCLOC_DEVICE "${dl_OCLOC_DEVICE}"
    AOTWHEEL_SYCL_TARGETS "${dl_SYCL_TARGETS}"
    AOTWHEEL_JIT_FALLBACK "${dl_JIT_FALLBACK}")
  if(dl_OCLOC_DEVICE STREQUAL "")
    message(STATUS "aotwheel: ${target}: SYCL with no Intel AOT (targets ${dl_SYCL_TARGETS})")
  else()
    # icpx gets the listed products (its own oneAPI ocloc's generic names are unknown here), not
    # the open toolchain's coverage plan (dl_OCLOC_DEVICE: 64.bmg where the installed ocloc knows bmg).
    list(JOIN dl "," icpx_devices)
    message(STATUS "aotwheel: ${target}: SYCL AOT for ${icpx_devices} (targets ${dl_SYCL_TARGETS})")
  endif()
  if(DEFINED arg_DESTINATION)
    _aotwheel_sycl_manifest(${fn} "${target}")
  endif()
endfunction()

# _aotwheel_sycl_manifest(<fn> <target>): with DESTINATION, the same _aot_manifest.json and _aot.py
# as every device-code call installs (aotwheel-config.cmake's _aotwheel_target_manifest): the
# resolved devlist and icpx, no image list (icpx writes the images at link time; the binary is the
# truth that _aot.targets() and `aotwheel inspect` read). Reads the caller's dl_* and arg_*.
function(_aotwheel_sycl_manifest fn target)
  string(MAKE_C_IDENTIFIER "${target}" name)
  _aotwheel_json_string(icpx "${CMAKE_CXX_COMPILER}")
  _aotwheel_json_string(version "${CMAKE_CXX_COMPILER_VERSION}")
  list(JOIN arg_OPTIONS " " options)
  set(package_arg "")
  if(DEFINED arg_PACKAGE)
    set(package_arg PACKAGE "${arg_PACKAGE}")
  endif()
  _aotwheel_target_manifest(${fn} "${target}" "${CMAKE_CURRENT_BINARY_DIR}/aotwheel/${name}_sycl" "${dl_JSON}"
                            "{\"icpx\": ${icpx}, \"icpx_version\": ${version}}" NAME "${name}"
                            CUSTOM_TARGET ${name}_sycl_aot_manifest JIT_FALLBACK "${dl_JIT_FALLBACK}" OPTIONS "${options}"
                            DESTINATION "${arg_DESTINATION}" ${package_arg})
endfunction()

# _aotwheel_sycl_check_target(<fn> <target>): <target> exists, is compiled by icpx, and the
# resolver is loaded (find_package(aotwheel), not aotwheel-sycl.cmake alone).
function(_aotwheel_sycl_check_target fn target)
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "${fn}: '${target}' is not a target. Try: call it after add_library(${target} ...) or python_add_library(${target} ...)")
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "IntelLLVM")
    if(CMAKE_CXX_COMPILER_ID STREQUAL "")
      set(what "not identified (is CXX enabled in project()?)")
    else()
      set(what "${CMAKE_CXX_COMPILER_ID}, not IntelLLVM")
    endif()
    message(FATAL_ERROR "${fn}: the compiler is ${what}. Try: CXX=icpx (oneAPI Base Toolkit), or aotwheel_add_device_code() for the open toolchain")
  endif()
  if(NOT COMMAND aotwheel_resolve_devlist)
    message(FATAL_ERROR "${fn}: aotwheel_resolve_devlist() is not defined. Try: find_package(aotwheel CONFIG REQUIRED) instead of including aotwheel-sycl.cmake directly")
  endif()
endfunction()

# _aotwheel_sycl_field(<fn> <out>): the field defaults for the caller's resolved `dl` unless
# FIELD_DEFAULTS (argument, else the resolver's USE_AOT_FIELD_DEFAULTS) is OFF: <out>_OPTIONS (ocloc
# options; the caller's arg_OPTIONS loses those it repeats), <out>_COMPILE, <out>_LINK (icpx); also sets the
# caller's arg_PARALLEL_LINK_JOBS when not given and the list names Intel devices: $ENV{MAX_JOBS}
# when it is a number <= the CPU count, else the CPU count (IPEX's and torch-xpu-ops' rule).
macro(_aotwheel_sycl_field fn out)
  set(${out}_OPTIONS "")
  set(${out}_COMPILE "")
  set(${out}_LINK "")
  _aotwheel_field_switch(${fn} _aotwheel_on "${dl_FIELD_DEFAULTS}")
  if(_aotwheel_on AND NOT "${dl}" STREQUAL "")
    # The field's options in IPEX's order, then the user's others (a repeated one is kept once).
    set(${out}_OPTIONS ${dl_FIELD_OCLOC_OPTIONS})
    list(REMOVE_ITEM arg_OPTIONS ${dl_FIELD_OCLOC_OPTIONS})
    set(${out}_COMPILE ${dl_FIELD_SYCL_COMPILE})
    set(${out}_LINK ${dl_FIELD_SYCL_LINK})
    if(NOT DEFINED arg_PARALLEL_LINK_JOBS)
      include(ProcessorCount)
      ProcessorCount(_aotwheel_cpus)
      if(_aotwheel_cpus LESS 1)
        set(_aotwheel_cpus 1)
      endif()
      set(arg_PARALLEL_LINK_JOBS "${_aotwheel_cpus}")
      if("$ENV{MAX_JOBS}" MATCHES "^[1-9][0-9]*$" AND "$ENV{MAX_JOBS}" LESS_EQUAL _aotwheel_cpus)
        set(arg_PARALLEL_LINK_JOBS "$ENV{MAX_JOBS}")
      endif()
    endif()
  endif()
  unset(_aotwheel_on)
endmacro()

# _aotwheel_sycl_resolve(<out>): aotwheel_resolve_devlist(<out>) of the caller's arg_DEVICES and
# arg_JIT_FALLBACK (USE_AOT_DEVLIST / USE_AOT_JIT_FALLBACK when absent); its variables reach the caller.
macro(_aotwheel_sycl_resolve out)
  set(_aotwheel_resolve_args "")
  if(DEFINED arg_DEVICES)
    list(APPEND _aotwheel_resolve_args DEVLIST "${arg_DEVICES}")
  endif()
  if(DEFINED arg_JIT_FALLBACK)
    list(APPEND _aotwheel_resolve_args JIT_FALLBACK "${arg_JIT_FALLBACK}")
  endif()
  aotwheel_resolve_devlist(${out} ${_aotwheel_resolve_args})
  unset(_aotwheel_resolve_args)
endmacro()
