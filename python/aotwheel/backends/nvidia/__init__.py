"""NVIDIA backend: CUDA GPUs.

Modules: ``targets`` (the ``sm_XY`` / ``compute_XY`` / ``ptx`` grammar, the build plan and the
driver's loading rules), ``fatbin`` (the ``.nv_fatbin`` reader), ``nvcc`` (the toolchain),
``rules`` (verdicts for files and devices), ``selftest`` (run the kernels through the CUDA driver).
``backend`` holds the :class:`aotwheel.backends.Backend` the core calls.

``probe`` asks the CUDA driver for devices; ``buildsteps`` holds the nvcc build steps that
``cmake/aotwheel-cuda.cmake`` runs.
"""

# Only this backend's name here, on purpose: build steps import sub-modules of this package once
# per edge, and the backend object (``backend.BACKEND``) imports the data model they do not need.
NVIDIA = "nvidia"  # the registry's key, and the ``vendor`` of this backend's targets, devices and verdicts
