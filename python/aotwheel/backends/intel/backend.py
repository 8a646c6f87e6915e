"""The Intel :class:`aotwheel.backends.Backend`: what the core asks of this vendor."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from aotwheel.backends.intel import INTEL
from aotwheel.backends.intel.variables import OCLOC
from aotwheel.backends.protocol import Backend, Capabilities, FormatOption, OpenClImages, ProbeSpec, ToolOption

# The verdicts (aotwheel.results) and image kinds (the data model) are imported where a verdict is
# made: `aotwheel resolve` builds its parser and grammar from this object and makes none.
TYPE_CHECKING = False  # not typing's: aotwheel resolve imports no typing from a backend object
if TYPE_CHECKING:
    from typing import Any

    from aotwheel.backends.intel.devlist import IntelGrammar
    from aotwheel.backends.protocol import DevlistPart
    from aotwheel.report import FileReport
    from aotwheel.results import Device, ProbedDevice, Verdict

IR_FORMS = ("spirv", "llvmbc")  # what an OpenCL / Level Zero driver can JIT-compile


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
        names = [t.name or t.ip or t.generic or t.core or "unknown" for t in file.native_targets if t.vendor == INTEL]
        return list(dict.fromkeys(names)), [k for k in file.ir if k in IR_FORMS]

    def decide(self, file: FileReport, device: Device, *, binary: str, compatibility: bool = True) -> Verdict:
        from aotwheel.backends.intel.kinds import CPU_AOT
        from aotwheel.backends.intel.rules import decide
        from aotwheel.results import UNSUPPORTED, Verdict

        if device.kind == "cpu":
            from aotwheel.backends.intel.cpu_rules import decide_cpu

            return self._finish(decide_cpu(file, device, binary=binary), file)
        # CPU AOT images never serve a GPU.
        targets = [t for t in file.native_targets if t.vendor == INTEL and t.format != CPU_AOT]
        ir = [k for k in file.ir if k in IR_FORMS]
        if not targets and not ir and any(t.vendor == INTEL for t in file.native_targets):
            label = str(getattr(device, "label", None) or getattr(device, "name", "device"))
            return self._finish(Verdict(label, device.ip, UNSUPPORTED, None,
                                   "unsupported: the binary carries only CPU code (spir64_x86_64) and no SPIR-V", "no-match", binary,
                                   device.kind, ("spir64_x86_64",)))
        if not compatibility:
            v = decide(targets, ir, device, binary=binary, compatibility=False)
        else:
            v = _shared(_per_driver_version(targets, ir, device, binary), targets)
        return self._finish(_opencl_bindless(v, targets, ir, device, file, binary), file)

    def _finish(self, v: Verdict, file: FileReport | None = None) -> Verdict:
        from dataclasses import replace

        from aotwheel.results import NATIVE

        v = replace(v, vendor=INTEL, remedy="" if v.verdict == NATIVE else self.remedy(v, file))
        if file is not None and v.verdict == NATIVE:
            # Kernels that exist only as spir64 SPIR-V are compiled at first use even here.
            missing = file.ir_kernels_missing_from.get("spir64_x86_64" if v.kind == "cpu" else "spir64_gen", 0)
            if missing:
                v = replace(v, jit_kernels=missing, reason=f"{v.reason}; {missing} kernel{'s' if missing != 1 else ''} exist only as "
                            "spir64 SPIR-V images and are JIT-compiled at first use")
        return v

    def covering_devlist(self, verdict: Verdict, file: FileReport | None = None) -> str | None:
        """``USE_AOT_DEVLIST`` value that adds the verdict's device to the binary's targets (with
        ``file``: other vendors' targets kept too)."""
        from aotwheel.backends.intel.catalog import load_catalog

        catalog = load_catalog()
        dev = catalog.by_ip(verdict.ip) if verdict.ip else None
        if dev is None:
            return None
        from aotwheel import backends

        def token(name: str) -> bool:  # a devlist word: not a target known by its core alone ("XE_HPC_CORE image")
            if catalog.by_name(name) or catalog.by_ip(name):
                return True
            owner = backends.for_token(name.lower())
            return owner is not None and owner.name != INTEL  # another vendor's target (sm_90)

        names = [n for n in verdict.targets if n and token(n)]
        if dev.name not in names:
            names.append(dev.name)
        if file is not None:
            from aotwheel.backends import rebuild_devlist

            return rebuild_devlist(file, INTEL, names)
        return ",".join(names)

    def remedy(self, verdict: Verdict, file: FileReport | None = None) -> str:
        from aotwheel.backends.intel.kinds import LEGACY
        from aotwheel.results import JIT, NATIVE, UNSUPPORTED

        if verdict.kind == "gpu" and file is not None and verdict.verdict != NATIVE and \
                any(t.vendor == INTEL and t.format == LEGACY for t in file.native_targets):
            # The images are there but of a format newer drivers no longer run: rebuild them as zebin.
            from aotwheel.backends.intel.variables import IMAGE_FORMAT

            return (f"rebuild with zebin images (aotwheel's default: {IMAGE_FORMAT.name} unset; ocloc --format zebin): "
                    "compute-runtime 26.18 and newer run no legacy patch-token image natively")
        devlist = self.covering_devlist(verdict, file)
        if devlist:
            from aotwheel.backends.intel.ocloc import build_note

            keep_ir = verdict.verdict == UNSUPPORTED and verdict.rule != "other-vendor"
            return f"rebuild with USE_AOT_DEVLIST={devlist}{build_note(devlist.split(','))}" + (" (or keep JIT fallback on)" if keep_ir else "")
        if verdict.kind == "cpu":
            if verdict.rule == "cpu-options":
                return ("rebuild without GPU-only options for the spir64 target (pass them to spir64_gen only: -Xs applies to every "
                        "SPIR-V target), or add -fsycl-targets=spir64_x86_64")
            if verdict.verdict == NATIVE:
                return ""
            if file is not None and not _sycl_built(file):  # an .spv, an ocloc fat binary, an open-toolchain extension
                return (CPU_JIT_NOTE if verdict.verdict == JIT else
                        "keep JIT fallback on (USE_AOT_JIT_FALLBACK=ON, the default): the CPU runs only the SPIR-V, which it compiles")
            return "rebuild with -fsycl-targets=spir64_x86_64 (native CPU code) or keep a spir64 SPIR-V image"
        return "rebuild with JIT fallback on (SPIR-V kept)" if verdict.verdict == UNSUPPORTED else ""

    def jit_message(self, verdict: Verdict, kernels: int | None = None) -> str:
        if verdict.jit_kernels:
            kernels = verdict.jit_kernels
            binary = os.path.basename((verdict.binary or "").split("!")[-1]) or "the binary"
            return (f"{binary}: {verdict.device} runs native code but will JIT-compile {kernels} kernel{'s' if kernels != 1 else ''} "
                    "that exist only as spir64 SPIR-V images; build them for the native target too")
        what = f"{kernels} kernel{'s' if kernels != 1 else ''}" if kernels else "its kernels"
        binary = os.path.basename((verdict.binary or "").split("!")[-1]) or "the binary"
        embedded = ", ".join(verdict.targets) or "none (SPIR-V only)"
        line = f"{binary}: {verdict.device} will JIT-compile {what} from SPIR-V at first use (embedded native targets: {embedded})"
        devlist = self.covering_devlist(verdict)
        if verdict.remedy.startswith("rebuild with zebin images"):  # _finish()'s, for legacy images
            line += f"; {verdict.remedy}"
        elif verdict.remedy.startswith("rebuild with USE_AOT_DEVLIST="):  # _finish()'s, every vendor's targets kept
            line += f"; {verdict.remedy} to ship native code for it"
        elif devlist:
            from aotwheel.backends.intel.ocloc import build_note

            line += f"; rebuild with USE_AOT_DEVLIST={devlist}{build_note(devlist.split(','))} to ship native code for it"
        elif verdict.kind == "cpu" and verdict.remedy == CPU_JIT_NOTE:
            line += f"; {CPU_JIT_NOTE}"
        elif verdict.kind == "cpu":
            line += "; icpx -fsycl-targets=spir64_x86_64 ships native CPU code (aotwheel's USE_AOT_DEVLIST covers GPUs only)"
        return line

# What a CPU's JIT of a build without icpx comes to: no native CPU code can be asked of aotwheel's
# open toolchain (ocloc builds GPUs), and the JIT result outlives the process.
CPU_JIT_NOTE = ("a CPU always compiles SPIR-V: aotwheel's open toolchain builds no native CPU code (USE_AOT_DEVLIST names GPUs); "
                "aotwheel.opencl keeps the result in its JIT cache, so only the first process compiles")


def _sycl_built(file: FileReport) -> bool:
    """Whether ``file``'s images are the SYCL runtime's to load (it links ``libsycl.so``: icpx built
    it, so icpx's CPU target is the remedy). aotwheel's open toolchain links no SYCL runtime; a
    .spv, a fat binary or a wheel member reads as not SYCL."""
    from aotwheel.formats.dynamic import needs

    return needs((file.path or "").split("!")[0], "libsycl.so")


def driver_release(text: str | None) -> tuple[int, int] | None:
    """``(25, 44)`` from a compute-runtime version such as ``25.44.36015.5`` (OpenCL's
    driver_version); None for anything else (Level Zero's packed numbers, other vendors)."""
    import re

    m = re.match(r"\s*(\d{2})\.(\d{2})\.\d+", text or "")
    return (int(m[1]), int(m[2])) if m else None


def _shared(v: Verdict, targets: list[Any]) -> Verdict:
    """A native verdict through an image built for another device: say it is one shared image (a
    generic member such as 64.bmg, which aotwheel's coverage plan writes for several devices)."""
    from aotwheel.results import NATIVE

    if v.verdict != NATIVE:
        return v
    hit = next((t for t in targets if (t.member or "").rstrip("/") == v.image), None)
    if hit is None or not hit.generic or not hit.name or hit.ip == v.ip:
        return v
    from dataclasses import replace

    return replace(v, reason=f"{v.reason}; {v.image} is one image shared by the {hit.generic} devices ({hit.name}'s build: "
                             f"aotwheel's native-coverage plan, USE_AOT_MIN_DRIVER, names it so that one build serves them)")


def _opencl_bindless(v: Verdict, targets: list[Any], ir: list[str], device: Any, file: FileReport, binary: str) -> Verdict:
    """A native verdict for a device the OpenCL probe reports, whose chosen zebin has bindless
    kernels: compute-runtime's OpenCL (24.22 and newer) rebuilds such a program from its IR, and
    refuses it without (``addressing``); Level Zero runs it as it is."""
    from aotwheel.backends.intel import addressing
    from aotwheel.results import NATIVE, UNSUPPORTED

    if v.verdict != NATIVE or getattr(device, "backend", None) != "opencl":
        return v
    release = driver_release(getattr(device, "driver", None))
    if release is not None and release < addressing.OPENCL_REBUILDS_SINCE:
        return v
    bare = [t for t in targets if not (t.member or "").rstrip("/")]
    picked = next((t for t in targets if t.member and t.member.rstrip("/") == v.image), None) or (bare[0] if len(bare) == 1 else None)
    if picked is None or picked.format != "zebin":
        return v
    try:
        data = addressing.image_of(file.path or binary, file, picked)
        bindless = data is not None and addressing.has_bindless_kernels(data, f"{binary} ({v.image})")
    except Exception:  # an image the inspector read but this cannot: keep the lookup's verdict
        return v
    if not bindless:
        return v
    from dataclasses import replace

    from aotwheel.results import JIT

    since = f"{addressing.OPENCL_REBUILDS_SINCE[0]}.{addressing.OPENCL_REBUILDS_SINCE[1]:02d}"
    why = (f"{v.image} has bindless kernels, which compute-runtime's OpenCL ({since} and newer) rebuilds from IR "
           "(Level Zero runs them native; ocloc -stateful_address_mode bindful builds them without)")
    if ir or picked.rebuildable:
        source = "generic_ir" if picked.member else "its own SPIR-V"
        return replace(v, verdict=JIT, image="generic_ir" if picked.member else "spirv", rule="opencl-bindless",
                       reason=f"JIT: the lookup chose {v.image}, but {why}; the driver rebuilds {source} at first use")
    return replace(v, verdict=UNSUPPORTED, image=None, rule="opencl-bindless",
                   reason=f"unsupported: the lookup chose {v.image}, but {why}, and the binary keeps no IR: the OpenCL driver refuses it")


def _by_compatibility(v: Verdict) -> bool:
    return v.rule.startswith("compat") or "compatibility mapping" in v.reason


def _per_driver_version(targets: list[Any], ir: list[str], device: Any, binary: str) -> Verdict:
    """The lookup of the device's driver release; for an unknown driver the newest one's, and when
    that rests on the compatibility mapping or fallback, the first release that gives it and what
    older ones do (``rules.BREAKPOINTS``: the releases at which the lookup changed)."""
    from dataclasses import replace

    from aotwheel.backends.intel.rules import BREAKPOINTS, LEGACY_LAST, decide, release_text
    from aotwheel.results import NATIVE

    def at(release: tuple[int, int] | None) -> Verdict:
        return decide(targets, ir, device, binary=binary, release=release)

    newest = at(None)
    since = None
    if newest.verdict == NATIVE and _by_compatibility(newest):
        for r in reversed(BREAKPOINTS):  # back from the newest release while the lookup still gives this image
            old = at(r)
            if old.verdict != NATIVE or old.image != newest.image:
                break
            since = r
    need = release_text(since) if since else ""
    driver = getattr(device, "driver", None)
    release = driver_release(driver)
    if release is None:
        if since is None:
            return _with_older_releases(newest, at(LEGACY_LAST))
        older = at((since[0], since[1] - 1) if since[1] > 1 else (since[0] - 1, 53))  # the week before: the lookup just before it
        return replace(newest, reason=f"{newest.reason}; this needs compute-runtime {need} or newer (the first release whose "
                                      f"lookup gives it); with an older or unknown driver: {older.verdict} ({older.reason})")
    v = at(release)
    if since is None:
        return v
    if v.verdict == NATIVE and v.image == newest.image:
        if not _by_compatibility(v):  # native by this release's own rule (22.43: product family only), not the mapping
            return v
        return replace(v, reason=f"{v.reason}; driver {driver} honours it (since {need})")
    return replace(v, reason=f"{v.reason}; driver {driver} predates {need}, the first release whose lookup runs it native ({newest.image})")


def _with_older_releases(newest: Verdict, older: Verdict) -> Verdict:
    """With no driver release known: the newest release's verdict, and what compute-runtime before
    26.18 does where it differs (it still ran legacy patch-token images natively)."""
    from dataclasses import replace

    from aotwheel.backends.intel.rules import LEGACY_IGNORED_SINCE, release_text

    if older.verdict == newest.verdict and older.image == newest.image:
        return newest
    return replace(newest, reason=f"{newest.reason}; that is compute-runtime {release_text(LEGACY_IGNORED_SINCE)} and newer: "
                                  f"older drivers give {older.verdict} ({older.reason.removeprefix('native: ')})")


BACKEND: Backend = IntelBackend()  # checked against the protocol by mypy
