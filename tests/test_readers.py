"""The inspector hands a vendor's formats to the backend reader that claims them (``ReadSpec``):
a whole file by its magic, a host ELF by one of its sections, and nothing it does not claim. A
reader registered from outside (one line in ``aotwheel.backends.readers``) is asked like the
built-in ones, so adding a vendor needs no change to the inspector. Host binaries are real gcc
output."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import textwrap
from dataclasses import asdict
from pathlib import Path

import pytest

from aotwheel import backends
from aotwheel.backends import readers
from aotwheel.backends.intel import kinds as intel_kinds
from aotwheel.backends.readspec import ReadSpec
from aotwheel.errors import InspectError
from aotwheel.inspector import inspect
from aotwheel.model import Image, ImageKind

_READER = '''
from aotwheel.backends.readspec import ReadSpec
from aotwheel.model import ImageKind, Target

XDEV_ELF = ImageKind.declare("xdev-elf")  # its ELF-based format: e_machine 0x7de7
XDEV_IR = ImageKind.declare("xdev-ir", label="XDEV IR")  # an IR its driver JIT-compiles
READS = ReadSpec(magic=(b"XDEVCODE",), sections=(".xdev_code",), file_kinds=(XDEV_ELF,), image_kinds=(XDEV_ELF,),
                 elf_kinds=((None, 0x7DE7, XDEV_ELF),), formats=("xdev binary",))
CALLS = []


def _target(walk, region, section):
    CALLS.append(section)
    walk.report.native_targets.append(Target(name="xdev1", ip=None, member=None, format=ImageKind.UNKNOWN,
                                             size=region.size, image=-1, vendor="xdev"))


def read_file(walk, region, kind):
    walk.report.kind = "xdev" if kind == ImageKind.UNKNOWN else kind
    _target(walk, region, None)
    return True


def read_host(walk, region, view, host):
    sec = view.section(".xdev_code")
    _target(walk, region.sub(sec.offset, sec.size, "section '.xdev_code'"), sec.name)


def read_image(walk, region, kind, img, depth, member):
    CALLS.append(("image", kind, img.triple))


def spirv_in(img, load, label):
    return None
'''


@pytest.fixture
def xdev_reader(tmp_path, monkeypatch):
    """A fourth vendor's reader, registered under the name ``xdev`` for the test only."""
    (tmp_path / "xdev_reader.py").write_text(_READER)
    monkeypatch.syspath_prepend(str(tmp_path))
    # One registry entry; its backend and settings modules are never imported by inspection.
    monkeypatch.setitem(backends._VENDORS, "xdev", {"backend": "xdev_backend", "settings": "xdev_settings", "reader": "xdev_reader", "build": None})
    import xdev_reader

    xdev_reader.CALLS.clear()
    return xdev_reader


def _gcc_library(tmp_path: Path, source: str) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    src, lib = tmp_path / "lib.c", tmp_path / "libhost.so"
    src.write_text(textwrap.dedent(source))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return lib


def test_every_builtin_reader_has_the_reader_interface():
    for module in readers.all_readers():
        assert isinstance(module.READS, ReadSpec), module.__name__
        for fn in ("read_file", "read_host", "read_image", "spirv_in"):
            assert callable(getattr(module, fn)), (module.__name__, fn)
        assert all(isinstance(k, ImageKind) for k in module.READS.file_kinds + module.READS.image_kinds), module.__name__


def test_nvidia_reader_claims_the_fat_binary_magic_and_markers_its_format_module_defines():
    from aotwheel.backends.nvidia import fatbin, reader

    assert reader.READS.magic == (fatbin.MAGIC_BYTES,)
    assert set(reader.READS.sections) == set(fatbin.CUDA_MARKERS)


def test_a_registered_reader_gets_a_whole_file_by_its_magic(tmp_path, xdev_reader):
    blob = tmp_path / "kernels.xdev"
    blob.write_bytes(b"XDEVCODE" + bytes(56))
    fr = inspect(blob).files[0]
    assert (fr.kind, [(t.name, t.vendor, t.size) for t in fr.native_targets]) == ("xdev", [("xdev1", "xdev", 64)])
    assert xdev_reader.CALLS == [None]


def test_a_registered_readers_ir_label_and_ip_column_come_from_its_package(tmp_path, xdev_reader):
    from aotwheel.backends import with_ip_versions
    from aotwheel.cli.inspect import render
    from aotwheel.model import ir_labels
    from aotwheel.report import ir_name

    assert ir_labels()["xdev-ir"] == "XDEV IR"
    assert (ir_name("xdev-ir"), ir_name("xdev-ir v2"), ir_name("spirv"), ir_name("ptx compute_90")) == ("XDEV IR", "XDEV IR v2", "SPIR-V", "PTX compute_90")
    assert "xdev" not in with_ip_versions() and "intel" in with_ip_versions()
    blob = tmp_path / "kernels.xdev"
    blob.write_bytes(b"XDEVCODE" + bytes(56))
    rows = [line.split() for line in render(inspect(blob), show_all=True).splitlines()]
    assert [r[:3] for r in rows if r[0] == "xdev1"] == [["xdev1", "-", "-"]]  # no IP versions: "-", not "?" (not read)
    from aotwheel.model import Target
    from aotwheel.report import FileReport, Report

    cpu = Target(name="spir64_x86_64", ip=None, member=None, format=intel_kinds.CPU_AOT, size=10, image=0, vendor="intel")
    rows = [line.split() for line in render(Report("lib.so", [FileReport("lib.so", [cpu], [], [], None)]), show_all=True).splitlines()]
    assert [r[:3] for r in rows if r[0] == "spir64_x86_64"] == [["spir64_x86_64", "?", "-"]]  # Intel's targets have IP versions: not read


def test_an_unclaimed_magic_is_an_error_naming_the_file(tmp_path):
    blob = tmp_path / "kernels.xdev"
    blob.write_bytes(b"XDEVCODE" + bytes(56))
    with pytest.raises(InspectError, match=r"kernels\.xdev: not an ELF.*magic 58444556"):
        inspect(blob)


def test_a_registered_reader_gets_a_host_binary_with_its_section_only(tmp_path, xdev_reader):
    with_section = _gcc_library(tmp_path, """
        __attribute__((section(".xdev_code"), used)) static const char code[100] = "XDEV";
        int f(void) { return 1; }
    """)
    fr = inspect(with_section).files[0]
    assert [(t.name, t.vendor, t.size) for t in fr.native_targets] == [("xdev1", "xdev", 100)]
    assert xdev_reader.CALLS == [".xdev_code"]
    plain = tmp_path / "plain"
    plain.mkdir()
    without = _gcc_library(plain, "int f(void) { return 1; }\n")
    assert inspect(without).files[0].native_targets == []
    assert xdev_reader.CALLS == [".xdev_code"]  # not asked about a binary without its section


def test_image_kinds_serialise_and_format_as_their_plain_values():
    img = Image(0, 0, 1, intel_kinds.CPU_AOT, None, False, content=ImageKind.SPIRV)
    assert json.loads(json.dumps(asdict(img)))["kind"] == "cpu-aot"
    assert f"{img.kind} {img.content}" == "cpu-aot spirv"
    assert img.kind == "cpu-aot" and ImageKind("zebin") is intel_kinds.ZEBIN


def test_a_backend_declares_its_image_kinds_once_each():
    from aotwheel.backends.nvidia import reader as nvidia_reader

    assert ImageKind.declare("zebin") is intel_kinds.ZEBIN and ImageKind("cubin") is nvidia_reader.CUBIN
    assert (intel_kinds.CPU_AOT.name, repr(intel_kinds.CPU_AOT)) == ("CPU_AOT", "<ImageKind.CPU_AOT: 'cpu-aot'>")
    assert ImageKind.declare("spirv") is ImageKind.SPIRV  # the vendor-neutral kinds are declared too
    with pytest.raises(ValueError, match="not a valid ImageKind"):
        ImageKind("no-backend-declares-this")
    for bad in ("Zebin", "two words", "", "x/y"):
        with pytest.raises(ValueError, match="ImageKind.declare: .* is not a kind name"):
            ImageKind.declare(bad)


def _elf_header(e_type: int, e_machine: int) -> bytes:
    """The first 64 bytes of a little-endian ELF64 file with these header fields."""
    return (b"\x7fELF" + bytes((2, 1, 1)) + bytes(9) + struct.pack("<HHI", e_type, e_machine, 1)).ljust(64, b"\0")


def test_a_registered_reader_names_its_elf_format_as_a_file_and_as_an_image(tmp_path, xdev_reader):
    from _inspect_util import host_library

    blob = tmp_path / "kernels.xbin"
    blob.write_bytes(_elf_header(2, 0x7DE7))
    fr = inspect(blob).files[0]
    assert (fr.kind, [(t.name, t.vendor, t.size) for t in fr.native_targets]) == ("xdev-elf", [("xdev1", "xdev", 64)])
    assert xdev_reader.CALLS == [None]
    xdev_reader.CALLS.clear()
    so = host_library(tmp_path, [("xdev64", _elf_header(2, 0x7DE7), 64), ("xdev64", _elf_header(2, 0x7DE8), 64)])
    fr = inspect(so).files[0]
    assert [(i.kind, i.triple) for i in fr.images] == [("xdev-elf", "xdev64"), ("elf", "xdev64")]
    assert xdev_reader.CALLS == [("image", "xdev-elf", "xdev64")]  # not asked about the ELF its rule does not name


def test_the_error_line_for_an_unknown_file_names_the_formats_the_readers_read(tmp_path, xdev_reader):
    blob = tmp_path / "kernels.bad"
    blob.write_bytes(b"NOTHING KNOWN" + bytes(51))
    with pytest.raises(InspectError) as exc:
        inspect(blob)
    assert str(exc.value) == (f"{blob}: not an ELF, wheel, ar, zebin, xdev binary, SPIR-V, zstd image or offload bundle (magic 4e4f5448) "
                              "at offset 0x0; pass a device binary")


def test_the_error_line_for_an_unknown_file_names_the_builtin_formats(tmp_path):
    blob = tmp_path / "kernels.bad"
    blob.write_bytes(b"NOTHING KNOWN" + bytes(51))
    with pytest.raises(InspectError) as exc:
        inspect(blob)
    assert str(exc.value) == f"{blob}: not an ELF, wheel, ar, zebin, SPIR-V, zstd image or offload bundle (magic 4e4f5448) at offset 0x0; pass a device binary"
