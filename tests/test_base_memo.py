"""What is costly and the same on every run is computed once per machine and kept (``base.memo``): read back only
when it is a regular file and passes the caller's check; a cache that cannot be used is passed over."""

import json
import os

from benchmarks_lib.base.memo import memo


def _counting(value):
    calls = []

    def compute():
        calls.append(1)
        return value

    return compute, calls


def test_a_value_is_computed_once_and_read_back_where_it_passes_its_check(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    compute, calls = _counting([1, 2, 3])
    assert memo("kind", "k1", compute, lambda v: isinstance(v, list)) == [1, 2, 3]
    assert memo("kind", "k1", compute, lambda v: isinstance(v, list)) == [1, 2, 3] and len(calls) == 1
    assert memo("kind", "k1", compute, lambda v: False) == [1, 2, 3] and len(calls) == 2  # refused: computed again
    path = tmp_path / "iobench-book" / "kind.json"
    assert json.loads(path.read_text()) == {"k1": [1, 2, 3]}
    for broken in ("{", "[1]", '{"k1": "x"}', "[" * 100_000):  # corrupt, another shape, a wrong value, deep
        path.write_text(broken)
        assert memo("kind", "k1", compute, lambda v: isinstance(v, list)) == [1, 2, 3]
    assert json.loads(path.read_text()) == {"k1": [1, 2, 3]}  # written again, whole


def test_a_link_or_a_huge_file_in_its_place_is_never_read_nor_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    (tmp_path / "iobench-book").mkdir()
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"k": [9]}))
    link = tmp_path / "iobench-book" / "kind.json"
    link.symlink_to(target)
    compute, calls = _counting([1])
    assert memo("kind", "k", compute, lambda v: True) == [1] and calls == [1]  # the link's [9] is not read
    assert link.is_symlink() and json.loads(target.read_text()) == {"k": [9]}  # nor replaced, nor written through
    link.unlink()
    link.write_text(json.dumps({"k": [9], "pad": "x" * (2 << 20)}))  # over the limit: not read
    assert memo("kind", "k", compute, lambda v: True) == [1]


def test_a_cache_that_cannot_be_written_is_passed_over(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    (tmp_path / "file").write_text("not a directory")
    compute, calls = _counting(7)
    assert memo("kind", "k", compute, lambda v: True) == 7
    assert memo("kind", "k", compute, lambda v: True) == 7 and len(calls) == 2
    assert os.listdir(tmp_path) == ["file"]
