import sys

from attnlint.cli import main

sys.exit(main())
