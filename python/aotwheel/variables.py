"""The core's ``USE_AOT_*`` / ``AOTWHEEL_*`` variables, their defaults, and how a value is read.

The core's names, defaults and the one vocabulary of switches (:func:`flag`) live here and nowhere
else; each backend declares the variables of its own tools and probes as :class:`Variable` s in its
package's ``variables`` module (``aotwheel.backends.intel.variables``), with its words in
``AOTWHEEL_DEVICE`` and, for the default backend, the default device list. :func:`aotwheel.config.all_variables` lists them all (through the
registry) and :mod:`aotwheel.config` builds the typed settings object from them. Standard library
only, and no ``dataclasses`` or ``typing``: every build step (one process per ninja edge) imports
this module.
"""

from __future__ import annotations

import os
from collections import namedtuple

from aotwheel.errors import SettingError

# Not typing.TYPE_CHECKING: every build step imports this module and must not pay for typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


class Variable(namedtuple("Variable", ("name", "default", "help"))):
    """One environment variable: its name, its default (``None``: unset) and what it does.

    A named tuple, not a dataclass: a backend's settings module, which ``--help`` and every build
    step import, loads no ``dataclasses`` or ``typing`` (tests/test_settings.py).
    :meth:`given` and :meth:`get` are how a declared variable is read (tests/test_settings_reads.py
    holds that no module reads one from a mapping directly): :class:`aotwheel.config.Config` reads
    every one with them, and a module that must not import :mod:`aotwheel.config` (a build step,
    the inspector) or needs one value only reads its own."""

    __slots__ = ()

    def given(self, env: Mapping[str, str] | None = None) -> str | None:
        """Its text in ``env`` (default: this process's environment), stripped; ``None`` when unset
        or empty (an empty value counts as unset everywhere), whatever the default."""
        return (os.environ if env is None else env).get(self.name, "").strip() or None

    def get(self, env: Mapping[str, str] | None = None) -> str | None:
        """Its text in ``env`` (:meth:`given`), else its default."""
        return self.given(env) or self.default

    def __repr__(self) -> str:
        return f"Variable({self.name!r}, {self.default!r})"


# Build: the device list and how it is built (CMake variables first, then the environment).
# USE_AOT_DEVLIST's default is the default backend's DEFAULT_DEVLIST (aotwheel.config.DEFAULT_DEVLIST).
DEVLIST = Variable("USE_AOT_DEVLIST", None, "devices to compile native code for (aotwheel resolve --list)")
TORCH_ARCH_LIST = Variable("TORCH_XPU_ARCH_LIST", None,
                           "PyTorch's device list: used when USE_AOT_DEVLIST is unset or empty")
FIELD_DEFAULTS = Variable("USE_AOT_FIELD_DEFAULTS", "ON",
                          "pass the device compilers' options IPEX and torch-xpu-ops pass (fp64 poisoning, auto large GRF, > 4 GB buffers; ON/OFF)")
JIT_FALLBACK = Variable("USE_AOT_JIT_FALLBACK", "ON", "keep SPIR-V / PTX for devices without native code (ON/OFF)")
COMPRESS = Variable("USE_AOT_COMPRESS", "ON",
                    "embed device images zstd-compressed: the open toolchain's, one frame per image, and icpx's "
                    "--offload-compress (ON/OFF; CMake variable, then environment; a call's COMPRESS wins)")
# Build: caches and scale-out (the tools' variables are their backends').
CACHE_DIR = Variable("AOTWHEEL_CACHE_DIR", None, "build cache folder ('off' disables it)")
REMOTE_CACHE = Variable("AOTWHEEL_REMOTE_CACHE", None,
                        "remote device-code stores behind the local cache, '|'-separated: http(s):// (WebDAV) or redis://")
REMOTE_CACHE_READONLY = Variable("AOTWHEEL_REMOTE_CACHE_READONLY", "OFF", "read the remote stores but never write them (ON/OFF)")
REMOTE_CACHE_TOKEN = Variable("AOTWHEEL_REMOTE_CACHE_TOKEN", None, "bearer token (HTTP) or password (Redis) for the remote stores")
REMOTE_CACHE_TIMEOUT = Variable("AOTWHEEL_REMOTE_CACHE_TIMEOUT", None,
                                "remote time bounds in seconds, 'connect[,read[,request[,step]]]' (default 1,10,20,40)")
REMOTE_CACHE_SECRET = Variable("AOTWHEEL_REMOTE_CACHE_SECRET", None,
                               "shared secret (16+ characters) that signs remote objects (HMAC); unsigned or foreign objects are then misses")
SHARD = Variable("AOTWHEEL_SHARD", None, "build only slice i of n of the device jobs ('i/n'), to warm the remote cache")
# Run time.
JIT = Variable("AOTWHEEL_JIT", "warn", "what a coming JIT compilation does at run time: warn, error or ignore")
DEVICE = Variable("AOTWHEEL_DEVICE", None, "devices to assume instead of probing: any backend's device names, or cpu (aotwheel check --help)")
JIT_CACHE_DIR = Variable("AOTWHEEL_JIT_CACHE_DIR", None,
                         "per-user cache of JIT results for aotwheel.opencl ('off' disables it; default ~/.cache/aotwheel/jit)")
NO_FASTSCAN = Variable("AOTWHEEL_NO_FASTSCAN", "OFF",
                       "ON: inspect with the pure-Python readers only, not the C scanner aotwheel._fastscan (same answers)")

# Configure: the check of undeclared names close to these (aotwheel.varcheck).
ALLOW_UNDECLARED = Variable("AOTWHEEL_ALLOW_UNDECLARED", None,
                            "names (comma-separated, or *) of USE_AOT_*, AOTWHEEL_* or TORCH_XPU_* variables that are not "
                            "aotwheel's though close to one of its names: configure lets them be")

# The core's variables (aotwheel.config.all_variables adds every registered backend's).
VARIABLES: tuple[Variable, ...] = (
    DEVLIST, TORCH_ARCH_LIST, FIELD_DEFAULTS, JIT_FALLBACK, COMPRESS, CACHE_DIR,
    REMOTE_CACHE, REMOTE_CACHE_READONLY, REMOTE_CACHE_TOKEN, REMOTE_CACHE_TIMEOUT, REMOTE_CACHE_SECRET, SHARD,
    JIT, DEVICE, JIT_CACHE_DIR, NO_FASTSCAN, ALLOW_UNDECLARED,
)

# Names that are this project's but read elsewhere than its Python: by its CMake files, or by its
# own CI and tests. Declared so that configure's check (aotwheel.varcheck) knows them.
ALLOW_UNBUILT = Variable("AOTWHEEL_ALLOW_UNBUILT", None,
                         "vendors (intel, nvidia, ON) a device list may name without a build step for them (CMake reads it)")
# PyTorch's and IPEX's build parallelism, which aotwheel_target_sycl follows as they do.
MAX_JOBS = Variable("MAX_JOBS", None,
                    "icpx's -fsycl-max-parallel-link-jobs default when at most the CPU count (CMake reads it from the environment)")
OTHER_NAMES: tuple[Variable, ...] = (
    ALLOW_UNBUILT, MAX_JOBS,
    Variable("AOTWHEEL_TOOLCHAIN", None, "ci/setup.sh: 'current' installs the current toolchain (Debian sid/testing)"),
    Variable("AOTWHEEL_TEST_WHEEL", None, "tests: the aotwheel wheel ci/test.sh built, used instead of building one"),
    Variable("AOTWHEEL_FASTSCAN_EXAMPLES", None, "tests: how many examples the C scanner's property tests draw"),
    Variable("AOTWHEEL_CI_LANES", None, ".ci/run: the toolchain lanes to run (bookworm, sid)"),
    Variable("AOTWHEEL_CI_CACHE", None, ".ci/run: where the debootstrap results are cached"),
    Variable("AOTWHEEL_CI_REFRESH", None, ".ci/run: rebuild the cached debootstrap results"),
    Variable("AOTWHEEL_CI_MIRROR", None, ".ci/run: the Debian mirror"),
    Variable("AOTWHEEL_CI_BUDGET_S", None, ".ci/run: the time a lane may take"),
)
# What CMake hands the build steps in their settings file (read at configure time, fixed for the build).
BUILD_STEP_SETTINGS: tuple[Variable, ...] = (REMOTE_CACHE, REMOTE_CACHE_READONLY, REMOTE_CACHE_TOKEN, REMOTE_CACHE_TIMEOUT,
                                             REMOTE_CACHE_SECRET, SHARD)

# The one vocabulary of switches, CMake's: ON/OFF, 1/0, yes/no, true/false, y/n (any case).
TRUE_WORDS = ("1", "on", "yes", "true", "y")
FALSE_WORDS = ("0", "off", "no", "false", "n")


def flag(value: str | None, default: bool = True, *, name: str = JIT_FALLBACK.name) -> bool:
    """A switch's value; empty or unset gives ``default``; anything else is one error naming ``name``."""
    text = (value or "").strip().lower()
    if not text:
        return default
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise SettingError(f"{name}={value!r} is not a boolean; use ON or OFF")


# A folder variable's words for "no folder": the cache is off.
DISABLED_WORDS = ("off", "0", "false", "no", "none", "disable", "disabled")


def off(value: str | None) -> bool:
    """Unset, empty or a false word; never raises (for switches read while inspecting, where a
    typo must not turn into an error)."""
    return (value or "").strip().lower() in ("", *FALSE_WORDS)


JIT_POLICIES = ("warn", "error", "ignore")


def jit_policy(value: str | None) -> str:
    """A JIT policy; empty or unset gives ``warn`` (here, not in :mod:`aotwheel.config`: the run-time
    check reads it without the build settings)."""
    text = (value or "").strip().lower() or str(JIT.default)
    if text not in JIT_POLICIES:
        raise SettingError(f"{JIT.name}={text!r} is not a policy; use one of warn, error, ignore")
    return text
