"""How a command ends on a signal: SIGTERM the same clean way as Ctrl-C.

Python turns Ctrl-C (SIGINT) into :class:`KeyboardInterrupt`, so the runner's ``finally`` blocks stop the
case's worker (whose servers and readers die with it) and remove the run's scratch; SIGTERM would end the
process at once and leave them. :func:`sigterm_as_interrupt` makes SIGTERM raise :class:`Terminated`, a
``KeyboardInterrupt``, so that every path that cleans up after Ctrl-C cleans up after SIGTERM too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

#: how long after Python dropped a SIGTERM's exception the signal is delivered again
AGAIN_S = 0.05


class Terminated(KeyboardInterrupt):
    """SIGTERM, ended like Ctrl-C: workers stopped, scratch removed, finished cases kept."""


def _raise_terminated(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends at once
    raise Terminated


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` (not where SIGTERM was set aside already, nor
    outside the main thread, where no handler can be set). Where Python drops the exception (the signal landed in
    an at-fork hook such as logging's, or in a ``__del__``: "Exception ignored in ..."), the signal is delivered
    again, so that the command still ends."""
    previous = signal.getsignal(signal.SIGTERM)
    if previous != signal.SIG_DFL or threading.current_thread() is not threading.main_thread():
        yield
        return
    hook = sys.unraisablehook

    def deliver_again(unraisable) -> None:  # from a thread a moment later: not inside this hook, where it drops too
        if isinstance(unraisable.exc_value, Terminated):
            signal.signal(signal.SIGTERM, _raise_terminated)
            again = threading.Timer(AGAIN_S, os.kill, (os.getpid(), signal.SIGTERM))
            again.daemon = True
            again.start()
        else:
            hook(unraisable)

    signal.signal(signal.SIGTERM, _raise_terminated)
    sys.unraisablehook = deliver_again
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        sys.unraisablehook = hook


__all__ = ["Terminated", "sigterm_as_interrupt"]
