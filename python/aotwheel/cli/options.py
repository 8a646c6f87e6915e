"""Options several commands share, spelled once: ``--devlist``, the one name of a device-list
option (``check``, ``devices``, ``compile``, ``build toolchain``, ``build warm``); the older
spellings of each command stay as hidden aliases, and messages name the spelling used."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # not typing's: `aotwheel check` imports this module
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

DEVLIST = "--devlist"


class _Spelled(argparse.Action):
    """Stores the value, and the option string it came with in ``<dest>_option``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: str | Sequence[Any] | None,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_option", option_string or DEVLIST)


def devlist_option(parser: argparse.ArgumentParser, *, help: str, old: tuple[str, ...] = (), dest: str = "devlist") -> None:
    """``--devlist LIST`` on ``parser``; ``old`` spellings parse the same, unlisted in help."""
    parser.add_argument(DEVLIST, dest=dest, metavar="LIST", default=None, action=_Spelled, help=help)
    for spelling in old:
        parser.add_argument(spelling, dest=dest, default=None, action=_Spelled, help=argparse.SUPPRESS)
    parser.set_defaults(**{f"{dest}_option": DEVLIST})
