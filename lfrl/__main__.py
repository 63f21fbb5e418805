"""`python -m lfrl`: the `lfrl` command."""

import sys

from lfrl.cli import main

sys.exit(main())
