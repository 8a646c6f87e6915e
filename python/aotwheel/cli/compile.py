"""``aotwheel compile``: a SPIR-V module -> native device code for a device list, outside CMake.

The backend that compiles SPIR-V (:func:`aotwheel.backends.spirv_compiler`; it lists this command in
its ``commands``) brings the options (``HELP``, ``DESCRIPTION``, ``add_arguments``), the build and the
report (``run(args, resolve)``); the core hands it its devlist resolver
(:func:`aotwheel.compile.resolve_devlist`), so that no backend imports the resolver.
"""

from __future__ import annotations

import argparse
import importlib


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``aotwheel compile`` to the CLI, with the SPIR-V compiler's options."""
    from aotwheel import backends

    module = importlib.import_module(backends.spirv_compiler())
    p = sub.add_parser("compile", help=module.HELP, description=module.DESCRIPTION)
    module.add_arguments(p)

    def run(args: argparse.Namespace) -> int:
        from aotwheel.compile import resolve_devlist

        return int(module.run(args, resolve_devlist))

    p.set_defaults(handler=run)
