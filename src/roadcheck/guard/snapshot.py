"""Snapshots: a guard's compiled spec and engine state, so a new process need not rebuild them.

A hook is a new process per call. Without a snapshot it would read and check
the spec document, compile it, then feed every stored event of the session to
a fresh engine before it could answer. Two caches spare that work:

* the **spec cache** (``<state dir>/.specs/<sha256>``): the checked spec, keyed
  by the sha256 of the spec file's bytes, so an edited spec is read and checked
  afresh;
* the **session snapshot** (``<session>/guard.snapshot``): the engine's state
  after the session's events, keyed by the spec's sha256 and the MAC of the
  session's state file (``guard.json``) it was taken from.

Both are caches, never the record: the state file holds the events, and it is
the one written durably. Both are sealed like every guard file (see
:mod:`roadcheck.guard.seal`): one that does not verify, or belongs to another
session, is refused. A verified snapshot is used only when its format, the
roadcheck version, the Python version and both keys match; anything else (a
torn write, another spec, a state file that moved on, an engine whose state
has changed shape) is ignored and the state is rebuilt from the events, which
are checked as they are fed. They are written with an atomic rename but no
fsync: a snapshot lost in a crash is rebuilt.

The payload is :mod:`marshal` data (Python's own fast format for plain values),
read only after its seal verifies.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roadcheck._version import __version__
from roadcheck.conformance.engine import _RuleState
from roadcheck.conformance.result import Finding
from roadcheck.conformance.spec import Spec
from roadcheck.events import Event
from roadcheck.findings import Location
from roadcheck.reasons import Reason

if TYPE_CHECKING:
    from roadcheck.guard.core import Guard

__all__ = ["SNAPSHOT", "dump_spec", "dump_state", "load_spec", "restore_state"]

SNAPSHOT = "guard.snapshot"
_FORMAT = "roadcheck-guard-snapshot/1"
#: What a snapshot must have been written by to be read back.
_WRITER = (_FORMAT, __version__, sys.implementation.cache_tag, marshal.version)
#: The per-rule state the engine keeps (the rule itself comes from the spec).
_SLOTS = tuple(s for s in _RuleState.__slots__ if s != "rule")
#: A finding's fields and its location's: a snapshot of another shape is not read back.
_FINDING_FIELDS = Finding.__struct_fields__ + Location.__struct_fields__
#: Replayer attributes holding findings, and the one holding an event.
_FINDINGS = frozenset({"failures", "handoff_reasons", "warnings", "gate_findings"})
#: The Guard attributes a snapshot restores or the spec rebuilds; a Guard holding
#: anything else is not snapshotted (its state would be lost).
_GUARD_STATE = ("_confirmers", "_ended", "_last")
_GUARD_REBUILT = frozenset({"spec", "compiled", "approver", "log", "_replayer", "records"})
_CODES: dict[str, Reason] = {r.value: r for r in Reason}


# -- framing -------------------------------------------------------------------------------

def _frame(value: Any) -> bytes | None:
    """The value as a snapshot payload: marshal data naming its writer."""
    try:
        return marshal.dumps((_WRITER, value))
    except ValueError:  # an object marshal cannot hold: no snapshot, the state is rebuilt
        return None


def _unframe(payload: bytes) -> Any:
    """The value of a snapshot payload, or None when it is not one this process wrote."""
    try:
        writer, value = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    return value if writer == _WRITER else None


def write_cache(path: Path, data: bytes) -> None:
    """Replace a cache file atomically, without fsync; a failure leaves no cache, not an error."""
    from roadcheck.guard import files

    try:
        files.make_dir(path.parent)
        files.write(path, data, durable=False)
    except (OSError, files.StateFileError):
        pass


#: How many checked specs the spec cache keeps: an edit of the spec file adds one, and
#: the least recently written beyond these are removed (read again when needed).
SPEC_CACHE_KEEP = 16


def prune_cache(directory: Path, keep: int = SPEC_CACHE_KEEP) -> None:
    """Remove all but the ``keep`` newest cache files of ``directory``; never an error.

    A file another process is reading at that moment is read whole or not at all
    (then it checks the spec again), so removing it costs at most a re-read.
    """
    try:
        with os.scandir(directory) as entries:
            found = [(e.stat().st_mtime_ns, e.path) for e in entries
                     if not e.name.startswith(".") and e.is_file(follow_symlinks=False)]
    except OSError:
        return
    found.sort(reverse=True)
    for _, path in found[keep:]:
        with contextlib.suppress(OSError):
            os.unlink(path)


def read_cache(path: Path) -> bytes | None:
    """A cache file's bytes, or None when there is none.

    What is not a regular file there (a FIFO, a link, a directory) is refused
    (:class:`~roadcheck.guard.files.StateFileError`), never waited on.
    """
    from roadcheck.guard import files

    return files.read(path)


# -- the spec ------------------------------------------------------------------------------

def dump_spec(spec: Spec) -> bytes | None:
    """A checked spec (one the loader read) as a cache payload; None for one built unchecked.

    The document's structs are kept in msgspec's MessagePack, which reads them back
    into the same structs.
    """
    if not spec.checked:
        return None
    import msgspec

    return _frame((msgspec.msgpack.encode(spec.doc), spec.sha256))


def load_spec(raw: bytes, source: str, sha256: str) -> Spec | None:
    """The spec a cache payload holds, when it is the spec whose bytes hash to ``sha256``."""
    value = _unframe(raw)
    if (type(value) is not tuple or len(value) != 2 or type(value[0]) is not bytes
            or value[1] != sha256):
        return None
    import msgspec

    from roadcheck.documents.spec import SpecDoc

    try:
        doc = msgspec.msgpack.decode(value[0], type=SpecDoc)
    except msgspec.DecodeError:  # a payload of another shape: read the spec afresh
        return None
    return Spec(doc, source, sha256, checked=True)


# -- the engine state ----------------------------------------------------------------------

def _snapshottable(guard: Guard) -> bool:
    return set(vars(guard)) == _GUARD_REBUILT | set(_GUARD_STATE)


def _finding(f: Finding) -> tuple[Any, ...]:
    return (str(f.code), f.message, f.location.as_tuple(), f.severity)


def _unfinding(t: tuple[Any, ...]) -> Finding:
    code, message, location, severity = t
    return Finding(_CODES.get(code, code), message, Location(*location), severity)


def dump_state(guard: Guard, spec_sha256: str, state_sha256: str) -> bytes | None:
    """The guard's engine state as a snapshot payload, keyed by the spec and the state file."""
    if not _snapshottable(guard):
        return None
    r = guard._replayer
    names = tuple(sorted(n for n in vars(r) if n != "c"))
    values = []
    for name in names:
        value = getattr(r, name)
        if name == "states":
            value = tuple(tuple([_finding(f) for f in st.failures] if slot == "failures"
                                else getattr(st, slot) for slot in _SLOTS) for st in value)
        elif name in _FINDINGS:
            value = [_finding(f) for f in value]
        elif name == "final" and value is not None:
            value = tuple(value)
        values.append(value)
    return _frame((spec_sha256, state_sha256, _SLOTS, _FINDING_FIELDS, names, tuple(values),
                   tuple(getattr(guard, n) for n in _GUARD_STATE)))


def restore_state(guard: Guard, raw: bytes, spec_sha256: str, state_sha256: str) -> bool:
    """Put a snapshot's engine state into a fresh ``guard``; False when it does not apply."""
    value = _unframe(raw)
    if value is None or not _snapshottable(guard):
        return False
    spec_key, state_key, slots, finding_fields, names, values, kept = value
    r = guard._replayer
    if (spec_key, state_key, slots, finding_fields) != (spec_sha256, state_sha256, _SLOTS,
                                                        _FINDING_FIELDS) \
            or names != tuple(sorted(n for n in vars(r) if n != "c")) \
            or len(values[names.index("states")]) != len(r.states):
        return False
    for name, value in zip(names, values, strict=True):
        if name == "states":
            for st, row in zip(r.states, value, strict=True):
                for slot, v in zip(_SLOTS, row, strict=True):
                    setattr(st, slot, [_unfinding(f) for f in v] if slot == "failures" else v)
            continue
        if name in _FINDINGS:
            value = [_unfinding(f) for f in value]
        elif name == "final" and value is not None:
            value = Event(*value)
        setattr(r, name, value)
    for name, v in zip(_GUARD_STATE, kept, strict=True):
        setattr(guard, name, v)
    return True
