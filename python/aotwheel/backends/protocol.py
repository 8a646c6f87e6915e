"""What a vendor backend provides: the :class:`Backend` protocol and its :class:`ProbeSpec`.

Apart from the registry (:mod:`aotwheel.backends`) so that importing a vendor's build step, which
imports the ``aotwheel.backends`` package first, never imports ``typing``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from aotwheel.model import Device, Verdict
    from aotwheel.model import ProbedDevice
    from aotwheel.report import FileReport


class ProbeSpec(NamedTuple):
    """One device probe of a backend, as :mod:`aotwheel.probe` runs it."""

    name: str  # "levelzero", "cuda": the ``backend`` of the devices it reports
    module: str  # defines ``probe() -> aotwheel.probe.ProbeResult``
    heavy: str = ""  # a module that costs seconds to import: probe only once the application imported it
    native: bool = False  # the vendor's own driver: its GPUs replace other runtimes' views of them


class Backend(Protocol):
    """What the core needs from one vendor."""

    name: str  # "intel", "nvidia": the ``vendor`` of its targets, devices and verdicts
    title: str  # "Intel", "NVIDIA": for messages
    probes: tuple[ProbeSpec, ...]  # asked in this order, after the previous backends' probes
    # This vendor's own ``aotwheel`` subcommands: name -> module with ``register(subparsers)``
    # (the CLI imports a module only when its command runs or help lists every command).
    commands: Mapping[str, str]

    def override_devices(self, token: str, raw: str, source: str) -> list[ProbedDevice]:
        """The devices one ``AOTWHEEL_DEVICE`` / ``--device`` token names (``token`` lower-case,
        ``raw`` as typed, ``source`` the variable or flag for messages); raises
        :class:`aotwheel.errors.DevlistError` naming the fix."""
        ...

    def owns_token(self, token: str) -> bool:
        """Whether a (lower-case) ``USE_AOT_DEVLIST`` / ``AOTWHEEL_DEVICE`` token is in this
        vendor's grammar, valid or not (so that a typo gets this vendor's suggestion)."""
        ...

    def owns_device(self, device: Device) -> bool:
        """Whether this vendor's driver loads code on ``device``."""
        ...

    def code_in(self, file: FileReport) -> tuple[list[str], list[str]]:
        """This vendor's native target names and JIT-able IR forms in one inspected binary."""
        ...

    def decide(self, file: FileReport, device: Device, *, binary: str, compatibility: bool = True) -> Verdict:
        """The driver's verdict for ``file`` on ``device`` (a device this backend owns)."""
        ...

    def jit_message(self, verdict: Verdict, kernels: int | None = None) -> str:
        """One line for a ``jit`` verdict: device, what is embedded, how to ship native code."""
        ...

    def remedy(self, verdict: Verdict) -> str:
        """What to rebuild with so that the verdict's device runs native code (``""`` if nothing)."""
        ...

    def prepare_probes(self) -> None:
        """Make this vendor's probes see what the user's runtime sees (Intel: the CPU OpenCL
        runtime installed from PyPI); called by the CLI before it probes."""
        ...

    def cached_native_builds(self, verdicts: Sequence[Verdict], devices: Sequence[Device],
                             files: Mapping[str, FileReport]) -> dict[int, dict[str, int]]:
        """For ``jit`` verdicts of this vendor's devices: by verdict index, how many of the binary's
        IR modules have a native build in this vendor's JIT cache (``{"modules": n, "cached": k}``).
        ``devices`` are the devices the verdicts judged and ``files`` the inspected files by verdict
        ``binary``: nothing is probed or inspected again."""
        ...

    def toolchain_report(self, devices: Sequence[str], cache: Any) -> dict[str, object]:
        """``aotwheel build toolchain``'s fields for this vendor's tools (``{}`` when it builds
        nothing itself); ``devices``: the ``--devices`` names to check it can build, ``cache`` the
        device-code cache (:class:`aotwheel.buildsteps.cache.DeviceCodeCache`)."""
        ...

    def selftest(self, binary: str) -> list[Any]:
        """Run ``binary``'s kernels on this vendor's devices that OpenCL does not reach
        (:class:`aotwheel.selftest.DeviceResult` each); ``[]`` when OpenCL covers them all."""
        ...
