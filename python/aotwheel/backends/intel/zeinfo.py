"""A zebin's ``.ze_info`` (the YAML ocloc writes about its kernels): the kernels IGC replaced by
fp64 poison stubs, and whether the driver's zebin decoder would take the zebin (``--deep``).
Apart from :mod:`.zebin` (its notes and :class:`~.zebin.ZebinInfo`), which re-exports these names."""

from __future__ import annotations

from aotwheel.formats.elf import open_elf

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotwheel.formats.region import Region

ZE_INFO_SECTION = ".ze_info"
_ZE_INFO_LIMIT = 16 << 20  # a .ze_info larger than this is not read for poisoned kernels
# .ze_info (YAML) of a kernel IGC removed for lack of fp64 (-cl-poison-unsupported-fp64-kernels;
# ocloc 22.43 --format zebin and 26.27 -device acm-g10 alike):
#   - name:            axpy64
#     user_attributes:
#       invalid_kernel:  uses-fp64-math
_KERNEL_NAME = rb"^ *- name: *'?([^'\s]+)'? *$"
_POISONED = rb"^ *invalid_kernel: *['\"]?uses-fp64-math"


def poisoned_kernels(region: Region) -> tuple[str, ...]:
    """Names of the kernels a zebin holds only as fp64 poison stubs (its ``.ze_info`` marks them
    ``invalid_kernel: uses-fp64-math``): each marker's kernel is the nearest ``- name:`` before it."""
    view = open_elf(region)
    sec = view.section(ZE_INFO_SECTION)
    if sec is None or not sec.size or sec.size > _ZE_INFO_LIMIT:
        return ()
    text = region.read(sec.offset, sec.size, "section '.ze_info'")
    if b"invalid_kernel" not in text:
        return ()
    import re  # only for a zebin that has such a kernel

    names = [(m.start(), m.group(1)) for m in re.finditer(_KERNEL_NAME, text, re.M)]
    found: list[str] = []
    for marker in re.finditer(_POISONED, text, re.M):
        before = [name for at, name in names if at < marker.start()]
        if before and before[-1].decode("utf-8", "replace") not in found:
            found.append(before[-1].decode("utf-8", "replace"))
    return tuple(found)


# --------------------------------------------------------------------------------------------
# --deep: is the zebin one the driver's zebin decoder (compute-runtime's decodeZebin) would take?

_ZE_INFO_MAX = 64 << 20  # bounds the parse; ocloc's largest seen are a few MB
_ZE_INFO_MAX_DEPTH = 64
_ZE_INFO_TYPE = 0xFF000011  # SHT_ZEBIN_ZEINFO
_YAML_KEY = rb"(?:[A-Za-z0-9_.$-]+|'[^'\n]*'|\"[^\"\n]*\")"


def validate_zebin(region: Region) -> None:
    """Raise one :class:`~aotwheel.errors.InspectError` naming the problem unless the zebin at
    ``region`` is well formed as the driver's decoder (compute-runtime's ``decodeZebin``) reads
    it: a 64-bit little-endian ELF whose sections lie inside it (:func:`open_elf`), at most one
    ``.ze_info`` section (type SHT_ZEBIN_ZEINFO; none is a module without kernels), holding the
    block-style YAML ocloc writes (a bounded line parser: indentation, ``key: value`` and ``- item``
    lines, up to ``kernels_misc_info`` as the driver cuts it) with a top-level ``version`` and
    ``kernels``, and a ``.text.<name>`` section for each kernel it names."""
    if region.head(6) != b"\x7fELF\x02\x01":
        raise region.error(4, "a zebin must be a 64-bit little-endian ELF")
    view = open_elf(region)
    infos = [s for s in view.sections if s.type == _ZE_INFO_TYPE]
    if len(infos) > 1:
        raise region.error(0, f"a zebin holds at most one {ZE_INFO_SECTION} section, this one {len(infos)}")
    if not infos:
        return  # the driver takes it (a warning): a module without kernels (icpx writes such zebins)
    sec = infos[0]
    if sec.size > _ZE_INFO_MAX:
        raise region.error(sec.offset, f"{ZE_INFO_SECTION} of {sec.size} bytes, above {_ZE_INFO_MAX}")
    text = region.read(sec.offset, sec.size, f"section '{ZE_INFO_SECTION}'")
    text = text.split(b"kernels_misc_info", 1)[0]  # the driver parses what comes before it
    top, kernels, problem = _ze_info_outline(text)
    if problem is not None:
        raise region.error(sec.offset, f"{ZE_INFO_SECTION} is not the YAML a driver reads ({problem})")
    for key in ("version", "kernels"):
        if key not in top:
            raise region.error(sec.offset, f"{ZE_INFO_SECTION} has no top-level '{key}'")
    sections = {s.name for s in view.sections}
    for name in kernels:
        if f".text.{name}" not in sections:
            raise region.error(sec.offset, f"kernel {name!r} of {ZE_INFO_SECTION} has no .text.{name} section")


def _ze_info_outline(text: bytes) -> tuple[set[str], list[str], str | None]:
    """The top-level keys and the kernel names of a ``.ze_info``, or the first problem (``line N:
    ...``). One pass over the lines; the open levels are a stack of columns bounded by
    ``_ZE_INFO_MAX_DEPTH``. Values are not parsed (flow ``[1, 1, 1]`` and quoted scalars stay text)."""
    import re

    line_re = re.compile(rb"( *)((?:- +)*)(?:(" + _YAML_KEY + rb") *:(?: +(.*))?|(.*))")
    top: set[str] = set()
    kernels: list[str] = []
    levels = [0]  # columns of the open block levels
    opens = False  # the previous line opened a block ("key:" or "-" with nothing after it)
    section = None  # the top-level key whose block this is
    item_column = body_column = -1  # columns of the dash of a kernel item and of the keys inside it
    for n, raw in enumerate(text.split(b"\n"), 1):
        line = raw.rstrip(b"\r")
        stripped = line.strip(b" ")
        if not stripped or stripped.startswith(b"#") or (line[:1] != b" " and stripped in (b"---", b"...")):
            continue
        m = line_re.fullmatch(line)
        if m is None or b"\t" in m.group(1) + m.group(2):
            return top, kernels, f"line {n}: neither 'key: value' nor '- item'"
        column, dashes, key, value, scalar = len(m.group(1)), m.group(2), m.group(3), (m.group(4) or b"").strip(), m.group(5)
        if column > levels[-1]:
            if not opens:
                return top, kernels, f"line {n}: indented deeper than a value allows"
            levels.append(column)
        else:
            while levels[-1] > column:
                levels.pop()
            if levels[-1] != column:
                return top, kernels, f"line {n}: its indentation matches no open level"
        if dashes:  # each "- " opens an item whose keys start at the column after it
            levels.append(column + len(dashes))
        if len(levels) > _ZE_INFO_MAX_DEPTH:
            return top, kernels, f"line {n}: nested more than {_ZE_INFO_MAX_DEPTH} levels"
        if key is None and not dashes:
            return top, kernels, f"line {n}: a scalar outside a list"
        if column == 0 and not dashes:
            section = key.strip(b"'\"").decode("utf-8", "replace") if key else None
            top.add(section or "")
            item_column = body_column = -1
        elif section == "kernels":
            if dashes and item_column < 0:
                item_column, body_column = column, column + len(dashes)
            if key == b"name" and (column == item_column if dashes else column == body_column):
                kernels.append(value.strip(b"'\"").decode("utf-8", "replace"))
        opens = (key is not None and not value) or (key is None and not (scalar or b"").strip())
    return top, kernels, None
