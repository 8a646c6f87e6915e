"""``aotwheel inspect``: the device code a binary, wheel or installed module carries, read from its bytes."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # not typing's: aotwheel inspect's start-up (tests/test_startup_read.py)
if TYPE_CHECKING:
    from aotwheel.report import FileReport, Report


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "inspect",
        help="list the device targets embedded in a binary, wheel or module",
        description="Read which native GPU targets and JIT fallbacks a .so, .whl, installed module, ocloc fat binary, zebin/.bin or .spv carries.",
    )
    p.add_argument("path", metavar="PATH", help="file, wheel, directory, or installed module/package name (e.g. 'dpctl')")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")
    p.add_argument("--deep", action="store_true", help="also decompress and hash every image (slower)")
    p.add_argument("--all", action="store_true", help="also list binaries that carry no device code")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from aotwheel.inspector import inspect

    report = inspect(args.path, deep=args.deep)
    if args.json:
        import json

        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(render(report, show_all=args.all))
        for note in build_notes(args.path):
            print(note)
    return 2 if report.errors else 0


def build_notes(path: str) -> list[str]:
    """What a wheel's ``_aot_manifest.json`` files say about how it was built that a user must
    see: remote-cache failures (the build went on as on a miss, and pip hid the warning)."""
    if not path.endswith((".whl", ".zip")):
        return []
    import json
    import zipfile

    try:
        if not zipfile.is_zipfile(path):
            return []
        notes = []
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                if name.count("/") == 1 and name.endswith(".dist-info/variant.json"):
                    notes.extend(_variant_note(zf.read(name)))
                if not name.endswith("_aot_manifest.json"):
                    continue
                try:
                    doc = json.loads(zf.read(name))
                    failures = int((doc.get("remote_cache") or {}).get("failures", 0))
                except (ValueError, TypeError, AttributeError, KeyError, zipfile.BadZipFile):
                    continue
                if failures:
                    notes.append(f"{name}: built with {failures} remote-cache failure{'s' if failures != 1 else ''} (the shared "
                                 "cache was down, refused or sent damaged objects; those objects were built here instead: check "
                                 "AOTWHEEL_REMOTE_CACHE and `aotwheel build cache`)")
        return notes
    except OSError:
        return []


def _variant_note(data: bytes) -> list[str]:
    """``wheel variant pvc: aotwheel_intel :: image :: 12.60.7`` from a variant wheel's variant.json
    (draft PEP 825; ``aotwheel variant`` writes them)."""
    import json

    try:
        variants = json.loads(data)["variants"]
        ((label, namespaces),) = variants.items()
        props = [f"{ns} :: {feat} :: {v}" for ns, feats in namespaces.items() for feat, values in feats.items() for v in values]
    except (ValueError, TypeError, AttributeError, KeyError):
        return ["wheel variant: its *.dist-info/variant.json is not one variant's metadata"]
    return [f"wheel variant {label}: {'; '.join(props) or 'no properties (the null variant: the fallback every machine accepts)'}"]


def summary(fr: FileReport) -> str:
    """One line: ``native: pvc, acm-g10, sm_90 · JIT fallback: SPIR-V, PTX compute_90 · 37 distinct kernel functions``."""
    from aotwheel.report import summary as line

    return line(fr)


def _table(fr: FileReport) -> list[str]:
    from aotwheel.backends import with_ip_versions

    # Aggregate over images: a library often carries the same targets in hundreds of images.
    rows: dict[tuple[str, ...], list[int]] = {}
    has_ip = with_ip_versions()  # an IP version not read: "?"; a vendor without them: "-"
    for t in fr.native_targets:
        key = (t.name or t.generic or "?", t.ip or ("?" if t.vendor in has_ip else "-"), t.member or "-", t.format, t.core or "")
        agg = rows.setdefault(key, [0, 0])
        agg[0] += 1
        agg[1] += t.size
    header = ("target", "IP", "member", "format", "core", "images", "size")
    lines = [header] + [(*k, str(v[0]), _size(v[1])) for k, v in rows.items()]
    widths = [max(len(r[i]) for r in lines) for i in range(len(header))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in lines]


def _serves(fr: FileReport) -> list[str]:
    """Each reader's note on images that serve more devices than their own (``READS.serves``)."""
    from aotwheel import backends

    lines: list[str] = []
    for vendor in dict.fromkeys(t.vendor for t in fr.native_targets):
        reader = backends.reader(vendor) if vendor in backends.names() else None
        if reader is not None and reader.READS.serves:
            lines.extend(reader.serves(fr))
    return lines


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def render(report: Report, *, show_all: bool = False) -> str:
    """Human output: a compact table and a summary line per binary with device code."""
    from aotwheel.model import ImageKind, ir_labels
    from aotwheel.report import carried_summary, ir_name

    ir_kinds = ir_labels()  # the IR image kinds (the backends' too: the inspect that made the report imported their readers)
    out: list[str] = []
    quiet = [f for f in report.files if not f.images and not f.error and f.carried is None]
    for fr in report.files:
        if fr.error:
            out.append(f"{fr.path}\n  error: {fr.error}")
            continue
        if not fr.images and fr.carried is None and not show_all:
            continue
        out.append(fr.path)
        ir_forms = [next(k for k in ir_kinds if k in (i.kind, i.content)) for i in fr.images if set(ir_kinds) & {i.kind, i.content}]
        ir_images = len(ir_forms)
        compressed = sum(1 for i in fr.images if i.compressed)
        # Say what each number counts: embedded images (native code vs IR for JIT), not kernels;
        # and name the IR forms these images hold, not every form there is.
        native_images = len({t.image for t in fr.native_targets})  # a damaged image holds none (aotwheel.slots)
        forms = ", ".join(ir_name(k) for k in ir_kinds if k in ir_forms)
        detail = (f"  {len(fr.images)} embedded image{'s' if len(fr.images) != 1 else ''}: {native_images} with native code, {ir_images} IR for JIT"
                  + (f" ({forms})" if forms else ""))
        if fr.kind == ImageKind.AR and len(fr.images) == 1 and fr.images[0].members:
            # a bare fat binary (issue 38): count its members, each native code or IR, as the summary does
            members = fr.images[0].members
            native = sum(1 for t in fr.native_targets if t.member in members)
            forms = ", ".join(ir_name(k) for k in fr.ir)
            detail = (f"  {len(members)} archive member{'s' if len(members) != 1 else ''}: {native} with native code, "
                      f"{len(members) - native} IR for JIT" + (f" ({forms})" if forms else ""))
        if compressed:
            packed = [i for i in fr.images if i.compressed]
            detail += f"; {compressed} compressed"
            if all(i.decompressed_size is not None for i in packed):  # zstd headers that declare it
                detail += f" ({sum(i.size for i in packed):,} bytes stored, {sum(i.decompressed_size or 0 for i in packed):,} decompressed)"
        out.append(detail)
        if fr.native_targets:
            out.extend(_table(fr))
            out.extend(f"  {line}" for line in _serves(fr))
        out.append("  " + summary(fr))
        if (carried := carried_summary(fr)) is not None:  # images the library loads itself (issue 39)
            out.append("  " + carried)
        out.extend(f"  warning: {w}" for w in fr.warnings)
    if quiet and not show_all:
        out.append(f"{len(quiet)} other binar{'ies' if len(quiet) != 1 else 'y'} without device code (--all lists them)")
    if not report.files:
        out.append(f"{report.path}: no binaries found")
    if report.errors:
        out.append(f"{len(report.errors)} file{'s' if len(report.errors) != 1 else ''} could not be read (listed above with the reason)")
    return "\n".join(out)
