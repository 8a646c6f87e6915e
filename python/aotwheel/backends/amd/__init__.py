"""AMD backend: GPUs running HIP code objects from clang offload bundles (``.hip_fatbin``).

Modules: ``targets`` (target ids ``gfx90a:xnack-`` and the processor/feature rule), ``codeobject``
(the code object's ELF header: processor number, xnack/sramecc settings), ``rules`` (the HIP
runtime's choice of code object, as verdicts), ``devlist`` (``gfx*`` in ``USE_AOT_DEVLIST``),
``hipcc`` (the toolchain), ``plan`` and ``buildsteps`` (the hipcc build steps that
``cmake/aotwheel-amd.cmake`` runs), ``reader`` (bundles and code objects in binaries; the bundle
format itself is vendor-free, ``aotwheel.formats.bundle``). No AMD device is probed (no ROCm
runtime here): AMD devices are named with ``--device gfx90a`` / ``AOTWHEEL_DEVICE``.
"""

# Only this backend's name here, on purpose: build steps import sub-modules of this package once
# per edge, and the backend object (``backend.BACKEND``) imports the data model they do not need.
AMD = "amd"  # the registry's key, and the ``vendor`` of this backend's targets, devices and verdicts
