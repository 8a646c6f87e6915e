"""The AMD :class:`aotwheel.backends.Backend`: what the core asks of this vendor."""

from __future__ import annotations

import os

from aotwheel.backends.amd import AMD
from aotwheel.backends.protocol import Backend, Capabilities

TYPE_CHECKING = False  # not typing's: aotwheel resolve imports no typing from a backend object
if TYPE_CHECKING:  # the verdicts are imported where one is made: `aotwheel resolve` makes none
    from aotwheel.backends.amd.devlist import AmdGrammar
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


class AmdBackend:
    name = AMD
    title = "AMD"
    # No probes (no ROCm here: AMD devices are named, --device gfx90a / AOTWHEEL_DEVICE), no
    # self-test (no HIP runtime binding); its builds keep their target ids in other vendors' remedies.
    capabilities = Capabilities(rebuild_tokens=rebuild_tokens)

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
