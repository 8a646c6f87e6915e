"""The Intel :class:`aotwheel.backends.Backend`: what the core asks of this vendor."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aotwheel.backends.capabilities import Capabilities, FormatOption, OpenClImages, ProbeSpec, ToolOption
from aotwheel.backends.intel import INTEL
from aotwheel.backends.intel.variables import OCLOC

# The image kinds (the data model) and the verdicts (intel/judge.py) are imported where a file is
# read or judged: `aotwheel resolve` builds its parser and grammar from this object and does neither.
TYPE_CHECKING = False  # not typing's: `aotwheel resolve` imports this module, and no typing
if TYPE_CHECKING:
    from typing import Any

    from aotwheel.backends.intel.devlist import IntelGrammar
    from aotwheel.backends.protocol import Backend, DevlistPart
    from aotwheel.report import FileReport
    from aotwheel.results import Device, ProbedDevice, Verdict



def _native_tokens(devices: Sequence[ProbedDevice]) -> list[str]:
    """IP versions (``12.60.7``) of the GPUs the probes see."""
    return [d.ip for d in devices if d.ip and d.kind == "gpu"]


def _prepare_probes() -> None:
    from aotwheel.backends.intel.probes.opencl import use_cpu_runtime_if_installed

    use_cpu_runtime_if_installed()


def rebuild_tokens(file: FileReport) -> list[str]:
    """``USE_AOT_DEVLIST`` tokens that rebuild ``file``'s Intel GPU images (names, else IPs)."""
    from aotwheel.backends.intel.kinds import CPU_AOT

    names = [t.name or t.ip for t in file.native_targets if t.vendor == INTEL and t.format != CPU_AOT]
    return list(dict.fromkeys(n for n in names if n))


class IntelToolchain:
    """The installed ocloc: its device table for the grammar, ``aotwheel resolve --toolchain ocloc``,
    ``--list`` and ``aotwheel build toolchain``."""

    tools: tuple[ToolOption, ...] = (ToolOption("ocloc", f"ocloc to check against (default: ${OCLOC.name}, then PATH)"),)  # aotwheel resolve --toolchain ocloc

    def table(self, text: str, tools: Mapping[str, str | None], *, installed: bool = False) -> object | None:
        from aotwheel.backends.intel.devlist import table_for

        return table_for(text, tools, installed=installed)

    def listing(self, tools: Mapping[str, str | None]) -> list[str]:
        from aotwheel.backends.intel.devlist import listing

        return listing(tools)

    def check(self, part: DevlistPart, tool: str, path: str | None) -> None:
        from aotwheel.backends.intel.devlist import IntelPart, check_ocloc

        assert isinstance(part, IntelPart), part  # the resolver hands each toolchain its own vendor's part
        check_ocloc(part, path)

    def report(self, devices: Sequence[str], cache: Any) -> dict[str, object]:
        from aotwheel.backends.intel.buildsteps.toolchain import discover, ocloc_facts
        from aotwheel.errors import ToolchainError

        doc = discover(list(devices), cache).to_dict()
        if doc.get("ocloc") is None:  # no devices asked for: still say which ocloc the builds would use
            try:
                doc["ocloc"], doc["ocloc_version"], _ = ocloc_facts(cache)
            except ToolchainError as exc:
                doc["ocloc_error"] = str(exc)
        return doc


class IntelOpenCl:
    """Intel's drivers load OpenCL programs: the loader's view of an extension's images (the SYCL
    triples of the embedding, build/embed.py) and of a file it is handed (an ocloc fat binary is
    an ar archive), and the driver's choice of image."""

    opencl_images = OpenClImages(native="spir64_gen", ir="spir64", native_magic=b"!<arch>\n", native_name="an ocloc fat binary")
    opencl_runtime = "install Intel's CPU runtime: pip install intel-opencl-rt tbb intel-cmplr-lib-rt"

    def opencl_device(self, cl: Any, platform: Any, device: Any, index: int = 0) -> ProbedDevice:
        from aotwheel.backends.intel.probes import opencl  # looked up per call: tests replace describe

        return opencl.describe(cl, platform, device, index)

    def opencl_verdict(self, targets: Sequence[Any], has_spirv: bool, device: Any) -> Verdict:
        # The lookup of the device's driver release where OpenCL reports it (legacy images are native
        # only before 26.18), else the newest's; the driver itself then picks the member.
        from aotwheel.backends.intel.judge import driver_release
        from aotwheel.backends.intel.rules import decide

        return decide(targets, ["spirv"] if has_spirv else [], device, release=driver_release(getattr(device, "driver", None)))


class IntelBackend:
    name = INTEL
    title = "Intel"
    capabilities = Capabilities(
        probes=(ProbeSpec("levelzero", "aotwheel.backends.intel.probes.levelzero"),
                ProbeSpec("opencl", "aotwheel.backends.intel.probes.opencl"),
                ProbeSpec("sycl", "aotwheel.backends.intel.probes.sycl", heavy="dpctl"),
                ProbeSpec("torchxpu", "aotwheel.backends.intel.probes.torchxpu", heavy="torch")),
        prepare_probes=_prepare_probes,
        native_tokens=_native_tokens,
        toolchain=IntelToolchain(),
        resolve_formats=(FormatOption("ocloc", "ocloc -device list", argument=True), FormatOption("names", "names"),
                         FormatOption("ips", "IP versions")),
        rebuild_tokens=rebuild_tokens,
        opencl=IntelOpenCl(),
        # ``aotwheel selftest --simulate``: compute-runtime's simulation mode loads the images (simulate.selftest).
        simulator="aotwheel.backends.intel.simulate",
        variants="aotwheel.backends.intel.variants",  # wheel-variant vocabulary (aotwheel.variants)
    )

    def owns_token(self, token: str) -> bool:
        from aotwheel.backends.intel.grammar import owns_token

        return owns_token(token)

    def devlist_grammar(self, table: object | None = None) -> IntelGrammar:
        from aotwheel.backends.intel.devlist import IntelGrammar

        return IntelGrammar(table)  # type: ignore[arg-type]

    def owns_device(self, device: Device) -> bool:
        return str(getattr(device, "vendor", "")).lower() == INTEL

    def code_in(self, file: FileReport) -> tuple[list[str], list[str]]:
        from aotwheel.backends.intel.kinds import IR_FORMS

        names = [t.name or t.ip or t.generic or t.core or "unknown" for t in file.native_targets if t.vendor == INTEL]
        return list(dict.fromkeys(names)), [k for k in file.ir if k in IR_FORMS]

    def decide(self, file: FileReport, device: Device, *, binary: str, compatibility: bool = True) -> Verdict:
        from aotwheel.backends.intel.judge import decide

        return decide(file, device, binary=binary, compatibility=compatibility)

    def remedy(self, verdict: Verdict, file: FileReport | None = None) -> str:
        from aotwheel.backends.intel.judge import remedy

        return remedy(verdict, file)

    def jit_message(self, verdict: Verdict, kernels: int | None = None) -> str:
        from aotwheel.backends.intel.judge import jit_message

        return jit_message(verdict, kernels)


BACKEND: Backend = IntelBackend()  # checked against the protocol by mypy
