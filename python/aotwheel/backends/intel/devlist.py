"""The Intel share of ``USE_AOT_DEVLIST``: what the resolver (:mod:`aotwheel.devlist`) asks of
this vendor through :class:`aotwheel.backends.protocol.DevlistGrammar` / ``DevlistPart``.

Tokens are read by :mod:`aotwheel.backends.intel.grammar` against a :class:`Catalog` (the
built-in one, or the installed ocloc's view from :func:`table_for`); the part says what ocloc and
``-fsycl-targets`` get, and what ``aotwheel resolve`` prints for Intel devices.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aotwheel.backends.capabilities import DevlistExamples
from aotwheel.backends.intel import INTEL, grammar
from aotwheel.backends.intel.catalog import Catalog, Device, load_catalog

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotwheel.backends.intel.coverage import Coverage
    from aotwheel.results import ProbedDevice

TOOL = "ocloc"  # aotwheel resolve --toolchain ocloc / --ocloc PATH
EXAMPLES = DevlistExamples(device="pvc", devices="pvc,acm-g10", family="dg2", families="dg2 or xe-hpc")
SPIRV_SYCL = "spir64"  # JIT from SPIR-V
AOT_SYCL = "spir64_gen"  # ocloc's native images


@dataclass(frozen=True)
class IntelPart:
    """The Intel devices of a resolved list, and whether SPIR-V is kept for JIT."""

    targets: tuple[Device, ...]
    jit_fallback: bool
    alone: bool  # no other vendor builds anything: SPIR-V serves every device
    catalog: Catalog | None = field(default=None, compare=False, repr=False)  # the table the tokens were read with
    vendor: str = INTEL
    generic_named: tuple[str, ...] = ()  # generic names the list wrote (bmg): they ask for the shared image

    def coverage(self, floor: str | None = None, acronyms: frozenset[str] | None = None) -> Coverage | None:
        """The native-coverage plan (:mod:`.coverage`) for ``floor`` (``USE_AOT_MIN_DRIVER`` text; None or
        auto: the default). ``acronyms``: the ocloc in use's -device words (None: the catalog's view of it:
        the installed ocloc's table when one was read, else every catalog generic name). None without targets."""
        if not self.targets:
            return None
        from aotwheel.backends.intel.coverage import parse_release, plan

        cat = self.catalog or load_catalog()
        devices, universe = [(t.name, t.ip) for t in self.targets], [(d.name, d.ip) for d in cat.devices]
        if acronyms is None and not cat.ocloc_version:
            # Ask the installed ocloc which generic names it knows only where one could serve the
            # list: a build whose images all come from the remote cache starts no ocloc at all.
            every = plan(devices, floor=parse_release(floor), generic=dict(cat.generic), named_generic=self.generic_named,
                         universe=universe)
            acronyms = _installed_acronyms() if any(i.generic for i in every.images) else frozenset()
        if acronyms is not None:
            generic = {g: root for g, root in cat.generic if g in acronyms}
        elif cat.ocloc_version:
            generic = {g: root for g, root in cat.generic if cat.source(g) != "catalog"}
        else:
            generic = dict(cat.generic)
        chosen = plan(devices, floor=parse_release(floor), generic=generic, named_generic=self.generic_named, universe=universe)
        if len(generic) < len(cat.generic):  # an older ocloc: say what a current one would save
            current = plan(devices, floor=chosen.floor, generic=dict(cat.generic), universe=universe)
            if len(current.images) < len(chosen.images):
                from dataclasses import replace

                chosen = replace(chosen, note=f"an ocloc that knows the generic names ({', '.join(current.tokens)}; 25.18 and "
                                              f"newer) would build {len(current.images)} image{'s' * (len(current.images) != 1)} for the same native coverage")
        return chosen

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.targets)

    @property
    def listed(self) -> tuple[str, ...]:
        return self.names

    @property
    def spirv(self) -> bool:
        """True when SPIR-V is kept for Intel JIT: JIT fallback is on and the list names Intel
        devices or no device at all (``none``). A list of other vendors' targets only keeps no
        SPIR-V (their JIT fallback is their own IR, e.g. NVIDIA's ``ptx``)."""
        return self.jit_fallback and (bool(self.targets) or self.alone)

    @property
    def builds(self) -> bool:
        return bool(self.targets) or self.spirv

    @property
    def native(self) -> bool:
        return bool(self.targets)

    @functools.cached_property
    def planned(self) -> Coverage | None:
        """The coverage plan for ``USE_AOT_MIN_DRIVER`` (read here, where the resolver's answer is made)
        and the installed ocloc: the images a build makes."""

        from aotwheel.backends.intel.variables import MIN_DRIVER

        return self.coverage(MIN_DRIVER.given())

    @property
    def ocloc_device(self) -> str:
        """The value for ``ocloc -device`` / ``-Xs "-device ..."`` (empty for ``none``): the coverage
        plan's words, one per image (``bmg`` where one image serves the bmg group)."""
        plan = self.planned
        return ",".join(plan.tokens if plan is not None else self.names)

    @property
    def sycl_targets(self) -> tuple[str, ...]:
        if self.targets:
            return (AOT_SYCL, SPIRV_SYCL) if self.jit_fallback else (AOT_SYCL,)
        return (SPIRV_SYCL,) if self.spirv else ()

    @property
    def sycl_fallback(self) -> str:
        return SPIRV_SYCL

    @property
    def jit_phrase(self) -> str:
        return "SPIR-V for Intel devices" if self.spirv else ""

    @property
    def jit_hint(self) -> str:
        return ""

    def fields(self) -> list[tuple[str, str, object]]:
        plan = self.planned
        return [("input", "targets", [t.to_dict() for t in self.targets]), ("aot", "spirv", self.spirv),
                ("jit_summary", "ocloc_device", self.ocloc_device),
                ("ocloc_device", "coverage", plan.to_dict() if plan is not None else None)]

    def cmake_variables(self, field_defaults: bool) -> dict[str, object]:
        field = field_report(self.names, field_defaults)
        return {"": list(self.names), "IPS": [t.ip for t in self.targets], "OCLOC_DEVICE": self.ocloc_device, "SPIRV": self.spirv,
                "FIELD_DEFAULTS": field["enabled"], "FIELD_OCLOC_OPTIONS": field["ocloc_options"],
                "FIELD_SYCL_COMPILE": field["sycl_compile_options"], "FIELD_SYCL_LINK": field["sycl_link_options"],
                "NO_FP64": field["no_fp64"]}

    def describe(self, section: str) -> list[str]:
        if section == "tools":
            plan = self.planned
            return ([f"ocloc -device {self.ocloc_device}", *(plan.lines() if plan is not None else [])]
                    if self.ocloc_device else [])
        if section != "targets":
            return []
        if not self.targets:
            return ["  (no Intel targets: nothing is built for Intel GPUs)" if not self.alone
                    else "  (no ahead-of-time targets: every device will JIT-compile from SPIR-V)"]
        width = max(len(t.name) for t in self.targets)
        lines = []
        from aotwheel.backends.intel.ocloc_table import is_stepping_name

        for t in self.targets:
            # Stepping spellings a newer ocloc accepts for the same IP (pvc-xt-c0) resolve, but are
            # no other name for the product: the line keeps to the names a user would write.
            shown = [a for a in t.aliases if not is_stepping_name(a)]
            aliases = f"  aka {', '.join(shown)}" if shown else ""
            lines.append(f"  {t.name:<{width}}  {t.ip:<8} {t.description}{aliases}")
        return lines

    def note(self, token: str, kind: str, names: Sequence[str]) -> str | None:
        if kind == "group":
            return f"  '{token}' is a family: its shipping products are {', '.join(names)}"
        if kind == "range":
            return f"  '{token}' is a range: its shipping products are {', '.join(names)}"
        if kind == "generic":
            return (f"  '{token}' is ocloc's generic name for {names[0]}: one binary, which the driver also runs "
                    f"on the rest of the {token.lower()} group (compute-runtime's compatibility mapping)")
        return None

    def formats(self) -> dict[str, str]:
        return {"ocloc": self.ocloc_device, "names": ",".join(self.names), "ips": ",".join(t.ip for t in self.targets)}

    def report(self, field_defaults: bool) -> tuple[dict[str, object], list[str]]:
        field = field_report(self.names, field_defaults)
        lines = [describe_field(field)]  # printed even when empty (a blank line, as ever)
        cat = self.catalog
        unbuildable = [t for t in self.targets if cat is not None and cat.ocloc_version and cat.source(t.name) == "catalog"]
        if cat is not None and unbuildable:
            from aotwheel.backends.intel.ocloc import build_note

            names = ", ".join(t.name for t in unbuildable)
            lines.append(f"note: the installed ocloc {cat.ocloc_version} does not know {names}{build_note([t.name for t in unbuildable])}: "
                         "a build stops at configure; 'aotwheel resolve --toolchain ocloc' says how to get one that can")
        return {"no_fp64": field["no_fp64"], "field_defaults": field}, lines


class IntelGrammar:
    """Catalog names, aliases, SYCL arch names, generic names, IP versions, PCI ids, families,
    releases and ranges (:mod:`aotwheel.backends.intel.grammar`), for one devlist value."""

    detects_native = True
    examples = EXAMPLES

    def __init__(self, catalog: Catalog | None = None) -> None:
        self.catalog = catalog or load_catalog()
        self._targets: dict[str, Device] = {}
        self._generic: list[str] = []

    def expand(self, token: str, raw: str, rest: Sequence[str]) -> tuple[str, tuple[str, ...]]:
        kind, devices = grammar.lookup(token, raw, rest, self.catalog)
        if kind == "generic" and token not in self._generic:
            self._generic.append(token)
        for dev in devices:
            self._targets.setdefault(dev.name, dev)
        return kind, tuple(d.name for d in devices)

    def add_native(self, idents: Sequence[str]) -> tuple[tuple[str, ...], str]:
        """Devices by IP version (``12.60.7``), as the probes report them."""
        found: list[Device] = []
        unknown: list[str] = []
        for ident in idents:
            dev = self.catalog.by_ip(ident)
            if dev is None:
                unknown.append(ident)
            elif dev not in found:
                found.append(dev)
        for dev in found:
            self._targets.setdefault(dev.name, dev)
        return tuple(d.name for d in found), (f"found IP versions unknown to the catalog: {', '.join(unknown)}" if unknown else "")

    def suggest(self, token: str) -> tuple[str, ...]:
        if self.catalog.by_name(token) or self.catalog.group(token):
            return (token,)
        return grammar.suggest(token, (), self.catalog)

    def devices(self, token: str, raw: str, source: str) -> list[ProbedDevice]:
        """Intel GPUs by any name of the grammar (a family names each of its devices)."""
        from aotwheel.results import ProbedDevice

        _, targets = grammar.lookup(token, raw, (), self.catalog)
        return [ProbedDevice(name=d.name, backend="override", kind="gpu", vendor=INTEL, ip=d.ip, catalog=d.name, spirv=True) for d in targets]

    def finish(self, *, jit_fallback: bool, alone: bool) -> IntelPart:
        return IntelPart(tuple(self._targets.values()), jit_fallback, alone, self.catalog, generic_named=tuple(self._generic))


def _installed_acronyms() -> frozenset[str] | None:
    """The -device words of the ocloc builds would use (asked once per ocloc binary, then cached);
    None when there is none or it does not run (then the catalog's generic names count)."""
    from aotwheel.backends.intel.buildsteps.toolchain import ocloc_facts
    from aotwheel.buildsteps.cache import DeviceCodeCache
    from aotwheel.errors import ToolchainError

    try:
        return ocloc_facts(DeviceCodeCache.from_env())[2]
    except ToolchainError:
        return None


def table_for(text: str, tools: Mapping[str, str | None], *, installed: bool = False) -> Catalog:
    """The catalog to resolve ``text`` with. The installed ocloc is the authority on what its names
    mean (the catalog answers without one); it is asked only where its answer can differ from the
    catalog's: families, releases, ranges, ids and names the catalog lacks. A list of catalog
    products (``pvc,acm-g10``), ``none`` or ``sm_90`` runs no ocloc at configure (a fresh machine
    against a warm remote cache runs none at all)."""
    from aotwheel.backends.intel.ocloc_table import catalog_for, installed_catalog

    # installed: a person's `aotwheel resolve bmg-g21` is told when this ocloc cannot build it.
    return installed_catalog(tools.get(TOOL)) if installed else catalog_for(text, tools.get(TOOL))


def listing(tools: Mapping[str, str | None]) -> list[str]:
    """``aotwheel resolve --list``: the installed ocloc's view of the catalog."""
    from aotwheel.backends.intel.ocloc_table import installed_catalog

    cat = installed_catalog(tools.get(TOOL))
    where = (f"from the installed ocloc {cat.ocloc_version} and aotwheel's catalog; [ocloc]/[catalog]: only that one knows the name"
             if cat.ocloc_version else "from aotwheel's catalog (no ocloc installed)")
    tag_of = (lambda name: "" if cat.source(name) == "catalog+ocloc" else f" [{cat.source(name)}]") if cat.ocloc_version else (lambda name: "")
    lines = [f"devices ({where}; name  IP  aliases  SYCL arch):"]
    for d in cat.devices:
        tag = "" if d.shipping else "  [pre-production]"
        lines.append(f"  {d.name + tag_of(d.name):<18} {d.ip:<8} {', '.join(d.aliases) or '-':<32} {d.sycl_arch}{tag}")
    lines.append("generic names (build the root product; the driver runs it on the whole group):")
    for name, root in cat.generic:
        lines.append(f"  {name + tag_of(name):<18} -> {root}")
    lines.append("families and releases (expand to shipping products):")
    for g in cat.groups:
        names = "/".join((g.name, *g.aliases))
        lines.append(f"  {names + tag_of(g.name):<18} -> {', '.join(m.name for m in g.members) or '(no shipping product)'}")
    lines.append("ranges: first:last, first:, :last (ocloc's notation; shipping products between, by IP)")
    return lines


def check_ocloc(part: IntelPart, explicit: str | None) -> None:
    """Fail with one line if the installed ocloc cannot build a target of ``part``."""
    from aotwheel.backends.intel.ocloc import find_ocloc, too_new_message
    from aotwheel.errors import ToolchainError

    ocloc = find_ocloc(explicit)
    missing = [t for t in part.targets if not ocloc.supports((t.name, *t.aliases))]
    if missing:
        raise ToolchainError(too_new_message([(t.name, t.ip) for t in missing], ocloc.version, ocloc.path))


def field_report(names: Sequence[str], enabled: bool) -> dict[str, object]:
    """The field-default options for Intel devices ``names`` and which of them lack fp64."""
    from aotwheel.backends.intel.options import field_defaults

    cat = load_catalog()
    return field_defaults(list(names), no_fp64=cat.no_fp64, emulated=cat.fp64_conv_emulation, enabled=enabled)


def describe_field(field: dict) -> str:  # type: ignore[type-arg]
    """Lines for the human-readable report: fp64 and the default options."""
    from aotwheel.backends.intel.options import FP64_POISON_OPTION

    lines = []
    if field["no_fp64"]:
        fate = (f"kernels using double are poisoned there ({FP64_POISON_OPTION}), the rest build" if field["enabled"]
                else f"a kernel using double fails to build for them; add {FP64_POISON_OPTION} to the options")
        lines.append(f"no fp64 (double): {', '.join(field['no_fp64'])}: {fate}")
    if not field["enabled"]:
        lines.append("field defaults: off (USE_AOT_FIELD_DEFAULTS=OFF): only your own ocloc options are passed")
    elif field["ocloc_options"]:
        lines.append(f"field defaults: ocloc -options '{' '.join(field['ocloc_options'])}'")
        icpx = [*field["sycl_compile_options"], *field["sycl_link_options"]]
        lines.append(f"icpx adds: {' '.join(dict.fromkeys(icpx))} (+ -fsycl-max-parallel-link-jobs)")
    return "\n".join(lines)
