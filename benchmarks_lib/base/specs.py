"""Parameter models and their validation.

Every user-facing value (dims, dtype, codec, sizes, profile, backend names) is parsed here, at the boundary,
into a small immutable object. A bad value raises :class:`SpecError` with one line that names the value and what
is allowed, before any work starts.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

PROFILES = ("quick", "standard", "seed")
DTYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64")
BLOSC_CNAMES = ("lz4", "lz4hc", "zstd", "zlib", "blosclz")
BLOSC_SHUFFLES = ("noshuffle", "shuffle", "bitshuffle")
CODEC_FAMILIES = ("none", "lz4", "zstd", "gzip", "blosc")
#: zstd levels (lowest, highest): negative levels are zstd's fast modes
ZSTD_LEVELS = (-131072, 22)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SpecError(ValueError):
    """A user-supplied value is invalid; the message is one line a user can act on."""

    def _render_traceback_(self) -> list[str]:  # IPython (a notebook, papermill): one line, not a traceback
        return [f"{type(self).__name__}: {self}"]


#: the deepest nesting and the longest text of a JSON value given on a command line or in a parameters cell: enough
#: for any parameter, far below what would exhaust the parser's recursion
MAX_JSON_DEPTH, MAX_JSON_CHARS = 32, 1_000_000


def ascii_digits(text: str) -> str:
    """``text`` when it is ASCII: Python reads ``'٣'`` (an Arabic-Indic three) and ``'１'`` as numbers, which a
    reader typing digits never meant; ValueError otherwise."""
    if not text.isascii():
        raise ValueError(f"{text!r} is not written in ASCII digits")
    return text


def bounded_json(text: str, what: str):
    """``json.loads`` of a value from a person (a ``--param``, a notebook's parameter), its size and nesting
    bounded first (``MAX_JSON_CHARS``, ``MAX_JSON_DEPTH``): a SpecError naming the limit, never a RecursionError.
    ValueError (``json.JSONDecodeError``) where it is not JSON."""
    if len(text) > MAX_JSON_CHARS:
        raise SpecError(f"{what}: a JSON value of {len(text):,} characters; at most {MAX_JSON_CHARS:,} are read")
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    if deepest > MAX_JSON_DEPTH:
        raise SpecError(f"{what}: a JSON value nested {deepest} levels deep; at most {MAX_JSON_DEPTH} are read")
    return json.loads(text)


def _int(text: str, what: str, *, minimum: int = 1) -> int:
    try:
        value = int(ascii_digits(text))
    except ValueError:
        raise SpecError(f"{what} {text!r} is not an integer") from None
    if value < minimum:
        raise SpecError(f"{what} {value} must be >= {minimum}")
    return value


@dataclass(frozen=True)
class Dim:
    name: str
    size: int
    chunk: int
    shard: int | None = None


@dataclass(frozen=True)
class DimsSpec:
    """Shape, chunking and sharding, parsed from ``name:size[:chunk[:shard]],...``."""

    dims: tuple[Dim, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dims)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d.size for d in self.dims)

    @property
    def chunks(self) -> tuple[int, ...]:
        return tuple(d.chunk for d in self.dims)

    @property
    def shards(self) -> tuple[int, ...] | None:
        if all(d.shard is None for d in self.dims):
            return None
        return tuple(d.shard if d.shard is not None else d.chunk for d in self.dims)

    def with_size(self, axis: int, size: int) -> DimsSpec:
        """A copy with one dimension resized (chunk and shard clipped to it, the shard whole chunks)."""
        dims, d = list(self.dims), self.dims[axis]
        chunk = min(d.chunk, size)
        shard = None if d.shard is None else max(chunk, min(d.shard, size) // chunk * chunk)
        dims[axis] = Dim(d.name, size, chunk, shard)
        return DimsSpec(tuple(dims))

    def __str__(self) -> str:
        parts = []
        for d in self.dims:
            text = f"{d.name}:{d.size}:{d.chunk}"
            parts.append(text + (f":{d.shard}" if d.shard is not None else ""))
        return ",".join(parts)


#: the longest side and the most elements an array spec may name (as ``advise --shape``): far beyond any disk, within
#: what every library and a record's 64-bit integers hold
MAX_EXTENT, MAX_ELEMENTS = 1 << 40, 1 << 50


def parse_dims(text: str, what: str = "dims") -> DimsSpec:
    """Parse ``t:64,y:1080:540,x:1920`` (``name:size[:chunk[:shard]]``, ome-writers' syntax)."""
    allowed = "expected comma-separated name:size[:chunk[:shard]], e.g. t:64,y:1080:540,x:1920"
    if not isinstance(text, str):
        raise SpecError(f"{what} {text!r} is not text ({type(text).__name__}); {allowed}")
    if not text.strip():
        raise SpecError(f"{what} {text!r} is empty; {allowed}")
    dims: list[Dim] = []
    for item in text.split(","):
        parts = item.strip().split(":")
        if not 2 <= len(parts) <= 4 or not _NAME.match(parts[0]):
            raise SpecError(f"{what} item {item!r} is malformed; {allowed}")
        name = parts[0]
        if name in (d.name for d in dims):
            raise SpecError(f"{what} name {name!r} is repeated; each dimension needs its own name")
        size = _int(parts[1], f"size of {name!r}")
        if size > MAX_EXTENT:
            raise SpecError(f"size {size} of {name!r} is too large; allowed 1..{MAX_EXTENT}")
        chunk = _int(parts[2], f"chunk of {name!r}") if len(parts) > 2 and parts[2] else size
        if chunk > size:
            raise SpecError(f"chunk {chunk} of {name!r} exceeds its size {size}")
        shard = _int(parts[3], f"shard of {name!r}") if len(parts) > 3 else None
        if shard is not None and shard % chunk:
            raise SpecError(f"shard {shard} of {name!r} is not a multiple of its chunk {chunk}")
        dims.append(Dim(name, size, chunk, shard))
    if len(dims) > 8:
        raise SpecError(f"{what} has {len(dims)} dimensions; at most 8 are allowed")
    if math.prod(d.size for d in dims) > MAX_ELEMENTS:
        raise SpecError(f"{what} {text!r} holds {math.prod(d.size for d in dims):,} elements; at most "
                        f"{MAX_ELEMENTS:,} (2^50) are allowed")
    return DimsSpec(tuple(dims))


def parse_dtype(text: str) -> np.dtype:
    if text not in DTYPES:
        raise SpecError(f"dtype {text!r} is not supported; allowed: {', '.join(DTYPES)}")
    return np.dtype(text)


@dataclass(frozen=True)
class CodecSpec:
    """A compression choice: ``none``, ``lz4``, ``zstd[:level]``, ``gzip[:level]``, ``blosc-<cname>[:lvl[:shuf]]``."""

    family: str
    level: int | None = None
    cname: str | None = None
    shuffle: str | None = None

    def __str__(self) -> str:
        if self.family == "blosc":
            return f"blosc-{self.cname}:{self.level}:{self.shuffle}"
        if self.level is None:
            return self.family
        return f"{self.family}:{self.level}"

    @property
    def compressed(self) -> bool:
        return self.family != "none"


def parse_codec(text: str) -> CodecSpec:
    allowed = (f"allowed: none, lz4, zstd[:level], gzip[:level], blosc-{{{'|'.join(BLOSC_CNAMES)}}}"
               f"[:clevel[:{'|'.join(BLOSC_SHUFFLES)}]]")
    if not isinstance(text, str):
        raise SpecError(f"codec {text!r} is not a codec name ({type(text).__name__}); {allowed}")
    if not text:
        raise SpecError(f"codec {text!r} is empty; {allowed}")
    head, *rest = text.split(":")
    if head == "none" and not rest:
        return CodecSpec("none")
    if head == "lz4" and not rest:
        return CodecSpec("lz4")
    if head == "zstd" and len(rest) <= 1:
        level = _int(rest[0], "zstd level", minimum=-131072) if rest else 3
        if level > 22:
            raise SpecError(f"zstd level {level} is out of range; allowed -131072..22")
        return CodecSpec("zstd", level)
    if head == "gzip" and len(rest) <= 1:
        level = _int(rest[0], "gzip level", minimum=0) if rest else 6
        if level > 9:
            raise SpecError(f"gzip level {level} is out of range; allowed 0..9")
        return CodecSpec("gzip", level)
    if head.startswith("blosc-") and len(rest) <= 2:
        cname = head[len("blosc-"):]
        if cname not in BLOSC_CNAMES:
            raise SpecError(f"blosc compressor {cname!r} is unknown; allowed: {', '.join(BLOSC_CNAMES)}")
        level = _int(rest[0], "blosc clevel", minimum=0) if rest else 5
        if level > 9:
            raise SpecError(f"blosc clevel {level} is out of range; allowed 0..9")
        shuffle = rest[1] if len(rest) > 1 else "shuffle"
        if shuffle not in BLOSC_SHUFFLES:
            raise SpecError(f"blosc shuffle {shuffle!r} is unknown; allowed: {', '.join(BLOSC_SHUFFLES)}")
        return CodecSpec("blosc", level, cname, shuffle)
    raise SpecError(f"codec {text!r} is not understood; {allowed}")


def parse_profile(text: str) -> str:
    if not isinstance(text, str) or text not in PROFILES:
        raise SpecError(f"profile {text!r} is unknown; allowed: {', '.join(PROFILES)}")
    return text


def parse_count(value: int | str, what: str, *, minimum: int = 1, maximum: int = 1_000_000) -> int:
    """An integer option such as iterations or warm-ups (an int, or its digits as text), range-checked."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise SpecError(f"{what} {value!r} is not an integer; allowed {minimum}..{maximum}")
    try:
        number = int(ascii_digits(value.strip()) if isinstance(value, str) else value)
    except ValueError:
        raise SpecError(f"{what} {value!r} is not an integer; allowed {minimum}..{maximum}") from None
    if not minimum <= number <= maximum:
        raise SpecError(f"{what} {number} is out of range; allowed {minimum}..{maximum}")
    return number


def parse_bool(value: object, what: str) -> bool:
    """A flag: true/false (JSON booleans only, so "no" is not silently true)."""
    if not isinstance(value, bool):
        raise SpecError(f"{what} {value!r} must be true or false")
    return value


def parse_seconds(value: object, what: str, *, minimum: float = 0.001, maximum: float = 7 * 86400) -> float:
    """A time in seconds: a finite number (or its digits as text) in range."""
    return parse_number(value, what, minimum=minimum, maximum=maximum, unit="seconds")


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600}


def parse_duration(value: object, what: str, *, minimum: float = 1, maximum: float = 7 * 86400) -> float:
    """A duration in seconds: a number of seconds, or text with a unit, ``90``, ``120s``, ``2m``, ``1.5h``."""
    number = value
    if isinstance(value, str):
        text = value.strip().lower()
        unit = text[-1:] if text[-1:] in _DURATION_UNITS else "s"
        digits = text[:-1] if text[-1:] in _DURATION_UNITS else text
        try:
            number = float(ascii_digits(digits)) * _DURATION_UNITS[unit]
        except ValueError:
            raise SpecError(f"{what} {value!r} is not a duration; give seconds or a number with s, m or h "
                            "(e.g. 120s, 2m, 1.5h)") from None
    return parse_number(number, what, minimum=minimum, maximum=maximum, unit="seconds")


def parse_number(value: object, what: str, *, minimum: float, maximum: float, unit: str = "") -> float:
    """A finite number (or its digits as text) in range, e.g. a latency in ms; bools are refused."""
    allowed = f"allowed {minimum:g}..{maximum:g}{' ' + unit if unit else ''}"
    try:
        number = (float(ascii_digits(value) if isinstance(value, str) else value)
                  if isinstance(value, int | float | str) and not isinstance(value, bool) else None)
    except ValueError:
        number = None
    if number is None or not math.isfinite(number):
        raise SpecError(f"{what} {value!r} is not a number{' of ' + unit if unit else ''}; {allowed}")
    if not minimum <= number <= maximum:
        raise SpecError(f"{what} {number:g} is out of range; {allowed}")
    return number


_FLAGS_ON = (True, 1, "1", "true", "on", "yes")
_FLAGS_OFF = (False, 0, "0", "false", "off", "no")


def parse_flags(value: object, what: str) -> list[bool]:
    """Settings to compare, each off or on: a list (or a comma-separated string) of JSON booleans, 0/1 or
    the words true/false, on/off, yes/no in any case; duplicates dropped. Anything else is refused, never guessed."""
    out = []
    for item in parse_items(value, what, "[false, true]"):
        item = item.strip().lower() if isinstance(item, str) else item  # "False,True": Python's spelling
        if item in _FLAGS_ON:
            out.append(True)
        elif item in _FLAGS_OFF:
            out.append(False)
        else:
            raise SpecError(f"{what} value {item!r} is not a flag; allowed: 0/1, true/false, on/off")
    return list(dict.fromkeys(out))


def parse_items(value: object, what: str, example: str = "[...]") -> list:
    """A list parameter: a list of scalars, or one string: comma-separated (``"raw,tensorstore"``; ``"lz4"`` is
    one item) or a JSON list (``'["raw", "tensorstore"]'``), the two forms ``papermill -p`` passes.

    Anything else (a number, a mapping, a nested list, malformed JSON) is refused: never iterated or guessed at.
    """
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = bounded_json(value, what)
        except json.JSONDecodeError as exc:
            raise SpecError(f"{what} {value!r} is not a JSON list ({exc.msg}); e.g. {what} = {example} "
                            "or a comma-separated string") from None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list | tuple):
        for item in value:
            if not isinstance(item, str | int | float):
                raise SpecError(f"{what} item {item!r} is not a string or number; e.g. {what} = {example}")
        return list(value)
    raise SpecError(f"{what} {value!r} must be a list or a comma-separated string, e.g. {example}")


def parse_names(value: object, what: str, allowed: Iterable[str] | None = None, *,
                empty_ok: bool = False) -> list[str]:
    """A list of names: a JSON list of strings, or one string ("a" or "a,b"); each one of ``allowed``
    when given; duplicates dropped. ``None`` is an empty list (refused unless ``empty_ok``)."""
    allowed = None if allowed is None else tuple(allowed)
    hint = f"; allowed: {', '.join(allowed)}" if allowed else ""
    items = [] if value is None else parse_items(value, what, f'["{allowed[0]}"]' if allowed else '["name"]')
    if not items and not empty_ok:
        raise SpecError(f"{what} is empty{hint}")
    for item in items:
        if not isinstance(item, str):
            raise SpecError(f"{what} item {item!r} is not a name{hint}")
        if allowed is not None and item not in allowed:
            raise SpecError(f"{what} {item!r} is unknown{hint}")
    return list(dict.fromkeys(v.strip() for v in items))


def parse_choice(value: object, what: str, allowed: Iterable[str]) -> str:
    """One name out of ``allowed`` (a string, not a list)."""
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise SpecError(f"{what} {value!r} is unknown; allowed one of: {', '.join(allowed)}")
    return value


def parse_ints(value: object, what: str, *, minimum: int, maximum: int) -> list[int]:
    """Integers from a list, a comma-separated string or one integer (a one-item list)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    items = parse_items(value, what, "[1, 3, 9]")
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int | str) or (
                isinstance(item, str) and not item.strip().lstrip("+-").isdigit()):
            raise SpecError(f"{what} {item!r} is not an integer; allowed {minimum}..{maximum}")
    return list(parse_int_list(items, what, minimum=minimum, maximum=maximum))


MAX_THREADS = 4096  # the most threads a setting may ask for (more than the cores: oversubscription)


def parse_threads(value: object, what: str = "threads", *, one: bool = False) -> list[int]:
    """Thread counts, each 1..``MAX_THREADS``, sorted without duplicates (``parse_ints``); ``one``: one integer."""
    counts = sorted(set(parse_ints(value, what, minimum=1, maximum=MAX_THREADS)))
    if one and (len(counts) != 1 or isinstance(value, list | tuple)):
        raise SpecError(f"{what} {value!r} must be one integer, 1..{MAX_THREADS}")
    return counts


def parse_codecs(value: object, what: str = "codecs") -> list[str]:
    """Codec strings (``parse_codec`` syntax): a list, or one string of comma-separated codecs."""
    items = [] if value is None else parse_items(value, what, '["zstd:3", "lz4"]')
    for item in items:
        if not isinstance(item, str):
            raise SpecError(f"{what} item {item!r} is not a codec string, e.g. zstd:3, lz4, blosc-lz4:5:shuffle")
    return list(dict.fromkeys(str(parse_codec(c)) for c in items))


_RUN_ID = re.compile(r"^[A-Za-z0-9._-]{1,100}$")  # see parse_run_id


def parse_run_id(value: object) -> str:
    """A run id: 1-100 letters, digits, '-', '_' or '.' (not '.' or '..'); it names a directory."""
    if not isinstance(value, str) or not _RUN_ID.match(value) or value in (".", ".."):
        raise SpecError(f"run id {value!r} is not allowed; use 1-100 letters, digits, '-', '_' or '.'")
    return value


def shape_text(shape: object, sep: str = "x", missing: str | None = None) -> str:
    """``64x128x128``: a shape (a list, a tuple, a numpy array) as text, its axes joined by ``sep``. What is not a
    shape (None, text from a record) reads as ``missing``, or as itself when ``missing`` is None; so does an empty
    shape where ``missing`` is given."""
    if isinstance(shape, list | tuple) or (hasattr(shape, "tolist") and not isinstance(shape, str)):
        values = [str(int(v)) for v in list(shape)]
        return sep.join(values) if values or missing is None else missing
    return str(shape) if missing is None else missing


def format_bytes(n: float) -> str:
    """Bytes in the largest decimal unit that keeps a readable number (e.g. 52.4 MB, 1.20 GB)."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def parse_int_list(values, what: str, *, minimum: int = 1, maximum: int | None = None) -> tuple[int, ...]:
    """A non-empty list of integers, e.g. thread counts or compression levels (one integer = a list of one)."""
    if isinstance(values, str):
        values = parse_items(values, what, "[1, 2, 4]")
    elif isinstance(values, int) and not isinstance(values, bool):
        values = [values]
    if not isinstance(values, list | tuple):
        raise SpecError(f"{what} {values!r} is not a list of integers")
    if not values:
        raise SpecError(f"{what} is empty; give at least one integer")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise SpecError(f"{what} value {v!r} is not an integer")
        n = _int(str(v).strip(), what, minimum=minimum)
        if maximum is not None and n > maximum:
            raise SpecError(f"{what} value {n} is too large; allowed {minimum}..{maximum}")
        out.append(n)
    return tuple(out)


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGT]i?B|B)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size(text: str | int) -> int:
    """A byte size such as ``64MB``, ``1.5GiB`` or ``1000``."""
    m = _SIZE.match(text) if isinstance(text, str) else None
    if isinstance(text, bool) or not (isinstance(text, int) or m):
        raise SpecError(f"size {text!r} is not understood; use e.g. 64MB, 1.5GiB or 1000 (bytes)")
    if isinstance(text, int):
        if text <= 0:
            raise SpecError(f"size {text} must be positive")
        return text
    number = float(m.group(1)) * _UNITS[(m.group(2) or "B").lower()]
    if number < 1 or not math.isfinite(number) or number > 2**60:
        raise SpecError(f"size {text!r} is out of range; allowed 1 byte to 1 EiB")
    return int(number)


@dataclass(frozen=True)
class ArraySpec:
    """Everything a writer needs to create an array store."""

    dims: DimsSpec
    dtype: str
    codec: CodecSpec = field(default_factory=lambda: CodecSpec("none"))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.dims.shape

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize
