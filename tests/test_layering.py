"""The layering: a vendor-free core, and one package per vendor under ``aotwheel.backends``.

Read from the source (every import, module level or lazy), so that a new import across a layer
fails here, not in a user's environment:

- core modules reach a vendor only through the registries (``aotwheel.backends``, which imports
  each ``backends.<vendor>.backend`` by name, and ``aotwheel.backends.readers``, each
  ``backends.<vendor>.reader``);
- a vendor package never imports another vendor's package;
- a vendor package imports only the lower core (data model, errors, settings, vendor-free
  formats, report, the build steps' cache and stores), never the CLI, the resolver or the run time
  that call it;
- a core module names no vendor's token, format, name or run time in its code, except the
  registry's own lines (``ALLOWED_VENDOR_WORDS``, each with its reason).

``CORE_TO_VENDOR`` and ``VENDOR_TO_UPPER`` list the imports that still cross (the architecture step
moves them behind the registry one by one); an import not listed fails, and so does a listed one
that no longer exists, so the lists only shrink.
"""

from __future__ import annotations

import re

from test_model import _import_graph

VENDORS = ("intel", "nvidia", "amd")
REGISTRIES = ("aotwheel.backends", "aotwheel.backends.readers")

# Core modules that still import a vendor's modules directly: module -> vendor modules it imports.
CORE_TO_VENDOR: dict[str, set[str]] = {
}

# What a vendor module may import outside the vendor packages.
LOWER_CORE = ("aotwheel", "aotwheel.formats", "aotwheel.buildsteps", "aotwheel.model", "aotwheel.results", "aotwheel.outcomes", "aotwheel.acceptable",
              "aotwheel.errors", "aotwheel.variables", "aotwheel.report", "aotwheel.jitcache", "aotwheel.backends",
              "aotwheel.backends.protocol", "aotwheel.backends.capabilities", "aotwheel.backends.readers", "aotwheel.backends.readspec")
LOWER_CORE_PACKAGES = ("aotwheel.formats.", "aotwheel.buildsteps.")

# Vendor modules that still import the upper core: module -> upper-core modules.
VENDOR_TO_UPPER: dict[str, set[str]] = {
}


def _vendor(module: str) -> str | None:
    for v in VENDORS:
        if module == f"aotwheel.backends.{v}" or module.startswith(f"aotwheel.backends.{v}."):
            return v
    return None


def _lower(module: str) -> bool:
    return module in LOWER_CORE or module.startswith(LOWER_CORE_PACKAGES) and module != "aotwheel.buildsteps.__main__"


def test_core_reaches_vendors_only_through_the_registry() -> None:
    edges = _import_graph()
    crossing = {m: {e for e in out if _vendor(e)} for m, out in edges.items()
                if _vendor(m) is None and m not in REGISTRIES}
    crossing = {m: e for m, e in crossing.items() if e}
    assert crossing == CORE_TO_VENDOR


def test_a_vendor_never_imports_another_vendor() -> None:
    edges = _import_graph()
    across = {m: sorted(e for e in out if _vendor(e) not in (None, _vendor(m))) for m, out in edges.items() if _vendor(m)}
    assert {m: e for m, e in across.items() if e} == {}


def test_vendors_import_only_the_lower_core() -> None:
    edges = _import_graph()
    upper = {m: {e for e in out if _vendor(e) is None and not _lower(e)} for m, out in edges.items() if _vendor(m)}
    assert {m: e for m, e in upper.items() if e} == VENDOR_TO_UPPER


def test_the_lower_core_imports_no_registry() -> None:
    # Layer 1 (data, containers, settings declarations, build infrastructure) sits below the
    # registries: what it needs of the backends is handed in (the manifest step gets each backend's
    # build-steps module from its caller). config reads every backend's variables through the
    # registry, so it is a core service above it; vendors read their own through aotwheel.variables.
    edges = _import_graph()
    below = {m for m in edges if _vendor(m) is None and _lower(m) and m not in (*REGISTRIES, "aotwheel", "aotwheel.backends.protocol")}
    upward = {m: sorted(e for e in edges[m] if e in REGISTRIES or not _lower(e) and _vendor(e) is None) for m in below}
    assert {m: e for m, e in upward.items() if e} == {}


def test_the_registry_names_every_vendor_package_and_imports_none_at_import_time() -> None:
    import subprocess
    import sys

    from aotwheel import backends
    from aotwheel.backends import readers

    # One entry per vendor, every module it names inside that vendor's own package.
    assert set(backends.names()) == set(VENDORS)
    for name, vendor in backends._VENDORS.items():
        named = [m for m in vendor.values() if m is not None]
        assert named and all(m.startswith(f"aotwheel.backends.{name}.") for m in named), (name, vendor)
    # Every backend has its reader in its own package, under the same name.
    assert sorted(readers.names()) == sorted(backends.names())
    assert {n: readers.modules()[n].rsplit(".", 1)[0] for n in readers.names()} == \
        {n: backends._VENDORS[n]["backend"].rsplit(".", 1)[0] for n in backends.names()}
    code = "import sys, aotwheel.backends; print(sorted(m for m in sys.modules if m.startswith('aotwheel.backends.') or m == 'typing'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# A vendor's tokens and formats in code (not docstrings or --help text): sm_XY, compute_XY, cubin,
# nvptx, PTX, .nv_fatbin, zebin, ocloc, spir64_gen, gfxNNN, pvc, Level Zero, and the vendors and their
# run times by name (Intel, NVIDIA, AMD, CUDA, HIP).
VENDOR_WORD = re.compile(r"\bptx\b|\bintel\b|\bnvidia\b|\bamd\b|\bcuda\b|\bhip\b|"
                         r"\bsm_\d|\bsm_\b|compute_\d|nv_fatbin|zebin|ocloc|spir64_gen|\bgfx\d|nvptx|cubin|\bpvc\b|levelzero|level zero", re.I)

# The only string constants of core modules that may name one (module -> those constants, sorted):
# anything else asks its backend or the registry.
ALLOWED_VENDOR_WORDS: dict[str, list[str]] = {
    # The registry: one entry per vendor (name -> its modules), as adding a backend requires.
    "backends/__init__.py": ["amd", "aotwheel.backends.amd.backend", "aotwheel.backends.amd.buildsteps", "aotwheel.backends.amd.reader",
                             "aotwheel.backends.amd.variables",
                             "aotwheel.backends.intel.backend", "aotwheel.backends.intel.buildsteps", "aotwheel.backends.intel.reader",
                             "aotwheel.backends.intel.variables", "aotwheel.backends.nvidia.backend", "aotwheel.backends.nvidia.buildsteps",
                             "aotwheel.backends.nvidia.reader", "aotwheel.backends.nvidia.variables", "intel", "nvidia"],
    # aotwheel.load_catalog, a published API name (Intel's device catalog), imported lazily.
    "__init__.py": ["aotwheel.backends.intel.catalog"],
    # LLVM's OffloadKind enum (OFK_Cuda, OFK_HIP): programming models LLVM's vendor-neutral container names.
    "formats/offload.py": ["cuda", "hip"],
}


def test_core_names_vendor_tokens_only_where_listed() -> None:
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "python" / "aotwheel"
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "backends" and len(rel.parts) > 2:  # a vendor's own package
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        prose: set[int] = set()
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body and \
                    isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                prose.add(id(body[0].value))
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg in ("help", "description", "epilog"):
                        prose.update(id(c) for c in ast.walk(kw.value))
                if isinstance(node.func, ast.Name) and node.func.id == "Variable" and len(node.args) > 2:  # Variable(name, default, help)
                    prose.update(id(c) for c in ast.walk(node.args[2]))
        words = sorted(c.value for c in ast.walk(tree) if isinstance(c, ast.Constant) and isinstance(c.value, str) and id(c) not in prose
                       and VENDOR_WORD.search(c.value))
        if words:
            found[rel.as_posix()] = words
    assert found == ALLOWED_VENDOR_WORDS
