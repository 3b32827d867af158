"""Bad input: a clear one-line error naming the value and what is allowed; nothing written."""

import pytest

from benchmarks_lib.base.specs import SpecError, parse_codec, parse_dims, parse_flags, parse_number, parse_size
from benchmarks_lib.cli.main import main

BAD_RUNS = [
    (["run", "writers", "-d", ""], "dims"),
    (["run", "writers", "-d", "t"], "t"),
    (["run", "writers", "-d", "t:0"], "0"),
    (["run", "writers", "-d", "t:10:20"], "exceeds"),
    (["run", "writers", "-d", "t:10:3:4"], "multiple"),
    (["run", "writers", "-d", "t:8,t:8"], "repeated"),
    (["run", "writers", "-d", "1t:8"], "1t:8"),
    (["run", "writers", "-d", "t:x"], "'x'"),
    (["run", "writers", "--codec", "snappy"], "snappy"),
    (["run", "writers", "--codec", "zstd:99"], "99"),
    (["run", "writers", "--codec", "gzip:10"], "10"),
    (["run", "writers", "--codec", "blosc-foo"], "foo"),
    (["run", "writers", "--codec", "blosc-lz4:5:wiggle"], "wiggle"),
    (["run", "writers", "--codec", "blosc-lz4:12"], "12"),
    (["run", "writers", "-b", "nosuchwriter"], "nosuchwriter"),
    (["run", "writers", "-b", "tensorstore:zarr9"], "zarr9"),
    (["run", "writers", "--dataset", "cats"], "cats"),
    (["run", "writers", "--test", "fly"], "fly"),
    (["run", "writers", "--iterations", "0"], "iterations"),
    (["run", "writers", "--iterations", "many"], "many"),
    (["run", "writers", "--warmups", "-1"], "warmups"),
    (["run", "writers", "--param", "bogus=1"], "bogus"),
    (["run", "writers", "--param", "noequals"], "noequals"),
    (["run", "writers", "--param", "multipliers=[0]"], "multipliers"),
    (["run", "writers", "--param", "inner_chunks=[48]"], "48"),
    (["run", "writers", "--param", "fsync=\"yes\""], "fsync"),
    (["run", "writers", "--param", "multipliers=" + "[" * 60_000 + "]" * 60_000], "60000 levels deep"),
    (["run", "writers", "--param", "multipliers=[" + "1," * 600_000 + "1]"], "at most 1,000,000"),
    (["run", "writers", "--iterations", "\u0663"], "iterations"),  # an Arabic-Indic three: not a digit typed here
    (["run", "writers", "--iterations", "\uff11\uff12"], "iterations"),  # fullwidth 12
    (["run", "writers", "--budget", "\u0663m"], "budget"),
    (["run", "writers", "-d", "t:18446744073709551616,y:8,x:8", "--yes"], "too large"),  # 2^64: a record's overflow
    (["run", "writers", "-d", "t:1099511627776,y:1099511627776,x:8", "--yes"], "(2^50)"),
    (["run", "nosuite"], "nosuite"),
    (["run", "writers", "--run-id", "../escape"], "run id"),
    (["show", "no-such-run"], "no-such-run"),
]


@pytest.mark.parametrize(("argv", "named"), BAD_RUNS, ids=[" ".join(a[1:])[:60] for a, _ in BAD_RUNS])
def test_bad_input_is_one_clear_line_and_writes_nothing(workdir, capsys, argv, named):
    rc = main([*argv, "--results-dir", str(workdir / "results")])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.startswith("iobench: error:")
    assert len(err.splitlines()) == 1, err
    assert named in err
    assert not (workdir / "results").exists()
    assert not any((workdir / "scratch").glob("*/*")) if (workdir / "scratch").exists() else True


TWICE = [["run", "writers", "--budget", "2m", "--budget", "2h"], ["run", "writers", "--yes", "--yes"],
         ["book", "--profile", "quick", "--profile=seed"]]


@pytest.mark.parametrize("argv", TWICE)
def test_an_option_of_one_value_given_twice_is_refused(workdir, capsys, argv):
    """The last of two ``--budget`` never silently wins: one line, exit 2, nothing written (``--param`` and ``-b``
    repeat by design)."""
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--results-dir", str(workdir / "results")])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1 and "is given twice; give it once" in err, err
    assert not (workdir / "results").exists()


def test_parsers_accept_good_values():
    d = parse_dims("t:64,y:1080:540,x:1920")
    assert d.shape == (64, 1080, 1920) and d.chunks == (64, 540, 1920) and d.shards is None
    s = parse_dims("z:1024:32:512,y:1024:32:512,x:1024:32:512")
    assert s.shards == (512, 512, 512)
    assert str(parse_codec("blosc-zstd:5:bitshuffle")) == "blosc-zstd:5:bitshuffle"
    assert parse_codec("zstd").level == 3 and parse_codec("gzip:6").level == 6 and parse_codec("zstd:-5").level == -5
    assert parse_size("1.5GiB") == int(1.5 * 2**30) and parse_size("64MB") == 64_000_000


@pytest.mark.parametrize("text", ["", "1MiBs", "-3", "GB"])
def test_bad_sizes(text):
    with pytest.raises(SpecError):
        parse_size(text)


def test_flags_and_numbers():
    assert parse_flags([0, 1, True], "async") == [False, True]
    assert parse_flags("false,on,yes", "cache") == [False, True]
    assert parse_number("2.5", "latency", minimum=0, maximum=10, unit="ms") == 2.5
    for value in (2, "maybe", [1]):
        with pytest.raises(SpecError, match=r"is not a flag|not a string or number"):
            parse_flags([value], "async")
    with pytest.raises(SpecError, match=r"latency -1 is out of range; allowed 0..10 ms"):
        parse_number(-1, "latency", minimum=0, maximum=10, unit="ms")
    for value in (True, "abc", float("nan")):
        with pytest.raises(SpecError, match="is not a number"):
            parse_number(value, "latency", minimum=0, maximum=10)


def test_thread_counts_one_rule_for_every_suite():
    """The threads suite's list and the compression suite's one count: one parser, one bound."""
    from benchmarks_lib.base.specs import MAX_THREADS, parse_threads

    assert parse_threads("4,1,4") == parse_threads([1, 4]) == [1, 4] and parse_threads(8, one=True) == [8]
    assert parse_threads(str(MAX_THREADS), one=True) == [MAX_THREADS]
    for value, one in ((0, False), (MAX_THREADS + 1, False), ("two", False), (True, False), ([2], True),
                       ("1,2", True)):
        with pytest.raises(SpecError, match=r"^threads (value )?\S+ "):
            parse_threads(value, one=one)


def test_list_parameters_accept_what_papermill_passes():
    """``papermill -p NAME VALUE`` passes a list as text: comma-separated or JSON; both read the same."""
    from benchmarks_lib.base.specs import parse_codecs, parse_int_list, parse_items, parse_names

    assert parse_items("raw, tensorstore", "backends") == parse_items('["raw","tensorstore"]', "backends")
    assert parse_names('["raw", "raw"]', "backends") == ["raw"]
    assert parse_int_list("[1, 2, 4]", "multipliers") == parse_int_list("1,2,4", "multipliers") == (1, 2, 4)
    assert parse_codecs('["zstd:3", "lz4"]') == parse_codecs("zstd:3,lz4") == ["zstd:3", "lz4"]
    assert parse_flags("False,True", "cache") == parse_flags("[false, true]", "cache") == [False, True]
    for value, message in (('["raw", "x"', r"backends '\[\"raw\", \"x\"' is not a JSON list"),
                           ('[["raw"]]', r"backends item \['raw'\] is not a string or number"),
                           ('{"a": 1}', r"backends '\{\"a\": 1\}' is unknown")):
        with pytest.raises(SpecError, match=message):
            parse_names(value, "backends", ["raw", "tensorstore"])
