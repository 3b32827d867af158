import sys

from benchmarks_lib.cli.main import main

sys.exit(main())
