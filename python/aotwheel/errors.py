"""Exception types. Every message is one line that says what is wrong and what to do."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: every command imports this module
if TYPE_CHECKING:
    from collections.abc import Callable


class AotwheelError(Exception):
    """Base class of every error aotwheel raises on purpose."""


class DevlistError(AotwheelError, ValueError):
    """A ``USE_AOT_DEVLIST`` value that cannot be resolved.

    ``token`` is the offending token (or ``None`` for whole-input problems) and
    ``suggestions`` the closest valid names.
    """

    def __init__(self, message: str, token: str | None = None, suggestions: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.token = token
        self.suggestions = suggestions


class SettingError(DevlistError):
    """A ``USE_AOT_*`` / ``AOTWHEEL_*`` value that cannot be read (a switch that is not ON/OFF, ...).
    A :class:`DevlistError` too: callers of the resolver caught those for its switches."""


class ToolchainError(AotwheelError):
    """A tool (ocloc, clang, llvm-spirv, icpx, nvcc) is missing, too old or failed."""


class InspectError(AotwheelError):
    """A binary that cannot be read: the message names the file and the offset."""


def run_command(handler: Callable[[], int | None]) -> int:
    """Run a command-line handler: an :class:`AotwheelError` becomes one ``aotwheel: error: …``
    line on stderr and exit status 2 (like argparse's usage errors); otherwise its own status."""
    try:
        return int(handler() or 0)
    except AotwheelError as exc:
        print(f"aotwheel: error: {one_line(str(exc))}", file=sys.stderr)
        return 2


def one_line(text: str) -> str:
    """``text`` with its control characters escaped (``\\n``): a value quoted in an error (a
    device name from a damaged plan) cannot split the error's one line."""
    return "".join(repr(c)[1:-1] if c < " " or c == "\x7f" else c for c in text)
