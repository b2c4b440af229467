"""Entry point of ``python -m engine``."""

import gc
import sys

from engine.cli.main import main

# What the imports built lives as long as this short process: freezing it spares the cyclic
# garbage collector from scanning it again while a command runs and once more at exit.
gc.freeze()
sys.exit(main())
