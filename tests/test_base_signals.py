"""SIGTERM ends a command like Ctrl-C (``base.signals``), even where Python drops the exception its handler raises."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os, signal, sys, time
from benchmarks_lib.base.signals import Terminated, sigterm_as_interrupt

class LandsInADel:  # as logging's at-fork hook: an exception raised here is dropped ("Exception ignored in ...")
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)  # the handler runs here, inside __del__

try:
    with sigterm_as_interrupt():
        LandsInADel()  # collected at once: the signal's exception is dropped
        time.sleep(30)
        print("not ended")
except Terminated:
    print("ended")
"""


def test_a_sigterm_whose_exception_python_drops_still_ends_the_command():
    """The signal lands where Python drops the exception (a ``__del__``, or an at-fork hook such as logging's, as a
    stuck reader's fork did in ``test_sigterm_ends_a_command_whose_file_reader_is_stuck``): it is delivered again
    and the command ends, not 30 s later."""
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert proc.stdout.strip() == "ended", (proc.stdout, proc.stderr[-2000:])
    assert proc.returncode == 0
