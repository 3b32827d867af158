"""ROOT: seed 004's benchmark (TTreeCache size x ``TFile.AsyncPrefetching``), and the compiled
filler that writes the sample file as seed 004 did.

ROOT pitfalls handled here: the ``root`` wheel's ``TFile.Open("http://...")`` fails with "method
ROOT::Deprecated::TWebFile not found" unless the http plugin handler is re-registered
(:func:`enable_root_http`); ROOT turns async prefetching off for local files by design, which the
metrics report as ``async_active``.
"""

from __future__ import annotations

import importlib
import os
import warnings
from pathlib import Path
from typing import Any

from benchmarks_lib.adapters.remote.base import RemoteReader, is_url, timed_read
from benchmarks_lib.data.input_formats import TREE_NAME


class RootReader(RemoteReader):
    name = "root"
    order = 10
    module = "ROOT"
    distribution = "root"
    install_hint = "pip install --pre root  (or the package extra: pip install 'iobench-book[root]')"
    measure_target = "benchmarks_lib.adapters.remote.root:measure_read"
    notes = "TFile::Open + TTreeCache (SetCacheSize) + GetEntry of every entry; TWebFile over HTTP"

    @classmethod
    def write_sample(cls, path: Path, entries: int, branches: int, auto_flush: int,
                     seed: int) -> tuple[list[float], list[float]]:
        root = import_root()
        fill = _declare(root, "iobench_fill_sample", _FILLER_CPP)
        sums, abs_sums = root.std.vector["double"](), root.std.vector["double"]()
        if int(fill(str(path), entries, branches, auto_flush, seed, sums, abs_sums)) < 0:
            raise OSError(f"ROOT could not create {str(path)!r}")
        return list(sums), list(abs_sums)

    @classmethod
    def preload(cls) -> None:
        """ROOT imported and started (its interpreter: 1.1 s of a fresh read's 1.4 s on 2 cores), the libraries and
        the reader's code a read loads, and its HTTP handler: started without a thread of its own."""
        root = import_root()
        root.TFile  # noqa: B018 - the first use starts cling
        root.gSystem.Load("libTree")
        root.gSystem.Load("libNet")
        _declare(root, "iobench_read_all_entries", _READER_CPP)
        enable_root_http()

    @classmethod
    def sample_shape(cls, path: Path) -> tuple[int, int] | None:
        f = open_root_file(path)
        tree = f.Get(TREE_NAME)
        got = (int(tree.GetEntries()), int(tree.GetListOfBranches().GetEntries())) if tree else None
        f.Close()
        return got


def import_root() -> Any:
    """``import ROOT`` in batch mode, quietly (the wheel warns that it is alpha)."""
    RootReader.require()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = importlib.import_module("ROOT")
    root.gROOT.SetBatch(True)
    return root


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


def _declare(root: Any, name: str, code: str) -> Any:
    if not hasattr(root, name) and not root.gInterpreter.Declare(code):
        raise RuntimeError(f"cling could not compile {name}")
    return getattr(root, name)


def measure_read(location: str, cache_bytes: int, async_prefetch: bool, *, tree: str = TREE_NAME) -> dict:
    """Seed 004's benchmark in this (fresh) process: open, set the TTreeCache size, read every entry.

    Timed from ``TFile::Open`` to the last entry (as seed 004's TStopwatch); ``TFile.AsyncPrefetching``
    is set in gEnv before opening. Adds ROOT's own counters and the per-branch sums of what it read.
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

    row = timed_read(read)
    f, t = state["file"], state["tree"]
    cache = t.GetReadCache(f)
    row.update(root_bytes_read=int(f.GetBytesRead()), root_read_calls=int(f.GetReadCalls()),
               async_active=bool(cache) and bool(cache.IsEnablePrefetching()),
               cache_active=bool(cache), file_class=str(f.ClassName()), branch_sums=list(sums))
    f.Close()
    return row


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
