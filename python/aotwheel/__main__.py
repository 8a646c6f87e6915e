"""``python -m aotwheel``; CMake's configure runs it as ``python <...>/aotwheel/__main__.py`` (the
resolver), which needs no PYTHONPATH: the aotwheel around this file comes first on sys.path."""

import sys

if __package__ in (None, ""):  # run as a file: the aotwheel around it first, the environment's PYTHONPATH after it
    from os.path import dirname, realpath

    _here = dirname(realpath(__file__))
    if sys.path and sys.path[0] == _here:  # Python put this folder itself first (not with -P/PYTHONSAFEPATH)
        del sys.path[0]
    sys.path.insert(0, dirname(_here))

from aotwheel.cli import main

sys.exit(main())
