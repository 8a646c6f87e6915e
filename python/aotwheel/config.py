"""The settings model: every ``USE_AOT_*`` / ``AOTWHEEL_*`` value, read once from a mapping.

An entry point (the CLI, ``aotwheel.check``, the setuptools command, a build step's main) reads a
:class:`Config` from a mapping it is given (``os.environ`` by default) and hands it down; nothing
here or downstream writes to ``os.environ``. The variables themselves (names, defaults, the one
vocabulary of switches) are declared in :mod:`aotwheel.variables` (the core's) and in each backend's
settings module (:func:`aotwheel.backends.settings`), which build steps import alone.

A core service above the registry (it asks it for every backend's variables and the default
device list): backends and build steps never import this module; they read their own variables
through their declarations (:meth:`aotwheel.variables.Variable.get`), as :class:`Config` does.

CMake reads ``USE_AOT_DEVLIST`` / ``TORCH_XPU_ARCH_LIST`` / ``USE_AOT_JIT_FALLBACK`` /
``USE_AOT_FIELD_DEFAULTS`` as CMake variables at configure time and passes them to the Python
resolver (``USE_AOT_COMPRESS`` too: the resolver passes its word, else this default, to CMake as
``compress`` in its JSON); the names and
defaults here are the ones it must agree with.

The device list comes from the first of these that is set and not empty (:func:`devlist_choice`):
``USE_AOT_DEVLIST`` (CMake variable, then environment), ``TORCH_XPU_ARCH_LIST`` (PyTorch's
variable, read by torch-xpu-ops, IPEX and SyclExtension; CMake variable, then environment), then
:data:`DEFAULT_DEVLIST` (the default backend's). An empty value counts as unset everywhere, as torch-xpu-ops and IPEX
treat an empty ``TORCH_XPU_ARCH_LIST``; ``none`` is the way to ask for JIT only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from aotwheel import backends
from aotwheel.variables import (  # noqa: F401  (re-exported: the names callers know config by)
    ALLOW_UNDECLARED,
    BUILD_STEP_SETTINGS,
    CACHE_DIR,
    COMPRESS,
    DEVICE,
    DEVLIST,
    FIELD_DEFAULTS,
    JIT,
    JIT_CACHE_DIR,
    JIT_FALLBACK,
    JIT_POLICIES,
    NO_FASTSCAN,
    REMOTE_CACHE,
    REMOTE_CACHE_READONLY,
    REMOTE_CACHE_SECRET,
    REMOTE_CACHE_TIMEOUT,
    REMOTE_CACHE_TOKEN,
    SHARD,
    TORCH_ARCH_LIST,
    VARIABLES,
    Variable,
    flag,
    jit_policy,
    off,
)

DEFAULT_DEVLIST = str(backends.default_settings().DEFAULT_DEVLIST)  # the default backend's


def backend_variables() -> tuple[Variable, ...]:
    """The variables every registered backend declares (its settings module's ``VARIABLES``), in registry order."""
    return tuple(v for name in backends.names() for v in backends.settings(name).VARIABLES)


def all_variables() -> tuple[Variable, ...]:
    """Every variable aotwheel reads: the core's (:data:`~aotwheel.variables.VARIABLES`), then the backends'."""
    return (*VARIABLES, *backend_variables())


def devlist_choice(env: Mapping[str, str], devlist: str | None = None,
                   torch_arch_list: str | None = None) -> tuple[str, str]:
    """``(device list, where it came from)``: ``devlist`` (an explicit value, e.g. CMake's
    ``USE_AOT_DEVLIST`` variable), ``$USE_AOT_DEVLIST``, ``torch_arch_list`` (CMake's
    ``TORCH_XPU_ARCH_LIST`` variable), ``$TORCH_XPU_ARCH_LIST``, then the default; the first that
    is not empty or blank wins."""
    for value, where in ((devlist, DEVLIST.name), (DEVLIST.given(env), f"{DEVLIST.name} (environment)"),
                         (torch_arch_list, TORCH_ARCH_LIST.name),
                         (TORCH_ARCH_LIST.given(env), f"{TORCH_ARCH_LIST.name} (environment)")):
        if value is not None and value.strip():
            return value, where
    return DEFAULT_DEVLIST, "the default"


@dataclass(frozen=True)
class Config:
    """The values of every variable of :func:`all_variables`; empty strings count as unset
    (``USE_AOT_DEVLIST= cmd``). The core's switches are booleans, the rest text (``None``: unset);
    the backends' variables are text in :attr:`backend_values` (:meth:`value`), each backend
    reading its own words."""

    devlist: str = DEFAULT_DEVLIST
    devlist_given: bool = False  # USE_AOT_DEVLIST was set (not the default)
    devlist_source: str = "the default"
    field_defaults: bool = True
    jit_fallback: bool = True
    compress: bool = True
    jit: str = "warn"
    device: str | None = None
    cache_dir: str | None = None
    remote_cache: str | None = None
    remote_cache_readonly: bool = False
    remote_cache_token: str | None = None
    remote_cache_timeout: str | None = None
    remote_cache_secret: str | None = field(default=None, repr=False)  # signs remote objects: never shown
    shard: str | None = None
    jit_cache_dir: str | None = None
    no_fastscan: bool = False
    allow_undeclared: str | None = None
    # The backends' variables by name (their tools, probes, scale-out), defaults applied.
    backend_values: Mapping[str, str | None] = field(default_factory=lambda: {v.name: v.default for v in backend_variables()})

    def value(self, var: Variable) -> str | None:
        """A backend variable's text (``None``: unset and no default); ``KeyError`` for a variable no backend declares."""
        return self.backend_values[var.name]

    @classmethod
    def from_mapping(cls, env: Mapping[str, str]) -> Config:
        """Read every variable from ``env`` (validated: a bad value raises one clear error)."""

        def get(var: Variable) -> str | None:
            return var.get(env)

        def switch(var: Variable) -> bool:
            return flag(var.given(env), flag(var.default, name=var.name), name=var.name)

        devlist, source = devlist_choice(env)
        return cls(
            devlist=devlist,
            devlist_source=source,
            devlist_given=source != "the default",
            field_defaults=switch(FIELD_DEFAULTS),
            jit_fallback=switch(JIT_FALLBACK),
            compress=switch(COMPRESS),
            jit=jit_policy(get(JIT)),
            device=get(DEVICE),
            cache_dir=get(CACHE_DIR),
            remote_cache=get(REMOTE_CACHE),
            remote_cache_readonly=switch(REMOTE_CACHE_READONLY),
            remote_cache_token=get(REMOTE_CACHE_TOKEN),
            remote_cache_timeout=get(REMOTE_CACHE_TIMEOUT),
            remote_cache_secret=get(REMOTE_CACHE_SECRET),
            shard=get(SHARD),
            jit_cache_dir=get(JIT_CACHE_DIR),
            no_fastscan=not off(NO_FASTSCAN.given(env)),
            allow_undeclared=get(ALLOW_UNDECLARED),
            backend_values={v.name: get(v) for v in backend_variables()},
        )


def read(env: Mapping[str, str] | None = None) -> Config:
    """The configuration from ``env``, else from this process's environment (read, never written)."""
    return Config.from_mapping(os.environ if env is None else env)
