import sys

from nim_specdec.cli import main

sys.exit(main())
