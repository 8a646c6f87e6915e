"""The open toolchain's build steps (standard library only; run by ``python -m aotwheel.buildsteps intel``).

Per kernel source: :mod:`.spirv` (clang + llvm-spirv -> SPIR-V, cached by :mod:`.spvcache`),
:mod:`.groups` (which devices share an ocloc edge), :mod:`.ocloc_job` (one edge), :mod:`.fatbin`
(the ocloc-compatible ar); :mod:`.toolchain` finds the tools; :mod:`.compile` is ``aotwheel compile``.
"""


def main(argv: list[str] | None = None) -> int:
    """``python -m aotwheel.buildsteps intel <step> ...``: the steps of :mod:`.steps`."""
    from aotwheel.backends.intel.build.steps import main as steps_main

    return steps_main(argv)
