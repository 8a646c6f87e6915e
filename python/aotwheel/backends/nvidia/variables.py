"""The NVIDIA backend's settings: the variables it reads (its toolchain), and its words in the
core's ``AOTWHEEL_DEVICE``.

Declared here, beside the modules that read them; :func:`aotwheel.config.all_variables` lists them
with the core's through the registry. Standard library only: build steps (one process per ninja
edge) import this module.
"""

from __future__ import annotations

from aotwheel.variables import Variable

# AOTWHEEL_DEVICE / --device: what its tokens are, and examples (--device's help).
DEVICE_KINDS = "NVIDIA sm_XY"
DEVICE_EXAMPLES = ("sm_90",)
COMMANDS: tuple[tuple[str, str], ...] = ()  # no aotwheel subcommand of its own
SPIRV_COMPILER: str | None = None  # compiles no SPIR-V

NVCC = Variable("AOTWHEEL_NVCC", None, "the nvcc to build with")

VARIABLES: tuple[Variable, ...] = (NVCC,)
