"""``python -m hashcdc.cli``: the ``hashcdc`` command."""

import sys

from hashcdc.cli import main

sys.exit(main())
