"""`python -m overseer.cli ...`: the same as the `overseer` script."""

import sys

from overseer.cli import main

sys.exit(main())
