"""The Intel backend's settings: the variables it reads (its tools, build scale-out and probe), its
words in the core's ``AOTWHEEL_DEVICE``, and the device list a build uses when none is named (this
backend is the default one).

Declared here, beside the modules that read them; :func:`aotwheel.config.all_variables` lists them
with the core's through the registry. Standard library only: build steps (one process per ninja
edge) import this module.
"""

from __future__ import annotations

from aotwheel.variables import Variable

# USE_AOT_DEVLIST's default: the default backend's (aotwheel.backends.default_settings).
DEFAULT_DEVLIST = "pvc,ats-m150"
# AOTWHEEL_DEVICE / --device: what its tokens are and examples (--device's help), and the examples
# of the override's error lines (a device name first; the default backend's are read).
DEVICE_KINDS = "catalog names, aliases, IP versions"
DEVICE_EXAMPLES = ("bmg", "12.60.7", "acm-g11,cpu")
DEVICE_MESSAGE_EXAMPLES = ("pvc", "12.60.7")
# Its own ``aotwheel`` subcommands (name, module with ``register(subparsers)``): ``aotwheel compile``,
# the core's command (it resolves the device list) with this backend's SPIR-V compiler (options,
# build and report), which aotwheel.compile_spirv uses too.
COMMANDS = (("compile", "aotwheel.cli.compile"),)
SPIRV_COMPILER: str | None = "aotwheel.backends.intel.commands"

OCLOC = Variable("AOTWHEEL_OCLOC", None, "the ocloc to build with")
CLANG = Variable("AOTWHEEL_CLANG", None, "the clang that compiles kernels to SPIR-V")
LLVM_SPIRV = Variable("AOTWHEEL_LLVM_SPIRV", None, "the llvm-spirv translator")
OCLOC_JOBS = Variable("AOTWHEEL_OCLOC_JOBS", None, "at most this many ocloc jobs at once (read by CMake and aotwheel compile)")
OCLOC_GROUPS = Variable("AOTWHEEL_OCLOC_GROUPS", None,
                        "ocloc edges per kernel source in a CMake build (default: planned for the cores; read at configure time)")
MIN_DRIVER = Variable("USE_AOT_MIN_DRIVER", "auto",
                      "the oldest Intel driver (compute-runtime year.week, e.g. 26.05) every listed device must run natively on; "
                      "fewer images where its compatibility rules let one serve several (auto: the release that first runs every listed device)")
ZE_LOADER = Variable("AOTWHEEL_ZE_LOADER", None, "the Level Zero loader library the probe opens")
IMAGE_FORMAT = Variable("USE_AOT_IMAGE_FORMAT", "zebin",
                        "Intel GPU images ocloc writes: zebin (every driver runs them natively) or legacy (patch-token "
                        "images: Debian 12's ocloc 22.43 only; compute-runtime 26.18 and newer JIT-compile them); "
                        "CMake variable, then environment; aotwheel compile --legacy-images")

VARIABLES: tuple[Variable, ...] = (OCLOC, CLANG, LLVM_SPIRV, OCLOC_JOBS, OCLOC_GROUPS, MIN_DRIVER, ZE_LOADER, IMAGE_FORMAT)
