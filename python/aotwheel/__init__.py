"""aotwheel: ahead-of-time GPU device code for Python wheels.

Public API (imported lazily so that ``import aotwheel`` stays cheap):

- :func:`resolve` / :class:`DevList` -- what a ``USE_AOT_DEVLIST`` value means;
- :func:`inspect` / :class:`Report` -- which device code a binary or wheel carries;
- :func:`check` / :func:`ensure` / :class:`Verdict` / :class:`JITWarning` -- native, JIT or
  unsupported here (:func:`detect_devices` lists the devices);
- :func:`compile_spirv` -- any SPIR-V module -> an ocloc fat binary for a device list;
- :func:`compile_triton` -- Triton kernels as Triton leaves them -> a fat binary per kernel;
- :mod:`aotwheel.opencl` -- ``build_program``: native image, cached JIT result, else SPIR-V.
"""


__version__ = "0.1.0"

_LAZY = {
    "resolve": "aotwheel.devlist",
    "DevList": "aotwheel.devlist",
    "DEFAULT_DEVLIST": "aotwheel.devlist",
    "load_catalog": "aotwheel.backends.intel.catalog",
    "AotwheelError": "aotwheel.errors",
    "DevlistError": "aotwheel.errors",
    "InspectError": "aotwheel.errors",
    "ToolchainError": "aotwheel.errors",
    "inspect": "aotwheel.inspector",
    "Report": "aotwheel.inspector",
    "check": "aotwheel.runtime",
    "ensure": "aotwheel.runtime",
    "JITWarning": "aotwheel.runtime",
    "JITError": "aotwheel.runtime",
    "UnsupportedDeviceError": "aotwheel.runtime",
    "detect_devices": "aotwheel.probe",
    "ProbedDevice": "aotwheel.probe",
    "Verdict": "aotwheel.results",
    "Target": "aotwheel.model",
    "compile_spirv": "aotwheel.compile",
    "compile_triton": "aotwheel.compile",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str) -> object:  # no typing import: `import aotwheel` stays at a few ms
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'aotwheel' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
