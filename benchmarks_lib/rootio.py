"""ROOT TTree sample files and the measured reads of the cache/prefetch chapter (ROOT and uproot).

The sample file follows seed 004's ``create_sample_file``: a TTree ``T`` of N entries x B
branches, each branch a fixed array of 100 elements per entry, element types cycling over
float, double, int, short; random values; ROOT's default compression. It is written by real
ROOT through a compiled filler (``gInterpreter.Declare``), or by uproot.

Each measured read runs in a fresh Python process (:func:`run_fresh`), as seed 004 ran a fresh
``root`` per configuration: ROOT's global state (gEnv, plugin handlers, caches) never leaks from
one configuration to the next, and the RSS baseline is that of a fresh process. The child
writes a metrics dict (JSON) that the parent returns.

ROOT pitfalls handled here: the ``root`` wheel's ``TFile.Open("http://...")`` fails with "method
ROOT::Deprecated::TWebFile not found" unless the http plugin handler is re-registered
(:func:`enable_root_http`); ROOT turns async prefetching off for local files by design, which the
metrics report as ``async_active``.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import importlib.util
import json
import os
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .availability import Unavailable
from .measure import fresh
from .specs import SpecError

TREE_NAME = "T"
ARRAY_LENGTH = 100
#: (ROOT leaf type code, numpy dtype) cycling over branches: float, double, int, short
ELEMENT_TYPES = (("F", "float32"), ("D", "float64"), ("I", "int32"), ("S", "int16"))
#: ROOT's default TTree auto-flush: a cluster every ~30 MB of compressed data
ROOT_DEFAULT_AUTO_FLUSH = -30_000_000
WRITERS = ("root", "uproot")
#: uproot source name -> class path (uproot.source.*)
UPROOT_SOURCES = {
    "fsspec": "uproot.source.fsspec.FSSpecSource",
    "http": "uproot.source.http.HTTPSource",
    "multithreaded": "uproot.source.http.MultithreadedHTTPSource",
}
ROOT_INSTALL_HINT = "pip install --pre root  (or the package extra: pip install 'iobench-book[root]')"
UPROOT_INSTALL_HINT = "pip install uproot  (or the package extra: pip install 'iobench-book[root]')"


# ---------------------------------------------------------------------------------------------
# availability and ROOT set-up


def root_missing_reason() -> str | None:
    """None when PyROOT can be imported, else a one-line reason with the install hint."""
    if importlib.util.find_spec("ROOT") is None:
        return f"ROOT (PyROOT) is not installed; {ROOT_INSTALL_HINT}"
    return None


def uproot_missing_reason() -> str | None:
    if importlib.util.find_spec("uproot") is None:
        return f"uproot is not installed; {UPROOT_INSTALL_HINT}"
    return None


def import_root() -> Any:
    """``import ROOT`` in batch mode, quietly (the wheel warns that it is alpha)."""
    reason = root_missing_reason()
    if reason:
        raise Unavailable(reason)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = importlib.import_module("ROOT")
    root.gROOT.SetBatch(True)
    return root


def is_url(location: str | os.PathLike) -> bool:
    return str(location).startswith(("http://", "https://"))


_http_enabled = False


def enable_root_http(url: str = "http://localhost/") -> None:
    """Make ``TFile.Open("http://...")`` work in the ``root`` wheel.

    The wheel's default plugin handler names a constructor cling cannot find; looking the handler
    up first (which loads the plugin table) and then registering TWebFile's constructor again
    makes TFile::Open pick a working handler.
    """
    global _http_enabled
    if _http_enabled:
        return
    root = import_root()
    manager = root.gROOT.GetPluginManager()
    manager.FindHandler("TFile", url)
    manager.AddHandler("TFile", "^http[s]?:", "ROOT::Deprecated::TWebFile", "Net", "TWebFile(const char*,Option_t*)")
    _http_enabled = True


def open_root_file(location: str | os.PathLike) -> Any:
    """``TFile::Open`` for a local path or an http(s) URL; raises OSError when it fails."""
    root = import_root()
    location = str(location)
    if is_url(location):
        enable_root_http(location)
    f = root.TFile.Open(location)
    if not f or f.IsZombie():
        raise OSError(f"ROOT could not open {location!r}")
    return f


_READER_CPP = r"""
#include <TBranch.h>
#include <TLeaf.h>
#include <TTree.h>
#include <cmath>
#include <string>
#include <vector>
Long64_t iobench_read_all_entries(TTree* tree, std::vector<double>& sums) {
   // seed 004's readTree: every entry in order, every branch; returns uncompressed bytes.
   // Each branch's values are summed as they are read (the check against the writer's sums).
   TObjArray* branches = tree->GetListOfBranches();
   const int nb = branches->GetEntriesFast();
   std::vector<std::vector<char>> bufs(nb);
   std::vector<int> kinds(nb), lens(nb);
   for (int b = 0; b < nb; ++b) {
      TBranch* br = (TBranch*)branches->At(b);
      TLeaf* leaf = (TLeaf*)br->GetListOfLeaves()->At(0);
      std::string type = leaf->GetTypeName();
      kinds[b] = type == "Float_t" ? 0 : type == "Double_t" ? 1 : type == "Int_t" ? 2 : type == "Short_t" ? 3 : -1;
      if (kinds[b] < 0) return -1;
      const int sizes[4] = {4, 8, 4, 2};
      lens[b] = leaf->GetLen();
      bufs[b].resize((size_t)lens[b] * sizes[kinds[b]]);
      br->SetAddress(bufs[b].data());
   }
   sums.assign(nb, 0.0);
   Long64_t total = 0, n = tree->GetEntries();
   for (Long64_t i = 0; i < n; ++i) {
      total += tree->GetEntry(i);
      for (int b = 0; b < nb; ++b) {
         const char* p = bufs[b].data();
         double s = 0;
         switch (kinds[b]) {
            case 0: for (int k = 0; k < lens[b]; ++k) s += ((const Float_t*)p)[k]; break;
            case 1: for (int k = 0; k < lens[b]; ++k) s += ((const Double_t*)p)[k]; break;
            case 2: for (int k = 0; k < lens[b]; ++k) s += ((const Int_t*)p)[k]; break;
            default: for (int k = 0; k < lens[b]; ++k) s += ((const Short_t*)p)[k]; break;
         }
         sums[b] += s;
      }
   }
   tree->ResetBranchAddresses();
   return total;
}
"""

_FILLER_CPP = r"""
#include <TFile.h>
#include <TTree.h>
#include <TRandom3.h>
#include <cmath>
#include <string>
#include <vector>
template <typename T, typename G>
void iobench_fill_values(char* p, int n, G next, double& sum, double& abs_sum) {
   for (int k = 0; k < n; ++k) {
      T v = next();
      ((T*)p)[k] = v;
      sum += v;
      abs_sum += std::fabs((double)v);
   }
}
Long64_t iobench_fill_sample(const char* path, Long64_t entries, int branches, Long64_t auto_flush, unsigned seed,
                             std::vector<double>& sums, std::vector<double>& abs_sums) {
   TFile f(path, "RECREATE");
   if (f.IsZombie()) return -1;
   TTree tree("T", "iobench cache/prefetch sample (seed 004)");
   tree.SetAutoFlush(auto_flush);
   const int n = 100;
   const char codes[4] = {'F', 'D', 'I', 'S'};
   const int sizes[4] = {4, 8, 4, 2};
   std::vector<std::vector<char>> bufs(branches);
   for (int b = 0; b < branches; ++b) {
      bufs[b].resize(n * sizes[b % 4]);
      std::string leaf = std::string("x[100]/") + codes[b % 4];
      tree.Branch(("b" + std::to_string(b)).c_str(), bufs[b].data(), leaf.c_str());
   }
   TRandom3 rng(seed);
   sums.assign(branches, 0.0);
   abs_sums.assign(branches, 0.0);
   for (Long64_t i = 0; i < entries; ++i) {
      for (int b = 0; b < branches; ++b) {
         char* p = bufs[b].data();
         double s = 0, a = 0;
         switch (b % 4) {
            case 0: iobench_fill_values<Float_t>(p, n, [&] { return rng.Rndm(); }, s, a); break;
            case 1: iobench_fill_values<Double_t>(p, n, [&] { return rng.Gaus(); }, s, a); break;
            case 2: iobench_fill_values<Int_t>(p, n, [&] { return rng.Integer(1 << 20); }, s, a); break;
            default: iobench_fill_values<Short_t>(p, n, [&] { return rng.Integer(1000); }, s, a); break;
         }
         sums[b] += s;
         abs_sums[b] += a;
      }
      tree.Fill();
   }
   tree.Write();
   f.Close();
   return f.GetSize();
}
"""


def _declare(root: Any, name: str, code: str) -> Any:
    if not hasattr(root, name) and not root.gInterpreter.Declare(code):
        raise RuntimeError(f"cling could not compile {name}")
    return getattr(root, name)


# ---------------------------------------------------------------------------------------------
# sample files


@dataclass(frozen=True)
class SampleFile:
    """A written sample file and how it was made."""

    path: str
    entries: int
    branches: int
    auto_flush: int
    writer: str
    seed: int
    file_bytes: int
    entry_bytes: int
    seconds: float
    #: per-branch sums of the values written (and of their magnitudes): what a full read must reproduce
    branch_sums: list[float]
    branch_abs_sums: list[float]


def entry_bytes(entries: int, branches: int) -> int:
    """Uncompressed bytes of ``entries`` entries of all branches (what a full read unpacks)."""
    sizes = [4, 8, 4, 2]
    return entries * ARRAY_LENGTH * sum(sizes[b % 4] for b in range(branches))


def _check_sample_args(entries: int, branches: int, auto_flush: int | None, writer: str) -> int:
    if not isinstance(entries, int) or entries < 1:
        raise SpecError(f"entries {entries!r} must be a positive integer")
    if not isinstance(branches, int) or branches < 1:
        raise SpecError(f"branches {branches!r} must be a positive integer")
    if writer not in WRITERS:
        raise SpecError(f"sample writer {writer!r} is unknown; allowed: {', '.join(WRITERS)}")
    if auto_flush is None:
        return ROOT_DEFAULT_AUTO_FLUSH
    if not isinstance(auto_flush, int) or auto_flush == 0:
        raise SpecError(f"auto_flush {auto_flush!r} must be a non-zero integer (entries if > 0, bytes if < 0)")
    return auto_flush


def create_sample_file(path: str | Path, entries: int, branches: int, auto_flush: int | None = None, *,
                       seed: int = 1, writer: str = "root") -> SampleFile:
    """Write seed 004's sample TTree to ``path`` with ROOT (default) or uproot.

    ``auto_flush`` as in ``TTree::SetAutoFlush``: > 0 entries per cluster, < 0 compressed bytes
    per cluster, None for ROOT's default (-30 MB). The per-branch sums of the values written are
    recorded, for the reads to check against.
    """
    from .measure import measure

    flush = _check_sample_args(entries, branches, auto_flush, writer)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def write() -> tuple[list[float], list[float]]:
        if writer == "uproot":
            return _write_with_uproot(path, entries, branches, flush, seed)
        root = import_root()
        fill = _declare(root, "iobench_fill_sample", _FILLER_CPP)
        sums, abs_sums = root.std.vector["double"](), root.std.vector["double"]()
        if int(fill(str(path), entries, branches, flush, seed, sums, abs_sums)) < 0:
            raise OSError(f"ROOT could not create {str(path)!r}")
        return list(sums), list(abs_sums)

    made = measure(write, sample=False)
    sums, abs_sums = made.value
    return SampleFile(str(path), entries, branches, flush, writer, seed, path.stat().st_size,
                      entry_bytes(entries, branches), made.elapsed_s, sums, abs_sums)


def _write_with_uproot(path: Path, entries: int, branches: int, auto_flush: int,
                       seed: int) -> tuple[list[float], list[float]]:
    """uproot variant: one basket per branch per ``extend`` (a cluster of ``auto_flush`` entries).
    Returns the per-branch sums of the values and of their magnitudes."""
    reason = uproot_missing_reason()
    if reason:
        raise Unavailable(reason)
    import numpy as np
    import uproot

    # auto_flush < 0 is bytes per cluster: entries, estimating ~1.2x compression of these random values
    step = auto_flush if auto_flush > 0 else max(1, int(-auto_flush * 1.2 // max(1, entry_bytes(1, branches))))
    step = min(step, entries)
    rng = np.random.default_rng(seed)
    dtypes = {f"b{b}": ELEMENT_TYPES[b % 4][1] for b in range(branches)}
    sums, abs_sums = [0.0] * branches, [0.0] * branches
    with uproot.recreate(path, compression=uproot.ZLIB(1)) as f:
        tree = f.mktree(TREE_NAME, {name: np.dtype((dt, (ARRAY_LENGTH,))) for name, dt in dtypes.items()},
                        title="iobench cache/prefetch sample (seed 004, uproot)",
                        initial_basket_capacity=entries // step + 2)
        for start in range(0, entries, step):
            n = min(step, entries - start)
            shape = (n, ARRAY_LENGTH)
            batch = {}
            for b, (name, dt) in enumerate(dtypes.items()):
                if dt == "float32":
                    batch[name] = rng.random(shape, dtype=np.float32)
                elif dt == "float64":
                    batch[name] = rng.standard_normal(shape)
                elif dt == "int32":
                    batch[name] = rng.integers(0, 1 << 20, shape, dtype=np.int32)
                else:
                    batch[name] = rng.integers(0, 1000, shape, dtype=np.int16)
                sums[b] += float(batch[name].sum(dtype=np.float64))
                abs_sums[b] += float(np.abs(batch[name]).sum(dtype=np.float64))
            tree.extend(batch)
    return sums, abs_sums


def sums_match(read: list[float] | None, sample: SampleFile) -> bool:
    """True when a full read's per-branch sums equal the writer's, to summation-order rounding (1e-12 of
    the sum of magnitudes: integer sums, exact below 2**53, must match to well under one unit)."""
    if read is None or len(read) != len(sample.branch_sums):
        return False
    return all(abs(r - w) <= 1e-12 * max(1.0, a)
               for r, w, a in zip(read, sample.branch_sums, sample.branch_abs_sums, strict=True))


def sample_file_name(entries: int, branches: int, auto_flush: int | None, writer: str = "root", seed: int = 1) -> str:
    flush = ROOT_DEFAULT_AUTO_FLUSH if auto_flush is None else auto_flush
    return f"sample-{writer}-e{entries}-b{branches}-af{flush}-s{seed}.root"


def root_file_end(path: str | Path) -> int | None:
    """``fEND`` from a ROOT file's header (the file's length once closed), or None when it is no ROOT file."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 16 or head[:4] != b"root":
        return None
    version = int.from_bytes(head[4:8], "big")
    if version >= 1_000_000:
        return int.from_bytes(head[12:20], "big") if len(head) >= 20 else None
    return int.from_bytes(head[12:16], "big")


def check_sample_file(target: Path, info: Path, expected: dict) -> SampleFile | None:
    """The recorded sample when ``target`` is intact: its record parses and matches ``expected``,
    and the file has the recorded size, which its ROOT header agrees with. None otherwise."""
    try:
        sample = SampleFile(**json.loads(info.read_text()))
        size = target.stat().st_size
    except (OSError, ValueError, TypeError):
        return None
    if any(getattr(sample, k) != v for k, v in expected.items()):
        return None
    if size != sample.file_bytes or root_file_end(target) != size or len(sample.branch_sums) != sample.branches:
        return None
    return sample


def _discard(path: Path) -> None:
    """Remove a partial or bad input of ours (only inside an iobench scratch directory)."""
    from .scratch import ScratchError, remove_tree

    if path.exists() or path.is_symlink():
        with contextlib.suppress(ScratchError):
            remove_tree(path)


def ensure_sample_file(directory: str | Path, entries: int, branches: int, auto_flush: int | None = None, *,
                       seed: int = 1, writer: str = "root") -> SampleFile:
    """The sample file for these parameters in ``directory``, written once and verified.

    It is written to a temporary name in a fresh process, verified there (a readable tree with
    the expected entries and branches, the size on disk), and only then renamed into place;
    its record (``.json``) likewise. A file already there is reused only when
    :func:`check_sample_file` accepts it; otherwise it is written again.
    """
    flush = _check_sample_args(entries, branches, auto_flush, writer)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / sample_file_name(entries, branches, auto_flush, writer, seed)
    info = target.with_suffix(".json")
    expected = {"entries": entries, "branches": branches, "auto_flush": flush, "writer": writer, "seed": seed,
                "path": str(target)}
    with open(directory / ".sample.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sample = check_sample_file(target, info, expected)
        if sample is not None:
            return sample
        for stale in (info, target):  # a bad input of an earlier attempt: it must not take disk space now
            _discard(stale)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp_info = info.with_name(f".{info.name}.{os.getpid()}.tmp")
        try:
            # write and verify in a fresh process: ROOT's state in this one stays untouched
            made = fresh.call("benchmarks_lib.rootio:_create_for_parent",
                             {"path": str(tmp), "entries": entries, "branches": branches,
                              "auto_flush": auto_flush, "seed": seed, "writer": writer})
            if tmp.stat().st_size != made["file_bytes"] or root_file_end(tmp) != made["file_bytes"]:
                raise OSError(f"sample file {tmp} is {tmp.stat().st_size} bytes, "
                              f"the writer reported {made['file_bytes']}")
            made["path"] = str(target)
            tmp_info.write_text(json.dumps(made))
            os.replace(tmp, target)
            os.replace(tmp_info, info)
        finally:
            _discard(tmp)
            _discard(tmp_info)
        sample = check_sample_file(target, info, expected)
        if sample is None:
            raise OSError(f"sample file {target} failed its check right after it was written")
        return sample


def _create_for_parent(**kwargs: Any) -> dict:
    """Write the sample and check it reads back: a tree with the expected entries and branches."""
    made = create_sample_file(**kwargs)
    if made.writer == "root":
        f = open_root_file(made.path)
        tree = f.Get(TREE_NAME)
        got = (int(tree.GetEntries()), int(tree.GetListOfBranches().GetEntries())) if tree else None
        f.Close()
    else:
        import uproot

        with uproot.open(made.path) as f:
            got = (int(f[TREE_NAME].num_entries), len(f[TREE_NAME].keys()))
    if got != (made.entries, made.branches):
        raise OSError(f"sample file {made.path} reads back as (entries, branches) {got}, "
                      f"expected {(made.entries, made.branches)}")
    return asdict(made)


# ---------------------------------------------------------------------------------------------
# measured reads (run in the child process)


def _timed_read(read: Any) -> dict:
    """``read()`` as one timed region (:func:`benchmarks_lib.measure.measure`): its row, the RSS of the
    fresh process before and after, and the dict ``read()`` returns."""
    from .measure import measure
    from .measure.sampler import current_rss_and_threads

    baseline, _ = current_rss_and_threads()
    result = measure(read)
    after, _ = current_rss_and_threads()
    return {**result.as_row(), "rss_baseline_bytes": baseline, "rss_after_bytes": after, **result.value}


def measure_root_read(location: str, cache_bytes: int, async_prefetch: bool, *, tree: str = TREE_NAME) -> dict:
    """Seed 004's benchmark in this process: open, set the TTreeCache size, read every entry.

    Timed from ``TFile::Open`` to the last entry (as seed 004's TStopwatch); ``TFile.AsyncPrefetching``
    is set in gEnv before opening.
    """
    root = import_root()
    root.gEnv.SetValue("TFile.AsyncPrefetching", int(bool(async_prefetch)))
    read_all = _declare(root, "iobench_read_all_entries", _READER_CPP)
    root.gSystem.Load("libTree")
    if is_url(location):
        root.gSystem.Load("libNet")
        enable_root_http(location)
    state: dict = {}
    sums = root.std.vector["double"]()

    def read() -> dict:
        f = open_root_file(location)
        t = f.Get(tree)
        if not t:
            raise OSError(f"no TTree {tree!r} in {location!r}")
        t.SetCacheSize(int(cache_bytes))
        nbytes = int(read_all(t, sums))
        state.update(file=f, tree=t)
        return {"nbytes": nbytes, "entries": int(t.GetEntries()), "branches": int(t.GetListOfBranches().GetEntries())}

    row = _timed_read(read)
    f, t = state["file"], state["tree"]
    cache = t.GetReadCache(f)
    row.update(root_bytes_read=int(f.GetBytesRead()), root_read_calls=int(f.GetReadCalls()),
               async_active=bool(cache) and bool(cache.IsEnablePrefetching()),
               cache_active=bool(cache), file_class=str(f.ClassName()), branch_sums=list(sums))
    f.Close()
    return row


def measure_uproot_read(location: str, *, source: str = "fsspec", step_size: int | str = "100 MB",
                        num_workers: int = 1, tree: str = TREE_NAME) -> dict:
    """uproot's ``TTree.iterate`` over all branches in this process; ``step_size`` in entries
    (int) or bytes (str such as "100 MB": uproot then reads every basket header first)."""
    reason = uproot_missing_reason()
    if reason:
        raise Unavailable(reason)
    import uproot

    options: dict = {"num_workers": int(num_workers)}
    if is_url(location):
        if source not in UPROOT_SOURCES:
            raise SpecError(f"uproot source {source!r} is unknown; allowed: {', '.join(UPROOT_SOURCES)}")
        module, _, cls = UPROOT_SOURCES[source].rpartition(".")
        options["handler"] = getattr(importlib.import_module(module), cls)
        if source == "fsspec":  # imported lazily by fsspec on first use: keep it out of the timed read
            importlib.import_module("fsspec.implementations.http")
    state: dict = {}

    import numpy as np

    def read() -> dict:
        f = uproot.open(location, **options)
        t = f[tree]
        names = list(t.keys())
        sums = dict.fromkeys(names, 0.0)
        nbytes = steps = 0
        for arrays in t.iterate(step_size=step_size, library="np"):
            for name, a in arrays.items():
                nbytes += a.nbytes
                sums[name] += float(a.sum(dtype=np.float64))  # checked against the writer's sums
            steps += 1
        state["file"] = f
        return {"nbytes": nbytes, "entries": int(t.num_entries), "branches": len(names), "steps": steps,
                "branch_sums": [sums[n] for n in names]}

    row = _timed_read(read)
    f = state["file"]
    src = f.file.source
    row.update(client_requests=int(src.num_requests), client_chunks=int(src.num_requested_chunks),
               client_bytes=int(src.num_requested_bytes), source_class=type(src).__name__)
    f.close()
    return row


def read_with_root(location: str | Path, cache_bytes: int, async_prefetch: bool | int, *,
                   timeout_s: float | None = None) -> dict:
    """Seed 004's read of one configuration in a fresh process: metrics dict (see ``measure_root_read``)."""
    return fresh.call("benchmarks_lib.rootio:measure_root_read",
                     {"location": str(location), "cache_bytes": int(cache_bytes),
                      "async_prefetch": bool(async_prefetch)},
                     timeout_s=timeout_s)


def read_with_uproot(location: str | Path, *, source: str = "fsspec", step_size: int | str = "100 MB",
                     num_workers: int = 1, timeout_s: float | None = None) -> dict:
    """uproot's read of one configuration in a fresh process (see ``measure_uproot_read``)."""
    return fresh.call("benchmarks_lib.rootio:measure_uproot_read",
                     {"location": str(location), "source": source, "step_size": step_size,
                      "num_workers": int(num_workers)},
                     timeout_s=timeout_s)
