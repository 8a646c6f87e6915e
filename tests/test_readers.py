"""The inspector hands a vendor's formats to the backend reader that claims them (``ReadSpec``):
a whole file by its magic, a host ELF by one of its sections, and nothing it does not claim. A
reader registered from outside (one line in ``aotwheel.backends.readers``) is asked like the
built-in ones, so adding a vendor needs no change to the inspector. Host binaries are real gcc
output."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from aotwheel.backends import ReadSpec, readers
from aotwheel.backends.intel import kinds as intel_kinds
from aotwheel.errors import InspectError
from aotwheel.inspector import inspect
from aotwheel.model import Image, ImageKind
from aotwheel.records import asdict

_READER = '''
from aotwheel.backends import ReadSpec
from aotwheel.model import ImageKind, Target

READS = ReadSpec(magic=(b"XDEVCODE",), sections=(".xdev_code",))
CALLS = []


def _target(walk, region, section):
    CALLS.append(section)
    walk.report.native_targets.append(Target(name="xdev1", ip=None, member=None, format=ImageKind.UNKNOWN,
                                             size=region.size, image=-1, vendor="xdev"))


def read_file(walk, region, kind):
    walk.report.kind = "xdev"
    _target(walk, region, None)
    return True


def read_host(walk, region, view, host):
    sec = view.section(".xdev_code")
    _target(walk, region.sub(sec.offset, sec.size, "section '.xdev_code'"), sec.name)


def read_image(walk, region, kind, img, depth, member):
    pass


def spirv_in(img, load, label):
    return None
'''


@pytest.fixture
def xdev_reader(tmp_path, monkeypatch):
    """A fourth vendor's reader, registered under the name ``xdev`` for the test only."""
    (tmp_path / "xdev_reader.py").write_text(_READER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(readers._REGISTERED, "xdev", "xdev_reader")
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
