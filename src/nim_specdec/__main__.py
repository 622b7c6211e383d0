import sys

from nim_specdec.cli.main import main

sys.exit(main())
