"""The AMD backend's settings: its words in the core's ``AOTWHEEL_DEVICE`` (it reads no variable of
its own). Standard library only, as every backend's settings module (:func:`aotwheel.backends.settings`).
"""

from __future__ import annotations

# AOTWHEEL_DEVICE / --device: what its tokens are, and examples (--device's help).
DEVICE_KINDS = "AMD target ids (gfx90a, gfx90a:xnack-; AMD GPUs are never probed: no ROCm here)"
DEVICE_EXAMPLES = ("gfx942",)
COMMANDS: tuple[tuple[str, str], ...] = ()  # no aotwheel subcommand of its own
SPIRV_COMPILER: str | None = None  # compiles no SPIR-V

VARIABLES = ()
