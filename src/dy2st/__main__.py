"""``python -m dy2st``: the same command line as the ``dy2st`` console script."""

import sys

from dy2st.cli import main

sys.exit(main())
