"""Vendor-free build infrastructure that CMake's device-code functions run (standard library only).

:mod:`.plan` (the typed build plan a vendor's configure step writes; :mod:`.edge` reads one entry
on an edge), :mod:`.cache` / :mod:`.tiers` / :mod:`.remote` (the device-code cache and its remote
stores), :mod:`.shard` (AOTWHEEL_SHARD: the slice assignment), :mod:`.embed` (a C file that
``.incbin``s the images with a ``.tgtimg`` table), :mod:`.compress` and :mod:`.manifest`
(``_aot_manifest.json``). The vendors' own steps live in their backends (``backends/<vendor>/buildsteps``).
``python -m aotwheel.buildsteps --help`` lists the steps.
"""
