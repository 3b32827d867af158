"""``measure.fresh.Forks``: one process per call, forked from a server that ran its preload once. A call starts
from the server's state, never from another call's; its pages are its own from the start (the server's file pages
mapped, its private pages copied, as in a process that imported the library itself), so nothing of the fork is paid
or counted inside the call; a call that fails, crashes or hangs is one error and the next call gets a server that
works; nothing is left running after close."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import python_path

from benchmarks_lib.base.availability import Unavailable
from benchmarks_lib.measure.fresh import Forks, FreshProcessError

PLUGINS = Path(__file__).parent / "plugins"


@pytest.fixture
def forks(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", python_path(PLUGINS))
    marker = tmp_path / "preloads"
    with Forks("fork_targets:state", preload=("fork_targets:preload", {"marker": str(marker)})) as f:
        yield f, marker


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_each_call_is_a_process_of_its_own_from_one_preloaded_server(forks):
    f, marker = forks
    calls = [f.call({"set_to": f"call {n}"}) for n in range(4)]
    assert len({c["pid"] for c in calls}) == 4 and len({c["ppid"] for c in calls}) == 1
    assert marker.read_text().split() == [str(calls[0]["ppid"])]  # the preload ran once, in the server
    assert all(c["seen"] == "preload" for c in calls)  # each starts from the server's state, not the last call's
    assert not any(_alive(c["pid"]) for c in calls)
    # the server's pages are the call's own as it starts: its RSS is the server's (without the kernel's help it
    # starts with the anonymous pages only: numpy's libraries, mapped in the server, would fault in during the call)
    assert all(c["rss"] >= 0.9 * c["server_rss"] for c in calls), calls
    server = calls[0]["ppid"]
    f.close()
    assert not _alive(server)


def test_a_failed_call_is_one_error_and_the_next_call_works(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", python_path(PLUGINS))
    with Forks("fork_targets:crash") as f:
        with pytest.raises(FreshProcessError, match=r"(?s)failed \(exit 1\).*the call failed on purpose"):
            f.call({"how": "exception"})
        with pytest.raises(FreshProcessError, match=r"failed \(exit 3\)") as info:
            f.call({"how": "exit"})
        assert info.value.returncode == 3
        with pytest.raises(FreshProcessError, match=r"failed \(exit -11\)"):
            f.call({"how": "signal"})
        server = f._proc.pid
        with pytest.raises(FreshProcessError, match="did not finish within 1 s"):
            f.call({"how": "hang"}, timeout_s=1)
        assert not _alive(server)  # a hung call takes its server with it: killed, with what it forked
        with pytest.raises(FreshProcessError, match=r"failed \(exit 1\)"):
            f.call({"how": "exception"})  # a new server
        assert f._proc.pid != server
        server = f._proc.pid
        with pytest.raises(FreshProcessError, match=r"failed \(exit -9\)"):
            f.call({"how": "server"})  # the server itself killed: the call's process dies with it
        assert not _alive(server)
        with pytest.raises(FreshProcessError, match=r"failed \(exit 3\)"):
            f.call({"how": "exit"})  # a new server again
    with Forks("fork_targets:unavailable") as f, pytest.raises(Unavailable, match="pip install foo"):
        f.call({})
