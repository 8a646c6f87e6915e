"""Wheel variants (draft PEP 817 / 825 / 850): the labels that say which GPUs a device-list wheel
runs natively, and the provider plugin aotwheel ships.

Each backend names its vocabulary module (its ``capabilities.variants``; the registry's
:func:`aotwheel.backends.variant_vocabularies`): a namespace, its provider (``PROVIDER_REQUIRES``,
``PLUGIN_API``, ``ALWAYS`` when it belongs in every wheel's provider table), the property of each
of the backend's images (``target_property(target)``, ``ir_property(kind)``) and, for a provider
aotwheel ships itself, ``FEATURE``, ``JIT_VALUE``, ``all_values()`` and
``supported_values(devices)``. Intel's is ``aotwheel_intel :: image :: <IP version>`` (plugin
``aotwheel.variants:IntelGpuPlugin``); NVIDIA's is NVIDIA's own provider's ``nvidia :: sm_arch``.

:class:`VariantPlugin` is the provider plugin over such a vocabulary: it probes the devices here
(``AOTWHEEL_DEVICE`` overrides them) and the vocabulary turns them into values; a probe that
fails leaves the JIT value only, so an install never fails because of it. Published variant
metadata names the plugin by its ``PLUGIN_API`` (``aotwheel.variants:IntelGpuPlugin``), which
this module resolves on attribute access.

:func:`label_wheels` writes variant wheels with variantlib (``pip install 'variantlib[cli]'``);
``aotwheel variant`` is its command line.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_LABEL = 16  # PEP 817 caps variant labels at 16 characters
_VARIANTLIB_HINT = "install variantlib to write variant wheels: pip install 'variantlib[cli]==0.2.2'"
_OWN_PLUGINS = "aotwheel.variants:"  # PLUGIN_API of the providers this module serves
# Names this module had before the vocabularies moved into the backends; they are aotwheel's own
# provider's (cli/variant.py and users read them), resolved by __getattr__.
_PROVIDER_NAMES = ("NAMESPACE", "FEATURE", "JIT_VALUE", "PLUGIN_API", "PROVIDER_REQUIRES", "native_ips", "supported_values")


@dataclass(frozen=True)
class FeatureConfig:
    """One feature as ``variantlib.protocols.VariantFeatureConfigType`` wants it."""

    name: str
    values: list[str]
    multi_value: bool = True


class VariantPlugin:
    """A provider plugin (``variantlib.protocols.PluginType``) over one vocabulary module."""

    vocabulary: Any = None  # the backend's variants module
    namespace = ""
    # Supported values depend on the machine: not usable as an ahead-of-time (build-requires) plugin.
    all_properties_compatible = False

    @classmethod
    def get_all_configs(cls) -> list[FeatureConfig]:
        """Every valid value."""
        return [FeatureConfig(cls.vocabulary.FEATURE, cls.vocabulary.all_values())]

    @classmethod
    def get_supported_configs(cls) -> list[FeatureConfig]:
        """This machine's values, best first; the JIT value alone when probing fails or finds no GPU of the vendor."""
        try:
            from aotwheel.probe import detect_devices

            values = cls.vocabulary.supported_values(detect_devices())
        except Exception as exc:  # a provider must never fail an install: no GPU knowledge -> JIT only
            import logging  # only here: a provider that works imports nothing more

            # installers show their plugins' log (variantlib's logging), never an error: say why
            logging.getLogger(__name__).warning("aotwheel variant provider %s: %s; offering %s only",
                                                cls.namespace, str(exc)[:300], cls.vocabulary.JIT_VALUE)
            values = [cls.vocabulary.JIT_VALUE]
        return [FeatureConfig(cls.vocabulary.FEATURE, values)]


def _vocabularies() -> list[Any]:
    from aotwheel import backends

    return backends.variant_vocabularies()


@functools.cache
def _plugin(name: str) -> type[VariantPlugin] | None:
    """The plugin class published metadata names ``aotwheel.variants:<name>``, or None."""
    for v in _vocabularies():
        if v.PLUGIN_API == _OWN_PLUGINS + name:
            return type(name, (VariantPlugin,), {"vocabulary": v, "namespace": v.NAMESPACE, "__module__": __name__,
                                                 "__doc__": f"The ``{v.NAMESPACE}`` variant provider."})
    return None


def _own() -> Any:
    """The vocabulary of aotwheel's own provider (the first with a plugin here)."""
    return next(v for v in _vocabularies() if v.PLUGIN_API.startswith(_OWN_PLUGINS))


def __getattr__(name: str) -> Any:
    plugin = _plugin(name) if name[:1].isupper() and name.endswith("Plugin") else None
    if plugin is not None:
        return plugin
    if name in _PROVIDER_NAMES:
        return getattr(_own(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def describe_wheel(wheel: str | Path) -> WheelVariant:
    """The variant properties of a built wheel, read from its binaries by :func:`aotwheel.inspect`:
    per native image and IR module, the property its backend's vocabulary gives it (Intel: one
    ``aotwheel_intel :: image :: <ip>`` per native image; NVIDIA: one ``nvidia :: sm_arch`` value per
    cubin / PTX); no native target at all -> the null variant."""
    from aotwheel.inspector import inspect

    vocabularies = _vocabularies()
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
            found = next((p for v in vocabularies if (p := v.target_property(t)) is not None), None)
            if found is None:
                notes.append(f"{label}: no variant vocabulary for {t.vendor} images; no property")
            elif found[0] is None:
                notes.append(f"{label}: {found[1]}")
            else:
                add(found[0])
        for kind in f.ir:
            for v in vocabularies:
                prop = v.ir_property(kind)
                if prop is not None:
                    add(prop)
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
    used = [v for v in _vocabularies() if v.ALWAYS or v.NAMESPACE in namespaces]  # registry order
    providers = {v.NAMESPACE: ProviderInfo(requires=[v.PROVIDER_REQUIRES], plugin_api=v.PLUGIN_API) for v in used}
    order = [v.NAMESPACE for v in used]
    return VariantInfo(namespace_priorities=order, providers=providers)


def label_wheels(wheels: list[str | Path], out: str | Path, *, validate: bool = True) -> list[WheelVariant]:
    """Write one variant wheel per input wheel into ``out`` (``<name>-<ver>-<tags>-<label>.whl``, with
    ``*.dist-info/variant.json`` written by variantlib). Every wheel gets the same provider table,
    so ``variantlib generate-index-json -d OUT`` merges them. ``validate`` checks the properties of
    aotwheel's own provider (``aotwheel_intel``) against its plugin's ``get_all_configs`` (through variantlib)."""
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
    own = _own().NAMESPACE
    info = variant_info(namespaces)
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    for v in found:
        props = [VariantProperty.from_str(p) for p in v.properties]
        vdesc = VariantDescription(properties=props, label="" if v.label == "null" else v.label)
        if validate and props:
            mine = VariantDescription(properties=[p for p in props if p.namespace == own]) if any(
                p.namespace == own for p in props) else None
            if mine is not None:
                try:  # variantlib runs the plugin in a subprocess of this Python: aotwheel must be installed there
                    result = validate_variant(mine, variant_info=info)
                except Exception as exc:
                    first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
                    raise AotwheelError(f"variantlib could not run the {own} plugin ({first}); install aotwheel in "
                                        "this Python or pass --no-validate") from None
                if not result.is_valid():
                    bad = ", ".join(p.to_str() for p in result.invalid_properties)
                    raise AotwheelError(f"{Path(v.wheel).name}: {bad} not valid for the installed {own} plugin "
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


# FEATURE, JIT_VALUE, NAMESPACE, IntelGpuPlugin, native_ips and supported_values come from __getattr__ (published names).
__all__ = ["FEATURE", "JIT_VALUE", "NAMESPACE", "FeatureConfig", "IntelGpuPlugin", "VariantPlugin", "WheelVariant",  # noqa: F822
           "describe_wheel", "label_wheels", "native_ips", "supported_values", "variant_info"]


def pick(where: str | Path) -> tuple[Path, list[str]]:
    """The variant wheel of ``where`` (a folder holding ``<name>-<version>-variants.json`` and its
    variant wheels, or that JSON file) that suits this machine: variantlib orders the index's
    variants by what the providers report here (aotwheel's probes the GPUs; ``AOTWHEEL_DEVICE``
    overrides), and the first whose wheel is in the folder wins; the null variant (no native code)
    suits every machine, last. Returns that wheel and the labels in variantlib's order."""
    import json

    from aotwheel.errors import AotwheelError

    try:
        from variantlib.api import get_variants_by_priority
    except ImportError:
        raise AotwheelError(_VARIANTLIB_HINT.replace("to write variant wheels", "to pick a variant wheel")) from None
    path = Path(where)
    if path.is_dir():
        found = sorted(path.glob("*-variants.json"))
        if len(found) != 1:
            raise AotwheelError(f"{path} holds {len(found)} *-variants.json files; pass the one to pick from "
                                "(variantlib generate-index-json -d DIR writes it)")
        path = found[0]
    if not path.is_file() or not path.name.endswith("-variants.json"):
        raise AotwheelError(f"{where}: no <name>-<version>-variants.json there; run variantlib generate-index-json -d DIR first")
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AotwheelError(f"{path}: not a variant index ({exc})") from None
    try:
        ordered = [v.label for v in get_variants_by_priority(variants_json=index)]
    except Exception as exc:  # variantlib's validation and its plugin processes: one line, naming the index
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
        raise AotwheelError(f"{path}: variantlib could not order its variants ({first})") from None
    stem = path.name[: -len("-variants.json")]
    wheels = {w.name.rsplit("-", 1)[1][:-4]: w for w in path.parent.glob(f"{stem}-*.whl")}
    for label in ordered:
        if label in wheels:
            return wheels[label], ordered
    listed = ", ".join(sorted(wheels)) or "none"
    raise AotwheelError(f"no wheel of {path.name} suits this machine (its variant wheels: {listed}; supported here: "
                        f"{', '.join(ordered) or 'none'}); publish a null variant (a USE_AOT_DEVLIST=none wheel) for every machine")


def install(wheel: Path, python: str) -> int:
    """``python -m pip install`` the variant ``wheel`` under its plain wheel name (pip does not
    take variant file names yet: ``Invalid build number``); pip's exit status. Another variant of
    the same version installed there is replaced (its dependencies stay)."""
    import shutil
    import subprocess
    import tempfile

    from variantlib.constants import VALIDATION_WHEEL_NAME_REGEX

    m = VALIDATION_WHEEL_NAME_REGEX.fullmatch(wheel.name)
    plain = f"{m.group('base_wheel_name')}.whl" if m else wheel.name
    name, version = plain.split("-")[:2]
    shown = subprocess.run([python, "-m", "pip", "show", name], capture_output=True, text=True, check=False).stdout
    same = f"Version: {version}" in shown.splitlines()
    with tempfile.TemporaryDirectory(prefix="aotwheel-variant-") as tmp:
        copy = Path(tmp) / plain
        shutil.copyfile(wheel, copy)
        extra = ["--force-reinstall", "--no-deps"] if same else []
        return subprocess.run([python, "-m", "pip", "install", *extra, str(copy)], check=False).returncode
