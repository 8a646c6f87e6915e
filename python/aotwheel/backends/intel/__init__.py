"""Intel backend: GPUs through Level Zero / OpenCL, and any OpenCL device that takes SPIR-V.

Modules: ``catalog`` (+ ``catalog.json``: devices, aliases, families, IP versions), ``grammar``
(devlist tokens), ``zebin`` / ``legacy`` / ``gfx`` (native image readers), ``rules`` (the
compute-runtime's image lookup), ``ocloc`` / ``clang`` (the open toolchain). ``backend`` is the
:class:`aotwheel.backends.Backend` the core calls; it imports its helpers lazily.

Sub-packages: ``probes`` (Level Zero, OpenCL, SYCL, torch.xpu device probes) and ``buildsteps`` (the
open toolchain's build steps: clang -> SPIR-V, ocloc jobs, fat binaries, ``aotwheel compile``).
"""

# Only this backend's name here, on purpose: build steps import sub-modules of this package once
# per edge, and the backend object (``backend.BACKEND``) imports the data model they do not need.
INTEL = "intel"  # the registry's key, and the ``vendor`` of this backend's targets, devices and verdicts
