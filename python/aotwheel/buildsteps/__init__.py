"""Build-time helpers that CMake's ``aotwheel_add_device_code`` runs (standard library only).

Pipeline per kernel source: :mod:`.spirv` (clang + llvm-spirv -> SPIR-V), one :mod:`.ocloc_job`
per device (looked up in :mod:`.cache` first), :mod:`.fatbin` (the ocloc-compatible ar),
:mod:`.embed` (a C file that ``.incbin``s the images with a ``.tgtimg`` table) and
:mod:`.manifest` (``_aot_manifest.json``). ``python -m aotwheel.buildsteps --help`` lists the steps.
"""
