"""The AMD :class:`aotwheel.backends.Backend`: what the core asks of this vendor."""

from __future__ import annotations

import os

from aotwheel.backends.amd import AMD
from aotwheel.backends.amd.variables import HIPCC
from aotwheel.backends.capabilities import Capabilities, ToolOption

TYPE_CHECKING = False  # not typing's: `aotwheel resolve` imports this module, and no typing or results
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from aotwheel.backends.amd.devlist import AmdGrammar
    from aotwheel.backends.protocol import Backend, DevlistPart
    from aotwheel.report import FileReport
    from aotwheel.results import Device, Verdict


def rebuild_tokens(file: FileReport) -> list[str]:
    """``USE_AOT_DEVLIST`` tokens that rebuild ``file``'s code objects (another vendor's remedy
    keeps them): each target id the devlist spells (``gfx90a``, ``gfx90a:xnack-``), else its
    processor (a code object for any feature setting runs on either)."""
    from aotwheel.backends.amd.targets import parse_target_id

    tokens = []
    for name in dict.fromkeys(t.name or "" for t in file.native_targets if t.vendor == AMD):
        tid = parse_target_id(name)
        if tid is not None:
            tokens.append(str(tid) if len(tid.features) <= 1 and not any(tid.features.values()) else tid.processor)
    return list(dict.fromkeys(tokens))


class AmdToolchain:
    """The installed hipcc: ``aotwheel resolve --toolchain hipcc`` and ``aotwheel build toolchain``
    (the grammar itself knows LLVM's processors; which of them hipcc builds, its device libraries say)."""

    tools: tuple[ToolOption, ...] = (ToolOption("hipcc", f"hipcc to check against (default: ${HIPCC.name}, $HIPCC, PATH, "
                                                         "$ROCM_PATH/bin, /opt/rocm/bin)"),)

    def table(self, text: str, tools: Mapping[str, str | None], *, installed: bool = False) -> object | None:
        return None

    def listing(self, tools: Mapping[str, str | None]) -> list[str]:
        import textwrap

        from aotwheel.backends.amd.targets import FEATURES, known_processors

        return textwrap.wrap(f"AMD target ids (hipcc --offload-arch; features {', '.join(f':{f}+ :{f}-' for f in FEATURES)}): "
                             + " ".join(known_processors()), 100, subsequent_indent="  ")

    def check(self, part: DevlistPart, tool: str, path: str | None) -> None:
        from aotwheel.backends.amd.devlist import AmdPart
        from aotwheel.backends.amd.hipcc import find_hipcc, query, require_processors

        assert isinstance(part, AmdPart), part  # the resolver hands each toolchain its own vendor's part
        if part.targets:
            require_processors(query(find_hipcc(path), list(part.targets)), part.targets)

    def report(self, devices: Sequence[str], cache: Any) -> dict[str, object]:
        """hipcc's facts; with AMD ``devices`` asked for, hipcc must build them (else one error
        line), without, a missing hipcc is a field (an Intel-only machine has none)."""
        from aotwheel.backends.amd.hipcc import find_hipcc, query, require_processors
        from aotwheel.errors import ToolchainError

        try:
            hipcc = query(find_hipcc(), list(devices))
        except ToolchainError as exc:
            if devices:
                raise
            return {"hipcc_error": str(exc)}
        require_processors(hipcc, list(devices))
        return {"hipcc": hipcc.path, "hipcc_version": hipcc.version, "hipcc_clang_version": hipcc.clang_version,
                "hipcc_processors": sorted(hipcc.processors, key=lambda p: (len(p), p))}


class AmdBackend:
    name = AMD
    title = "AMD"
    # No probes (no ROCm here: AMD devices are named, --device gfx90a / AOTWHEEL_DEVICE), no
    # self-test (no HIP runtime binding); its builds keep their target ids in other vendors' remedies.
    capabilities = Capabilities(rebuild_tokens=rebuild_tokens, toolchain=AmdToolchain())

    def owns_token(self, token: str) -> bool:
        # Every gfx* token, valid or not, so that a typo gets this backend's message.
        return token.startswith("gfx")

    def devlist_grammar(self, table: object | None = None) -> AmdGrammar:
        from aotwheel.backends.amd.devlist import AmdGrammar

        return AmdGrammar()

    def owns_device(self, device: Device) -> bool:
        # A GPU only: an AMD CPU seen through Intel's OpenCL CPU runtime runs SPIR-V by Intel's rules.
        return str(getattr(device, "vendor", "")).lower() == AMD and getattr(device, "kind", "gpu") == "gpu"

    def code_in(self, file: FileReport) -> tuple[list[str], list[str]]:
        from aotwheel.backends.amd.rules import SPIRV_IR

        names = [t.name or "" for t in file.native_targets if t.vendor == AMD]
        return list(dict.fromkeys(names)), [k for k in file.ir if k == SPIRV_IR]

    def decide(self, file: FileReport, device: Device, *, binary: str, compatibility: bool = True) -> Verdict:
        from dataclasses import replace

        from aotwheel.backends.amd.rules import decide
        from aotwheel.results import NATIVE

        native, ir = self.code_in(file)
        v = decide(native, ir, device, binary=binary)
        return v if v.verdict == NATIVE else replace(v, remedy=self.remedy(v))

    def remedy(self, verdict: Verdict) -> str:
        from aotwheel.backends.amd.targets import parse_target_id

        dev = parse_target_id(verdict.device.split(" ")[0])
        if dev is None:
            return ""
        # Only AMD targets go in --offload-arch (a CUDA library's sm_XY names are no HIP targets).
        own = [t for t in verdict.targets if parse_target_id(t) is not None]
        if not own:
            return f"it carries no HIP code: a HIP build with --offload-arch={dev} would run here"
        archs = list(dict.fromkeys([*own, str(dev)]))
        return f"rebuild the HIP code with --offload-arch={','.join(archs)}"

    def jit_message(self, verdict: Verdict, kernels: int | None = None) -> str:
        binary = os.path.basename((verdict.binary or "").split("!")[-1]) or "the binary"
        line = f"{binary}: {verdict.device} will compile its kernels from AMD SPIR-V at load (embedded code objects: {', '.join(verdict.targets) or 'none'})"
        fix = self.remedy(verdict)
        return line + (f"; {fix} to ship native code for it" if fix else "")


BACKEND: Backend = AmdBackend()  # checked against the protocol by mypy
