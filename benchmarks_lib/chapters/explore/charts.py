"""The explorer in the HTML book: a chart drawn in the reader's browser, whose controls redraw it without a kernel.

A web page runs no Python, so the live ipywidgets explorer (:func:`.explore.explorer`, JupyterLab) cannot work
there: embedded, its controls showed the saved figure whatever was chosen. The book's page carries instead the
recorded rows (the newest run of each chapter in each results directory, at most :data:`ROW_LIMIT` rows, and the
page says when rows were left out) and one Vega-Lite chart written with Altair. The page's menus (chapter,
operation, measure, x axis, colour) set the chart's parameters and Vega redraws it in the browser, offline: the
book serves vega, vega-lite and vega-embed itself (``benchmarks_lib.book.vendor``) to the pages that hold
:data:`MARK`. Below the chart a table lists the rows drawn, with their round (a reader sees drift by plotting
the measure against ``round``).

Every string in the rows comes from a results directory, hence from anyone: it is data. The rows travel as JSON
inside a ``<script type="application/json">`` element with every ``<``, ``>`` and ``&`` written as a ``\\u``
escape (no string can end the element or open another); the page's script puts them into menus and table cells as
text (``textContent``, never markup), Vega draws them as SVG text, and its tooltips escape HTML.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from benchmarks_lib.base.markup import html_text, short
from benchmarks_lib.chapters.flags import LATENCIES, WRITER_PHASES
from benchmarks_lib.records.store import load_run
from benchmarks_lib.rules.ceilings import ok_rows
from benchmarks_lib.rules.names import operation_name

#: the most rows one page carries, over all its chapters (a chapter with fewer rows than its share leaves the rest
#: to the others); beyond it rows are left out evenly spread, and the page says how many
ROW_LIMIT = 5000
#: the rows the table under the chart lists
TABLE_ROWS = 40
#: the attribute of the element that holds a chart: the book loads the chart scripts on the pages that have it
MARK = "data-iobench-charts"
#: the measures the chart draws: label (as the live explorer's metrics) -> column of the embedded rows
MEASURES = {"throughput (GB/s)": "gbps", "time (s)": "elapsed_s", "peak RSS (MB)": "peak_rss_mb"}
#: a measure not recorded as it is drawn: column -> (record column, factor)
SOURCES = {"peak_rss_mb": ("peak_rss_bytes", 1e-6)}
#: the columns the chart sets along x or colours by, and lists in its table: column -> label
GROUPS = {"backend": "backend", "run": "run", "round": "round", "iteration": "iteration", "dataset": "dataset",
          "dtype": "dtype", "codec": "codec", "level": "level", "threads": "threads", "layout": "layout",
          "cache_state": "cache state", "fsync_included": "fsync", "latency_ms": "latency (ms)",
          "concurrency": "concurrency", "workers": "workers"}
#: the columns tried in turn for the x axis and the colour of a chapter's first chart: the first that varies
FIRST_GROUPS = ("backend", "codec", "level", "threads", "workers", "concurrency", "latency_ms", "layout", "dataset")
#: what the chart calls a value a row does not record
NONE = "(not recorded)"
#: the most characters of a string from a record on the page (a run's name, made of shortened parts: 4x as many)
LABEL_LIMIT = 60


def chart_rows(runs: list) -> tuple[pd.DataFrame, int]:
    """The rows a page carries for ``runs`` (:class:`.explore.Run`): the measured (ok) rows of whole operations
    (per-frame and per-cutout latencies are the chapters' figures), in the columns the chart knows, each string
    shortened; at most :data:`ROW_LIMIT`. Also how many rows there were before the limit."""
    frames = []
    for run in runs:
        rows, meta = load_run(run.path)
        rows = ok_rows(rows)
        if "operation" not in rows or rows.empty:
            continue
        rows = rows[~rows["operation"].isin(LATENCIES)].reset_index(drop=True)
        out = pd.DataFrame({"chapter": run.suite, "run": run_name(run, meta), "operation": rows["operation"]})
        for column in GROUPS:
            if column not in out:
                out[column] = rows.get(column)
        for column in MEASURES.values():
            source, factor = SOURCES.get(column, (column, 1.0))
            values = pd.to_numeric(rows[source], errors="coerce") if source in rows else pd.Series(np.nan, rows.index)
            out[column] = values.astype(float) * factor
        frames.append(out)
    if not frames:
        return pd.DataFrame(columns=["chapter", "run", "operation", *GROUPS, *MEASURES.values()]), 0
    df = pd.concat(frames, ignore_index=True)
    total = len(df)
    return bounded(df, ROW_LIMIT), total


def run_name(run, meta: dict) -> str:
    """A run as the chart's legend and table name it: its profile, machine, start (to the minute), run id and
    the directory it came from (the chapter is the menu's), each part shortened."""
    parts = (meta.get("profile"), run.path.parent.name, str(meta.get("started_at") or "")[:16].replace("T", " "))
    name = " · ".join([*(short(p) for p in parts if p), short(run.path.name, 32)])
    return f"{name} [{short(run.path.parents[1].name)}/]"


def bounded(df: pd.DataFrame, limit: int) -> pd.DataFrame:
    """At most ``limit`` rows of ``df``: each chapter gets an equal share of what is left, the smallest first (so a
    small chapter keeps all its rows); within a chapter the rows kept are spread evenly over its rows."""
    sizes = df.groupby("chapter", sort=False).size().sort_values()
    kept, left = [], limit
    for i, (chapter, size) in enumerate(sizes.items()):
        share = min(size, left // (len(sizes) - i))
        mine = df[df["chapter"] == chapter]
        kept.append(mine.iloc[np.unique(np.linspace(0, size - 1, share).round().astype(int))] if share < size else mine)
        left -= share
    return pd.concat(kept).sort_index() if kept else df


def _column(values: pd.Series, limit: int = LABEL_LIMIT) -> dict:
    """One column as JSON: numbers as numbers (a missing one null), anything else as text shortened to ``limit``,
    written once each (``names``) and referred to by position (``codes``), so that a run's label is not repeated
    per row."""
    if values.dtype.kind in "fiu" or isinstance(values.dtype, pd.Float64Dtype | pd.Int64Dtype):
        numbers = pd.to_numeric(values, errors="coerce").astype(float)
        return {"values": [None if not np.isfinite(v) else (int(v) if v.is_integer() else float(v))
                           for v in numbers]}
    texts = [None if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA
             else ("yes" if v else "no") if isinstance(v, bool | np.bool_)
             else str(int(v)) if isinstance(v, float) and v.is_integer() else short(v, limit) for v in values]
    names = list(dict.fromkeys(t for t in texts if t is not None))
    index = {n: i for i, n in enumerate(names)}
    return {"names": names, "codes": [None if t is None else index[t] for t in texts]}


def script_json(value: object) -> str:
    """``value`` as JSON safe inside a ``<script>`` element: every ``<``, ``>`` and ``&`` a ``\\u`` escape, no
    character outside ASCII (so neither U+2028 nor U+2029), no NaN."""
    text = json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def chart_spec() -> dict:
    """The Vega-Lite chart (Altair): the rows of the chosen chapter and operation, the chosen measure against the
    chosen column, a colour per value of another, each measured iteration a point. Its parameters (``chapter``,
    ``operation``, ``measure``, ``xcol``, ``colour``, ``heading``) are set by the page's menus; the rows come as
    the named dataset ``rows``."""
    import altair as alt

    params = [alt.param(name=name, value="") for name in ("chapter", "operation", "measure", "xcol", "colour",
                                                            "heading")]
    tooltip = [alt.Tooltip("run:N"), alt.Tooltip("backend:N"), alt.Tooltip("dataset:N"), alt.Tooltip("round:Q"),
               alt.Tooltip("x:N", title="x"), alt.Tooltip("group:N", title="colour"),
               alt.Tooltip("value:Q", title="value", format=".4~g")]
    chart = (
        alt.Chart(alt.Data(name="rows"))
        .transform_filter("datum.chapter === chapter && datum.operation === operation")
        .transform_calculate(x=f"isValid(datum[xcol]) ? datum[xcol] : '{NONE}'",
                             group=f"isValid(datum[colour]) ? datum[colour] : '{NONE}'", value="datum[measure]")
        .transform_filter("isValid(datum.value) && isFinite(datum.value)")
        .mark_point(filled=True, opacity=0.75, size=40)
        .encode(x=alt.X("x:O", title=None, sort="ascending", axis=alt.Axis(labelLimit=180, labelAngle=-30)),
                xOffset=alt.XOffset("group:N", sort="ascending"),
                y=alt.Y("value:Q", title=None),
                color=alt.Color("group:N", title=None, sort="ascending",
                                legend=alt.Legend(orient="bottom", columns=1, labelLimit=640)),
                tooltip=tooltip)
        .properties(width=640, height=320, title=alt.TitleParams(alt.ExprRef("heading"), anchor="start"),
                    autosize=alt.AutoSizeParams(type="pad", resize=True))  # laid out again on every change
        .add_params(*params)
    )
    return chart.to_dict()


def operation_names(df: pd.DataFrame) -> dict[str, str]:
    """Each recorded operation of the rows -> its name in words (``rules.names``): a ceiling's own operation
    (measured by the ceiling alone) by the ceiling's name, the others as a writer's."""
    if df.empty or "operation" not in df:
        return {}
    ops = df[["operation", "backend"]].dropna(subset=["operation"]).astype(str) if "backend" in df else \
        df[["operation"]].dropna().astype(str).assign(backend="")
    alone = ops.groupby("operation")["backend"].agg(lambda b: bool((b == "ceiling").all()))
    return {op: operation_name(op, ceiling=bool(only)) for op, only in alone.items()}


def chart_page(runs: list, chapters: list[tuple[str, str]], chapter: str, metric: str) -> str:
    """The HTML of the explorer's page in the book: the menus, the chart, the table and the rows of ``runs``
    (:class:`.explore.Run`), for the chapters ``chapters`` ((title, suite), the book's order) that have rows, first
    showing ``chapter`` (when it has rows) and ``metric``."""
    df, total = chart_rows(runs)
    if df.empty:  # the sentence above the explorer says where no run was found
        return "<p><b>No measured row to draw.</b></p>"
    present = set(df["chapter"])
    menu = [(title, suite) for title, suite in chapters if suite in present]
    data = {
        "chapters": [[short(title, LABEL_LIMIT), suite] for title, suite in menu],
        "measures": [[label, column] for label, column in MEASURES.items()],
        "groups": [[column, label] for column, label in GROUPS.items()],
        "first": {"chapter": chapter if chapter in present else (menu[0][1] if menu else ""),
                  "measure": MEASURES.get(metric, "gbps")},
        "firstGroups": list(FIRST_GROUPS),
        "phases": {"writers": list(WRITER_PHASES)},  # create, write, finalize: parts of a writer's total
        "operationNames": operation_names(df),
        "tableRows": TABLE_ROWS,
        # a run's name is made of shortened parts already (:func:`run_name`), and names it whole
        "columns": {c: _column(df[c], 4 * LABEL_LIMIT if c == "run" else LABEL_LIMIT) for c in df.columns},
        "length": len(df),
        "spec": chart_spec(),
    }
    left_out = total - len(df)
    runs_drawn = df["run"].nunique()
    note = (f"{len(df):,} rows of {runs_drawn} runs (the newest of each chapter in each results directory; "
            "per-frame and per-cutout latencies are left to the chapters).")
    if left_out:
        note += (f" <b>{left_out:,} of the {total:,} rows were left out</b>: a page carries at most "
                 f"{ROW_LIMIT:,} rows, spread evenly over each chapter's rows; JupyterLab's explorer draws them all.")
    selects = "".join(f'<label style="margin-right:1em">{html_text(label)} <select name="{name}"></select></label>'
                      for name, label in (("chapter", "chapter"), ("operation", "operation"), ("measure", "measure"),
                                          ("xcol", "x axis"), ("colour", "colour by")))
    return (
        f'<div class="iobench-charts" {MARK}="1">'
        f'<p class="iobench-charts-note">{note}</p>'
        f'<div class="iobench-charts-controls">{selects}</div>'
        '<p class="iobench-charts-status"><b>The chart is drawn by your browser and has not been drawn</b>: the '
        "page's chart scripts did not load (a book built without them shows the explorer as static figures).</p>"
        '<div class="iobench-charts-view"></div>'
        '<div class="iobench-charts-table" style="overflow:auto; max-height:28em; font-size:0.8em"></div>'
        f'<script type="application/json" class="iobench-charts-data">{script_json(data)}</script>'
        f"<script>{SCRIPT}</script>"
        "</div>"
    )


#: the page's script (no data in it): fills the menus from the rows, sets the chart's parameters on every change
#: and lists the rows drawn; every string of the rows goes in as text. ``data-drawn`` on the chart's element counts
#: the rows drawn (what a test reads).
SCRIPT = r"""
(function () {
  var root = document.currentScript.parentElement;
  function start() {
    var status = root.querySelector(".iobench-charts-status");
    if (typeof vegaEmbed === "undefined") return;  /* the status says the scripts did not load */
    var data = JSON.parse(root.querySelector("script.iobench-charts-data").textContent);
    var names = Object.keys(data.columns), rows = [];
    for (var i = 0; i < data.length; i++) {
      var row = {};
      names.forEach(function (n) {
        var c = data.columns[n];
        row[n] = c.codes ? (c.codes[i] === null ? null : c.names[c.codes[i]]) : c.values[i];
      });
      rows.push(row);
    }
    var menus = {};
    root.querySelectorAll("select").forEach(function (s) { menus[s.name] = s; });
    var labels = {};
    data.groups.forEach(function (g) { labels[g[0]] = g[1]; });
    data.measures.forEach(function (m) { labels[m[1]] = m[0]; });
    function fill(select, options, wanted) {
      var keep = wanted !== undefined ? wanted : select.value;
      select.textContent = "";
      options.forEach(function (o) {
        var option = document.createElement("option");
        option.value = o[0];
        option.textContent = o[1];
        select.appendChild(option);
      });
      var values = options.map(function (o) { return o[0]; });
      select.value = values.indexOf(keep) >= 0 ? keep : (values.length ? values[0] : "");
    }
    function distinct(part, column) {
      var seen = {};
      part.forEach(function (r) { if (r[column] !== null && r[column] !== undefined) seen[r[column]] = 1; });
      return Object.keys(seen).length;
    }
    function has(part, column) {
      return part.some(function (r) { return r[column] !== null && r[column] !== undefined; });
    }
    function mine() {
      return rows.filter(function (r) { return r.chapter === menus.chapter.value; });
    }
    function shown() {
      return mine().filter(function (r) { return r.operation === menus.operation.value; });
    }
    function menusOf(chapterRows, wanted) {
      /* the operations measured most first, a writer's phases after its whole (total), the ceiling's own last */
      var count = {}, later = {}, phases = data.phases[menus.chapter.value] || [];
      chapterRows.forEach(function (r) {
        count[r.operation] = (count[r.operation] || 0) + 1;
        if (r.backend === "ceiling") later[r.operation] = 2;
        else if (phases.indexOf(r.operation) >= 0) later[r.operation] = 1;
      });
      var ops = Object.keys(count).sort(function (a, b) {
        return ((later[a] || 0) - (later[b] || 0)) || (count[b] - count[a]) || (a < b ? -1 : a > b ? 1 : 0);
      });
      fill(menus.operation, ops.map(function (o) { return [o, data.operationNames[o] || o]; }), wanted.operation);
      var part = shown();
      fill(menus.measure, data.measures.filter(function (m) { return has(part, m[1]); })
        .map(function (m) { return [m[1], m[0]]; }), wanted.measure);
      /* the columns this selection records, and always the round (a reader looks for drift); unless the reader
         chose them: along x the first column that varies, coloured per run where there are several */
      var groups = data.groups.filter(function (g) { return g[0] === "round" || has(part, g[0]); });
      var varying = data.firstGroups.filter(function (c) { return distinct(part, c) > 1; });
      var x = wanted.xcol || varying[0] || "backend";
      var colour = wanted.colour || (distinct(part, "run") > 1 ? "run" : varying.filter(function (c) {
        return c !== x; })[0] || "run");
      fill(menus.xcol, groups, x);
      fill(menus.colour, groups, colour);
    }
    var view = null, box = root.querySelector(".iobench-charts-view");
    function table(part) {
      var measure = menus.measure.value, out = root.querySelector(".iobench-charts-table");
      var cols = ["run", "backend", "dataset", "round", "iteration"];
      [menus.xcol.value, menus.colour.value].forEach(function (c) { if (cols.indexOf(c) < 0) cols.push(c); });
      cols.push(measure);
      var sorted = part.slice().sort(function (a, b) {
        var keys = ["run", "backend", "round", "iteration"];
        for (var k = 0; k < keys.length; k++) {
          var x = a[keys[k]], y = b[keys[k]];
          if (x === y) continue;
          if (x === null) return 1;
          if (y === null) return -1;
          return x < y ? -1 : 1;
        }
        return 0;
      });
      var t = document.createElement("table"), head = t.createTHead().insertRow(), body = t.createTBody();
      cols.forEach(function (c) {
        var th = document.createElement("th");
        th.textContent = labels[c] || c;
        head.appendChild(th);
      });
      sorted.slice(0, data.tableRows).forEach(function (r) {
        var tr = body.insertRow();
        cols.forEach(function (c) {
          var v = r[c];
          tr.insertCell().textContent = v === null || v === undefined ? "-"
            : typeof v === "number" && c === measure ? v.toPrecision(4) : String(v);
        });
      });
      var caption = t.createCaption();
      caption.textContent = "The rows drawn, by run, backend and round: the first " +
        Math.min(data.tableRows, part.length) + " of " + part.length + ".";
      out.textContent = "";
      out.appendChild(t);
    }
    function chosen() {
      var values = {heading: (labels[menus.measure.value] || "") + " of " + menus.operation.value + " against " +
        (labels[menus.xcol.value] || "") + ", a colour per " + (labels[menus.colour.value] || "")};
      Object.keys(menus).forEach(function (n) { values[n] = menus[n].value; });
      return values;
    }
    function redraw() {
      var part = shown().filter(function (r) { var v = r[menus.measure.value]; return v !== null; });
      var values = chosen();
      Object.keys(values).forEach(function (n) { view.signal(n, values[n]); });
      return view.runAsync().then(function () {
        var missing = has(part, menus.xcol.value) ? "" : " No row of this selection records a " +
          (labels[menus.xcol.value] || "") + " (runs measured before rounds have none).";
        status.textContent = part.length + " measured iterations drawn, each a point." + missing;
        box.setAttribute("data-drawn", String(part.length));
        table(part);
      });
    }
    fill(menus.chapter, data.chapters.map(function (c) { return [c[1], c[0]]; }), data.first.chapter);
    menusOf(mine(), data.first);
    var spec = data.spec;
    spec.datasets = {rows: rows};
    var first = chosen();  /* the first drawing already of the chosen rows (an empty one warns of its extent) */
    spec.params.forEach(function (p) { if (p.name in first) p.value = first[p.name]; });
    vegaEmbed(box, spec, {renderer: "svg", actions: false}).then(function (result) {
      view = result.view;
      menus.chapter.addEventListener("change", function () {  /* another chapter: its own first chart */
        menusOf(mine(), {measure: menus.measure.value});
        redraw();
      });
      menus.operation.addEventListener("change", function () {
        menusOf(mine(), {operation: menus.operation.value, xcol: menus.xcol.value, colour: menus.colour.value,
                         measure: menus.measure.value});
        redraw();
      });
      ["measure", "xcol", "colour"].forEach(function (n) { menus[n].addEventListener("change", redraw); });
      return redraw();
    }).catch(function (e) { status.textContent = "The chart could not be drawn: " + e; });
  }
  if (document.readyState === "complete") start(); else window.addEventListener("load", start);
})();
"""
