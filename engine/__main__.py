"""Entry point of ``python -m engine``."""

import sys

from engine.cli.main import main

sys.exit(main())
