"""The variables the NVIDIA backend reads (its toolchain).

Declared here, beside the modules that read them; :func:`aotwheel.config.all_variables` lists them
with the core's through the registry. Standard library only: build steps (one process per ninja
edge) import this module.
"""

from __future__ import annotations

from aotwheel.variables import Variable

NVCC = Variable("AOTWHEEL_NVCC", None, "the nvcc to build with")

VARIABLES: tuple[Variable, ...] = (NVCC,)
