"""The AMD backend's settings: the variable it reads (its toolchain), and its words in the core's
``AOTWHEEL_DEVICE``. Standard library only, as every backend's settings module
(:func:`aotwheel.backends.settings`): build steps (one process per ninja edge) import it.
"""

from __future__ import annotations

from aotwheel.variables import Variable

# AOTWHEEL_DEVICE / --device: what its tokens are, and examples (--device's help).
DEVICE_KINDS = "AMD target ids (gfx90a, gfx90a:xnack-; AMD GPUs are never probed: no ROCm here)"
DEVICE_EXAMPLES = ("gfx942",)
COMMANDS: tuple[tuple[str, str], ...] = ()  # no aotwheel subcommand of its own
SPIRV_COMPILER: str | None = None  # compiles no SPIR-V

HIPCC = Variable("AOTWHEEL_HIPCC", None, "the hipcc to build HIP device code with")

VARIABLES: tuple[Variable, ...] = (HIPCC,)
