"""Reading a results directory that may come from anyone: regular files only, of bounded size, in bounded memory.

A ``run.json`` that is a link to ``/dev/zero``, a FIFO named like a record, or a small parquet file that decodes
into gigabytes is refused with one line naming the file and the limit, before it is read. A symbolic link is
never followed from inside a run directory (its target may lie anywhere). The limits are far above what
iobench writes: the largest run of the seed profile (writers) holds about 300,000 rows, 300 MB decoded.
A person's own data files are opened the same way (:func:`open_regular`, from
:mod:`benchmarks_lib.adapters.user_files`).

Text stays cheap to show whatever a record holds. It is read as dictionaries (each distinct value once), and each
dictionary is bounded before its values are repeated per row: a value longer than :data:`TEXT_MAX_CHARS` is cut
and ends in an ellipsis, format characters (a right-to-left override) are shown as escapes (``\u202e``), and a
run whose text column holds more than :data:`DISTINCT_MAX` distinct values (every summary groups by them: 8,090
backend names took minutes) is refused in one line naming the file, the column and the limit.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks_lib.base.specs import SpecError, format_bytes
from benchmarks_lib.base.terminal import FORMAT_RE2, visible_format

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

#: the most bytes read of one run.json (iobench writes a few kB)
RUN_JSON_MAX_BYTES = 2**20
#: the most bytes read of one record file (iobench writes at most a few MB)
RECORD_FILE_MAX_BYTES = 64 * 2**20
#: the most record files, rows and decoded bytes read of one run
RUN_MAX_FILES = 10_000
RUN_MAX_ROWS = 1_000_000
RUN_MAX_BYTES = 2**30
#: the most row groups and the most columns of one record file (iobench writes one row group of about 100 columns)
FILE_MAX_PARTS = 10_000
#: what a record column may hold: numbers, booleans, text, lists of integers (``to_frame``'s types)
COLUMN_KINDS = "numbers, booleans, text or lists of integers"
BATCH_ROWS = 65_536
#: the most characters of a text value read (iobench's names are far shorter); a longer value is cut to end in
#: ``…``. A failure's reason (iobench keeps 4,000 characters of one) and a run's parameters (a path) may be longer.
TEXT_MAX_CHARS = 256
LONG_TEXT_MAX_CHARS = 4096
#: the most distinct values of one text column in one run; a case's id and a failure's reason may differ on every
#: case (one record file each)
DISTINCT_MAX = 256
DISTINCT_MAX_OF = {"case_id": RUN_MAX_FILES, "reason": RUN_MAX_FILES}
ELLIPSIS = "\u2026"


class RecordError(SpecError):
    """A record file (run.json or a case's parquet) cannot be read; the message names the file."""


def _limit(nbytes: int) -> str:
    """A limit in binary units (1 MiB, 64 MiB, 1 GiB)."""
    return f"{nbytes / 2**30:g} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:g} MiB"


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, from its mode: "a FIFO", "a symbolic link", ..."""
    kinds = {stat.S_ISLNK: "a symbolic link", stat.S_ISDIR: "a directory", stat.S_ISFIFO: "a FIFO",
             stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device", stat.S_ISSOCK: "a socket"}
    return next((name for test, name in kinds.items() if test(mode)), "not a regular file")


def _refuse_unless_regular(path: Path, st: os.stat_result, what: str, limit: int | None, error: type[SpecError],
                           where: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{what} {str(path)!r} is {file_kind(st.st_mode)}; only regular files{where} are read")
    if limit is not None and st.st_size > limit:
        raise error(f"{what} {str(path)!r} is {format_bytes(st.st_size)}; at most {_limit(limit)} is read")


def open_regular(path: str | Path, what: str, limit: int | None = None, *, error: type[SpecError] = RecordError,
                 where: str = " inside the run directory", follow: bool = False) -> int:
    """A read-only descriptor of a regular file of at most ``limit`` bytes, or ``error`` naming it.

    Checked before opening (``lstat``, or ``stat`` where ``follow``: a FIFO or device is never opened, and a link
    only where ``follow``) and again on the open file (opened without blocking, and without following a link
    unless ``follow``, so a file swapped in between cannot hang or lead out).
    """
    path = Path(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        _refuse_unless_regular(path, os.stat(path) if follow else os.lstat(path), what, limit, error, where)
        fd = os.open(path, flags)
    except OSError as exc:
        why = "a symbolic link" if exc.errno == errno.ELOOP and not follow else exc.strerror
        raise error(f"{what} {str(path)!r} cannot be read ({why})") from None
    try:
        _refuse_unless_regular(path, os.fstat(fd), what, limit, error, where)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular_file(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes inside a run directory, or a RecordError naming it
    (:func:`open_regular`: a link, FIFO or device is never opened)."""
    with os.fdopen(open_regular(path, what, limit), "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise RecordError(f"{what} {str(path)!r} grew while read; at most {_limit(limit)} is read")
    return data


def listed_files(directory: Path, suffix: str, what: str, limit: int = RUN_MAX_FILES) -> list[Path]:
    """The files ``*<suffix>`` (not hidden) of a directory, sorted; none when it does not exist.

    A directory that is a link (or not a directory) is a RecordError: reading never leaves the run directory.
    """
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return []
    if not stat.S_ISDIR(st.st_mode):
        raise RecordError(f"{what} {str(directory)!r} is {file_kind(st.st_mode)}; only a directory inside the run "
                          "directory is read")
    names = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.endswith(suffix) and not entry.name.startswith("."):
                names.append(entry.name)
                if len(names) > limit:
                    raise RecordError(f"{what} {str(directory)!r} holds more than {limit:,} {suffix} files; "
                                      f"at most {limit:,} are read")
    return [directory / name for name in sorted(names)]


@dataclass
class ReadBudget:
    """What is left to read of one run's records: rows and decoded bytes (text counted as it will be decoded)."""

    rows: int = RUN_MAX_ROWS
    nbytes: int = RUN_MAX_BYTES
    #: text column -> the distinct values read so far (each bounded: at most ``DISTINCT_MAX`` of them)
    distinct: dict[str, set[str]] = field(default_factory=dict)

    def afford(self, path: Path, rows: int = 0, nbytes: int = 0) -> None:
        """A RecordError naming the file and the limit when ``rows`` or ``nbytes`` are more than is left."""
        if rows > self.rows:
            raise RecordError(f"record file {str(path)!r} brings its run to {RUN_MAX_ROWS - self.rows + rows:,} "
                              f"rows; at most {RUN_MAX_ROWS:,} rows of a run are read")
        if nbytes > self.nbytes:
            raise RecordError(f"record file {str(path)!r} brings its run to more than {_limit(RUN_MAX_BYTES)} "
                              f"decoded; at most {_limit(RUN_MAX_BYTES)} of a run is read")

    def spend(self, path: Path, rows: int = 0, nbytes: int = 0) -> None:
        """Take ``rows`` and ``nbytes`` of what is left (``afford`` first)."""
        self.afford(path, rows, nbytes)
        self.rows -= rows
        self.nbytes -= nbytes

    def see(self, path: Path, name: str, values: pa.Array) -> None:
        """Count the distinct ``values`` of text column ``name``: a RecordError naming the file, the column and the
        limit when its run would hold more than its limit (``DISTINCT_MAX``, ``DISTINCT_MAX_OF``)."""
        import pyarrow.compute as pc

        limit = DISTINCT_MAX_OF.get(name, DISTINCT_MAX)
        seen = self.distinct.setdefault(name, set())
        many = len(values) > limit and pc.count_distinct(values).as_py() > limit  # then never made Python strings
        if not many:
            seen.update(v for v in values.to_pylist() if v is not None)
        if many or len(seen) > limit:
            raise RecordError(f"record file {str(path)!r}: column {name!r} brings its run to more than {limit:,} "
                              f"distinct values; at most {limit:,} distinct values of a column are read")


def _allowed(kind: pa.DataType) -> bool:
    import pyarrow as pa

    t = pa.types
    if t.is_list(kind) or t.is_large_list(kind):
        return t.is_integer(kind.value_type) or t.is_null(kind.value_type)
    if t.is_dictionary(kind):
        return t.is_string(kind.value_type) or t.is_large_string(kind.value_type)
    return any(test(kind) for test in (t.is_null, t.is_boolean, t.is_integer, t.is_floating, t.is_string,
                                       t.is_large_string))


def _decoded_bytes(batch: pa.RecordBatch) -> int:
    """A batch's size in memory once its text columns (read as dictionaries) are decoded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for column in batch.columns:
        if pa.types.is_dictionary(column.type):
            lengths = pc.take(pc.binary_length(column.dictionary), column.indices)
            total += int(pc.sum(lengths).as_py() or 0) + 8 * len(column)
        else:
            total += column.nbytes
    return total


def _check_footer(path: Path, parquet: pq.ParquetFile, names: list[str], budget: ReadBudget) -> None:
    """Rows, parts, page bytes after decompression and column types, from the footer alone; the rows are spent."""
    footer, schema = parquet.metadata, parquet.schema_arrow
    if max(footer.num_row_groups, footer.num_columns) > FILE_MAX_PARTS:
        raise RecordError(f"record file {str(path)!r} has {footer.num_row_groups:,} row groups of "
                          f"{footer.num_columns:,} columns; at most {FILE_MAX_PARTS:,} of each are read")
    budget.spend(path, rows=footer.num_rows)
    # a few MB of zstd must not inflate to gigabytes of pages before a batch is counted
    budget.afford(path, nbytes=sum(footer.row_group(i).total_byte_size for i in range(footer.num_row_groups)))
    for name in names:
        if not _allowed(schema.field(name).type):
            raise RecordError(f"record file {str(path)!r}: column {name!r} holds {schema.field(name).type}; "
                              f"a record holds {COLUMN_KINDS}")


def bounded_text(value: str, limit: int = TEXT_MAX_CHARS, *, escape: bool = True) -> str:
    """``value`` with its format characters escaped (unless not ``escape``) and cut to at most ``limit`` characters
    (``…`` last)."""
    value = visible_format(value) if escape else value
    return value if len(value) <= limit else value[:limit - 1] + ELLIPSIS


def bounded_json(value: object, limit: int = TEXT_MAX_CHARS, *, escape: bool = True) -> object:
    """A value read from JSON with every string in it (keys too) bounded as :func:`bounded_text` bounds one."""
    if isinstance(value, str):
        return bounded_text(value, limit, escape=escape)
    if isinstance(value, list):
        return [bounded_json(v, limit, escape=escape) for v in value]
    if isinstance(value, dict):
        return {bounded_text(k, limit, escape=escape): bounded_json(v, limit, escape=escape) for k, v in value.items()}
    return value


def _bounded(values: pa.Array, limit: int) -> pa.Array:
    """Text values bounded as :func:`bounded_text` bounds one: in Arrow, or in Python where a format character is
    to be escaped (rare: then the dictionary's values are made Python strings)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pc.any(pc.match_substring_regex(values, FORMAT_RE2)).as_py():
        return pa.array([v if v is None else bounded_text(v, limit) for v in values.to_pylist()], values.type)
    too_long = pc.greater(pc.utf8_length(values), limit)
    if not pc.any(too_long).as_py():
        return values
    return pc.if_else(too_long, pc.binary_join_element_wise(pc.utf8_slice_codeunits(values, 0, limit - 1), ELLIPSIS,
                                                            ""), values)


def _bounded_text(path: Path, batch: pa.RecordBatch, budget: ReadBudget) -> pa.RecordBatch:
    """``batch`` with each text column's dictionary bounded (``_bounded``) and its distinct values counted."""
    import pyarrow as pa

    columns = []
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        if pa.types.is_dictionary(column.type):
            limit = LONG_TEXT_MAX_CHARS if name == "reason" else TEXT_MAX_CHARS
            dictionary = _bounded(column.dictionary, limit)
            budget.see(path, name, dictionary)
            column = pa.DictionaryArray.from_arrays(column.indices, dictionary)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def read_parquet_bounded(path: Path, budget: ReadBudget, columns: list[str] | None = None) -> pa.Table:
    """The columns (all by default) of a parquet record file, read within ``budget``.

    The footer is checked first (``_check_footer``); text is read as dictionaries and counted at its decoded
    size before it is decoded, so no file decodes past the budget. Each dictionary (a column's distinct values)
    is bounded (``_bounded_text``) before it is decoded into a value per row.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = read_regular_file(path, RECORD_FILE_MAX_BYTES, "record file")
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        schema = parquet.schema_arrow
        names = [n for n in (columns or schema.names) if n in schema.names]
        _check_footer(path, parquet, names, budget)
        text = [n for n in names if pa.types.is_string(schema.field(n).type) or
                pa.types.is_large_string(schema.field(n).type)]
        reader = pq.ParquetFile(pa.BufferReader(data), read_dictionary=text, metadata=parquet.metadata)
        batches = []
        for batch in reader.iter_batches(batch_size=BATCH_ROWS, columns=names, use_pandas_metadata=False):
            budget.spend(path, nbytes=_decoded_bytes(batch))
            batches.append(_bounded_text(path, batch, budget))
        table = pa.Table.from_batches(batches) if batches else schema.empty_table().select(names)
        decoded = [table.column(n).cast(schema.field(n).type) if n in text else table.column(n) for n in names]
        return pa.Table.from_arrays(decoded, schema=pa.schema([schema.field(n) for n in names], schema.metadata))
    except RecordError:
        raise
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise RecordError(f"record file {str(path)!r} cannot be read ({type(exc).__name__}); "
                          "it is damaged or not a parquet file") from None


# -- a person's own files (a dataset, a mesh): regular files only, never opened blocking --------------------


class UserFileError(SpecError):
    """A person's file that is not read: a FIFO, a device, a link out of its place, too large; the message names it."""


#: filesystems whose entries are the kernel's, not data: reading one may block for ever (a trace pipe), never end,
#: or read a process's memory (``/proc/self/mem``), though it says it is a regular file
PSEUDO_FILESYSTEMS = frozenset({"proc", "sysfs", "tracefs", "debugfs", "securityfs", "devtmpfs", "devpts", "cgroup",
                                "cgroup2", "configfs", "pstore", "bpf", "efivarfs", "fusectl", "mqueue", "hugetlbfs",
                                "binfmt_misc", "rpc_pipefs", "nsfs", "autofs"})


def mount_type(path: Path) -> str:
    """The type of the filesystem holding ``path`` (links followed), from ``/proc/self/mounts``; '' unknown."""
    real, best, kind = os.path.realpath(path), "", ""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) < 3:
                    continue
                mount = fields[1].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
                inside = real == mount or real.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, kind = mount, fields[2]
    except OSError:
        return ""
    return kind


def person_stat(path: Path, what: str) -> os.stat_result:
    """``os.stat`` of a path a person gave (links followed), refused in one line where it does not exist, cannot be
    read, or lies on the kernel's own filesystems (``PSEUDO_FILESYSTEMS``)."""
    try:
        st = os.stat(path)
        if (kind := mount_type(path)) in PSEUDO_FILESYSTEMS:
            raise UserFileError(f"{what} {str(path)!r} lies on {kind}, the kernel's filesystem, not data; only files "
                                "on a disk's (or memory's) filesystem are read")
        return st
    except FileNotFoundError:
        raise UserFileError(f"{what} {str(path)!r} does not exist") from None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise UserFileError(f"{what} {str(path)[:80]!r}... is a name of {len(str(path)):,} characters, too long "
                                "for the system") from None
        raise UserFileError(f"{what} {str(path)!r} cannot be read ({exc.strerror})") from None


def source_kind(path: Path) -> str:
    """``"directory"`` or ``"file"`` for the path a person gave (a link to their data is followed); anything else
    (a FIFO, a device, a socket) is refused before it is opened."""
    mode = person_stat(path, "dataset file").st_mode
    if stat.S_ISDIR(mode):
        return "directory"
    if not stat.S_ISREG(mode):
        raise UserFileError(f"dataset file {str(path)!r} is {file_kind(mode)}; only regular files (or a Zarr "
                            "store's directory) are read")
    return "file"


def regular_file(path: Path, what: str) -> None:
    """A person's file that must be a regular file (a mesh): anything else refused before it is opened."""
    mode = person_stat(path, what).st_mode
    if not stat.S_ISREG(mode):
        raise UserFileError(f"{what} {str(path)!r} is {file_kind(mode)}; only regular files are read")


def read_head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of a person's regular file, opened without blocking."""
    fd = open_regular(path, "dataset file", error=UserFileError, where="", follow=True)
    try:
        return os.pread(fd, size, 0)
    finally:
        os.close(fd)
