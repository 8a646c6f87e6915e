import sys

from aotwheel.cli import main

sys.exit(main())
