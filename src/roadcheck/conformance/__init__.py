"""Trajectory conformance: did the recorded run take the mandatory road?

>>> from roadcheck.conformance import load_spec, replay
>>> run = replay(load_spec("examples/spec.json"), ["examples/fixture_conforms.jsonl"])
>>> run.results[0].verdict
'PASS'
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from os import PathLike
from typing import Any, NamedTuple, Protocol, TypeGuard, cast

from roadcheck._inputs import STDIN, STDIN_ID
from roadcheck._text_check import check_utf8
from roadcheck.conformance.engine import (
    CompiledSpec,
    Replayer,
    error_result,
    final_event,
    native_result,
)
from roadcheck.conformance.result import (
    Finding,
    NativeRun,
    ReplayInterrupted,
    ReplayResult,
    ReplayRun,
    TrajectoryStats,
)
from roadcheck.conformance.spec import (
    DeriveRule,
    HandoffContract,
    MandatoryCheckpoint,
    Spec,
    load_spec,
    parse_spec,
)
from roadcheck.errors import TraceError
from roadcheck.events import DEFAULT_ID, Event, Trajectory

__all__ = [
    "CompiledSpec",
    "DeriveRule",
    "Finding",
    "HandoffContract",
    "MandatoryCheckpoint",
    "ReplayInterrupted",
    "ReplayResult",
    "ReplayRun",
    "ReplaySink",
    "Replayer",
    "Spec",
    "TrajectoryItem",
    "TrajectoryStats",
    "iter_replay",
    "load_spec",
    "parse_spec",
    "replay",
    "replay_events",
    "replay_files",
    "replay_trajectory",
]

# Readers whose ``Event.line`` is a message index rather than a file line.
_TRANSCRIPT_SOURCES = frozenset({"openai-chat", "tau-bench", "tau2"})


def _compiled(spec: Spec | CompiledSpec) -> CompiledSpec:
    return spec if isinstance(spec, CompiledSpec) else CompiledSpec(spec)


def replay_events(spec: Spec | CompiledSpec, events: Iterable[Event], traj_id: str = "<events>",
                  path: str | None = None, *, source: str = "native",
                  meta: dict[str, Any] | None = None) -> ReplayResult:
    """Judge a stream of events; a :class:`TraceError` from the stream becomes ERROR."""
    r = Replayer(_compiled(spec), locate_messages=source in _TRANSCRIPT_SOURCES)
    try:
        r.feed_all(events)
    except TraceError as exc:
        return error_result(traj_id, path, exc.location_message() if path is None
                            else _strip_path(exc), source=source, meta=meta)
    return r.finish(traj_id, path, source=source, meta=meta)


def _replay_records(compiled: CompiledSpec, records: Sequence[Any], final: Event,
                    path: str) -> ReplayResult:
    """Judge a native file decoded into typed records (``roadcheck.ingest._native_typed``)."""
    r = Replayer(compiled)
    r.feed_records(records, final)
    return r.finish(path, path)


def _strip_path(exc: TraceError) -> str:
    """The error without the file name (the report already names the file)."""
    if exc.line is not None:
        return f"line {exc.line}: {exc.message}"
    return exc.message


def replay_trajectory(spec: Spec | CompiledSpec, trajectory: Trajectory) -> ReplayResult:
    """Judge one in-memory trajectory (its events are validated first)."""
    from roadcheck.ingest.native import validate_events

    events = list(trajectory.events)
    try:
        validate_events(events, trajectory.path)
    except TraceError as exc:
        return error_result(trajectory.id, trajectory.path, _strip_path(exc),
                            source=trajectory.source, meta=dict(trajectory.meta))
    return replay_events(spec, events, trajectory.id, trajectory.path, source=trajectory.source,
                         meta=dict(trajectory.meta))


def _crash(where: str, exc: BaseException) -> str:
    """One line for an exception nobody expected: the file (or trajectory) and its type."""
    lines = str(exc).splitlines()
    detail = lines[0] if lines else ""
    if len(detail) > 200:
        detail = detail[:197] + "..."
    return (f"{where}: could not be judged: unexpected {type(exc).__name__}"
            f"{': ' + detail if detail else ''} (an internal error of roadcheck; the file "
            "is not judged, never passed)")


def _judge(compiled: CompiledSpec, entry: Trajectory) -> ReplayResult:
    """Judge one trajectory read from a file; an engine bug is its ERROR, not the batch's."""
    try:
        return replay_events(compiled, entry.events, entry.id, entry.path,
                             source=entry.source, meta=dict(entry.meta))
    except Exception as exc:  # an internal bug: fail closed for this trajectory only
        return error_result(entry.id, entry.path, _crash(entry.id, exc), source=entry.source,
                            meta=dict(entry.meta))


def _isolated(compiled: CompiledSpec, path: str, input_format: str | None,
              formats: list[tuple[str, str]] | None,
              data: bytes | None = None) -> Iterator[ReplayResult]:
    """The results of one file; an unexpected exception is that file's ERROR, and no more."""
    known = len(formats) if formats is not None else 0
    try:
        yield from _iter_path(compiled, path, input_format, formats, data)
    except Exception as exc:  # an internal bug: fail closed for this file, keep the batch
        if formats is not None and len(formats) == known:
            formats.append((path, input_format or "native"))
        yield error_result(path, path, _crash(path, exc))


def _native() -> Any:
    """The native reader module, imported on first use (``roadcheck.conformance`` stays light)."""
    module = sys.modules.get("roadcheck.ingest.native")
    if module is None:
        import roadcheck.ingest.native as module
    return module


def _typed() -> Any:
    """The typed native decoder, imported on first use (msgspec stays out of light imports)."""
    module: Any = sys.modules.get("roadcheck.ingest._native_typed")
    if module is None:
        import roadcheck.ingest._native_typed as module
    return module.typed_records


def _accel() -> Any:
    """The C extension :mod:`roadcheck._accel`, or None where it is not built or
    ``ROADCHECK_PURE_PYTHON`` is set (the Python path then decides alone, with the same
    results)."""
    global _ACCEL
    if _ACCEL is _UNSET:
        from roadcheck._ext import native

        _ACCEL = native()
    return _ACCEL


_UNSET: Any = object()
_ACCEL: Any = _UNSET


def _replay_native(compiled: CompiledSpec, data: bytes, path: str, *,
                   tried: bool = False) -> ReplayResult:
    """Judge the bytes of a native file.

    Four ways, each the fallback of the one before, all giving the same result: the C
    judge and the C scan (:mod:`roadcheck._accel`) and the typed decode, which only vouch
    for a valid file and give way on anything unusual, and the strict reader, which
    reads any file and names what is wrong with it. The first three serve only a spec
    whose rules read nothing beyond each event type's own fields (``compiled.typed``);
    the C judge, only one whose checkpoints bind no call. ``tried``: the C judge gave
    way on these bytes already.
    """
    if compiled.typed:
        accel = _ACCEL if _ACCEL is not _UNSET else _accel()
        if accel is not None:
            plan = None if tried else compiled.plan(accel)
            if plan is not None:
                judged = accel.judge_native(data, plan)
                if judged is not None:
                    result = native_result(compiled, data, judged, path)
                    if result is not None:
                        return result
            scanned = accel.scan_native(data, *compiled.scan_names)
            if scanned is not None:
                final = final_event(data, scanned)
                if final is not None:
                    r = Replayer(compiled)
                    r.feed_scanned(data, scanned, final)
                    return r.finish(path, path)
        # Lines the extension does not read as JSON (or reads as a key given twice) are a
        # file the typed decode refuses too: the strict reader names the problem at once,
        # and msgspec is not loaded for a file that is only broken.
        if accel is None or accel.check_lines(data, any_number=True):
            typed = _typed()(data)
            if typed is not None:
                return _replay_records(compiled, typed[0], typed[1], path)
    return replay_events(compiled, _native().iter_events(data, path), path, path)


def _iter_path(compiled: CompiledSpec, path: str, input_format: str | None,
               formats: list[tuple[str, str]] | None,
               data: bytes | None = None) -> Iterator[ReplayResult]:
    """The results of one file; ``data``, when given, is its content already read."""
    native = _native()

    if path == STDIN:
        path = STDIN_ID
        try:
            data = _read_stdin()
        except TraceError as exc:
            if formats is not None:
                formats.append((path, input_format or "native"))
            yield error_result(path, path, _strip_path(exc))
            return
    if input_format in (None, "native"):
        # The hot path: a native file streams from the reader straight into the engine.
        try:
            if data is None:
                data = native.read_bytes(path)
        except TraceError as exc:
            if formats is not None:
                formats.append((path, input_format or "native"))
            yield error_result(path, path, _strip_path(exc))
            return
        # the registry asks the native reader first and stops at a certain answer
        fmt = input_format or "native"
        if input_format is None and not native.certainly_native(data):
            from roadcheck.ingest import detect_format

            fmt = detect_format(data)
        if fmt == "native":
            if formats is not None:
                formats.append((path, fmt))
            yield _replay_native(compiled, data, path)
            return
    from roadcheck.ingest import FORMATS, ReadFailure, load

    if input_format is None and data is not None and fmt in FORMATS:
        input_format = fmt  # detected above: the reader need not detect it again
    # a spec that selects nothing reads no tool's output: the reader need not keep it
    fmt, entries = load(path, input_format, data=data, text=not compiled.typed)
    if formats is not None:
        formats.append((path, fmt))
    judged = 0
    for entry in entries:
        judged += 1
        if isinstance(entry, ReadFailure):
            yield error_result(entry.id, entry.path, _strip_path(entry.error), source=fmt)
        else:
            yield _judge(compiled, entry)
    if not judged:
        # An empty results file judged nothing; nothing judged is never a pass.
        yield error_result(path, path, f"the {fmt} file holds no trajectory to judge",
                           source=fmt)


def _read_stdin() -> bytes:
    import sys

    from roadcheck.ingest.native import unpack_bytes

    try:
        data = sys.stdin.buffer.read()
    except (OSError, AttributeError, ValueError) as exc:
        raise TraceError(f"cannot read standard input: {exc}", path=STDIN_ID) from None
    return unpack_bytes(data, STDIN_ID)


#: What :func:`replay` and :func:`iter_replay` judge: a path, a :class:`Trajectory`, or the
#: events of one run (:class:`Event` objects or native event dicts).
TrajectoryItem = str | PathLike[str] | Trajectory | Sequence[Event | Mapping[str, Any]]


def _is_events(value: object) -> TypeGuard[Sequence[Event | Mapping[str, Any]]]:
    """True for a non-empty list of events (Event objects or dicts), not a list of paths."""
    return (isinstance(value, Sequence) and not isinstance(value, (str, bytes, Event))
            and len(value) > 0 and isinstance(value[0], (Mapping, Event)))


def _replay_event_list(compiled: CompiledSpec, events: Sequence[Event | Mapping[str, Any]],
                       traj_id: str) -> ReplayResult:
    try:
        trajectory = Trajectory(events, id=traj_id)
    except TraceError as exc:
        return error_result(traj_id, None, exc.message)
    return replay_trajectory(compiled, trajectory)


def iter_replay(spec: Spec | CompiledSpec, items: Iterable[TrajectoryItem], *,
                input_format: str | None = None,
                formats: list[tuple[str, str]] | None = None) -> Iterator[ReplayResult]:
    """Yield one result per trajectory, reading files lazily (memory stays flat).

    Fails closed one file at a time: an exception nobody expected while one file
    (or one in-memory trajectory) is read or judged becomes that file's ERROR
    ``bad-input`` naming the file and the exception type, and the batch goes on.

    A list of events at position N gets the id ``<events N>``.
    """
    compiled = _compiled(spec)
    direct = compiled.typed and input_format in (None, "native")
    for index, item in enumerate(items, 1):
        data = None
        if direct and type(item) is str and item != STDIN:
            result, data = _direct_native(compiled, item, formats)
            if result is not None:
                yield result
                continue
        if isinstance(item, Trajectory):
            try:
                yield replay_trajectory(compiled, item)
            except Exception as exc:  # an internal bug: fail closed for this trajectory
                yield error_result(item.id, item.path, _crash(item.id, exc), source=item.source)
        elif isinstance(item, (str, PathLike)):
            yield from _isolated(compiled, str(item), input_format, formats, data)
            data = None
        elif _is_events(item):
            name = f"<events {index}>"
            try:
                yield _replay_event_list(compiled, item, name)
            except Exception as exc:  # an internal bug: fail closed for this trajectory
                yield error_result(name, None, _crash(name, exc))
        else:
            raise TypeError("each trajectory must be a path, a Trajectory or a list of events, "
                            f"got {type(item).__name__}")


def _spec_of(spec: Spec | Mapping[str, Any] | str | PathLike[str]) -> Spec:
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, Mapping):
        return parse_spec(dict(spec))
    if isinstance(spec, (str, PathLike)):
        from roadcheck._inputs import load_replay_spec

        return load_replay_spec(spec)
    raise TypeError(f"spec must be a Spec, a dict or a path, got {type(spec).__name__}")


def replay(spec: Spec | Mapping[str, Any] | str | PathLike[str],
           items: Iterable[TrajectoryItem] | TrajectoryItem, *,
           input_format: str | None = None) -> ReplayRun:
    """Replay trajectories against a spec; returns a :class:`ReplayRun` (``exit``: the CI code).

    ``spec`` is a :class:`Spec`, a spec document as a dict (checked like a
    file, see :func:`parse_spec`) or the path of a JSON/YAML spec. ``items`` is
    one trajectory or a list of them, each a path (``"-"`` reads standard
    input), a :class:`Trajectory`, or the events of one run as a list of
    :class:`Event` objects or native event dicts::

        roadcheck.replay({"mandatory_checkpoints": [...]}, [{"seq": 1, ...}, ...])

    A malformed trajectory is an ERROR result, never an exception; an
    unusable spec raises :class:`~roadcheck.errors.SpecError`.
    """
    loaded = _spec_of(spec)
    if _is_events(items):
        result = _replay_event_list(CompiledSpec(loaded), items, DEFAULT_ID)
        return ReplayRun(loaded.source, [result])
    if isinstance(items, (str, PathLike, Trajectory)):
        items = [items]
    formats: list[tuple[str, str]] = []
    # not a list of events (above): a list of items, each judged on its own
    many = cast(Iterable[TrajectoryItem], items)
    results = list(iter_replay(loaded, many, input_format=input_format, formats=formats))
    return ReplayRun(loaded.source, results, tuple(formats), spec_sha256=loaded.sha256)


class ReplaySink(Protocol):
    """Where :func:`replay_files` delivers, in order, when it keeps nothing itself."""

    def file(self, path: str, fmt: str) -> None:
        """A file begins, read as ``fmt``."""

    def result(self, item: Any) -> None:
        """The next judged trajectory, as the ``render`` function made it."""


class _FileStart(NamedTuple):
    path: str
    fmt: str


class _Announced(list[tuple[str, str]]):
    """The files' formats as :func:`iter_replay` records them, each told on the spot:
    a file cut off by Ctrl-C before its first result is still a file of the report."""

    def __init__(self, tell: Callable[[str, str], None]) -> None:
        super().__init__()
        self.tell = tell

    def append(self, item: tuple[str, str]) -> None:
        list.append(self, item)  # iter_replay counts them
        self.tell(*item)


#: Files :func:`roadcheck._accel.judge_files` judges in one call at most: a Ctrl-C is taken
#: between calls.
_RUN = 256


def _native_runs(compiled: CompiledSpec, paths: Sequence[str], input_format: str | None,
                 render: Any, *, numbered: bool) -> tuple[Any, Any, tuple[Any, ...]] | None:
    """(the extension, the plan, the style) with which runs of ``paths`` are judged and
    rendered in C (:func:`_runs`), or None where every file goes the usual way: a spec or
    input format the C judge does not take, paths not held as a ``PathList``, a renderer
    without a ``native_style`` or one that renders in Python only. ``numbered``: a text
    report's results can be numbered where they are rendered (not in a worker)."""
    if not compiled.typed or input_format not in (None, "native"):
        return None
    buffers = getattr(paths, "buffers", None)
    style_of = getattr(render, "native_style", None)
    if buffers is None or style_of is None:
        return None
    accel = _ACCEL if _ACCEL is not _UNSET else _accel()
    plan = None if accel is None else compiled.plan(accel)
    if plan is None:
        return None
    style = style_of(compiled, numbered=numbered)
    return None if style is None else (accel, plan, style)


def _runs(native: tuple[Any, Any, tuple[Any, ...]], paths: Any, start: int, stop: int,
          number: Callable[[], int]) -> Iterator[NativeRun | int]:
    """``paths[start:stop]`` as runs of files judged and rendered in C (:class:`NativeRun`)
    and the index of each file to judge the usual way: one the C judge gave way on, and
    while it keeps giving way (a batch of other formats), a growing number after it.
    ``number``: the number of the next result of a text report."""
    accel, plan, style = native
    blob, ends = paths.buffers()
    misses = 0
    i = start
    while i < stop:
        end = min(stop, i + _RUN)
        try:
            done, entries, bodies, passed, blocked, warned = accel.judge_files(
                blob, ends, i, end, plan, style, number(), paths.listed)
        except Exception:  # an internal bug: these files go the usual way, which isolates it
            yield from range(i, end)
            i = end
            continue
        if done > i:
            yield NativeRun(done - i, entries, bodies, passed, blocked, warned)
            misses = 0
        if done < end:
            misses += 1
            upto = min(stop, done + (1 << min(misses - 1, 6)))
            yield from range(done, upto)
            i = upto
        else:
            i = done


def _threaded_runs(native: tuple[Any, Any, tuple[Any, ...]], paths: Any, start: int, stop: int,
                   threads: int, scratch: Callable[[], int] | None = None
                   ) -> Iterator[NativeRun | int]:
    """:func:`_runs` with the runs judged by ``threads`` threads at once (a few runs ahead,
    given in order); a file the C judge gives way on is given to be judged the usual way
    here, and the rest of its run judged here too (:func:`_runs`). Not for a text report's numbered
    blocks (their numbers are known only once the runs before are). ``scratch`` gives
    each thread a file of its own to write its runs' results to (the runs then say where
    they are), so that they are not copied through this thread. Plain threads: the
    executor of ``concurrent.futures`` imports ``logging``, some 15 ms of start-up."""
    import threading

    accel, plan, style = native
    blob, ends = paths.buffers()
    ranges = [(lo, min(stop, lo + _RUN)) for lo in range(start, stop, _RUN)]
    done: dict[int, Any] = {}  # run number: what judge_files gave, or the error it raised
    state = {"next": 0, "taken": 0, "stop": False}
    cond = threading.Condition()
    ahead = threads * 4

    def judge(lo: int, hi: int, fd: int | None) -> Any:
        if fd is None:  # no scratch file: the results come back as bytes
            return accel.judge_files(blob, ends, lo, hi, plan, style, 1, paths.listed)
        return accel.judge_files(blob, ends, lo, hi, plan, style, 1, paths.listed, fd)

    def work() -> None:
        fd = None
        while True:
            with cond:
                while (not state["stop"] and state["next"] < len(ranges)
                       and state["next"] >= state["taken"] + ahead):
                    cond.wait()
                if state["stop"] or state["next"] >= len(ranges):
                    return
                k = state["next"]
                state["next"] = k + 1
            try:
                if fd is None and scratch is not None:
                    fd = scratch()
                ran: Any = judge(*ranges[k], fd)
            except Exception as exc:  # handed to the consumer, in order
                ran = exc
            with cond:
                done[k] = ran
                cond.notify_all()

    workers = [threading.Thread(target=work, name=f"roadcheck-judge-{n}", daemon=True)
               for n in range(threads)]
    for worker in workers:
        worker.start()
    try:
        for k, (lo, hi) in enumerate(ranges):
            with cond:
                while k not in done:
                    cond.wait()
                ran = done.pop(k)
                state["taken"] = k + 1
                cond.notify_all()
            if isinstance(ran, Exception):  # an internal bug: the usual way isolates it
                yield from range(lo, hi)
                continue
            at, entries, bodies, passed, blocked, warned = ran
            if at > lo:
                yield NativeRun(at - lo, entries, bodies, passed, blocked, warned)
            if at < hi:  # the usual way, and the rest of the run as in one thread
                yield at
                yield from _runs(native, paths, at + 1, hi, lambda: 1)
    finally:
        with cond:
            state["stop"] = True
            cond.notify_all()
        for worker in workers:
            worker.join()


def _judged(compiled: CompiledSpec, paths: Sequence[str], input_format: str | None,
            render: Callable[[ReplayResult], Any],
            formats: list[tuple[str, str]] | None = None, *, start: int = 0,
            stop: int | None = None, runs: bool = False) -> Iterator[Any]:
    """Each file's start, then each of its results through ``render``, in order, for
    ``paths[start:stop]``; with ``runs``, runs of native files judged and rendered in C
    come as :class:`NativeRun` items (see :func:`_native_runs`).

    With ``formats`` (an :class:`_Announced`), the starts go there as they happen.
    """
    if formats is None:
        formats = []
    if stop is None:
        stop = len(paths)
    told = isinstance(formats, _Announced)
    direct = compiled.typed and input_format in (None, "native")
    native = render if direct and hasattr(render, "from_native") else None
    in_c = _native_runs(compiled, paths, input_format, render, numbered=False) if runs else None
    order: Iterable[NativeRun | int] = (range(start, stop) if in_c is None
                                        else _runs(in_c, paths, start, stop, lambda: 1))
    for at in order:
        if isinstance(at, NativeRun):
            yield at
            continue
        for item in _rendered_of(compiled, paths[at], input_format, formats, direct, render,
                                 native):
            if formats and not told:
                yield from (_FileStart(*f) for f in formats)
                formats.clear()
            yield item
        if not told:
            yield from (_FileStart(*f) for f in formats)
        formats.clear()


def _rendered_of(compiled: CompiledSpec, path: str, input_format: str | None,
                 formats: list[tuple[str, str]], direct: bool,
                 render: Callable[[ReplayResult], Any],
                 native: Any) -> Iterable[Any]:
    """The results of one path through ``render``. With ``native`` (``render`` itself when
    it has a ``from_native(compiled, data, judged, path)``: the same rendering from
    :func:`roadcheck._accel.judge_native`'s tuples, without the result objects), a file the C
    judge vouches for is rendered from its tuples."""
    if native is not None and type(path) is str and path != STDIN:
        item, data = _direct_native(compiled, path, formats, native)
        if item is not None:
            return (item,)
        return map(render, _isolated(compiled, path, input_format, formats, data))
    return map(render, _results_of(compiled, path, input_format, formats, direct))


def _results_of(compiled: CompiledSpec, path: str, input_format: str | None,
                formats: list[tuple[str, str]], direct: bool) -> Iterable[ReplayResult]:
    """The results of one path, as ``iter_replay(compiled, [path], ...)`` gives them; with
    ``direct`` (a typed spec, native or detected input) a plain native file is judged on
    the spot, without a generator, and any other goes on with the bytes already read."""
    if direct and type(path) is str and path != STDIN:
        result, data = _direct_native(compiled, path, formats)
        if result is not None:
            return (result,)
        return _isolated(compiled, path, input_format, formats, data)
    return iter_replay(compiled, [path], input_format=input_format, formats=formats)


_WORKER: tuple[CompiledSpec, str | None, Callable[[ReplayResult], Any],
               Callable[[list[Any]], Any] | None, Sequence[str]] | None = None


def _start_worker(spec: Spec, input_format: str | None, render: Callable[[ReplayResult], Any],
                  fold: Callable[[list[Any]], Any] | None, paths: Sequence[str]) -> None:
    import signal

    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _WORKER = (CompiledSpec(spec), input_format, render, fold, paths)


def _judge_chunk(start: int, stop: int) -> Any:
    """Judge ``paths[start:stop]`` of the batch the worker was started with (a forked
    worker shares the parent's list: only the two numbers travel)."""
    assert _WORKER is not None
    compiled, input_format, render, fold, paths = _WORKER
    items = list(_judged(compiled, paths, input_format, render, start=start, stop=stop,
                         runs=fold is not None and getattr(fold, "native_runs", False)))
    return items if fold is None else fold(items)


def _judged_in_pool(spec: Spec, paths: Sequence[str], input_format: str | None,
                    render: Callable[[ReplayResult], Any], jobs: int,
                    fold: Callable[[list[Any]], Any] | None = None) -> Iterator[tuple[int, Any]]:
    """(files in the chunk, its items, or what ``fold`` made of them in the worker) for
    chunks of ``paths`` judged by ``jobs`` processes, in order; a few chunks run ahead, so
    memory holds a few chunks at most."""
    from collections import deque
    from concurrent.futures import Future, ProcessPoolExecutor

    # about eight chunks a process, of 1,024 files at most: each chunk costs a round trip
    # through the pool (256 a chunk spent some 0.3 s more CPU over 50,000 files)
    size = max(1, min(1024, len(paths) // (jobs * 8)))
    pool = ProcessPoolExecutor(jobs, initializer=_start_worker,
                               initargs=(spec, input_format, render, fold, paths))
    pending: deque[tuple[int, Future[Any]]] = deque()
    try:
        start = 0
        while start < len(paths):
            # chunks of a quarter the size at the end (the last two a process), so that no
            # process is left alone with a large one while the others wait
            step = size if len(paths) - start > size * jobs * 2 else max(1, size // 4)
            stop = min(start + step, len(paths))
            pending.append((stop - start, pool.submit(_judge_chunk, start, stop)))
            start = stop
            if len(pending) > jobs * 2:
                n, future = pending.popleft()
                yield n, future.result()
        while pending:
            n, future = pending.popleft()
            yield n, future.result()
    finally:
        pool.shutdown(wait=not pending, cancel_futures=True)


def replay_files(spec: Spec, paths: Iterable[str], *, input_format: str | None = None,
                 jobs: int = 1, render: Callable[[ReplayResult], Any] | None = None,
                 sink: ReplaySink | None = None) -> ReplayRun:
    """Replay trajectory files; the CLI's one library call.

    Without ``sink`` the run holds every result. With one, nothing is kept:
    each file's start and each result, passed through ``render`` where it was
    judged, go to the sink in the order of ``paths``, and the run returned holds
    neither results nor files. ``jobs`` > 1 judges chunks of files in that many processes
    (``render`` then runs there, and must be picklable); the order and every
    result are those of one process. A sink with a ``fold`` (a picklable
    function of a chunk's items) and a ``merge`` gets each chunk folded in the
    worker, through ``merge``, instead of item by item.

    Ctrl-C raises :class:`ReplayInterrupted` carrying the results judged so far.
    """
    batch: Sequence[str] = paths if isinstance(paths, Sequence) else list(paths)
    results: list[ReplayResult] = []
    formats: list[tuple[str, str]] = []
    keep = render or _same

    def deliver(item: Any) -> None:
        if isinstance(item, _FileStart):
            if sink is None:
                formats.append((item.path, item.fmt))
            else:  # the sink keeps what it needs of the files: the run keeps nothing
                sink.file(item.path, item.fmt)
        elif sink is not None:
            sink.result(item)
        else:
            results.append(item)

    done = 0
    try:
        compiled = CompiledSpec(spec)
        pooled = jobs > 1 and len(batch) > 1 and STDIN not in batch
        in_c = None
        if sink is not None and hasattr(sink, "native_run"):
            in_c = _native_runs(compiled, batch, input_format, render, numbered=not pooled)
        order: Iterable[NativeRun | int] | None = None
        if pooled and in_c is not None:
            # The first run judged here. A batch whose first files the C judge all vouched
            # for goes on in threads (judge_files runs without the GIL: no process to start,
            # no chunk to carry back); any other, in processes.
            first = min(len(batch), _RUN)
            probe = next(_runs(in_c, batch, 0, first, lambda: 1), 0)
            if isinstance(probe, NativeRun):
                sink.native_run(probe)  # type: ignore[union-attr]  # in_c: a sink
                done = probe.files
            if done == first:
                order = _threaded_runs(in_c, batch, done, len(batch), jobs,
                                       getattr(sink, "scratch_fd", None))
                pooled = False
        if pooled:
            fold = getattr(sink, "fold", None)
            rest = batch if not done else batch[done:]
            for files, items in _judged_in_pool(spec, rest, input_format, keep, jobs, fold):
                if fold is not None:
                    sink.merge(items)  # type: ignore[union-attr]
                else:
                    for item in items:
                        deliver(item)
                done += files
        else:
            # each file's start goes out as it is recorded
            announced = _Announced(sink.file if sink is not None
                                   else lambda path, fmt: formats.append((path, fmt)))
            take = results.append if sink is None else sink.result
            direct = compiled.typed and input_format in (None, "native")
            native = render if direct and hasattr(render, "from_native") else None
            if order is None:
                order = range(len(batch)) if in_c is None else _runs(
                    in_c, batch, 0, len(batch), lambda: getattr(sink, "total", 0) + 1)
            for at in order:
                if isinstance(at, NativeRun):
                    sink.native_run(at)  # type: ignore[union-attr]  # in_c: a sink
                    done += at.files
                    continue
                for item in _rendered_of(compiled, batch[at], input_format, announced, direct,
                                         keep, native):
                    take(item)
                announced.clear()
                done += 1
    except KeyboardInterrupt:
        partial = ReplayRun(spec.source, results, tuple(formats), interrupted=True,
                            spec_sha256=spec.sha256)
        raise ReplayInterrupted(partial, done, len(batch)) from None
    return ReplayRun(spec.source, results, tuple(formats), spec_sha256=spec.sha256)


def _plain_bytes(path: str, data: bytes | None = None) -> bytes | None:
    """The bytes of a regular, uncompressed, UTF-8 file in a few system calls, or None
    when the file needs the general reader (which then names any problem). ``data``, when
    given, is the file read already (:func:`roadcheck._accel.read_regular`)."""
    if data is None:
        data = _read_regular(path)
    if data is None:
        return None
    native = _native()
    if data.startswith((native._GZIP_MAGIC, native._ZSTD_MAGIC, native._ZIP_MAGIC)):
        return None
    try:
        check_utf8(data, path, TraceError)
    except TraceError:
        return None
    return data


def _read_regular(path: str) -> bytes | None:
    """:func:`roadcheck._accel.read_regular` in Python."""
    try:
        # a FIFO is never opened here: opening it would wake its writer for nothing
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        data = os.read(fd, st.st_size + 1)
        # a short read of a regular file is its end; a file that grew since the stat (the
        # byte asked beyond its size came) is read to its new end
        if len(data) > st.st_size:
            chunks = [data]
            # a small buffer: os.read allocates the whole size asked for, even at the end
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
            if len(chunks) > 1:
                data = b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data


def _direct_native(compiled: CompiledSpec, path: str, formats: list[tuple[str, str]] | None,
                   renderer: Any = None) -> tuple[Any, bytes | None]:
    """A plain native file judged without detection and the general reader's layers: the
    same format recorded and the same result as :func:`_isolated` gives, or no result
    (nothing recorded) when the file is not plainly native and goes the general way, with
    the bytes read when there are any, so that way does not read the file again.

    With ``renderer`` (see :func:`_rendered_of`) what is given is the result rendered."""
    accel = _ACCEL if _ACCEL is not _UNSET else _accel()
    plan = compiled.plan(accel) if accel is not None else None
    if plan is None:
        data = _plain_bytes(path)
    else:
        # The C judge first: a file it vouches for is native, uncompressed and UTF-8
        # (it gives way on anything else), so the checks below are for the others.
        raw = accel.read_regular(path)
        if raw is None:
            return None, None
        try:
            judged = accel.judge_native(raw, plan)
            if judged is None:
                result = None
            elif renderer is not None:
                result = renderer.from_native(compiled, raw, judged, path)
            else:
                result = native_result(compiled, raw, judged, path)
        except Exception as exc:  # an internal bug: fail closed for this file, keep the batch
            result = error_result(path, path, _crash(path, exc))
            if renderer is not None:
                result = renderer(result)
        if result is not None:
            if formats is not None:
                formats.append((path, "native"))
            return result, None
        data = _plain_bytes(path, raw)
    native = _native()
    if data is None or not native.certainly_native(data):
        return None, data
    if formats is not None:
        formats.append((path, "native"))
    try:
        result = _replay_native(compiled, data, path, tried=plan is not None)
    except Exception as exc:  # an internal bug: fail closed for this file, keep the batch
        result = error_result(path, path, _crash(path, exc))
    return (result if renderer is None else renderer(result)), None


def _same(result: ReplayResult) -> ReplayResult:
    return result
