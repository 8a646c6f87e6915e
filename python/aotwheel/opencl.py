"""Run-time loader for OpenCL packages: a built ``pyopencl.Program`` from AOT device code.

:func:`build_program` picks, by the driver's own lookup rules (asked of the backend that loads OpenCL
programs: :func:`aotwheel.backends.for_opencl`), the native image of a fat binary that this device runs; otherwise it builds the SPIR-V (a JIT compile) and
keeps the device binary the driver produced (``CL_PROGRAM_BINARIES``) in the per-user JIT cache
(``aotwheel.jitcache``), so that later processes create the program from that binary. A cached
binary that fails its hash check, was built by another driver version, or that the runtime
rejects, is removed and rebuilt with one :class:`~aotwheel.jitcache.JITCacheWarning`.

Images embedded compressed (``COMPRESS ON``: one zstd frame per fat binary or SPIR-V module) are
decompressed here, only those of the kernel source asked for, once per process, with their size
bounded by the frame header (:func:`aotwheel.formats.zstd.decompress_image`).

Needs pyopencl (``aotwheel[selftest]``); it is imported when a program is built.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Union

from aotwheel.errors import AotwheelError
from aotwheel.jitcache import JitCache, JITCacheWarning, JitKey

if TYPE_CHECKING:
    from aotwheel.backends.capabilities import OpenClImages
    from aotwheel.results import Verdict

__all__ = ["build_program", "load_program", "Loaded", "DeviceCode", "device_code", "by_source", "inflate", "jit_key", "JITCacheWarning"]

#: where a program came from
NATIVE = "native"      # a native image of the fat binary, chosen by the driver's rules
CACHED = "jit-cache"   # the binary an earlier JIT build of this device stored
JIT = "jit"            # built from SPIR-V now (and stored, when the cache is on)

Images = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, ModuleType, "DeviceCode"]
_SPIRV_MAGICS = (b"\x03\x02\x23\x07", b"\x07\x23\x02\x03")
# Decompressed images of this process, by the sha256 of their stored frame: a program is created
# from them once per device, and each frame is inflated at most once.
_INFLATED: dict[str, bytes] = {}


@dataclass(frozen=True)
class DeviceCode:
    """One program's device code: its SPIR-V and/or a fat binary of native images (an ocloc fat
    binary: which one is the OpenCL backend's word, ``backends.for_opencl().opencl_images``)."""

    label: str
    spirv: bytes | None
    fatbinary: bytes | None


@dataclass
class Loaded:
    """The built program, where it came from (:data:`NATIVE`, :data:`CACHED`, :data:`JIT`), and
    the cache entry involved (``None`` for native images or with the cache off)."""

    program: Any
    source: str
    key: JitKey | None = None
    cache_path: str | None = None
    stored: bool = False


def device_code(images: Images, source: str | None = None) -> DeviceCode:
    """Read ``images``: an aotwheel-built extension module (or its import name), the path of such an
    extension (``.so``: its embedded images, read by the inspector), of a SPIR-V file or of a fat
    binary, or bytes of the last two. ``source`` picks one kernel source of a module that carries
    several (its name as ``images()`` gives it, or ``#n``: the n-th, in ``SOURCES`` order)."""
    if isinstance(images, DeviceCode):
        return images
    if isinstance(images, ModuleType):
        return _from_module(images, source)
    if isinstance(images, (bytes, bytearray, memoryview)):
        return _from_bytes(bytes(images), "<bytes>")
    if isinstance(images, (str, os.PathLike)):
        path = os.fspath(images)
        if os.path.exists(path):
            with open(path, "rb") as fh:
                head = fh.read(8)
            if head[:4] in _SPIRV_MAGICS or head.startswith(_images().native_magic) or _is_zstd(head):
                with open(path, "rb") as fh:
                    return _from_bytes(fh.read(), path)
            return _from_binary(path, source)
        if isinstance(images, str) and images.replace(".", "").replace("_", "").isalnum():
            try:
                module = importlib.import_module(images)
            except ImportError as exc:
                raise AotwheelError(f"{images}: neither a file nor an importable module ({exc})") from None
            return _from_module(module, source)
        raise AotwheelError(f"{path}: no such file; pass a .spv, a fat binary, or an aotwheel-built module or its .so")
    raise AotwheelError(f"images must be a module, a module name, a path or bytes, not {type(images).__name__}")


def by_source(items: Sequence[Sequence[Any]], label: str) -> dict[str, dict[str, Any]]:
    """The images of an extension's ``images()``, by kernel source then triple, as stored.

    The contract (``<NAME>_aot.h``, ``struct aotwheel_image``): ``(triple, source, bytes)`` per
    image. Extensions copied from aotwheel's examples before that returned ``(triple, bytes)``;
    their images come in the generated table's order (every fat binary, then every SPIR-V module,
    each in ``SOURCES`` order), so the n-th of each triple is one source, named ``#n``."""
    out: dict[str, dict[str, Any]] = {}
    seen: dict[str, int] = {}
    for item in items:
        if len(item) == 3:
            triple, src, data = item
        elif len(item) == 2:
            triple, data = item
            src = f"#{seen.get(triple, 0)}"
            seen[triple] = seen.get(triple, 0) + 1
        else:
            raise AotwheelError(f"{label}: images() gave a {len(item)}-tuple; the contract is (triple, source, bytes)")
        out.setdefault(str(src), {})[str(triple)] = data
    return out


def _pick(found: dict[str, dict[str, Any]], source: str | None, label: str) -> str:
    """The one source ``source`` names (its name, or ``#n``), or the only one."""
    if source is None and len(found) == 1:
        return next(iter(found))
    names = list(found)
    if source is not None and source not in found and source.startswith("#") and source[1:].isdigit() and int(source[1:]) < len(names):
        return names[int(source[1:])]
    if source not in found:
        raise AotwheelError(f"{label} carries {', '.join(names) or 'no images'}; pass source= one of them")
    return source


def _from_module(module: ModuleType, source: str | None) -> DeviceCode:
    images = getattr(module, "images", None)
    if not callable(images):
        raise AotwheelError(f"{module.__name__} has no images(); pass a module built by aotwheel_add_device_code")
    found = by_source(images(), module.__name__)
    source = _pick(found, source, module.__name__)
    stored = {t: inflate(bytes(d), f"{module.__name__}:{source} ({t})") for t, d in found[source].items()}
    kinds = _images()
    label = f"{module.__name__}:{source}"
    for index, (triple, data) in enumerate(stored.items()):
        _check_slot(label, index, triple, data, kinds)
    return DeviceCode(label, stored.get(kinds.ir), stored.get(kinds.native))


def _check_slot(label: str, index: int, triple: str, data: bytes, kinds: OpenClImages) -> None:
    """The inspector's verdict on one slot (:mod:`aotwheel.slots`): a damaged or misplaced image is
    one error naming it, never a fat binary handed to OpenCL as source."""
    from aotwheel.formats.sniff import sniff
    from aotwheel.model import ImageKind
    from aotwheel.slots import damaged, slot_problem

    if triple not in (kinds.ir, kinds.native):
        return
    if triple == kinds.native:  # what the driver reads: the backend's fat binary, nothing else
        content = ImageKind.AR if data.startswith(kinds.native_magic) else sniff(data[:64]) if data else ImageKind.UNKNOWN
        problem = slot_problem(content, len(data), None)
        if problem is None and content != ImageKind.AR:
            problem = f"it holds {content} where {kinds.native_name} belongs"
    else:
        problem = slot_problem(sniff(data[:64]) if data else ImageKind.UNKNOWN, len(data), ImageKind.SPIRV)
    if problem is not None:
        raise AotwheelError(f"{label}: {damaged(index, triple, None, problem)}")


def _from_binary(path: str, source: str | None) -> DeviceCode:
    """The images an aotwheel-built extension embeds, read from its file by the inspector: the n-th
    fat binary and the n-th SPIR-V module are kernel source ``#n`` (the generated table's order)."""
    from aotwheel.errors import InspectError
    from aotwheel.inspector import image_bytes, inspect

    kinds = _images()
    try:
        files = inspect(path).files
        items = [(img.triple, f.path, img) for f in files for img in f.images if img.triple in (kinds.native, kinds.ir)]
    except InspectError as exc:
        why = str(exc).removeprefix(f"{path}: ").split(";")[0]
        raise AotwheelError(f"{path}: neither SPIR-V nor {kinds.native_name} nor an aotwheel-built extension ({why}); "
                            f"pass one of those") from None
    if not items:
        raise AotwheelError(f"{path}: neither SPIR-V nor {kinds.native_name} nor an aotwheel-built extension (no embedded images); "
                            f"pass one of those")
    found = by_source([(t, img) for t, _, img in items], path)
    source = _pick(found, source, path)
    where = {id(img): f for _, f, img in items}
    code = {t: image_bytes(where[id(img)], img) for t, img in found[source].items()}
    label = f"{path}:{source}"
    for index, (triple, data) in enumerate(code.items()):
        _check_slot(label, index, triple, data, kinds)
    return DeviceCode(label, code.get(kinds.ir), code.get(kinds.native))


def _is_zstd(head: bytes) -> bool:
    from aotwheel.formats.zstd import is_zstd

    return is_zstd(head)


def _images() -> OpenClImages:
    """Which embedded images (by triple) and files are the OpenCL backend's fat binaries and SPIR-V."""
    from aotwheel import backends

    return backends.for_opencl().opencl_images


def inflate(data: bytes, label: str) -> bytes:
    """``data`` itself, or, for a zstd frame (an image embedded with ``COMPRESS ON``), the image it
    holds: decompressed once per process, its size bounded by the header and checked. A damaged
    or oversized frame raises one :class:`~aotwheel.errors.InspectError` (never a wrong kernel)."""
    from aotwheel.formats.zstd import decompress_image, is_zstd

    if not is_zstd(data):
        return data
    key = hashlib.sha256(data).hexdigest()
    out = _INFLATED.get(key)
    if out is None:
        out = _INFLATED[key] = decompress_image(data, label)
    return out


def _from_bytes(data: bytes, label: str) -> DeviceCode:
    data = inflate(data, label)
    if data[:4] in _SPIRV_MAGICS:
        return DeviceCode(label, data, None)
    kinds = _images()
    if data.startswith(kinds.native_magic):
        return DeviceCode(label, _generic_ir(data, label), data)
    raise AotwheelError(f"{label}: neither SPIR-V nor {kinds.native_name}; pass one of those")


def _generic_ir(fatbinary: bytes, label: str) -> bytes | None:
    """The SPIR-V in a fat binary's ``generic_ir`` member, if any (through the inspector)."""
    from aotwheel.errors import InspectError
    from aotwheel.inspector import find_spirv

    with tempfile.TemporaryDirectory(prefix="aotwheel-opencl-") as tmp:
        path = os.path.join(tmp, "image.ar")
        Path(path).write_bytes(fatbinary)
        try:
            return find_spirv(path)
        except InspectError as exc:  # name the image, not the temporary file it was read from
            raise AotwheelError(f"{label}: {str(exc).replace(path + ': ', '').replace(path, 'it')}") from None


def _native_targets(fatbinary: bytes | None) -> list[Any]:
    if not fatbinary:
        return []
    from aotwheel.inspector import inspect

    with tempfile.TemporaryDirectory(prefix="aotwheel-opencl-") as tmp:
        path = os.path.join(tmp, "image.ar")
        Path(path).write_bytes(fatbinary)
        return [t for f in inspect(path).files for t in f.native_targets]


def jit_key(code: DeviceCode, probed: Any, options: str) -> JitKey | None:
    """The JIT-cache key of ``code`` on a probed device (``None`` without SPIR-V)."""
    if code.spirv is None:
        return None
    return JitKey(image_sha256=hashlib.sha256(code.spirv).hexdigest(), device=probed.name, ip=probed.ip,
                  platform=probed.platform or "", driver=probed.driver or "", options=options)


def build_program(context: Any, device: Any, images: Images, *, options: str = "", source: str | None = None,
                  cache: JitCache | None = None) -> Any:
    """A built ``pyopencl.Program`` for ``device`` from ``images`` (see :func:`device_code`):
    the native image the driver would pick, else the cached binary of an earlier JIT build, else
    the SPIR-V (whose device binary is then cached). ``cache`` defaults to
    ``$AOTWHEEL_JIT_CACHE_DIR`` (``off`` disables it)."""
    return load_program(context, device, images, options=options, source=source, cache=cache).program


def load_program(context: Any, device: Any, images: Images, *, options: str = "", source: str | None = None,
                 cache: JitCache | None = None) -> Loaded:
    """:func:`build_program`, also saying where the program came from."""
    import pyopencl as cl

    from aotwheel import backends
    from aotwheel.results import NATIVE as NATIVE_VERDICT

    code = device_code(images, source)
    vendor = backends.for_opencl()  # names the device and knows its driver's lookup rules
    probed = vendor.opencl_device(cl, device.platform, device)
    verdict = vendor.opencl_verdict(_native_targets(code.fatbinary), bool(code.spirv), probed)
    if verdict.verdict == NATIVE_VERDICT and code.fatbinary:
        # The driver does the ar lookup itself (the rules verdict.py models).
        return Loaded(cl.Program(context, [device], [code.fatbinary]).build(options=options, devices=[device]), NATIVE)
    if code.spirv is None:
        raise AotwheelError(f"{code.label}: no native image for {probed.label} and no SPIR-V to JIT ({verdict.reason})")

    cache = cache if cache is not None else JitCache.from_env()
    key = jit_key(code, probed, options)
    assert key is not None
    where = cache.path(key)
    path = str(where) if where is not None else None
    found = cache.get(key)
    problem = found.problem
    if found.data is not None:
        try:
            program = cl.Program(context, [device], [found.data]).build(options=options, devices=[device])
        except Exception as exc:  # the runtime refused it: INVALID_BINARY, a failed build, ...
            cache.remove(key)
            problem = f"rejected by the runtime ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
        else:
            return Loaded(program, CACHED, key, path)
    if problem is not None:
        warnings.warn(f"aotwheel: cached JIT build of {code.label} for {probed.label} is unusable: {problem}; "
                      f"rebuilding it from SPIR-V", JITCacheWarning, stacklevel=3)
    program = cl.Program(context, code.spirv).build(options=options, devices=[device])
    stored = False
    if cache.enabled or cache.root is not None:
        binary = _device_binary(cl, program, device)
        if binary:
            failed = cache.put(key, binary)
            stored = failed is None
            if failed is not None and not cache.warned:
                cache.warned = True
                warnings.warn(f"aotwheel: JIT cache not used: {failed}; point AOTWHEEL_JIT_CACHE_DIR at a "
                              f"private folder, or set it to off", JITCacheWarning, stacklevel=3)
    return Loaded(program, JIT, key, path, stored)


def spirv_images(path: str, files: Sequence[Any] | None = None) -> list[bytes]:
    """Every SPIR-V module in a binary, as the loader would hash it: SPIR-V images and the
    ``generic_ir`` of fat binaries. ``files``: the binary's inspected files (``FileReport``s of
    ``aotwheel.inspect(path)``) when the caller has them, so the binary is not inspected again."""
    from aotwheel.inspector import _generic_ir_spirv, image_bytes, inspect

    found: list[bytes] = []
    for f in inspect(path).files if files is None else files:
        for img in f.images:
            if "spirv" in (img.kind, img.content):
                found.append(image_bytes(f.path, img))
            elif "generic_ir" in img.members:
                spirv = _generic_ir_spirv(f.path, img)
                if spirv is not None:
                    found.append(spirv)
    return found


def cached_builds(path: str, probed: Any, cache: JitCache | None = None, *, files: Sequence[Any] | None = None) -> tuple[int, int]:
    """``(modules with a cached native build for ``probed``, SPIR-V modules in ``path``)``:
    what :func:`build_program` would load from the JIT cache on that device (any build options).
    ``files``: ``path``'s inspected files, when the caller has them (see :func:`spirv_images`)."""
    cache = cache if cache is not None else JitCache.from_env()
    modules = spirv_images(path, files)
    if not cache.enabled:
        return 0, len(modules)
    hits = sum(cache.has_build(jit_key(DeviceCode(path, m, None), probed, "")) for m in modules)  # type: ignore[arg-type]
    return hits, len(modules)


def cached_native_builds(verdicts: Sequence[Verdict], devices: Sequence[Any], files: Mapping[str, Any],
                         cache: JitCache | None = None) -> dict[int, dict[str, int]]:
    """For ``jit`` verdicts on OpenCL devices: by verdict index, how many of the binary's SPIR-V
    modules this loader's JIT cache holds a native build of (``{"modules": n, "cached": k}``),
    which it loads instead of compiling. ``devices``: the devices the verdicts judged (only those
    the ``opencl`` probe reported can have entries: the cache keys are OpenCL's view of a device,
    and other vendors' drivers keep their own caches); ``files``: the inspected files by verdict
    ``binary``. Nothing is probed or inspected again."""
    opencl = {d.label: d for d in devices if getattr(d, "backend", None) == "opencl"}
    jit = [i for i, v in enumerate(verdicts) if v.verdict == "jit" and v.binary and "!" not in v.binary and v.device in opencl]
    if not jit:
        return {}
    cache = cache if cache is not None else JitCache.from_env()
    if not cache.enabled:
        return {}
    out: dict[int, dict[str, int]] = {}
    for i in jit:
        binary = str(verdicts[i].binary)
        file = files.get(binary)
        hits, total = cached_builds(binary, opencl[verdicts[i].device], cache, files=None if file is None else [file])
        if total:
            out[i] = {"modules": total, "cached": hits}
    return out


def _device_binary(cl: Any, program: Any, device: Any) -> bytes | None:
    """This device's entry of ``CL_PROGRAM_BINARIES`` (programs may span several devices)."""
    devices = program.get_info(cl.program_info.DEVICES)
    binaries = program.get_info(cl.program_info.BINARIES)
    for dev, binary in zip(devices, binaries):
        if dev == device:
            return bytes(binary) if binary else None
    return None
