"""Bounds-checked readers for the binary formats device code travels in.

One module per format (``elf`` host binaries and ``.tgtimg``, ``ar`` fat binaries, ``zebin``,
``legacy`` patch-token ELFs, ``spirv``, ``zstd``, ``offload``); all of them read through
:class:`aotwheel.formats.region.Region`, which rejects any read past the data it was given and
raises :class:`aotwheel.errors.InspectError` naming the file and the offset.
"""
