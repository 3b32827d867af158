"""``python -m benchmarks_lib`` and the ``iobench`` command. Before anything else it starts again with safe-path
on and a clean ``PYTHONPATH`` (``base.importpath.reexec_safe``), so that neither it nor anything it starts imports
a ``numpy.py`` from the folder a reader runs iobench in."""

import sys

from benchmarks_lib.base.importpath import drop_working_directory, reexec_safe


def main() -> int:
    reexec_safe()
    drop_working_directory()
    from benchmarks_lib.cli.main import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
