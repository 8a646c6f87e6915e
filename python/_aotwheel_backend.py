"""aotwheel's own PEP 517 build backend: scikit-build-core, after one early look at USE_AOT_DEVLIST.

A typo such as ``USE_AOT_DEVLIST=pcv pip wheel .`` would otherwise stop CMake's configure in the
middle of its output, the resolver's message wrapped over two lines. Checked here first, the
message is the first (and only) line of the build output pip shows. Only what can be judged
without CMake is checked (``native`` and JIT-fallback settings are left to configure), so this
never refuses a list that CMake would accept. Not shipped in the wheel (wheel.packages).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from scikit_build_core import build as _skbuild
from scikit_build_core.build import *  # noqa: F403 -- every hook scikit-build-core offers

_DEVLIST_SETTING = "cmake.define.USE_AOT_DEVLIST"


class _Deferred(Exception):
    """``native`` needs the device probes: CMake's resolver run decides."""


def _defer() -> list[str]:
    raise _Deferred


def _check_devlist(config_settings: dict[str, Any] | None) -> None:
    from aotwheel.config import all_variables, read
    from aotwheel.errors import SettingError
    from aotwheel.varcheck import check

    try:  # a misspelled variable (USE_AOT_DEV_LIST=...) would build the default list: configure's check, first
        check({n: "environment" for n in os.environ}, (v.name for v in all_variables()), read().allow_undeclared)
    except SettingError as exc:
        print(f"aotwheel: error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    settings = config_settings or {}
    if any("USE_AOT_DEVLIST" in key and key != _DEVLIST_SETTING for key in settings):
        return  # another spelling (cmake.args, ...): configure judges it
    text = settings.get(_DEVLIST_SETTING, os.environ.get("USE_AOT_DEVLIST", ""))
    if not isinstance(text, str) or text == "":
        return  # unset or empty: the default list
    from aotwheel.devlist import resolve
    from aotwheel.errors import DevlistError

    try:
        resolve(text, jit_fallback=True, detect=_defer)
    except _Deferred:
        return
    except DevlistError as exc:
        print(f"aotwheel: error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None) -> str:
    _check_devlist(config_settings)
    from aotwheel.pep517 import locked  # concurrent builds of this checkout take turns (build/{wheel_tag})

    with locked():
        return _skbuild.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None) -> str:
    _check_devlist(config_settings)
    from aotwheel.pep517 import locked

    with locked():
        return _skbuild.build_editable(wheel_directory, config_settings, metadata_directory)


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    _check_devlist(config_settings)  # pip's first call: stop before anything is downloaded
    return _skbuild.get_requires_for_build_wheel(config_settings)


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    _check_devlist(config_settings)
    return _skbuild.get_requires_for_build_editable(config_settings)
