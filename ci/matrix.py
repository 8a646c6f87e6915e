#!/usr/bin/env python3
"""The wheel matrix: one abi3 wheel per ``USE_AOT_DEVLIST`` variant, built here without Docker.

    python ci/matrix.py build [--variant DEVLIST]... [--project DIR] [--out DIR] [--wheel-variants] [--json]
    python ci/matrix.py report [--expect DEVLIST] [--json] WHEEL...
    python ci/matrix.py github-matrix          # the variants as a GitHub Actions matrix (JSON)
    python ci/matrix.py check-installed        # cibuildwheel test-command: installed aotwheel vs $USE_AOT_DEVLIST

``build`` runs ``pip wheel`` once per variant with ``USE_AOT_DEVLIST`` in the environment (what
cibuildwheel does in its container, see ci/cibuildwheel.toml) and prints, per wheel, its size and
the device code it carries as read back by :func:`aotwheel.inspect` (native targets, SPIR-V).
Variants go through the resolver before anything builds, so a bad one stops the run at once.
``--wheel-variants`` also writes the wheels as wheel variants (draft PEP 817/825, labelled by
:func:`aotwheel.variants.label_wheels`) into OUT/variants/ with variantlib's index metadata
(``<name>-<version>-variants.json``); it needs ``pip install 'variantlib[cli]'``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: The matrix. Shared by the hosted workflow (via ``github-matrix``) and the local runner.
VARIANTS: tuple[tuple[str, bool], ...] = (
    ("pvc", True),
    ("pvc,ats-m150", True),
    ("none", True),
)


@dataclass(frozen=True)
class Variant:
    """One matrix entry: a devlist and whether SPIR-V is kept for JIT."""

    devlist: str
    jit_fallback: bool = True

    @property
    def slug(self) -> str:
        """A directory/artifact name: ``pvc,ats-m150`` -> ``pvc_ats-m150``."""
        slug = re.sub(r"[^a-z0-9.-]+", "_", self.devlist.lower()).strip("_") or "default"
        return slug if self.jit_fallback else slug + "_no-jit"


@dataclass
class WheelReport:
    """What one wheel carries."""

    wheel: str
    size: int
    variant: str | None = None
    targets: list[str] = field(default_factory=list)   # "pvc (12.60.7)"
    ir: list[str] = field(default_factory=list)         # "spirv", ...
    extensions: list[str] = field(default_factory=list)  # files inside the wheel with device code
    build_seconds: float | None = None
    problems: list[str] = field(default_factory=list)   # mismatches with --expect
    variant_wheel: str | None = None                     # --wheel-variants: the labelled copy
    variant_properties: list[str] = field(default_factory=list)


def _use_repo_package() -> None:
    # Build-side commands describe wheels with this checkout's aotwheel, whatever is installed.
    path = str(REPO / "python")
    if path not in sys.path:
        sys.path.insert(0, path)


def _fail(message: str) -> int:
    print(f"matrix: error: {message}", file=sys.stderr)
    return 2


def resolve_variant(variant: Variant) -> tuple[set[str], bool]:
    """The canonical target names a variant must produce, and whether SPIR-V must be kept."""
    from aotwheel.backends.intel.devlist import IntelPart
    from aotwheel.devlist import resolve

    devlist = resolve(variant.devlist, jit_fallback=variant.jit_fallback)
    return set(devlist.part_of(IntelPart).names), devlist.jit_fallback


def describe(path: Path) -> WheelReport:
    """Size and device code of a wheel (or of an extension file), read back by the inspector."""
    from aotwheel.inspector import inspect

    report = inspect(path)
    out = WheelReport(wheel=str(path), size=path.stat().st_size)
    for f in report.files:
        if f.native_targets or f.ir:
            out.extensions.append(f.path)
        for t in f.native_targets:
            label = f"{t.name or t.generic or '?'} ({t.ip})" if t.ip else (t.name or t.generic or t.member or "?")
            if label not in out.targets:
                out.targets.append(label)
        for kind in f.ir:
            if kind not in out.ir:
                out.ir.append(kind)
    return out


def check(report: WheelReport, variant: Variant) -> WheelReport:
    """Fill ``report.problems`` with every way the wheel differs from what ``variant`` asks."""
    expected, keep_spirv = resolve_variant(variant)
    found = {t.split(" ", 1)[0] for t in report.targets}
    if found != expected:
        report.problems.append(f"targets {sorted(found)} != expected {sorted(expected)}")
    if keep_spirv and "spirv" not in report.ir:
        report.problems.append("no SPIR-V for JIT fallback")
    if not keep_spirv and "spirv" in report.ir:
        report.problems.append("SPIR-V present although JIT fallback is off")
    if not report.extensions:
        report.problems.append("no file with device code")
    return report


def build_variant(variant: Variant, project: Path, out: Path, build_root: Path, isolation: bool) -> Path:
    """``pip wheel`` the project for one variant; returns the wheel's path."""
    dest = out / variant.slug
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    env = dict(os.environ)
    env["USE_AOT_DEVLIST"] = variant.devlist
    env["USE_AOT_JIT_FALLBACK"] = "ON" if variant.jit_fallback else "OFF"
    cmd = [
        sys.executable, "-m", "pip", "wheel", str(project), "--no-deps", "--no-cache-dir", "-w", str(dest),
        # One build tree per variant: the CMake cache remembers USE_AOT_DEVLIST.
        "-C", f"build-dir={build_root / variant.slug}",
    ]
    if not isolation:
        cmd.append("--no-build-isolation")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wheels = sorted(dest.glob("*.whl"))
    if proc.returncode != 0 or len(wheels) != 1:
        log = (proc.stdout + proc.stderr).strip().splitlines()[-25:]
        print("\n".join(log), file=sys.stderr)
        raise RuntimeError(f"pip wheel for USE_AOT_DEVLIST={variant.devlist} failed (exit {proc.returncode}); see the log above")
    return wheels[0]


def _table(reports: list[WheelReport]) -> str:
    rows = [("variant", "wheel", "size (bytes)", "native targets", "JIT IR", "status")]
    for r in reports:
        rows.append((
            r.variant or "-",
            Path(r.wheel).name,
            f"{r.size:,}",
            ", ".join(r.targets) or "(none)",
            ", ".join(r.ir) or "(none)",
            "; ".join(r.problems) or "ok",
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def _emit(reports: list[WheelReport], as_json: bool) -> int:
    print(json.dumps([asdict(r) for r in reports], indent=2) if as_json else _table(reports))
    if not as_json:
        for r in reports:
            if r.variant_wheel:
                print(f"variant: {Path(r.variant_wheel).name}: {'; '.join(r.variant_properties) or '(null variant: the fallback)'}")
    return 1 if any(r.problems for r in reports) else 0


def _ignored_by_git(out: Path) -> None:
    """OUT holds build products only: a ``.gitignore`` of ``*`` inside keeps it (wherever it sits in a
    clone) out of ``git status``, as ``python -m venv`` and pytest do for their folders."""
    out.mkdir(parents=True, exist_ok=True)
    marker = out / ".gitignore"
    if not marker.exists():
        marker.write_text("# made by ci/matrix.py build: wheels and build trees, never committed\n*\n", encoding="utf-8")


def cmd_build(args: argparse.Namespace) -> int:
    _use_repo_package()
    from aotwheel.errors import AotwheelError

    variants = [Variant(v, not args.no_jit) for v in args.variant] if args.variant else [Variant(d, j) for d, j in VARIANTS]
    try:
        for v in variants:
            resolve_variant(v)  # every variant is valid before the first build starts
    except AotwheelError as exc:
        return _fail(str(exc))
    out = Path(args.out).resolve()
    _ignored_by_git(out)
    build_root = Path(args.build_dir).resolve() if args.build_dir else out / "_build"
    reports: list[WheelReport] = []
    for v in variants:
        start = time.monotonic()
        try:
            wheel = build_variant(v, Path(args.project).resolve(), out, build_root, args.isolation)
        except RuntimeError as exc:
            return _fail(str(exc))
        report = check(describe(wheel), v)
        report.variant = v.devlist if v.jit_fallback else f"{v.devlist} (no JIT)"
        report.build_seconds = round(time.monotonic() - start, 2)
        reports.append(report)
    if args.wheel_variants:
        try:
            write_wheel_variants(reports, out / "variants")
        except Exception as exc:
            if any(c.__name__ == "AotwheelError" for c in type(exc).__mro__):
                return _fail(str(exc))
            raise
    return _emit(reports, args.json)


def write_wheel_variants(reports: list[WheelReport], dest: Path) -> Path:
    """Label the built wheels as variants in ``dest`` and write variantlib's index metadata there."""
    from aotwheel.variants import label_wheels

    if dest.exists():
        shutil.rmtree(dest)
    labelled = label_wheels([r.wheel for r in reports], dest)
    for report, v in zip(reports, labelled):
        report.variant_wheel, report.variant_properties = v.output, v.properties
    from variantlib.commands.generate_index_json import generate_index_json

    generate_index_json(["-d", str(dest)])
    return dest


def cmd_report(args: argparse.Namespace) -> int:
    _use_repo_package()
    reports = []
    for w in args.wheels:
        path = Path(w)
        if not path.is_file():
            return _fail(f"{w} is not a file; pass built wheels, e.g. wheelhouse/pvc/*.whl")
        report = describe(path)
        if args.expect is not None:
            report.variant = args.expect
            check(report, Variant(args.expect, not args.no_jit))
        reports.append(report)
    return _emit(reports, args.json)


def cmd_github_matrix(args: argparse.Namespace) -> int:
    include = [{"devlist": d, "jit_fallback": "ON" if j else "OFF", "slug": Variant(d, j).slug} for d, j in VARIANTS]
    print(json.dumps({"include": include}, separators=(",", ":")))
    return 0


def cmd_check_installed(args: argparse.Namespace) -> int:
    # Uses the *installed* aotwheel (the wheel under test), not this checkout.
    repo_python = str(REPO / "python")
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(repo_python)]
    import aotwheel
    from aotwheel.devlist import DEFAULT_DEVLIST, env_flag

    devlist = args.expect or os.environ.get("USE_AOT_DEVLIST") or DEFAULT_DEVLIST
    jit = env_flag(os.environ.get("USE_AOT_JIT_FALLBACK"), default=True)
    package_dir = Path(aotwheel.__file__).parent
    extensions = sorted(p for p in package_dir.rglob("*.so") if p.is_file())
    if not extensions:
        return _fail(f"no extension module under {package_dir}; was the wheel built without device code?")
    merged = WheelReport(wheel=str(package_dir), size=sum(p.stat().st_size for p in extensions), variant=devlist)
    for ext in extensions:
        r = describe(ext)
        merged.extensions += r.extensions
        merged.targets += [t for t in r.targets if t not in merged.targets]
        merged.ir += [k for k in r.ir if k not in merged.ir]
    return _emit([check(merged, Variant(devlist, jit))], args.json)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="matrix.py", description="Build and describe the USE_AOT_DEVLIST wheel matrix.")
    sub = parser.add_subparsers(dest="command", required=True)

    b = sub.add_parser("build", help="build one wheel per variant (no Docker) and print size and targets")
    b.add_argument("--variant", action="append", metavar="DEVLIST", help="a USE_AOT_DEVLIST value (repeatable; default: the matrix)")
    b.add_argument("--no-jit", action="store_true", help="build --variant values with USE_AOT_JIT_FALLBACK=OFF")
    b.add_argument("--project", default=str(REPO), help="project to build (default: this repository)")
    b.add_argument("--out", default=str(REPO / "build" / "matrix"), help="wheels go to OUT/<variant>/")
    b.add_argument("--build-dir", help="CMake build trees (default: OUT/_build/<variant>)")
    b.add_argument("--isolation", action="store_true", help="use pip's isolated build environment (downloads build deps)")
    b.add_argument("--wheel-variants", action="store_true",
                   help="also write the wheels as wheel variants + variantlib's index JSON into OUT/variants/")
    b.add_argument("--json", action="store_true")
    b.set_defaults(handler=cmd_build)

    r = sub.add_parser("report", help="print size and targets of built wheels")
    r.add_argument("wheels", nargs="+", metavar="WHEEL")
    r.add_argument("--expect", metavar="DEVLIST", help="exit 1 unless the wheels carry exactly these targets")
    r.add_argument("--no-jit", action="store_true", help="with --expect: SPIR-V must be absent")
    r.add_argument("--json", action="store_true")
    r.set_defaults(handler=cmd_report)

    g = sub.add_parser("github-matrix", help="print the variants as a GitHub Actions matrix")
    g.set_defaults(handler=cmd_github_matrix)

    c = sub.add_parser("check-installed", help="check the installed aotwheel against $USE_AOT_DEVLIST")
    c.add_argument("--expect", metavar="DEVLIST", help="default: $USE_AOT_DEVLIST, else the resolver's default")
    c.add_argument("--json", action="store_true")
    c.set_defaults(handler=cmd_check_installed)

    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except Exception as exc:  # aotwheel's own errors: one line, like the aotwheel CLI
        if any(c.__name__ == "AotwheelError" for c in type(exc).__mro__):
            return _fail(str(exc))
        raise


if __name__ == "__main__":
    sys.exit(main())
