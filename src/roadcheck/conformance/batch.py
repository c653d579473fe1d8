"""Batch replay: trajectories read lazily from paths (format detected per file),
in-memory trajectories and event lists, each file isolated so that a crash is that
file's ERROR and the batch goes on, and ``--jobs`` spread over worker processes with
the results delivered in order. Memory stays flat: one file's state at a time."""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from os import PathLike
from typing import Any, NamedTuple, Protocol, TypeGuard

from roadcheck._inputs import STDIN, STDIN_ID
from roadcheck.conformance.engine import CompiledSpec, error_result
from roadcheck.conformance.judge import (
    _compiled,
    _crash,
    _judge,
    _strip_path,
    replay_events,
    replay_trajectory,
)
from roadcheck.conformance.result import (
    ReplayInterrupted,
    ReplayResult,
    ReplayRun,
)
from roadcheck.conformance.spec import (
    Spec,
)
from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory

__all__ = ["ReplaySink", "TrajectoryItem", "iter_replay", "replay_files"]


def _isolated(compiled: CompiledSpec, path: str, input_format: str | None,
              formats: list[tuple[str, ...]] | None,
              data: bytes | None = None, limit: int | None = None) -> Iterator[ReplayResult]:
    """The results of one file; an unexpected exception is that file's ERROR, and no more.
    ``limit``: the input size limit, when the batch has read it (:func:`_batch_limit`)."""
    known = len(formats) if formats is not None else 0
    try:
        yield from _iter_path(compiled, path, input_format, formats, data, limit)
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

def _replay_native(compiled: CompiledSpec, data: bytes, path: str) -> ReplayResult:
    """Judge the bytes of a native file, read by the one native reader."""
    try:
        events = _native().read_events(data, path)
    except TraceError as exc:
        return error_result(path, path, _strip_path(exc))
    return replay_events(compiled, events, path, path)

def _iter_path(compiled: CompiledSpec, path: str, input_format: str | None,
               formats: list[tuple[str, ...]] | None,
               data: bytes | None = None, limit: int | None = None) -> Iterator[ReplayResult]:
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
                data = native.read_bytes(path) if limit is None else native.read_bytes(path, limit)
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
    if input_format is not None and (tell := _no_run_check(input_format)) is not None:
        data = yield from _unless_noted(path, input_format, tell, data, formats)
        if data is None:
            return  # noted (it holds no run), or its ERROR given: it could not be read
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

def _unless_noted(path: str, fmt: str, tell: Callable[[bytes], str | None],
                  data: bytes | None, formats: list[tuple[str, ...]] | None,
                  ) -> Generator[ReplayResult, None, bytes | None]:
    """The file's bytes, read when not given, unless it is a file of ``fmt`` that holds no
    run (a Claude Code summary file): then it is recorded with its note, not judged, and
    None is returned; None too for a file that cannot be read, after its ERROR."""
    if data is None:
        try:
            data = _native().read_bytes(path)
        except TraceError as exc:
            if formats is not None:
                formats.append((path, fmt))
            yield error_result(path, path, _strip_path(exc), source=fmt)
            return None
    note = tell(data)
    if note is None:
        return data
    if formats is not None:
        formats.append((path, fmt, note))
    return None

def _no_run_check(name: str) -> Callable[[bytes], str | None] | None:
    from roadcheck.ingest._registry import no_run_check

    return no_run_check(name)

def split_files(formats: Iterable[tuple[str, ...]]) -> tuple[tuple[tuple[str, str], ...],
                                                             tuple[tuple[str, str], ...]]:
    """The files as (path, format) pairs, and the (path, note) of each file noted, not
    judged (:attr:`ReplayRun.notes`)."""
    files = tuple((f[0], f[1]) for f in formats)
    return files, tuple((f[0], f[2]) for f in formats if len(f) > 2)

def _read_stdin() -> bytes:
    import sys

    from roadcheck._limits import max_input_size, too_large
    from roadcheck.ingest.native import unpack_bytes

    limit = max_input_size()
    try:
        data = sys.stdin.buffer.read(limit + 1)  # stops at the limit and a byte
    except (OSError, AttributeError, ValueError) as exc:
        raise TraceError(f"cannot read standard input: {exc}", path=STDIN_ID) from None
    if len(data) > limit:
        raise TraceError(too_large(limit), path=STDIN_ID)
    return unpack_bytes(data, STDIN_ID, limit)

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
                formats: list[tuple[str, ...]] | None = None) -> Iterator[ReplayResult]:
    """Yield one result per trajectory, reading files lazily (memory stays flat).

    Fails closed one file at a time: an exception nobody expected while one file
    (or one in-memory trajectory) is read or judged becomes that file's ERROR
    ``bad-input`` naming the file and the exception type, and the batch goes on.

    A list of events at position N gets the id ``<events N>``.
    """
    compiled = _compiled(spec)
    for index, item in enumerate(items, 1):
        if isinstance(item, Trajectory):
            try:
                yield replay_trajectory(compiled, item)
            except Exception as exc:  # an internal bug: fail closed for this trajectory
                yield error_result(item.id, item.path, _crash(item.id, exc), source=item.source)
        elif isinstance(item, (str, PathLike)):
            yield from _isolated(compiled, str(item), input_format, formats)
        elif _is_events(item):
            name = f"<events {index}>"
            try:
                yield _replay_event_list(compiled, item, name)
            except Exception as exc:  # an internal bug: fail closed for this trajectory
                yield error_result(name, None, _crash(name, exc))
        else:
            raise TypeError("each trajectory must be a path, a Trajectory or a list of events, "
                            f"got {type(item).__name__}")

class ReplaySink(Protocol):
    """Where :func:`replay_files` delivers, in order, when it keeps nothing itself."""

    def file(self, path: str, fmt: str, note: str | None = None) -> None:
        """A file begins, read as ``fmt``; ``note`` says what a file that holds no run is
        (no result of it follows)."""

    def result(self, item: Any) -> None:
        """The next judged trajectory, as the ``render`` function made it."""

class _FileStart(NamedTuple):
    path: str
    fmt: str
    #: Set for a file that holds no run: what it is, one line (it is noted, not judged).
    note: str | None = None

def file_start(item: _FileStart, sink: ReplaySink | None,
               formats: list[tuple[str, ...]]) -> None:
    """Deliver a file's start: to the sink, which keeps what it needs of the files, or
    to the run's list of files."""
    if sink is None:
        formats.append((item.path, item.fmt) if item.note is None
                       else (item.path, item.fmt, item.note))
    elif item.note is not None:
        sink.file(item.path, item.fmt, item.note)
    else:
        sink.file(item.path, item.fmt)

class _Announced(list[tuple[str, ...]]):
    """The files' formats as :func:`iter_replay` records them, each told on the spot:
    a file cut off by Ctrl-C before its first result is still a file of the report."""

    def __init__(self, tell: Callable[..., None]) -> None:
        super().__init__()
        self.tell = tell

    def append(self, item: tuple[str, ...]) -> None:
        list.append(self, item)  # iter_replay counts them
        self.tell(*item)

def _judged(compiled: CompiledSpec, paths: Sequence[str], input_format: str | None,
            render: Callable[[ReplayResult], Any],
            formats: list[tuple[str, ...]] | None = None, *, start: int = 0,
            stop: int | None = None) -> Iterator[Any]:
    """Each file's start, then each of its results through ``render``, in order, for
    ``paths[start:stop]``.

    With ``formats`` (an :class:`_Announced`), the starts go there as they happen.
    """
    if formats is None:
        formats = []
    if stop is None:
        stop = len(paths)
    told = isinstance(formats, _Announced)
    limit = _batch_limit()
    for path in paths[start:stop]:
        for result in _results_of(compiled, path, input_format, formats, limit):
            if formats and not told:
                yield from (_FileStart(*f) for f in formats)
                formats.clear()
            yield render(result)
        if not told:
            yield from (_FileStart(*f) for f in formats)
        formats.clear()

def _batch_limit() -> int | None:
    """The input size limit, read from the environment once for a batch rather than once
    a file (looking up a variable that is not set costs some 1.5 us); None when its value
    is not a size, so that each file is refused as it was without the batch."""
    from roadcheck._limits import max_input_size
    from roadcheck.errors import InputError

    try:
        return max_input_size()
    except InputError:
        return None

def _results_of(compiled: CompiledSpec, path: str, input_format: str | None,
                formats: list[tuple[str, ...]], limit: int | None = None
                ) -> Iterable[ReplayResult]:
    """The results of one path, as ``iter_replay(compiled, [path], ...)`` gives them."""
    if type(path) is str:
        return _isolated(compiled, path, input_format, formats, limit=limit)
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
    items = list(_judged(compiled, paths, input_format, render, start=start, stop=stop))
    return items if fold is None else fold(items)

def _judged_in_pool(spec: Spec, paths: Sequence[str], input_format: str | None,
                    render: Callable[[ReplayResult], Any], jobs: int,
                    fold: Callable[[list[Any]], Any] | None = None
                    ) -> Generator[tuple[int, Any], None, None]:
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
    stopped = False
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
    except GeneratorExit:
        stopped = True
        raise
    finally:
        # Ctrl-C here (waiting for a chunk) leaves at once. A caller that stopped taking
        # chunks (an error of its own) waits for the running ones, the rest cancelled:
        # the workers are gone when it goes on, and a process that then ends by
        # os._exit (the console script) finds none to wait for. Left running, they
        # would wait for work, and that process for them, for ever.
        pool.shutdown(wait=stopped or not pending, cancel_futures=True)

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
    formats: list[tuple[str, ...]] = []
    keep = render or _same

    def deliver(item: Any) -> None:
        if isinstance(item, _FileStart):
            file_start(item, sink, formats)
        elif sink is not None:
            sink.result(item)
        else:
            results.append(item)

    done = 0
    try:
        compiled = CompiledSpec(spec)
        workers = _workers(jobs, batch)
        if workers > 1:
            fold = getattr(sink, "fold", None)
            chunks = _judged_in_pool(spec, batch, input_format, keep, workers, fold)
            try:
                for files, items in chunks:
                    if fold is not None:
                        sink.merge(items)  # type: ignore[union-attr]
                    else:
                        for item in items:
                            deliver(item)
                    done += files
            finally:
                chunks.close()  # whatever stopped the loop, the pool is shut down now
        else:
            # each file's start goes out as it is recorded
            announced = _Announced(sink.file if sink is not None
                                   else lambda *start: formats.append(start))
            take = results.append if sink is None else sink.result
            limit = _batch_limit()
            for path in batch:
                for result in _results_of(compiled, path, input_format, announced, limit):
                    take(keep(result))
                announced.clear()
                done += 1
    except KeyboardInterrupt:
        listed, notes = split_files(formats)
        partial = ReplayRun(spec.source, results, listed, interrupted=True,
                            spec_sha256=spec.sha256, notes=notes)
        raise ReplayInterrupted(partial, done, len(batch)) from None
    listed, notes = split_files(formats)
    return ReplayRun(spec.source, results, listed, spec_sha256=spec.sha256, notes=notes)

#: The files a worker process must have to judge before a second one pays for its start
#: (a fork, the chunks' round trips): below that, ``--jobs`` judges in this process.
_FILES_PER_WORKER = 2_000

def _workers(jobs: int, batch: Sequence[str]) -> int:
    """How many processes judge ``batch`` for ``--jobs jobs``: one for standard input or a
    batch too small for more to pay, else up to ``jobs``, each with
    :data:`_FILES_PER_WORKER` files at least."""
    if jobs <= 1 or len(batch) < 2 or STDIN in batch:
        return 1
    return max(1, min(jobs, len(batch) // _FILES_PER_WORKER))

def _same(result: ReplayResult) -> ReplayResult:
    return result
