"""``python -m vinerun.serving.demo`` regenerates the bundled demo model."""

import sys

from vinerun.serving.demo import main

sys.exit(main())
