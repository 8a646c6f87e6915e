"""setuptools support: build a CMake project that uses aotwheel from a ``setup.py``.

The extension is built by the same CMake + ninja machinery as under scikit-build-core
(``find_package(aotwheel CONFIG)``, ``aotwheel_add_device_code(...)``), so a setup.py project
gets the same extension, manifest and hook::

    # setup.py
    from setuptools import setup
    from aotwheel.setuptools import CMakeExtension, build_ext

    setup(
        name="aotdemo",
        packages=["aotdemo"],
        package_dir={"": "src"},
        ext_modules=[CMakeExtension("aotdemo._demo", sourcedir=".", py_limited_api=True)],
        cmdclass={"build_ext": build_ext},
    )

``USE_AOT_DEVLIST`` (and ``USE_AOT_JIT_FALLBACK``, ``USE_AOT_COMPRESS``) come from
``CMakeExtension(devlist=..., jit_fallback=..., compress=...)``, else from the environment, else
aotwheel's default (compressed images: ON); they reach CMake as ``-DUSE_AOT_DEVLIST=...``. CMake
runs ``cmake --install`` into a staging prefix that stands for the wheel's root (what
scikit-build-core does), and everything installed there is copied into the build (or, with
``--inplace``, the source) tree. ``cmake`` and ``ninja`` are the first on PATH
that runs (a venv's ``bin/cmake`` shim of the cmake PyPI package does not run inside pip's isolated
build environment), else those of the ``cmake`` / ``ninja`` PyPI packages in this environment
(``build-system.requires``). ``py_limited_api=True`` (or ``"cp310"``) builds against the stable ABI
as scikit-build-core's ``wheel.py-api`` does (``SKBUILD_SABI_COMPONENT``/``SKBUILD_SABI_VERSION``
reach CMake) and tags the wheel ``abi3``. CMake's output is shown (and, on failure, repeated
before the error line).
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from setuptools import Extension
from setuptools.command.build_ext import build_ext as _setuptools_build_ext

from aotwheel.errors import ToolchainError

__all__ = ["CMakeExtension", "build_ext", "cmake_dir", "find_cmake", "find_ninja"]


class CMakeExtension(Extension):
    """An extension module built by the CMake project in ``sourcedir``.

    ``name`` is the module's dotted name (``"pkg._ext"``); the CMake project must produce a module
    file whose name starts with the last component (``_ext.*.so``), typically through
    ``Python_add_library(_ext MODULE WITH_SOABI ...)`` + ``install(TARGETS _ext LIBRARY DESTINATION pkg)``.
    ``target`` limits the build to one CMake target; ``cmake_args`` are added to the configure
    command; ``devlist``/``jit_fallback``/``compress`` override ``USE_AOT_DEVLIST``/
    ``USE_AOT_JIT_FALLBACK``/``USE_AOT_COMPRESS`` (``compress=False``: device images embedded
    uncompressed; the default embeds each one as a zstd frame).
    """

    def __init__(
        self,
        name: str,
        sourcedir: str | os.PathLike[str] = ".",
        *,
        target: str | None = None,
        cmake_args: Sequence[str] = (),
        devlist: str | None = None,
        jit_fallback: bool | None = None,
        compress: bool | None = None,
        build_type: str = "Release",
        py_limited_api: bool | str = False,
    ) -> None:
        super().__init__(name, sources=[], py_limited_api=bool(py_limited_api))
        # The wheel's abi3 tag: "cp310" as given, True: this interpreter's (the oldest it is sure of).
        self.limited_api_tag = _limited_api_tag(py_limited_api)
        self.sourcedir = Path(sourcedir).resolve()
        self.target = target
        self.cmake_args = list(cmake_args)
        self.devlist = devlist
        self.jit_fallback = jit_fallback
        self.compress = compress
        self.build_type = build_type


def _limited_api_tag(value: bool | str) -> str | None:
    if value is True:
        return f"cp3{sys.version_info.minor}"
    if not value:
        return None
    tag = str(value)
    if not (tag.startswith("cp3") and tag[3:].isdigit()):
        raise ToolchainError(f"py_limited_api={value!r}: pass True or a CPython tag such as 'cp310'")
    return tag


def cmake_dir() -> Path:
    """The directory holding this aotwheel's ``aotwheel-config.cmake`` (installed or source tree)."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "cmake", package.parent.parent / "cmake"):
        if (candidate / "aotwheel-config.cmake").is_file():
            return candidate
    raise ToolchainError(f"aotwheel's CMake files are missing next to {package}; reinstall aotwheel (pip install --force-reinstall aotwheel)")


def find_cmake() -> str:
    """``cmake`` from PATH, else from the ``cmake`` PyPI package."""
    return _find_tool("cmake", "CMAKE_BIN_DIR", "pip install cmake")


def find_ninja() -> str:
    """``ninja`` from PATH, else from the ``ninja`` PyPI package."""
    return _find_tool("ninja", "BIN_DIR", "pip install ninja")


def _find_tool(name: str, bin_dir_attr: str, hint: str) -> str:
    """The first ``name`` that runs: on PATH in order, then the PyPI package's binary."""
    candidates: list[str] = []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        found = shutil.which(name, path=folder) if folder else None
        if found and found not in candidates:
            candidates.append(found)
    try:
        module = importlib.import_module(name)
        packaged = Path(getattr(module, bin_dir_attr)) / name
        if packaged.is_file() and str(packaged) not in candidates:
            candidates.append(str(packaged))
    except (ImportError, AttributeError):
        pass
    broken: list[str] = []
    for candidate in candidates:
        why = _does_not_run(candidate)
        if why is None:
            return candidate
        broken.append(f"{candidate} ({why})")
    if broken:
        raise ToolchainError(f"no {name} here runs: {'; '.join(broken)}; add \"{name}\" to build-system.requires in pyproject.toml "
                             f"(or: {hint}, or apt-get install {name if name == 'cmake' else 'ninja-build'})")
    raise ToolchainError(f"{name} is not on PATH and the {name} Python package is not installed; add \"{name}\" to "
                         f"build-system.requires in pyproject.toml (or: {hint})")


def _does_not_run(tool: str) -> str | None:
    """None when ``tool --version`` works, else its last line of output (a pip shim whose Python
    package is missing here says ``ModuleNotFoundError: No module named 'cmake'``)."""
    try:
        proc = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode == 0:
        return None
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit {proc.returncode}"


def _devlist_defines(ext: CMakeExtension) -> list[str]:
    """-D/-U arguments for the devlist, JIT fallback and compression: explicit, else environment,
    else unset (CMake's default).

    An unset value is removed from the cache (-U) so a previous build's list does not linger.
    """
    from aotwheel import config
    from aotwheel.devlist import resolve

    # Read only; unset values stay unset so that CMake applies its default, and empty counts as
    # unset (config.devlist_choice): CMake's resolver then reads the chain itself.
    devlist = (ext.devlist or "").strip() or config.DEVLIST.given()
    jit = ext.jit_fallback
    if jit is None and (text := config.JIT_FALLBACK.given()) is not None:
        jit = config.flag(text)
    if devlist is not None:
        resolve(devlist, jit_fallback=True if jit is None else jit)  # one-line DevlistError before CMake runs
    args = [f"-DUSE_AOT_DEVLIST={devlist}"] if devlist is not None else ["-UUSE_AOT_DEVLIST"]
    args += [f"-DUSE_AOT_JIT_FALLBACK={'ON' if jit else 'OFF'}"] if jit is not None else ["-UUSE_AOT_JIT_FALLBACK"]
    # Unset: the resolver reads $USE_AOT_COMPRESS, else the default (ON); -U drops a previous build's value.
    compress = getattr(ext, "compress", None)
    args += [f"-DUSE_AOT_COMPRESS={'ON' if compress else 'OFF'}"] if compress is not None else ["-UUSE_AOT_COMPRESS"]
    return args


def _sabi_defines(ext: CMakeExtension) -> list[str]:
    """What scikit-build-core passes for ``wheel.py-api = "cp3X"``, so one CMakeLists serves both."""
    tag = getattr(ext, "limited_api_tag", None)
    if not tag:
        return ["-DSKBUILD_SABI_COMPONENT=", "-DSKBUILD_SABI_VERSION="]
    return ["-DSKBUILD_SABI_COMPONENT=Development.SABIModule", f"-DSKBUILD_SABI_VERSION=3.{tag[3:]}"]


class build_ext(_setuptools_build_ext):
    """setuptools ``build_ext`` that builds :class:`CMakeExtension` s with CMake + ninja.

    Other extensions are built by setuptools as usual.
    """

    def run(self) -> None:
        self._tag_abi3()
        super().run()

    def _tag_abi3(self) -> None:
        """Make ``bdist_wheel`` tag the wheel ``<cp3X>-abi3`` when every extension is limited-API
        (it reads ``py_limited_api`` after the build; a value set by the user wins)."""
        exts = self.extensions or []
        tags = [getattr(e, "limited_api_tag", None) for e in exts]
        bdist = self.distribution.command_obj.get("bdist_wheel")  # present while a wheel is being built
        if not exts or not all(tags) or bdist is None:
            return
        if not getattr(bdist, "py_limited_api", None):
            bdist.py_limited_api = max(tags, key=lambda t: int(str(t)[3:]))  # the newest any extension needs

    def build_extension(self, ext: Extension) -> None:
        if not isinstance(ext, CMakeExtension):
            super().build_extension(ext)
            return
        cmake, ninja = find_cmake(), find_ninja()
        build_dir = Path(self.build_temp).resolve() / "cmake" / ext.name
        stage = build_dir / "_install"
        if stage.exists():
            shutil.rmtree(stage)
        build_dir.mkdir(parents=True, exist_ok=True)

        configure = [
            cmake, "-S", str(ext.sourcedir), "-B", str(build_dir), "-G", "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={ninja}",
            f"-DCMAKE_BUILD_TYPE={ext.build_type}",
            f"-DCMAKE_INSTALL_PREFIX={stage}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-Daotwheel_DIR={cmake_dir()}",
            *_devlist_defines(ext),
            *_sabi_defines(ext),
            *ext.cmake_args,
        ]
        build = [cmake, "--build", str(build_dir), "--config", ext.build_type]
        jobs = os.cpu_count() if self.parallel is True else self.parallel
        if jobs:
            build += ["--parallel", str(jobs)]
        if ext.target:
            build += ["--target", ext.target]
        install = [cmake, "--install", str(build_dir), "--config", ext.build_type, "--prefix", str(stage)]
        for cmd in (configure, build, install):
            self.announce(" ".join(cmd), level=2)
            # Captured and written to stderr ourselves: pip shows a failed backend's stderr, and
            # the log then sits right above the error line whatever the buffering.
            proc = subprocess.run(cmd, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
            sys.stderr.write(proc.stdout)
            sys.stderr.flush()
            if proc.returncode != 0:
                tail = proc.stdout.strip().splitlines()[-1:] or ["no output"]
                raise ToolchainError(f"'{Path(cmd[0]).name} {cmd[1]}' failed for {ext.name} (exit {proc.returncode}; last line: "
                                     f"{tail[0].strip()}); CMake's output is above")

        # The staging prefix is the wheel's root: copy it over the build_lib (or source) tree.
        module = self._find_module(stage, ext)
        dest_root = Path(self.get_ext_fullpath(ext.name)).resolve().parents[ext.name.count(".")]
        for path in sorted(stage.rglob("*")):
            if path.is_file() and path != module:
                target = dest_root / path.relative_to(stage)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
        fullpath = Path(self.get_ext_fullpath(ext.name))
        fullpath.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(module, fullpath)

    @staticmethod
    def _find_module(stage: Path, ext: CMakeExtension) -> Path:
        """The installed module file for ``ext`` (``<pkg>/<last>.*.so`` or ``.pyd``)."""
        *package, last = ext.name.split(".")
        where = stage.joinpath(*package)
        found = sorted(p for p in where.glob(f"{last}.*") if p.suffix in (".so", ".pyd") and p.is_file())
        if len(found) != 1:
            names = ", ".join(p.name for p in found) or "nothing"
            raise ToolchainError(
                f"CMake installed {names} for {ext.name} under {where}; the project must install exactly one "
                f"{last}.*.so there, e.g. install(TARGETS {last} LIBRARY DESTINATION {'/'.join(package) or '.'})"
            )
        return found[0]
