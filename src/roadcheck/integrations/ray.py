"""Batch replay on Ray: the same verdicts, computed where the trajectories already are.

Two entry points, both needing ``pip install 'roadcheck[ray]'``:

- :func:`replay_paths` is the distributed twin of
  :func:`roadcheck.conformance.replay_files` (``roadcheck replay ... --ray``): the files
  are cut into contiguous batches, each batch is judged by one Ray task, and the
  results are put back in the order given, so the report is byte for byte the
  one of a local run. A task whose worker dies is run again by Ray (its retry),
  and a batch's results arrive once, as one object: none is lost or doubled.
- :func:`replay_dataset` maps a Ray Dataset whose rows hold a trajectory (a file
  path, a list of native events, or the raw bytes of a file) to rows of
  ``{id, verdict, reasons, task_success}`` plus any ``by`` field. The spec is
  shipped once per worker (an actor's constructor). Filtering rollouts by
  verdict and writing the verdict columns to Parquet are the usual next steps::

      judged = replay_dataset(ds, "spec.json", column="path")
      judged.filter(lambda r: r["verdict"] == "PASS").write_parquet("passing/")

Files are read by the Ray workers: on a cluster of many machines every path
must be readable on every node (a shared file system), or give the rows' bytes.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from os import PathLike
from typing import Any

from roadcheck._inputs import STDIN
from roadcheck.conformance import (
    CompiledSpec,
    ReplayInterrupted,
    ReplayResult,
    ReplayRun,
    ReplaySink,
    Spec,
    iter_replay,
)
from roadcheck.conformance.api import _spec_of
from roadcheck.conformance.batch import (
    _FileStart,
    _judged,
    _replay_event_list,
    _same,
    file_start,
    split_files,
)
from roadcheck.conformance.result import scalar_text
from roadcheck.errors import InputError
from roadcheck.integrations import require

require("ray", "ray")
import ray  # noqa: E402

__all__ = ["auto_batch_size", "replay_dataset", "replay_paths"]

#: Files per Ray task at least: enough to amortise a task's fixed cost.
DEFAULT_BATCH = 64
#: Files per Ray task at most: what one batch's results hold in the object store and the
#: driver, a few batches per CPU being in flight.
MAX_BATCH = 1024
#: Batches per CPU of the cluster that :func:`auto_batch_size` aims at.
_BATCHES_PER_CPU = 8
#: Times Ray runs a task again whose worker died (kill -9, a lost node).
RETRIES = 5

_COMPILED: dict[str | None, CompiledSpec] = {}


def _compiled(spec: Spec) -> CompiledSpec:
    """The spec compiled once per worker process (keyed by its sha256)."""
    key = spec.sha256
    found = _COMPILED.get(key) if key is not None else None
    if found is None:
        found = CompiledSpec(spec)
        if key is not None:
            _COMPILED[key] = found
    return found


def _judge_batch(spec: Spec, paths: Sequence[str], input_format: str | None,
                 render: Callable[[ReplayResult], Any] | None = None,
                 fold: Callable[[list[Any]], Any] | None = None) -> Any:
    """One batch of files judged in order: each file's start, then its results
    (through ``render`` when given, so that only the rendered text travels back).
    With ``fold`` (the report writer's, as a ``--jobs`` worker folds a chunk), what it
    makes of those items: the batch's counts and its rendered results as one block of
    bytes, so the driver adds counts and copies bytes instead of taking every file's
    start and result one by one."""
    items = list(_judged(_compiled(spec), paths, input_format, render or _same))
    return items if fold is None else fold(items)


_remote_batch = ray.remote(max_retries=RETRIES, retry_exceptions=False)(_judge_batch)


#: What a local instance started here is told: its workers at the priority of any other
#: process (Ray starts them at nice 15, which on a busy machine leaves them the CPU that
#: nothing else wants, where ``--jobs`` workers get their share).
LOCAL_SYSTEM_CONFIG = {"worker_niceness": 0}


def _init(address: str | None) -> bool:
    """Connect to Ray (a local instance without an address); True when this call started it."""
    if ray.is_initialized():
        return False
    local: dict[str, Any] = {} if address else {"_system_config": LOCAL_SYSTEM_CONFIG}
    try:
        ray.init(address=address or None, logging_level=logging.WARNING, log_to_driver=False,
                 include_dashboard=False, configure_logging=False, **local)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise InputError(f"cannot reach Ray at {address or 'a local instance'}: "
                         f"{' '.join(str(exc).split())}") from None
    return True


def _batches(paths: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(paths), size):
        yield list(paths[start:start + size])


def _cpus() -> int:
    """The CPUs of the cluster Ray is connected to (at least 1)."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))  # type: ignore[no-untyped-call]


def _window(cpus: int) -> int:
    """Batches in flight at once: two per CPU of the cluster, so no CPU waits for the
    driver, and the object store and the driver hold that many batches at most."""
    return max(2, 2 * cpus)


def auto_batch_size(files: int, cpus: int) -> int:
    """Files per task when none is given: about eight batches a CPU of the cluster, so
    that every CPU has work until the end, but no fewer than :data:`DEFAULT_BATCH` files
    (a task's fixed cost, Ray's and the driver's, is paid per batch) and no more than
    :data:`MAX_BATCH`. On one machine of 2 CPUs, 100,000 files took 9.5 s in batches of
    64 and 5.3 s in batches of 1,024 (``benchmarks/ray_replay.py``)."""
    return max(DEFAULT_BATCH, min(MAX_BATCH, files // (_BATCHES_PER_CPU * max(1, cpus))))


def replay_paths(spec: Spec, paths: Sequence[str], *, input_format: str | None = None,
                 address: str | None = None, batch_size: int | None = None,
                 render: Callable[[ReplayResult], Any] | None = None,
                 sink: ReplaySink | None = None) -> ReplayRun:
    """Replay trajectory files on Ray; the same :class:`ReplayRun` as a local replay.

    ``address`` names a running cluster (``ray://...`` or ``host:port``); none
    starts a local instance unless Ray is already initialised. ``batch_size`` is the
    files per task (default: :func:`auto_batch_size` for the cluster). ``render`` and
    ``sink`` are those of :func:`~roadcheck.conformance.replay_files`: with a sink,
    each batch's files and results go to it in order as they arrive and the
    driver keeps nothing, so its memory stays flat however many files there
    are; ``render`` then runs on the workers and must be picklable. A few
    batches per CPU are in flight at once. Ctrl-C raises
    :class:`~roadcheck.conformance.ReplayInterrupted` with the batches judged so far.
    """
    paths = list(paths)
    if STDIN in paths:
        raise InputError("--ray reads files on the Ray workers; standard input ('-') "
                         "cannot be sent there: save it to a file first")
    if batch_size is not None and batch_size < 1:
        raise InputError(f"batch size must be at least 1, not {batch_size}")
    started = _init(address)
    results: list[ReplayResult] = []
    formats: list[tuple[str, ...]] = []

    def deliver(item: Any) -> None:
        if isinstance(item, _FileStart):
            file_start(item, sink, formats)
        elif sink is not None:
            sink.result(item)
        else:
            results.append(item)

    # a report writer that folds (as under --jobs): each task returns its batch folded,
    # its counts and rendered results in one block of bytes, and the driver merges it
    fold = getattr(sink, "inline_fold", None) if sink is not None and render is not None \
        else None

    def take(ref: Any) -> None:
        got = ray.get(ref)
        if fold is not None:
            sink.merge(got)  # type: ignore[union-attr]
            return
        for item in got:
            deliver(item)

    try:
        spec_ref = ray.put(spec)  # shipped once; every task of a worker reads the same copy
        cpus = _cpus()
        window = _window(cpus)
        size = batch_size if batch_size is not None else auto_batch_size(len(paths), cpus)
        pending: deque[tuple[int, Any]] = deque()
        done = 0
        try:
            for batch in _batches(paths, size):
                pending.append((len(batch), _remote_batch.remote(spec_ref, batch, input_format,
                                                                 render, fold)))
                if len(pending) >= window:
                    n, ref = pending.popleft()
                    take(ref)
                    done += n
            while pending:
                n, ref = pending.popleft()
                take(ref)
                done += n
        except KeyboardInterrupt:
            for _, ref in pending:
                ray.cancel(ref, force=True)
            files, notes = split_files(formats)
            partial = ReplayRun(spec.source, results, files, interrupted=True,
                                spec_sha256=spec.sha256, notes=notes)
            raise ReplayInterrupted(partial, done, len(paths)) from None
        files, notes = split_files(formats)
        return ReplayRun(spec.source, results, files, spec_sha256=spec.sha256, notes=notes)
    finally:
        if started:
            ray.shutdown()


# -- Ray Data ------------------------------------------------------------------------------

def _row_results(compiled: CompiledSpec, value: Any, name: str,
                 input_format: str | None) -> list[ReplayResult]:
    """The results of one row's trajectory: a path, raw bytes or a list of events."""
    if isinstance(value, str):
        return list(iter_replay(compiled, [value], input_format=input_format))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return [_judge_bytes(compiled, bytes(value), name, input_format)]
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [_replay_event_list(compiled, [_present(e) for e in value], name)]
    from roadcheck.conformance.engine import error_result

    return [error_result(name, None, f"{name}: the row's trajectory is a "
                         f"{type(value).__name__}, not a path, bytes or a list of events")]


def _present(value: Any) -> Any:
    """An event as written: Arrow gives every struct every key seen, the missing ones null."""
    if isinstance(value, Mapping):
        return {k: _present(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_present(v) for v in value]
    return value


def _judge_bytes(compiled: CompiledSpec, data: bytes, name: str,
                 input_format: str | None) -> ReplayResult:
    """One trajectory given as the bytes of a file (a native JSONL file, or ``input_format``)."""
    from roadcheck.conformance import replay_events
    from roadcheck.conformance.engine import error_result
    from roadcheck.errors import TraceError
    from roadcheck.ingest import ReadFailure, detect_format, load
    from roadcheck.ingest.native import iter_events

    try:
        fmt = input_format or detect_format(data)
        if fmt == "native":
            return replay_events(compiled, iter_events(data, name), name, None)
        _, entries = load(name, fmt, data=data)
    except TraceError as exc:
        return error_result(name, None, exc.message)
    for entry in entries:
        if isinstance(entry, ReadFailure):
            return error_result(entry.id, None, entry.error.message, source=fmt)
        return replay_events(compiled, entry.events, name, None, source=entry.source,
                             meta=dict(entry.meta))
    return error_result(name, None, f"the {fmt} bytes hold no trajectory to judge", source=fmt)


def _field(result: ReplayResult, name: str) -> str | None:
    if name in result.final:
        return scalar_text(result.final[name])
    if name in result.meta:
        return scalar_text(result.meta[name])
    return None


#: The columns of every output row; a ``by`` field of the same name is already one of them.
_COLUMNS = ("id", "verdict", "reasons", "task_success")


class _Judge:
    """One Ray Data actor: the spec compiled once, then batch after batch of rows."""

    def __init__(self, spec: Spec, column: str, input_format: str | None, id_column: str | None,
                 by: Sequence[str]) -> None:
        self.compiled = CompiledSpec(spec)
        self.column, self.input_format = column, input_format
        self.id_column = id_column
        self.by = tuple(dict.fromkeys(f for f in by if f not in _COLUMNS))

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        if self.column not in batch.column_names:
            raise InputError(f"the dataset has no column {self.column!r} (columns: "
                             f"{', '.join(batch.column_names)})")
        values = batch.column(self.column).to_pylist()
        ids = (batch.column(self.id_column).to_pylist() if self.id_column is not None
               else [None] * len(values))
        out: dict[str, list[Any]] = {"id": [], "verdict": [], "reasons": [],
                                     "task_success": []}
        for name in self.by:
            out[name] = []
        for value, given in zip(values, ids, strict=True):
            name = str(given) if given is not None else (
                value if isinstance(value, str) else "<row>")
            for result in _row_results(self.compiled, value, name, self.input_format):
                out["id"].append(result.id)
                out["verdict"].append(result.verdict)
                out["reasons"].append([r.code for r in result.reasons])
                out["task_success"].append(result.task_success)
                for field in self.by:
                    out[field].append(_field(result, field))
        schema = pa.schema([("id", pa.string()), ("verdict", pa.string()),
                            ("reasons", pa.list_(pa.string())), ("task_success", pa.bool_()),
                            *((name, pa.string()) for name in self.by)])
        return pa.table(out, schema=schema)


def replay_dataset(ds: Any, spec: Spec | Mapping[str, Any] | str | PathLike[str], *,
                   column: str = "path", input_format: str | None = None,
                   id_column: str | None = None, by: Sequence[str] = (),
                   batch_size: int = 256, concurrency: int = 2) -> Any:
    """Map a Ray Dataset of trajectories to a Dataset of verdicts.

    Each row's ``column`` holds one trajectory: a file path (a file holding many
    trajectories gives one row each), the raw bytes of a file, or a list of
    native event dicts. The output rows are ``{"id", "verdict" (PASS, BLOCK or
    ERROR), "reasons" (the reason codes, headline first), "task_success"}`` plus
    one text column per ``by`` field of the final event (null when absent).
    ``id_column`` names a column holding each row's id. Up to ``concurrency``
    actors each compile the spec once.

    Ray Data stores rows as Arrow, which gives every event every key any event
    of the column has, the missing ones null: a null field of an event is
    therefore read as absent. Give the raw bytes where a null must stay a null.
    """
    loaded = _spec_of(spec)
    return ds.map_batches(_Judge, batch_format="pyarrow", batch_size=batch_size,
                          concurrency=(1, max(1, concurrency)),
                          fn_constructor_kwargs={"spec": loaded, "column": column,
                                                 "input_format": input_format,
                                                 "id_column": id_column, "by": tuple(by)})
