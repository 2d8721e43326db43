import sys

from stordoc.cli import main

sys.exit(main())
