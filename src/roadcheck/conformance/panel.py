"""Several judges over one reading: each trajectory read once, its events fed to the
replayer of every spec of the panel, and to watchers that count what they saw.

``roadcheck diff`` judges every run with two specs; ``roadcheck spec check`` judges
them with one and counts, per rule, what each event reached. Both read the files
exactly as replay does (:func:`~roadcheck.conformance.batch.iter_replay`, the same
detection, readers and crash isolation): the first spec's :class:`Replayer` is what
the batch sees, and the others are fed the same list of events beside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from roadcheck.conformance.engine import CompiledSpec, Replayer
from roadcheck.conformance.result import ReplayResult
from roadcheck.conformance.spec import Spec
from roadcheck.events import Event

__all__ = ["Panel", "Watcher", "judge_paths"]


class Watcher(Protocol):
    """What sees each judged trajectory's events, then the first spec's verdict on it."""

    def events(self, events: Sequence[Event]) -> None:
        """The trajectory's events, in order."""

    def judged(self, result: ReplayResult) -> None:
        """The verdict of the panel's first spec on the events just seen."""


class Panel(CompiledSpec):
    """The first spec compiled, with the other specs and the watchers that see the same
    events; :meth:`replayer` gives the one replayer that feeds them all."""

    def __init__(self, spec: Spec, others: Sequence[Spec] = (),
                 watchers: Sequence[Watcher] = ()) -> None:
        super().__init__(spec)
        self.others = [CompiledSpec(s) for s in others]
        self.watchers = list(watchers)
        # A reader keeps the free text when any spec, or a watcher, may read it.
        self.typed = self.typed and not self.watchers and all(o.typed for o in self.others)
        #: The verdicts of every spec on the trajectory just judged (taken by judge_paths).
        self.verdicts: list[tuple[ReplayResult, ...]] = []

    def replayer(self, *, locate_messages: bool = False) -> Replayer:
        return _PanelReplayer(self, locate_messages=locate_messages)


class _PanelReplayer(Replayer):
    """The first spec's replayer, feeding the other specs' replayers and the watchers."""

    def __init__(self, panel: Panel, *, locate_messages: bool = False) -> None:
        super().__init__(panel, locate_messages=locate_messages)
        self.panel = panel
        self.others = [Replayer(o, locate_messages=locate_messages) for o in panel.others]
        self.seen: list[Event] = []

    def feed_all(self, events: Iterable[Event]) -> None:
        batch = events if isinstance(events, list) else list(events)
        if self.panel.watchers:
            self.seen.extend(batch)
        super().feed_all(batch)
        for other in self.others:
            other.feed_all(batch)

    def finish(self, traj_id: str, path: str | None, *, source: str = "native",
               meta: dict[str, Any] | None = None) -> ReplayResult:
        first = super().finish(traj_id, path, source=source, meta=meta)
        rest = [o.finish(traj_id, path, source=source, meta=meta) for o in self.others]
        for watcher in self.panel.watchers:
            watcher.events(self.seen)
            watcher.judged(first)
        self.panel.verdicts.append((first, *rest))
        return first


def judge_paths(panel: Panel, paths: Iterable[str], *, input_format: str | None = None
                ) -> Iterator[tuple[ReplayResult, ...]]:
    """Each trajectory of ``paths`` read once and judged by every spec of the panel: one
    verdict per spec, in the panel's order. A trajectory that could not be read (or
    judged) is the same ERROR under every spec, and no watcher saw it."""
    from roadcheck.conformance.batch import iter_replay

    size = 1 + len(panel.others)
    for result in iter_replay(panel, list(paths), input_format=input_format):
        if panel.verdicts and panel.verdicts[-1][0] is result:
            yield panel.verdicts[-1]
        else:
            yield (result,) * size
        panel.verdicts.clear()
