"""The open toolchain's build steps (standard library only; run by ``python -m aotwheel.buildsteps intel``).

Per kernel source: :mod:`.spirv` (clang + llvm-spirv -> SPIR-V, cached by :mod:`.spvcache`),
:mod:`.groups` (which devices share an ocloc edge), :mod:`.ocloc_job` (one edge), :mod:`.fatbin`
(the ocloc-compatible ar); :mod:`.embed` (the images into the extension, icpx's layout); :mod:`.manifest`
(this backend's part of ``_aot_manifest.json``); :mod:`.toolchain` finds the tools; :mod:`.compile` is
``aotwheel compile``.
"""


def main(argv: list[str] | None = None) -> int:
    """``python -m aotwheel.buildsteps intel <step> ...``: the steps of :mod:`.steps`."""
    from aotwheel.backends.intel.buildsteps.steps import main as steps_main

    return steps_main(argv)


def manifest_part(*, devlist: dict, toolchain: dict, options: str, images: list[dict], records: list[dict]) -> dict:
    """This backend's part of ``_aot_manifest.json`` (:func:`.manifest.manifest_part`)."""
    from aotwheel.backends.intel.buildsteps.manifest import manifest_part as render

    return render(devlist=devlist, toolchain=toolchain, options=options, images=images, records=records)
