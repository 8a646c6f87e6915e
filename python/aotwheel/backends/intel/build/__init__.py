"""The open toolchain's build steps (standard library only; run by ``python -m aotwheel.buildsteps``).

Per kernel source: :mod:`.spirv` (clang + llvm-spirv -> SPIR-V, cached by :mod:`.spvcache`),
:mod:`.groups` (which devices share an ocloc edge), :mod:`.ocloc_job` (one edge), :mod:`.fatbin`
(the ocloc-compatible ar); :mod:`.toolchain` finds the tools; :mod:`.compile` is ``aotwheel compile``.
"""
