"""OpenCL C (or C++ for OpenCL) -> SPIR-V with clang + llvm-spirv, and reading SPIR-V entry points.

Every ``spirv`` build step imports this module, mostly to take its result from the cache: what only
a compile needs (subprocess) is imported when one runs; finding the tools is
:mod:`aotwheel.backends.intel.clang` (configure time).
"""

from __future__ import annotations

import os
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from aotwheel.errors import AotwheelError, ToolchainError

SPIRV_MAGIC = 0x07230203
_OP_ENTRY_POINT = 15

#: Per-language clang flags; the default OpenCL C 2.0 matches what ocloc and the runtimes accept.
_LANG_FLAGS = {
    ".cl": ["-cl-std=CL2.0"],
    ".clcpp": ["-cl-std=clc++2021"],
}


@dataclass(frozen=True, slots=True)
class SpirvToolchain:
    """A matching clang / llvm-spirv pair (found by :func:`aotwheel.backends.intel.clang.find_spirv_toolchain`)."""

    clang: str
    clang_version: str
    llvm_spirv: str
    llvm_spirv_version: str

    @property
    def major(self) -> int:
        """The LLVM major version both tools share."""
        return int(self.clang_version.split(".")[0])

    def to_dict(self) -> dict[str, str]:
        """Paths and versions, as recorded in the toolchain JSON and the manifest."""
        return {
            "clang": self.clang,
            "clang_version": self.clang_version,
            "llvm_spirv": self.llvm_spirv,
            "llvm_spirv_version": self.llvm_spirv_version,
        }


def clang_command(tc: SpirvToolchain, source: str, bitcode: str, depfile: str | None, extra: list[str]) -> list[str]:
    """The clang argument list that turns ``source`` into SPIR target LLVM bitcode."""
    ext = Path(source).suffix.lower()
    cmd = [tc.clang, *_LANG_FLAGS.get(ext, _LANG_FLAGS[".cl"]), "-target", "spir64", "-O2", "-emit-llvm", "-c"]
    if depfile:
        cmd += ["-MD", "-MF", depfile, "-MT", bitcode]
    return [*cmd, *extra, source, "-o", bitcode]


def compile_to_spirv(
    tc: SpirvToolchain, source: str, output: str, *, depfile: str | None = None, extra: list[str] | None = None
) -> bytes:
    """Compile ``source`` to SPIR-V at ``output`` (written atomically); returns the SPIR-V bytes.

    Raises :class:`ToolchainError` with the compiler's diagnostics when a step fails.
    """
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # only when compiling (a cache hit never needs it)

    with tempfile.TemporaryDirectory(prefix=".aotwheel-spv-", dir=out.parent) as tmp:
        bc = os.path.join(tmp, out.stem + ".bc")
        spv = os.path.join(tmp, out.name)
        dep_tmp = os.path.join(tmp, "dep.d") if depfile else None
        _run(clang_command(tc, source, bc, dep_tmp, list(extra or [])), "clang", source)
        _run([tc.llvm_spirv, bc, "-o", spv], "llvm-spirv", source)
        data = Path(spv).read_bytes()
        entry_points(data)  # validates the header before anything is published
        if depfile and dep_tmp:
            # clang names the temporary .bc as the target; ninja wants the real output.
            text = Path(dep_tmp).read_text().replace(bc, str(out), 1)
            Path(dep_tmp).write_text(text)
            os.replace(dep_tmp, depfile)
        os.replace(spv, out)
    return data


def _run(cmd: list[str], what: str, source: str) -> None:
    import subprocess

    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ToolchainError(f"Cannot run {what} ({cmd[0]}): {exc.strerror}; reinstall it") from None
    if proc.returncode != 0:
        # The diagnostics are the useful part: show them, then fail with one line.
        log = (proc.stderr + proc.stdout).strip()
        if log:
            print(log, file=sys.stderr)
        raise ToolchainError(f"{what} failed on {source} (exit {proc.returncode}); fix the errors shown above")


def entry_points(data: bytes) -> list[str]:
    """Kernel names (``OpEntryPoint`` literals) of a little- or big-endian SPIR-V module.

    Bounds-checked: raises :class:`AotwheelError` on a truncated or non-SPIR-V input.
    """
    if len(data) < 20 or len(data) % 4:
        raise AotwheelError(f"not a SPIR-V module ({len(data)} bytes; need a multiple of 4, at least 20)")
    for endian in "<>":
        if struct.unpack_from(endian + "I", data, 0)[0] == SPIRV_MAGIC:
            break
    else:
        raise AotwheelError("not a SPIR-V module (bad magic); regenerate it with llvm-spirv")
    words = struct.unpack(f"{endian}{len(data) // 4}I", data)
    names: list[str] = []
    i = 5
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if count == 0 or i + count > len(words):
            raise AotwheelError(f"truncated SPIR-V instruction at word {i}; the module is corrupt")
        if opcode == _OP_ENTRY_POINT and count >= 4:
            raw = struct.pack(f"{endian}{count - 3}I", *words[i + 3 : i + count])
            # A SPIR-V literal string is little-endian-packed UTF-8 up to the first NUL.
            if endian == ">":
                raw = b"".join(raw[j : j + 4][::-1] for j in range(0, len(raw), 4))
            names.append(raw.split(b"\0", 1)[0].decode("utf-8", "replace"))
        i += count
    return names
