"""Where Python code is imported from: the environment and this package, never the working directory.

A folder of downloaded data may hold a ``numpy.py``, an ``h5py.py`` or a ``pyvista/`` package, and a reader runs
iobench in it. Python puts the working directory first on the import path of ``python -m ...`` and ``python -c ...``
(the case workers, the servers, the notebooks' kernels, multiprocessing's spawned children), and resolves an empty
or relative ``PYTHONPATH`` entry against it. So every Python child this package starts gets :func:`child_env`
(``PYTHONSAFEPATH=1``, which its own children inherit, and a ``PYTHONPATH`` of absolute entries with this package's
parent first) and :data:`SAFE_PATH` on its command line. The command line itself restarts that way before it
imports anything else (:func:`reexec_safe`, ``benchmarks_lib.__main__``), and drops the working directory from its
path should it not have restarted (:func:`drop_working_directory`). This module imports only what the interpreter
has loaded when it starts (``os``, ``sys``), so nothing from the working directory either.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

#: the directory holding this copy of benchmarks_lib: first on a child's path, so the child runs the same code as
#: its parent whatever put the parent's copy on its path
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
#: the interpreter option that keeps the script's or the working directory off ``sys.path`` (Python 3.11+)
SAFE_PATH = "-P"


def python_path(value: str | None) -> str:
    """``PYTHONPATH`` for a child: this package's parent, then the absolute entries of ``value`` (an empty or a
    relative entry would name a directory under the child's working directory), each once."""
    entries = [PACKAGE_PARENT, *(e for e in (value or "").split(os.pathsep) if os.path.isabs(e))]
    return os.pathsep.join(dict.fromkeys(entries))


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a Python child: ``base`` (this process's by default) with safe-path on and
    :func:`python_path`. The variables pass on to the child's own children (Dask's, multiprocessing's)."""
    base = os.environ if base is None else base
    return {**base, "PYTHONSAFEPATH": "1", "PYTHONPATH": python_path(base.get("PYTHONPATH"))}


def reexec_safe() -> None:
    """Replace this process (same pid, arguments and streams) by the same command with safe-path on and
    :func:`child_env`'s environment, unless it already runs so: then everything it starts through the standard
    library (multiprocessing's spawned children and resource tracker, Dask's workers) inherits both."""
    pythonpath = os.environ.get("PYTHONPATH")
    if sys.flags.safe_path and pythonpath == python_path(pythonpath):
        return
    try:
        os.execve(sys.executable, [sys.executable, SAFE_PATH, *sys.orig_argv[1:]], child_env())
    except OSError:  # no interpreter to run: go on here, the path is cleaned (drop_working_directory)
        return


def drop_working_directory(path: list[str] | None = None) -> None:
    """Remove from ``path`` (``sys.path``) what names the working directory or lies under it by accident: ``''``,
    the working directory itself (``python -m`` puts it first) and what empty or relative ``PYTHONPATH`` entries
    made. What is already imported (this package) stays imported."""
    path = sys.path if path is None else path
    cwd = os.getcwd()
    implicit = {"", cwd, *(os.path.abspath(e) for e in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                           if not os.path.isabs(e))}
    path[:] = [entry for entry in path if entry not in implicit and os.path.abspath(entry or ".") != cwd]


__all__ = ["PACKAGE_PARENT", "SAFE_PATH", "child_env", "drop_working_directory", "python_path", "reexec_safe"]
