"""Entry point for ``python -m fairrag_core``."""

import sys

from .cli import main

sys.exit(main())
