"""The installed Intel toolchain is the authority (issue 27): whatever ocloc is installed —
Debian 12's 22.43 or Debian sid's 26.x (CI runs both lanes) — its ``-device`` words resolve to
the IP versions it reports, its families hold its shipping products and nothing it does not
list, and ``aotwheel compile`` writes the members ocloc's own ``-device a,b,…`` fat binary holds.

Every expectation is read from the installed ocloc itself (``ocloc compile --help``, ``ocloc
ids``, its own fat binaries), never from aotwheel's catalog, and no test names an ocloc version.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from conftest import CLANG, LLVM_SPIRV, ocloc_device_words, ocloc_zebin_args, require, run_tool

# The newest generations the issue names; the compile test takes those the installed ocloc builds,
# else (Debian 12) the newest ones it knows.
NEWEST = ("bmg-g21", "bmg-g31", "lnl-m", "ptl-h", "ptl-u", "wcl", "nvl-s", "nvl-h", "nvl-p", "cri")
KERNEL = "kernel void scale(global float *x, float a) { size_t i = get_global_id(0); x[i] = a * x[i]; }\n"


@cache
def _device_words() -> tuple[str, ...]:
    """The words of the installed ocloc's ``-device`` list, as its help prints them."""
    words = ocloc_device_words()
    assert words, "ocloc compile --help lists no -device words"
    return tuple(sorted(words))


@cache
def _ocloc_ids(word: str) -> tuple[str, ...]:
    proc = subprocess.run(["ocloc", "ids", word], capture_output=True, text=True, check=False)
    return tuple(re.findall(r"^\s*(\d+\.\d+\.\d+)\s*$", proc.stdout, re.M)) if proc.returncode == 0 else ()


def _is_stepping(word: str) -> bool:
    return re.search(r"-[a-z]\d[a-z]?(?:$|-)|-sdv$", word) is not None  # steppings; a software development vehicle


def _installed_catalog():  # type: ignore[no-untyped-def]
    from aotwheel.backends.intel.ocloc_table import installed_catalog

    return installed_catalog()


def _resolve_ips(text: str) -> list[str]:
    from aotwheel.backends.intel.devlist import IntelPart
    from aotwheel.devlist import resolve

    return [t.ip for t in resolve(text, catalog=_installed_catalog()).part_of(IntelPart).targets]


def _is_group_word(word: str) -> bool:
    """Intel's family and release names: gen8 ... gen12lp, xe, xe-hpc, xe2-hpg, xe3p-xpc, ..."""
    return re.fullmatch(r"gen\d+(lp)?|xe\d*p?(-[a-z]+)*", word) is not None


def _product_ips() -> dict[str, str]:
    """IP of every single-IP product word (no steppings, families or releases) of the installed ocloc."""
    out = {}
    for word in _device_words():
        ips = _ocloc_ids(word)
        if len(ips) == 1 and not _is_stepping(word) and not _is_group_word(word):
            out[word] = ips[0]
    return out


def test_every_product_word_of_the_installed_ocloc_resolves_to_the_ip_ocloc_ids_gives() -> None:
    require("ocloc")
    products = _product_ips()
    assert len(products) >= 15, products
    wrong = {}
    for word, ip in products.items():
        got = _resolve_ips(word)
        if got != [ip]:
            wrong[word] = (ip, got)
    assert not wrong, wrong


def test_every_family_holds_its_shipping_products_and_no_ip_ocloc_ids_does_not_list() -> None:
    require("ocloc")
    shipping = set(_product_ips().values())
    checked = 0
    for word in _device_words():
        ips = _ocloc_ids(word)
        if not ips or not (len(ips) > 1 or _is_group_word(word)):
            continue
        listed = set(ips)
        wanted = listed & shipping
        if not wanted:  # only pre-production IPs (22.43's xe-hp): refused with one line
            proc = subprocess.run([sys.executable, "-m", "aotwheel", "resolve", word], capture_output=True, text=True, check=False)
            assert proc.returncode == 2 and "no shipping product" in proc.stderr, (word, proc.stderr)
            continue
        got = set(_resolve_ips(word))
        assert got <= listed, f"{word}: {sorted(got - listed)} are not in 'ocloc ids {word}'"
        assert wanted <= got, f"{word}: shipping products {sorted(wanted - got)} missing"
        checked += 1
    assert checked >= 3


def test_a_range_resolves_to_the_shipping_products_ocloc_itself_builds_for_it(tmp_path: Path) -> None:
    require("ocloc", CLANG, LLVM_SPIRV)
    spv = _spirv(tmp_path)
    products = _product_ips()
    words = sorted((w for w in ("tgllp", "dg1", "acm-g10", "pvc") if w in products), key=lambda w: tuple(map(int, products[w].split("."))))
    text = f"{words[1]}:{words[-1]}"
    out = tmp_path / "range"
    out.mkdir()
    run_tool(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", text, "-output", "fat",
              "-out_dir", str(out), "-output_no_suffix"], cwd=tmp_path)
    built = {m[3:].rstrip("/") for m in _ar_members(out / "fat") if re.fullmatch(r"64\.\d+\.\d+\.\d+/?", m)}
    got = set(_resolve_ips(text))
    assert got <= built and (built & set(products.values())) <= got, (text, sorted(got), sorted(built))


def test_a_pci_id_resolves_as_ocloc_documents_it() -> None:
    require("ocloc")
    proc = subprocess.run(["ocloc", "compile", "--help"], capture_output=True, text=True, check=False)
    m = re.search(r"(0x[0-9A-Fa-f]{4}) device ID will be translated\s+to (\S+?)\.", proc.stdout + proc.stderr)
    if not m:
        pytest.skip("the installed ocloc's help gives no device-id example")
    assert _resolve_ips(m[1]) == [_ocloc_ids(m[2])[0]]


def _spirv(tmp_path: Path) -> Path:
    cl, bc, spv = tmp_path / "k.cl", tmp_path / "k.bc", tmp_path / "k.spv"
    cl.write_text(KERNEL)
    run_tool([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(cl), "-o", str(bc)])
    run_tool([LLVM_SPIRV, str(bc), "-o", str(spv)])
    return spv


def _ar_members(path: Path) -> list[str]:
    return run_tool(["ar", "t", str(path)]).stdout.split()


def _newest_buildable(count: int) -> list[str]:
    words = set(_device_words())
    picked = [w for w in NEWEST if w in words]
    if len(picked) < count:  # an older ocloc: its newest products
        products = _product_ips()
        older = sorted((w for w in products if w not in picked and w in words), key=lambda w: tuple(map(int, products[w].split("."))))
        seen = {products.get(p) for p in picked}
        for word in reversed(older):  # one word per IP (acm-g12 and dg2-g12 are one target)
            if len(picked) < count and products[word] not in seen:
                picked.append(word)
                seen.add(products[word])
    return picked[:count]


def _canonical(word: str) -> str:
    """The catalog's name for an ocloc word (dg2-g12 -> acm-g12)."""
    from aotwheel.backends.intel.catalog import load_catalog

    dev = load_catalog().by_name(word)
    return dev.name if dev else word


def test_compile_for_the_newest_devices_writes_the_members_of_ocloc_s_own_fat_binary(tmp_path: Path) -> None:
    require("ocloc", "ar", CLANG, LLVM_SPIRV)
    spv = _spirv(tmp_path)
    devices = _newest_buildable(8)
    assert len(devices) >= 4, devices
    env = {"AOTWHEEL_CACHE_DIR": str(tmp_path / "cache")}
    import os

    proc = subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(spv), "-d", ",".join(devices), "-o", str(tmp_path / "ours.ar"),
                           "--json"], capture_output=True, text=True, env={**os.environ, **env}, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    ref = tmp_path / "ref"
    ref.mkdir()
    # The coverage plan's -device words (bmg where one image serves the bmg group): ocloc's own fat
    # binary for them holds the members aotwheel wrote (64.bmg, 64.<ip>).
    words = [i["ocloc_device"] for i in report["coverage"]["images"]]
    cmd = ["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", ",".join(words), "-output", "fat",
           "-out_dir", str(ref), "-output_no_suffix", *ocloc_zebin_args()]
    if report.get("options"):
        cmd += ["-options", report["options"]]
    run_tool(cmd, cwd=tmp_path)
    (tmp_path / "x_ours").mkdir()
    (tmp_path / "x_ref").mkdir()
    run_tool(["ar", "x", str(tmp_path / "ours.ar")], cwd=tmp_path / "x_ours")
    run_tool(["ar", "x", str(ref / "fat")], cwd=tmp_path / "x_ref")
    members = sorted(p.name for p in (tmp_path / "x_ref").iterdir() if p.name.startswith("64."))
    assert sorted(d["member"] for d in report["devices"]) == members
    for member in members:
        ours = (tmp_path / "x_ours" / member).read_bytes()
        theirs = (tmp_path / "x_ref" / member).read_bytes()
        assert ours == theirs, f"member {member} differs from ocloc's own fat binary"
    served = sorted(d for image in report["devices"] for d in image["serves"])
    assert served == sorted(_canonical(d) for d in devices), (served, devices)


def test_compile_for_one_device_takes_what_this_ocloc_writes_for_one_device(tmp_path: Path) -> None:
    """ocloc 26 writes a single device's binary as <name>.bin even with -output_no_suffix (22.43:
    <name>); `aotwheel compile` failed on every device with 'exit 0; ocloc said: Build succeeded.'"""
    require("ocloc", CLANG, LLVM_SPIRV)
    spv = _spirv(tmp_path)
    device = _newest_buildable(1)[0]
    out = tmp_path / "bins"
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(spv), "-d", device, "--format", "dir", "-o", str(out)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    ref = tmp_path / "ref"
    ref.mkdir()
    report = subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(spv), "-d", device, "-o", str(tmp_path / "x.ar"), "--json"],
                            capture_output=True, text=True, check=True).stdout
    options = json.loads(report).get("options") or ""
    cmd = ["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", device, "-output", "one", "-out_dir", str(ref),
           "-output_no_suffix", "-exclude_ir", *ocloc_zebin_args()] + (["-options", options] if options else [])
    run_tool(cmd, cwd=tmp_path)
    produced = [p for p in ref.iterdir() if p.name.startswith("one")]
    assert len(produced) == 1
    catalog_name = json.loads(report)["devices"][0]["device"]
    assert (out / f"{catalog_name}.bin").read_bytes() == produced[0].read_bytes()


def test_inspect_names_the_core_and_product_of_every_newest_device_it_builds(tmp_path: Path) -> None:
    require("ocloc", CLANG, LLVM_SPIRV)
    spv = _spirv(tmp_path)
    devices = _newest_buildable(8)
    fat = tmp_path / "k.ar"
    subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(spv), "-d", ",".join(devices), "-o", str(fat)], check=True,
                   capture_output=True)
    text = subprocess.run([sys.executable, "-m", "aotwheel", "inspect", str(fat)], capture_output=True, text=True, check=True).stdout
    assert "core 0x" not in text and "product 1" not in text, text


def test_a_catalog_device_this_ocloc_cannot_build_is_refused_naming_the_release_that_can(tmp_path: Path) -> None:
    require("ocloc", CLANG, LLVM_SPIRV)
    from aotwheel.backends.intel.catalog import load_catalog
    from aotwheel.backends.intel.ocloc import FIRST_OCLOC

    words = {w.lower() for w in _device_words()}
    missing = [d.name for d in load_catalog().devices
               if d.shipping and d.name in FIRST_OCLOC and not ({d.name, *d.aliases} & words)]
    if not missing:
        pytest.skip("the installed ocloc builds every catalog device with a known first release")
    spv = _spirv(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(spv), "-d", missing[0], "-o", str(tmp_path / "k.ar")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert f"ocloc {FIRST_OCLOC[missing[0]]}" in proc.stderr and "intel-ocloc" in proc.stderr
    assert not (tmp_path / "k.ar").exists()


def test_resolve_list_says_where_each_name_comes_from() -> None:
    require("ocloc")
    text = subprocess.run([sys.executable, "-m", "aotwheel", "resolve", "--list"], capture_output=True, text=True, check=True).stdout
    version = _installed_catalog().ocloc_version
    assert version and f"installed ocloc {version}" in text
    only_ocloc = [w for w in _product_ips() if _installed_catalog().source(w) == "ocloc"]
    only_catalog = [d.name for d in _installed_catalog().devices if _installed_catalog().source(d.name) == "catalog"]
    for name in (only_catalog + only_ocloc)[:5]:  # 22.43: gen9 products / catalog-only xe2 (26.x knows them all)
        assert re.search(rf"^\s+{re.escape(name)} \[(ocloc|catalog)\]", text, re.M), name
    # Stepping names (26.x: bmg-g21-a0, dg2-g10-c0) resolve to the IP `ocloc ids` gives for them.
    for word in [w for w in _device_words() if _is_stepping(w) and len(_ocloc_ids(w)) == 1][:10]:
        assert _resolve_ips(word) == list(_ocloc_ids(word)), word
