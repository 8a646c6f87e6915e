# aotwheel open-toolchain backend (included by aotwheel-config.cmake).
#
#   aotwheel_add_device_code(<target> SOURCES <file.cl>...
#                            [DEVLIST <prefix>]          # variables set by aotwheel_resolve_devlist(<prefix>)
#                            [DEVICES <name>...]         # or explicit devices (resolved by aotwheel)
#                            [JIT_FALLBACK ON|OFF]
#                            [OPTIONS <ocloc -options string>]
#                            [CLANG_OPTIONS <arg>...]
#                            [NAME <image set name>]     # C identifier; default: the target name
#                            [DESTINATION <package dir>] # install _aot_manifest.json (+ _aot.py) there
#                            [PACKAGE <python package>]) # for the _aot.py hook; default from DESTINATION
#
# AOTWHEEL_OCLOC_JOBS (CMake variable or environment): at most this many ocloc edges at once
# (a Ninja job pool), for big kernels whose ocloc runs need many GB each; default: ninja's -j.
#
# Per kernel source: clang + llvm-spirv -> SPIR-V; one ocloc edge per (source, device), each
# looked up in aotwheel's device-code cache first; one ocloc-compatible fat binary (ar) per source;
# all images embedded in <target> through a generated C file (.incbin, .tgtimg, .tgtsym).
# The generated header "<NAME>_aot.h" (on the target's include path) declares
#   aotwheel_<NAME>_images[], aotwheel_<NAME>_image_count, aotwheel_<NAME>_tgtsym[_end].
# With no DEVLIST/DEVICES the devlist comes from aotwheel_resolve_devlist() (USE_AOT_DEVLIST).
include_guard(GLOBAL)

# `python -m aotwheel.buildsteps` of the aotwheel that owns this file.
set(_AOTWHEEL_BUILD_COMMAND ${_AOTWHEEL_PYTHON_COMMAND})
list(POP_BACK _AOTWHEEL_BUILD_COMMAND)
list(APPEND _AOTWHEEL_BUILD_COMMAND aotwheel.buildsteps)

# _aotwheel_build_step(<fn> <step> <args>...): run one build step at configure time or stop with
# its one-line error prefixed by the public function's name.
function(_aotwheel_build_step fn)
  execute_process(
    COMMAND ${_AOTWHEEL_BUILD_COMMAND} ${ARGN}
    RESULT_VARIABLE result
    OUTPUT_VARIABLE output
    ERROR_VARIABLE error
    ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT result EQUAL 0)
    string(REGEX REPLACE "^.*aotwheel: error: " "" error "${error}")
    if(error STREQUAL "")
      set(error "'python -m aotwheel.buildsteps ${ARGV1}' failed (exit ${result})")
    endif()
    message(FATAL_ERROR "${fn}: ${error}")
  endif()
endfunction()

function(aotwheel_add_device_code target)
  set(fn aotwheel_add_device_code)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "DEVLIST;JIT_FALLBACK;OPTIONS;NAME;DESTINATION;PACKAGE"
                        "SOURCES;DEVICES;CLANG_OPTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unexpected arguments '${ARG_UNPARSED_ARGUMENTS}'. "
                        "Usage: ${fn}(<target> SOURCES <file.cl>... [DEVLIST <prefix>|DEVICES <names>...] "
                        "[JIT_FALLBACK ON|OFF] [OPTIONS <ocloc options>] [NAME <id>] [DESTINATION <dir>])")
  endif()
  # The embedding is GNU assembler on ELF (.incbin, .pushsection): Linux with GCC or Clang.
  if(WIN32 OR APPLE OR NOT CMAKE_SYSTEM_NAME MATCHES "Linux|BSD")
    message(FATAL_ERROR "${fn}: embedding device code needs an ELF platform (Linux); ${CMAKE_SYSTEM_NAME} is not supported yet. Use the icpx backend (aotwheel_target_sycl) there.")
  endif()
  get_property(langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("C" IN_LIST langs)
    set(embed_ext c)
  elseif("CXX" IN_LIST langs)
    set(embed_ext cpp)
  else()
    message(FATAL_ERROR "${fn}: enable C or CXX first (project(<name> LANGUAGES C)); the embedding is a generated C/C++ file.")
  endif()
  _aotwheel_check_device_code_args(${fn} "${target}" "Pass the OpenCL C kernel files, e.g. SOURCES kernels/vadd.cl")

  # ---- the device list: always from aotwheel's resolver --------------------------------------
  set(jit_args "")
  if(DEFINED ARG_JIT_FALLBACK)
    set(jit_args JIT_FALLBACK "${ARG_JIT_FALLBACK}")
  endif()
  if(DEFINED ARG_DEVLIST)
    if(NOT DEFINED ${ARG_DEVLIST}_JSON)
      message(FATAL_ERROR "${fn}: DEVLIST ${ARG_DEVLIST} is not set. Call aotwheel_resolve_devlist(${ARG_DEVLIST}) first.")
    endif()
    set(dev_names "${${ARG_DEVLIST}}")
    set(dev_ips "${${ARG_DEVLIST}_IPS}")
    set(dev_jit "${${ARG_DEVLIST}_JIT_FALLBACK}")
    set(dev_json "${${ARG_DEVLIST}_JSON}")
    if(DEFINED ARG_JIT_FALLBACK)
      set(dev_jit "${ARG_JIT_FALLBACK}")
    endif()
  else()
    if(DEFINED ARG_DEVICES)
      list(JOIN ARG_DEVICES "," joined)
      aotwheel_resolve_devlist(_aotw DEVLIST "${joined}" ${jit_args})
    elseif("DEVICES" IN_LIST ARG_KEYWORDS_MISSING_VALUES)
      aotwheel_resolve_devlist(_aotw DEVLIST none ${jit_args})  # DEVICES given but empty
    else()
      aotwheel_resolve_devlist(_aotw ${jit_args})
    endif()
    set(dev_names "${_aotw}")
    set(dev_ips "${_aotw_IPS}")
    set(dev_jit "${_aotw_JIT_FALLBACK}")
    set(dev_json "${_aotw_JSON}")
  endif()
  if(NOT dev_names AND NOT dev_jit)
    message(FATAL_ERROR "${fn}: no devices and JIT fallback OFF leaves no device code. Set USE_AOT_DEVLIST or JIT_FALLBACK ON.")
  endif()

  # ---- toolchain (configure fails here, with one line, when a tool is missing) ---------------
  set(work "${CMAKE_CURRENT_BINARY_DIR}/aotwheel/${ARG_NAME}")
  file(MAKE_DIRECTORY "${work}")
  list(JOIN dev_names "," dev_csv)
  _aotwheel_build_step(${fn} configure "--devices=${dev_csv}" --out "${work}/toolchain.json")
  file(WRITE "${work}/devlist.json.in" "${dev_json}\n")
  configure_file("${work}/devlist.json.in" "${work}/devlist.json" COPYONLY)  # touched only on change

  set(step ${_AOTWHEEL_BUILD_COMMAND})
  set(pool_args "")
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
    set(pool_args JOB_POOL aotwheel_ocloc)
  endif()
  set(fatbins "")
  set(spvs "")
  set(embed_images "")
  set(manifest_gen "")
  set(seen_stems "")
  set(manifest_spv "")
  set(gen_sources "")
  set(spv_sources "")
  set(clang_args "")
  foreach(a IN LISTS ARG_CLANG_OPTIONS)
    list(APPEND clang_args "--clang-arg=${a}")
  endforeach()

  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_filename_component(base "${src}" NAME)
    get_filename_component(stem "${src}" NAME_WE)
    if(base MATCHES "[=;]")
      message(FATAL_ERROR "${fn}: kernel source name '${base}' contains '=' or ';'. Rename the file.")
    endif()
    if(stem IN_LIST seen_stems)
      message(FATAL_ERROR "${fn}: two SOURCES share the name '${stem}'; their outputs would collide. Rename one of them.")
    endif()
    list(APPEND seen_stems "${stem}")
    set(spv "${work}/${stem}.spv")
    add_custom_command(
      OUTPUT "${spv}"
      COMMAND ${step} spirv --toolchain "${work}/toolchain.json" --source "${src}" --output "${spv}"
              --depfile "${spv}.d" ${clang_args}
      DEPENDS "${src}" "${work}/toolchain.json"
      DEPFILE "${spv}.d"
      COMMENT "aotwheel: ${base} -> SPIR-V"
      VERBATIM)
    list(APPEND spvs "${spv}")

    if(dev_names)
      set(natives "")
      set(native_args "")
      foreach(dev ip IN ZIP_LISTS dev_names dev_ips)
        set(bin "${work}/${stem}.${dev}.bin")
        # One edge per (source, device): ninja runs the devices of a source in parallel.
        add_custom_command(
          OUTPUT "${bin}"
          COMMAND ${step} ocloc --toolchain "${work}/toolchain.json" --spirv "${spv}" --device "${dev}"
                  --output "${bin}" "--options=${ARG_OPTIONS}"
          DEPENDS "${spv}" "${work}/toolchain.json"
          COMMENT "aotwheel: ocloc ${base} -device ${dev}"
          ${pool_args}
          VERBATIM)
        list(APPEND natives "${bin}")
        list(APPEND native_args --native "${dev}=${ip}=${bin}")
      endforeach()
      set(fatbin "${work}/${stem}.fatbin")
      set(ir_args "")
      if(dev_jit)
        set(ir_args --spirv "${spv}")
      endif()
      add_custom_command(
        OUTPUT "${fatbin}" "${fatbin}.json"
        COMMAND ${step} fatbin --output "${fatbin}" --info "${fatbin}.json" ${ir_args} ${native_args}
        DEPENDS ${natives} "${spv}"
        COMMENT "aotwheel: fat binary for ${base}"
        VERBATIM)
      list(APPEND fatbins "${fatbin}")
      list(APPEND gen_sources "spir64_gen=${base}=${fatbin}")
      list(APPEND manifest_gen --image "spir64_gen=${base}=${fatbin}")
    endif()
    if(dev_jit)
      list(APPEND spv_sources "spir64=${base}=${spv}")
      list(APPEND manifest_spv --image "spir64=${base}=${spv}")
    endif()
  endforeach()

  # Triples in the order the images are embedded: fat binaries first, as the SYCL runtime prefers.
  set(triples "")
  if(dev_names)
    list(APPEND triples spir64_gen)
  endif()
  if(dev_jit)
    list(APPEND triples spir64)
  endif()
  list(JOIN triples "," triples)
  set(tgtsym "${work}/${ARG_NAME}.tgtsym")
  add_custom_command(
    OUTPUT "${tgtsym}"
    COMMAND ${step} tgtsym --output "${tgtsym}" --triples "${triples}" ${spvs}
    DEPENDS ${spvs}
    COMMENT "aotwheel: kernel names for ${ARG_NAME}"
    VERBATIM)

  set(embed_args "")
  foreach(img IN LISTS gen_sources spv_sources)
    list(APPEND embed_args --image "${img}")
  endforeach()
  set(embed_c "${work}/${ARG_NAME}_aot_embed.${embed_ext}")
  _aotwheel_build_step(${fn} embed --name "${ARG_NAME}" --out-c "${embed_c}" --out-h "${work}/${ARG_NAME}_aot.h"
                       --tgtsym "${tgtsym}" ${embed_args})

  set(manifest "${work}/_aot_manifest.json")
  if(dev_jit)
    set(jit_word on)  # JIT_FALLBACK may override what the devlist said
  else()
    set(jit_word off)
  endif()
  add_custom_command(
    OUTPUT "${manifest}"
    COMMAND ${step} manifest --name "${ARG_NAME}" --output "${manifest}" --devlist "${work}/devlist.json"
            --toolchain "${work}/toolchain.json" "--options=${ARG_OPTIONS}" --jit-fallback "${jit_word}" --tgtsym "${tgtsym}" ${manifest_gen} ${manifest_spv}
    DEPENDS ${fatbins} ${spvs} "${tgtsym}" "${work}/devlist.json" "${work}/toolchain.json"
    COMMENT "aotwheel: ${ARG_NAME} manifest"
    VERBATIM)

  # The .incbin'd files are not seen by the C compiler's dependency scan: declare them.
  set_source_files_properties("${embed_c}" PROPERTIES OBJECT_DEPENDS "${fatbins};${spvs};${tgtsym}")
  add_custom_target(${ARG_NAME}_aot_manifest ALL DEPENDS "${manifest}")
  target_sources(${target} PRIVATE "${embed_c}")
  target_include_directories(${target} PRIVATE "${work}")
  set_property(TARGET ${target} APPEND PROPERTY AOTWHEEL_MANIFESTS "${manifest}")

  if(DEFINED ARG_DESTINATION)
    install(FILES "${manifest}" DESTINATION "${ARG_DESTINATION}")
    # The run-time hook <pkg>/_aot.py, rendered by aotwheel.hook when this aotwheel has it.
    if(EXISTS "${_AOTWHEEL_PYTHONPATH}/aotwheel/hook.py")
      if(NOT DEFINED ARG_PACKAGE)
        string(REPLACE "/" "." ARG_PACKAGE "${ARG_DESTINATION}")
      endif()
      get_target_property(ext_name ${target} OUTPUT_NAME)
      if(NOT ext_name)
        set(ext_name "${target}")
      endif()
      set(hook "${work}/_aot.py")
      set(hook_cmd ${_AOTWHEEL_PYTHON_COMMAND})
      list(POP_BACK hook_cmd)
      add_custom_command(
        OUTPUT "${hook}"
        COMMAND ${hook_cmd} aotwheel.hook --extension "${ext_name}" --package "${ARG_PACKAGE}" --out "${hook}"
        DEPENDS "${_AOTWHEEL_PYTHONPATH}/aotwheel/hook.py"
        COMMENT "aotwheel: ${ARG_PACKAGE}._aot hook"
        VERBATIM)
      add_custom_target(${ARG_NAME}_aot_hook ALL DEPENDS "${hook}")
      install(FILES "${hook}" DESTINATION "${ARG_DESTINATION}")
    endif()
  endif()
endfunction()
