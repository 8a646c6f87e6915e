"""What an ELF's dynamic section needs (``DT_NEEDED``), read with pyelftools: whether a library's
device code is loaded by a runtime it links (the SYCL runtime: ``libsycl.so``)."""

from __future__ import annotations


def needs(path: str, prefix: str) -> bool:
    """True if ``path`` is an ELF file whose dynamic section needs a library whose name starts with
    ``prefix``. False for anything unreadable (a wheel member, a fat binary, a damaged file)."""
    try:
        from elftools.common.exceptions import ELFError
        from elftools.elf.dynamic import DynamicSection
        from elftools.elf.elffile import ELFFile
    except ImportError:
        return False
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != b"\x7fELF":
                return False
            fh.seek(0)
            elf = ELFFile(fh)
            for sec in elf.iter_sections():
                if isinstance(sec, DynamicSection):
                    return any(t.entry.d_tag == "DT_NEEDED" and str(getattr(t, "needed", "")).startswith(prefix) for t in sec.iter_tags())
    except (OSError, ELFError, ValueError, KeyError):
        return False
    return False
