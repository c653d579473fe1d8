"""From the arguments of ``roadcheck replay`` to the spec and the trajectory files to read.

A TRAJECTORY argument may be a file, ``-`` (standard input), a directory (its
trajectory files, sorted by name; with ``recursive`` also those below), or a
glob that reached roadcheck unexpanded (quoted, or from a shell that does not
expand globs). A file named twice, under any spelling, is read once. Nothing
here prints: the notes are returned for the caller to show.
"""

from __future__ import annotations

import os
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from os import PathLike
from stat import S_ISDIR
from typing import TYPE_CHECKING, NamedTuple, TypeVar, cast, overload

from roadcheck.errors import InputError, SpecError, TraceError

if TYPE_CHECKING:
    from roadcheck.conformance.spec import Spec

__all__ = [
    "STDIN",
    "STDIN_ID",
    "TRAJECTORY_SUFFIXES",
    "Inputs",
    "PathList",
    "expand_inputs",
    "is_trajectory_name",
    "load_replay_spec",
    "looks_like_trajectory",
]

_T = TypeVar("_T")

#: The argument that means standard input, and the id of what it holds.
STDIN = "-"
STDIN_ID = "<stdin>"
#: The names a directory's trajectory files end with (each optionally + ``.gz`` / ``.zst``).
TRAJECTORY_SUFFIXES = (".jsonl", ".ndjson", ".json")
#: Whole documents read as they are: Inspect's .eval logs (a zip archive, never compressed
#: again) and SWE-agent's .traj trajectories.
_ARCHIVES = (".eval", ".traj")
_COMPRESSED = (".gz", ".zst")
_GLOB_CHARS = frozenset("*?[")

SWAPPED = ("this looks like a trajectory, not a spec: the spec comes first "
           "(roadcheck replay SPEC TRAJECTORY...)")


#: How file names are encoded: what os.fsencode and os.fsdecode use.
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


class PathList(Sequence[str]):
    """File paths in order, held as one byte string and the offsets into it.

    A batch of 50,000 files costs a few bytes per path beyond the path itself,
    where a list of ``str`` holds an object of some 50 bytes more for each.
    """

    __slots__ = ("_blob", "_ends")

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._blob = bytearray()
        self._ends = array("Q")
        for path in paths:
            self.append(path)

    def append(self, path: str) -> None:
        """Add ``path`` at the end."""
        blob = self._blob
        blob += path.encode(_FS_ENCODING, _FS_ERRORS)  # os.fsencode, without its call
        blob += b"\0"  # no path holds a NUL: the separator keeps lookups exact
        self._ends.append(len(blob))

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            if start >= stop:
                return []
            # one decode for the run (a NUL ends any broken UTF-8 sequence, so the
            # surrogate escapes are those of each path decoded alone)
            ends = self._ends
            low = ends[start - 1] if start else 0
            return os.fsdecode(bytes(self._blob[low:ends[stop - 1] - 1])).split("\0")
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self._ends):
            raise IndexError("path index out of range")
        start = self._ends[index - 1] if index else 0
        return os.fsdecode(bytes(self._blob[start:self._ends[index] - 1]))

    def __iter__(self) -> Iterator[str]:
        blob, start = self._blob, 0
        for end in self._ends:
            yield blob[start:end - 1].decode(_FS_ENCODING, _FS_ERRORS)  # os.fsdecode's
            start = end

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str):
            return False
        try:
            name = os.fsencode(path) + b"\0"
        except (UnicodeError, ValueError):
            return False
        return self._blob.startswith(name) or (b"\0" + name) in self._blob

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PathList):
            return self._blob == other._blob
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PathList({list(self)!r})"


class Inputs(NamedTuple):
    """The files to read, in order, and what was noticed on the way (one line each)."""

    paths: PathList
    notes: tuple[str, ...] = ()


def is_trajectory_name(name: str) -> bool:
    """True for ``*.jsonl``, ``*.ndjson`` and ``*.json``, each optionally compressed,
    and for ``*.eval`` archives and ``*.traj`` trajectories.

    >>> [is_trajectory_name(n) for n in ("a.jsonl.gz", "b.eval", "b.eval.gz", "c.traj", "d.txt")]
    [True, True, False, True, False]
    """
    if name.endswith(_ARCHIVES):
        return True
    for suffix in _COMPRESSED:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name.endswith(TRAJECTORY_SUFFIXES)


def _directory(path: str, recursive: bool) -> Iterator[str]:
    """The trajectory files in ``path``, hidden files and directories skipped, sorted.

    Raises at once for a directory that cannot be read or holds no trajectory file;
    the paths are then joined one at a time, as they are taken.
    """
    found: list[str] | list[tuple[str, ...]]
    try:
        found = _list(path) if not recursive else _walk(path)
    except OSError as exc:
        raise InputError(f"cannot read directory: {exc.strerror or exc}",
                         path=exc.filename if isinstance(exc.filename, str) else path) from None
    if not found:
        what = ("no trajectory files in this directory or below" if recursive else
                "no trajectory files in this directory")
        hint = "" if recursive else "; -r reads subdirectories"
        raise InputError(f"{what} (*.jsonl, *.ndjson, *.json, optionally .gz or .zst, "
                         f"*.eval and *.traj{hint})",
                         path=path)
    found.sort(reverse=True)  # taken from the end: each name is freed once its path is out
    if not recursive:
        return _joined(path, cast("list[str]", found))
    return (os.path.join(path, *parts) for parts in _taken(cast("list[tuple[str, ...]]", found)))


def _joined(path: str, names: list[str]) -> Iterator[str]:
    """``os.path.join(path, name)`` for each name (never empty, never holding a
    separator), taken from the end of ``names``."""
    prefix = os.path.join(path, "")
    take = names.pop
    while names:
        yield prefix + take()


def _taken(items: list[_T]) -> Iterator[_T]:
    """The items of a list from its end, each dropped from the list as it is given."""
    while items:
        yield items.pop()


def _raise(exc: OSError) -> None:
    raise exc


def _list(path: str) -> list[str]:
    """The names of the trajectory files directly in ``path`` (a name sorts as its path)."""
    with os.scandir(path) as entries:
        return [e.name for e in entries
                if not e.name.startswith(".") and is_trajectory_name(e.name) and e.is_file()]


def _walk(path: str) -> list[tuple[str, ...]]:
    """The trajectory files in ``path`` and below, as the parts of their relative paths."""
    found: list[tuple[str, ...]] = []
    for top, dirs, files in os.walk(path, onerror=_raise):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel = os.path.relpath(top, path)
        parts = () if rel == os.curdir else tuple(rel.split(os.sep))
        found.extend((*parts, f) for f in files
                     if not f.startswith(".") and is_trajectory_name(f)
                     and os.path.isfile(os.path.join(top, f)))
    return found


def _expand(arg: str, recursive: bool
            ) -> Iterator[tuple[Iterable[str], bool, tuple[int, int] | None]]:
    """``(paths, expanded, identity)`` for one argument, a group at a time (a directory's
    files are one group); ``expanded`` when roadcheck chose the files; ``identity``: the
    file's (device, inode) where the one stat of a plain file argument gave it."""
    if arg == STDIN:
        yield (arg,), False, None
        return
    try:
        st: os.stat_result | None = os.stat(arg)
    except (OSError, ValueError):
        st = None
    if st is not None and S_ISDIR(st.st_mode):
        yield _directory(arg, recursive), True, None
    elif st is not None:
        yield (arg,), False, (st.st_dev, st.st_ino)
    elif os.path.lexists(arg) or not _GLOB_CHARS.intersection(arg):
        yield (arg,), False, None  # a missing plain file is judged ERROR, naming it
    else:
        import glob

        matches = sorted(glob.glob(arg, recursive=True))
        if not matches:
            raise InputError(f"no file matches {arg!r}")
        for match in matches:
            if os.path.isdir(match):
                yield _directory(match, recursive), True, None
            else:
                yield (match,), True, None


def _identity(path: str) -> tuple[int, int] | str:
    """What makes two spellings one file: its device and inode (links, ``./``, ``..``
    resolved by the OS at the cost of one stat), else its normalised absolute path."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return os.path.normcase(os.path.abspath(path))
    return (st.st_dev, st.st_ino)


class _Seen:
    """The identities met so far, about 20 bytes a file where a set of tuples costs some
    150: each (device, inode) once, in arrays in the order met, and an open-addressing
    table of their positions."""

    __slots__ = ("devs", "inos", "mask", "others", "slots")

    def __init__(self) -> None:
        self.devs = array("Q")
        self.inos = array("Q")
        self.mask = (1 << 10) - 1
        self.slots = array("I", bytes(4 << 10))  # position + 1; 0 marks a free slot
        self.others: set[str] = set()  # the paths that could not be stat'ed

    def add(self, key: tuple[int, int] | str) -> bool:
        """Record ``key``; False when it was already there."""
        if isinstance(key, str):
            if key in self.others:
                return False
            self.others.add(key)
            return True
        dev, ino = key
        devs, inos, slots, mask = self.devs, self.inos, self.slots, self.mask
        i = hash(key) & mask
        while at := slots[i]:
            if inos[at - 1] == ino and devs[at - 1] == dev:
                return False
            i = (i + 1) & mask
        devs.append(dev)
        inos.append(ino)
        slots[i] = len(inos)
        if len(inos) * 3 > mask * 2:
            self._grow()
        return True

    def _grow(self) -> None:
        self.mask = mask = self.mask * 2 + 1
        self.slots = slots = array("I", bytes(4 * (mask + 1)))
        for at, key in enumerate(zip(self.devs, self.inos, strict=True), 1):
            i = hash(key) & mask
            while slots[i]:
                i = (i + 1) & mask
            slots[i] = at


def expand_inputs(args: Iterable[str], *, recursive: bool = False,
                  spec: str | None = None) -> Inputs:
    """Expand TRAJECTORY arguments into the files to read, each once.

    Raises :class:`InputError` for a directory without trajectory files and
    for a glob that matches nothing. Files are compared by identity (device and
    inode), so ``a.jsonl``, ``./a.jsonl`` and a link to it are one file; ``spec`` is left
    out where a directory or glob would have added it.
    """
    spec_key = None if spec is None else _identity(spec)
    # The identities seen, in a compact table; which path came first is looked up only
    # once some file turns out to be named twice.
    seen = _Seen()
    firsts: dict[tuple[int, int] | str, str] | None = None
    paths = PathList()
    notes: list[str] = []
    add = seen.add
    for arg in args:
        for group, expanded, known in _expand(arg, recursive):
            for path in group:
                key = known or (STDIN if path == STDIN else _identity(path))
                if expanded and key == spec_key:
                    notes.append(f"{path} is the spec, not read as a trajectory")
                    continue
                if add(key):
                    paths.append(path)
                    if firsts is not None:
                        firsts[key] = path
                    continue
                if firsts is None:
                    firsts = {}
                    for earlier in paths:
                        firsts.setdefault(STDIN if earlier == STDIN else _identity(earlier),
                                          earlier)
                first = firsts.get(key, path)
                if first == path:
                    notes.append(f"{path} is given more than once; judged once")
                else:
                    notes.append(f"{path} is the same file as {first}; judged once")
    return Inputs(paths, tuple(notes))


def looks_like_trajectory(path: str) -> bool:
    """True when ``path`` holds a recorded run: its first event reads as one, or its
    format is one of the recorded-run formats. Used on the error path only, so only a
    regular file is read again: a FIFO or a device gave its bytes once (opening a FIFO
    again waits for a writer that may never come)."""
    import stat

    from roadcheck.ingest import UNKNOWN, detect_format
    from roadcheck.ingest.native import iter_events, read_bytes

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
    except (OSError, ValueError):
        return False
    try:
        data = read_bytes(path)
        if detect_format(data) not in ("native", UNKNOWN):
            return True
        next(iter_events(data, path))
    except (TraceError, StopIteration):
        return False
    return True


def load_replay_spec(path: str | PathLike[str], *, expect_sha256: str | None = None) -> Spec:
    """Load a replay spec; a trajectory given in its place says so and names the order."""
    from roadcheck.conformance.spec import load_spec

    try:
        return load_spec(path, expect_sha256=expect_sha256)
    except SpecError:
        if looks_like_trajectory(str(path)):
            raise SpecError(SWAPPED, path=str(path)) from None
        raise
