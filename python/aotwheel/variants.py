"""Wheel variants (draft PEP 817 / 825 / 850): aotwheel's Intel GPU provider plugin, and the labels
that say which GPUs a device-list wheel runs natively.

Vocabulary (namespace ``aotwheel_intel``, one multi-value feature ``image``):

- ``aotwheel_intel :: image :: 12.60.7`` -- the wheel carries a native image for that Intel GPU IP
  version (an ar member ``64.12.60.7``, as aotwheel builds them);
- ``aotwheel_intel :: image :: spirv`` -- SPIR-V only (JIT). The JIT-only wheel of a matrix is
  published as the *null* variant instead, which every machine accepts and ranks last.

NVIDIA targets use NVIDIA's provider's vocabulary (``nvidia :: sm_arch :: 90_real`` for an
``sm_90`` cubin, ``90_virtual`` for ``compute_90`` PTX), so NVIDIA's own plugin ranks them.

:class:`IntelGpuPlugin` is the provider (entry point ``variant_plugins`` ``aotwheel_intel``; the
variant metadata names it by ``plugin-api``). Its supported values come from aotwheel's probes
(``AOTWHEEL_DEVICE`` overrides them): per Intel GPU, its exact IP first, then every other IP whose
``64.<ip>`` member compute-runtime's lookup would load natively on it
(:func:`aotwheel.backends.intel.rules.decide`, newest driver modelled), then ``spirv``. A probe
that fails or finds no Intel GPU leaves ``spirv`` only: an install never fails because of it.

:func:`label_wheels` writes variant wheels with variantlib (``pip install 'variantlib[cli]'``);
``aotwheel variant`` is its command line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NAMESPACE = "aotwheel_intel"
FEATURE = "image"
JIT_VALUE = "spirv"
PLUGIN_API = "aotwheel.variants:IntelGpuPlugin"
PROVIDER_REQUIRES = "aotwheel>=0.1.0"  # the first aotwheel with this plugin

# NVIDIA's provider (github.com/wheelnext/nvidia-variant-provider): namespace, feature, package, plugin.
NVIDIA_NAMESPACE = "nvidia"
NVIDIA_FEATURE = "sm_arch"
NVIDIA_REQUIRES = "nvidia-variant-provider"
NVIDIA_PLUGIN_API = "nvidia_variant_provider.plugin:NvidiaVariantPlugin"

MAX_LABEL = 16  # PEP 817 caps variant labels at 16 characters
_VARIANTLIB_HINT = "install variantlib to write variant wheels: pip install 'variantlib[cli]==0.2.2'"


@dataclass(frozen=True)
class FeatureConfig:
    """One feature as ``variantlib.protocols.VariantFeatureConfigType`` wants it."""

    name: str
    values: list[str]
    multi_value: bool = True


@dataclass(frozen=True)
class _Member:
    """A ``64.<ip>`` zebin member as aotwheel's fat binaries carry it (what rules.decide reads)."""

    ip: str
    format: str = "zebin"

    @property
    def member(self) -> str:
        return f"64.{self.ip}"

    @property
    def name(self) -> str:
        return self.ip


def native_ips(device: Any, candidates: list[str]) -> list[str]:
    """The IPs among ``candidates`` whose ``64.<ip>`` member the driver loads natively on ``device``
    (one member per fat binary, as compute-runtime's lookup would meet it): exact IP first."""
    from aotwheel.backends.intel.rules import decide
    from aotwheel.model import NATIVE

    native = [ip for ip in candidates if decide([_Member(ip)], [], device).verdict == NATIVE]
    own = getattr(device, "ip", None)
    return sorted(native, key=lambda ip: ip != own)  # stable: the exact IP, then catalog order


def supported_values(devices: list[Any]) -> list[str]:
    """``image`` values this machine supports, best first: each Intel GPU's exact IP, then the IPs
    the driver's rules let serve it, then ``spirv``."""
    from aotwheel.backends.intel.catalog import load_catalog

    candidates = list(dict.fromkeys(d.ip for d in load_catalog().devices if d.ip))
    gpus = [d for d in devices if d.kind == "gpu" and str(d.vendor).lower() == "intel" and d.ip]
    per_device = [native_ips(d, candidates) for d in gpus]
    values: list[str] = []
    for rank in (0, 1):  # exact IPs of all devices before any compatible IP
        for ips in per_device:
            for ip in (ips[:1] if rank == 0 else ips[1:]):
                if ip not in values:
                    values.append(ip)
    return values + [JIT_VALUE]


class IntelGpuPlugin:
    """The ``aotwheel_intel`` variant provider (``variantlib.protocols.PluginType``)."""

    namespace = NAMESPACE
    # Supported values depend on the machine: not usable as an ahead-of-time (build-requires) plugin.
    all_properties_compatible = False

    @classmethod
    def get_all_configs(cls) -> list[FeatureConfig]:
        """Every valid value: each catalog IP, then ``spirv``."""
        from aotwheel.backends.intel.catalog import load_catalog

        ips = list(dict.fromkeys(d.ip for d in load_catalog().devices if d.ip))
        return [FeatureConfig(FEATURE, ips + [JIT_VALUE])]

    @classmethod
    def get_supported_configs(cls) -> list[FeatureConfig]:
        """This machine's values, best first; ``spirv`` alone when probing fails or finds no Intel GPU."""
        try:
            from aotwheel.probe import detect_devices

            values = supported_values(detect_devices())
        except Exception:  # a provider must never fail an install: no GPU knowledge -> JIT only
            values = [JIT_VALUE]
        return [FeatureConfig(FEATURE, values)]


# --- labelling wheels -------------------------------------------------------------------------

@dataclass
class WheelVariant:
    """What one wheel's device code says about its variant."""

    wheel: str
    label: str  # "null" for the JIT-only wheel
    properties: list[str] = field(default_factory=list)  # "aotwheel_intel :: image :: 12.60.7"
    targets: list[str] = field(default_factory=list)  # native target names, as the inspector read them
    notes: list[str] = field(default_factory=list)  # targets no variant property can express
    output: str | None = None  # the variant wheel written


def _nvidia_value(arch: str, virtual: bool) -> str | None:
    m = re.fullmatch(r"(?:sm|compute)_(\d+)", arch)
    if m is None:  # sm_90a / sm_100f: arch-specific, outside NVIDIA's sm_arch vocabulary
        return None
    return f"{m[1]}_{'virtual' if virtual else 'real'}"


def describe_wheel(wheel: str | Path) -> WheelVariant:
    """The variant properties of a built wheel, read from its binaries by :func:`aotwheel.inspect`:
    one ``aotwheel_intel :: image :: <ip>`` per Intel native image, one ``nvidia :: sm_arch`` value per
    cubin / PTX; no native target at all -> the null variant."""
    from aotwheel.inspector import inspect
    from aotwheel.model import NVIDIA

    path = Path(wheel)
    report = inspect(path)
    props: list[str] = []
    names: list[str] = []
    notes: list[str] = []

    def add(prop: str) -> None:
        if prop not in props:
            props.append(prop)

    for f in report.files:
        for t in f.native_targets:
            label = t.name or t.arch or t.generic or t.ip or t.member or "?"
            if label not in names:
                names.append(label)
            if t.vendor == NVIDIA:
                value = _nvidia_value(t.arch or t.name or "", virtual=False)
                if value is None:
                    notes.append(f"{label}: not in NVIDIA's sm_arch vocabulary; no property")
                else:
                    add(f"{NVIDIA_NAMESPACE} :: {NVIDIA_FEATURE} :: {value}")
            elif t.ip:
                add(f"{NAMESPACE} :: {FEATURE} :: {t.ip}")
            else:
                notes.append(f"{label}: no IP version (a {t.format} image); no property")
        for kind in f.ir:
            if kind.startswith("ptx "):
                value = _nvidia_value(kind.split(" ", 1)[1], virtual=True)
                if value is not None:
                    add(f"{NVIDIA_NAMESPACE} :: {NVIDIA_FEATURE} :: {value}")
    label = "null" if not props else _label(names)
    return WheelVariant(str(path), label, props, names, notes)


def _label(names: list[str]) -> str:
    """``pvc,acm-g10`` -> ``pvc_acm_g10`` (devlist order: of two wheels that tie, variantlib installs
    the one whose label sorts first, so a wheel's label sorts before any longer list that starts
    with it); "" (variantlib's hash) when it would exceed 16 characters."""
    text = "_".join(re.sub(r"[^a-z0-9.]+", "_", n.lower()).strip("_") for n in names)
    return text if 0 < len(text) <= MAX_LABEL and text != "null" else ""


def variant_info(namespaces: set[str]) -> Any:
    """The provider table every wheel of one release carries (``variantlib.models.variant_info.VariantInfo``)."""
    try:
        from variantlib.models.variant_info import ProviderInfo, VariantInfo
    except ImportError:
        from aotwheel.errors import AotwheelError

        raise AotwheelError(_VARIANTLIB_HINT) from None
    providers = {NAMESPACE: ProviderInfo(requires=[PROVIDER_REQUIRES], plugin_api=PLUGIN_API)}
    order = [NAMESPACE]
    if NVIDIA_NAMESPACE in namespaces:
        providers[NVIDIA_NAMESPACE] = ProviderInfo(requires=[NVIDIA_REQUIRES], plugin_api=NVIDIA_PLUGIN_API)
        order.append(NVIDIA_NAMESPACE)
    return VariantInfo(namespace_priorities=order, providers=providers)


def label_wheels(wheels: list[str | Path], out: str | Path, *, validate: bool = True) -> list[WheelVariant]:
    """Write one variant wheel per input wheel into ``out`` (``<name>-<ver>-<tags>-<label>.whl``, with
    ``*.dist-info/variant.json`` written by variantlib). Every wheel gets the same provider table,
    so ``variantlib generate-index-json -d OUT`` merges them. ``validate`` checks the
    ``aotwheel_intel`` properties against this plugin's ``get_all_configs`` (through variantlib)."""
    from aotwheel.errors import AotwheelError

    try:
        from variantlib.api import VariantDescription, VariantProperty, make_variant_dist_info, validate_variant
        from variantlib.constants import VALIDATION_WHEEL_NAME_REGEX
    except ImportError:
        raise AotwheelError(_VARIANTLIB_HINT) from None
    paths = [Path(w) for w in wheels]
    for p in paths:
        m = VALIDATION_WHEEL_NAME_REGEX.fullmatch(p.name)
        if not p.is_file() or m is None:
            raise AotwheelError(f"{p} is not a wheel file; pass built wheels, e.g. wheelhouse/*/*.whl")
        if m.group("variant_label"):
            raise AotwheelError(f"{p.name} is already a variant wheel (label {m.group('variant_label')}); pass the wheels pip built")
    found = [describe_wheel(p) for p in paths]
    for v in found:
        if v.targets and not v.properties:  # labelled null it would install everywhere as the fallback
            raise AotwheelError(f"{Path(v.wheel).name} carries native code no variant property can express "
                                f"({'; '.join(v.notes)}); add a target with a property (an IP version, sm_XX) or leave the wheel out")
    seen: dict[tuple[str, ...], str] = {}
    for v in found:
        key = tuple(sorted(v.properties))
        if key in seen:
            raise AotwheelError(f"{Path(seen[key]).name} and {Path(v.wheel).name} carry the same native targets "
                                f"({', '.join(v.targets) or 'none'}); a variant index can hold only one of them")
        seen[key] = v.wheel
    named: dict[str, str] = {}
    for v in found:
        if v.label and v.label in named:  # "" is variantlib's hash of the properties, unique above
            raise AotwheelError(f"{Path(named[v.label]).name} and {Path(v.wheel).name} would both get the variant label "
                                f"{v.label!r}; label them with `variantlib make-variant --variant-label`")
        named[v.label] = v.wheel
    namespaces = {p.split(" :: ", 1)[0] for v in found for p in v.properties}
    info = variant_info(namespaces)
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    for v in found:
        props = [VariantProperty.from_str(p) for p in v.properties]
        vdesc = VariantDescription(properties=props, label="" if v.label == "null" else v.label)
        if validate and props:
            mine = VariantDescription(properties=[p for p in props if p.namespace == NAMESPACE]) if any(
                p.namespace == NAMESPACE for p in props) else None
            if mine is not None:
                try:  # variantlib runs the plugin in a subprocess of this Python: aotwheel must be installed there
                    result = validate_variant(mine, variant_info=info)
                except Exception as exc:
                    first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
                    raise AotwheelError(f"variantlib could not run the aotwheel_intel plugin ({first}); install aotwheel in "
                                        "this Python or pass --no-validate") from None
                if not result.is_valid():
                    bad = ", ".join(p.to_str() for p in result.invalid_properties)
                    raise AotwheelError(f"{Path(v.wheel).name}: {bad} not valid for the installed aotwheel_intel plugin "
                                        "(is aotwheel installed in this Python?)")
        v.label = vdesc.label
        data = make_variant_dist_info(vdesc, variant_info=info)
        v.output = str(_write_variant(Path(v.wheel), outdir, vdesc.label, data))
    return found


def _write_variant(wheel: Path, outdir: Path, label: str, dist_info_json: str) -> Path:
    """Copy ``wheel`` to ``outdir`` under its variant name with ``variant.json`` added to ``.dist-info``
    and to RECORD (what ``variantlib make-variant`` does), writing a temporary file first."""
    import base64
    import hashlib
    import os
    import shutil
    import zipfile

    from variantlib.constants import VALIDATION_WHEEL_NAME_REGEX, VARIANT_DIST_INFO_FILENAME

    m = VALIDATION_WHEEL_NAME_REGEX.fullmatch(wheel.name)
    assert m is not None
    target = outdir / f"{m.group('base_wheel_name')}-{label}.whl"
    tmp = target.with_suffix(".whl.part")
    payload = dist_info_json.encode("utf-8")
    digest = base64.urlsafe_b64encode(hashlib.sha256(payload).digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            parts = info.filename.split("/")
            in_dist_info = len(parts) == 2 and parts[0].endswith(".dist-info")
            if in_dist_info and parts[1] == VARIANT_DIST_INFO_FILENAME:
                continue
            if in_dist_info and parts[1] == "RECORD":
                entry = f"{parts[0]}/{VARIANT_DIST_INFO_FILENAME}"
                dst.writestr(entry, payload)
                lines = [ln for ln in src.read(info).decode("utf-8").splitlines() if ln and not ln.startswith(entry + ",")]
                lines.append(f"{entry},sha256={digest},{len(payload)}")
                dst.writestr(info, "\n".join(lines) + "\n")
                continue
            with src.open(info) as fin, dst.open(info, "w") as fout:
                shutil.copyfileobj(fin, fout)
    os.replace(tmp, target)
    return target


__all__ = ["FEATURE", "JIT_VALUE", "NAMESPACE", "IntelGpuPlugin", "WheelVariant", "describe_wheel", "label_wheels",
           "native_ips", "supported_values", "variant_info"]
