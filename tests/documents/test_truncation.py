"""A spec or checkpoint cut short at a line boundary never judges more leniently.

Each example document is cut after every line. A cut that leaves an incomplete
rule must be an error (exit 2); a cut that still loads must judge every probe
trajectory (or the resume) at least as strictly as the whole document. Cuts
that leave a complete, valid document are caught by pinning the sha256.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from roadcheck.conformance import Spec, load_spec, replay_events
from roadcheck.conformance.spec import guarded_actions
from roadcheck.errors import SpecError
from roadcheck.events import Event
from roadcheck.revalidation import load_checkpoint, revalidate

from ..conftest import DATA, EXAMPLES
from ..trajectories import events as _events

SPECS = [EXAMPLES / "tau" / "airline.yaml", EXAMPLES / "tau" / "retail.yaml",
         EXAMPLES / "spec.json", DATA / "frameworks" / "spec.yaml"]
CHECKPOINTS = [EXAMPLES / "resume" / "video", EXAMPLES / "resume" / "chain"]
NOW = "2026-08-10T15:00:00Z"
STRICTNESS = {"continue": 0, "reconcile_first": 1, "escalate": 2}


def cuts(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Every proper prefix of ``data`` that ends at a line boundary."""
    lines = data.splitlines(keepends=True)
    for n in range(len(lines)):
        yield n, b"".join(lines[:n])


def _matching(selector: dict[str, Any]) -> dict[str, Any]:
    """An event record that the (plain-valued) selector matches."""
    rec = {k: v for k, v in selector.items() if not isinstance(v, dict)}
    return rec


def probes(spec: Spec) -> list[list[Event]]:
    """Trajectories the whole spec judges, one per thing a rule checks."""
    out = []
    for rule in spec.mandatory_checkpoints:
        who = {"confirmed_by": rule.confirmed_by[0]} if rule.confirmed_by else {}
        cp = {"event": "checkpoint", "checkpoint_id": rule.checkpoint_id, **who}
        voiders = [_matching(msgspec.to_builtins(s)) for s in rule.voided_by]
        guarded = guarded_actions(rule)
        for action in guarded:
            act = {"event": "action", "action_type": action}
            first = {"event": "action", "action_type": guarded[0]}
            out.append(_events(act))
            out.extend(_events(cp, v, act) for v in voiders)
            out.append(_events(cp, first, *voiders, act))
            out.append(_events(cp, first, first, act))
            if rule.confirmed_by:
                out.append(_events({**cp, "confirmed_by": "someone-else"}, act))
    for c in spec.handoff_contracts:
        hand = {"event": "handoff", "agent": c.from_agent, "from_agent": c.from_agent,
                "to_agent": c.to_agent}
        out.append(_events({**hand, "payload": {}}))
        out.append(_events({**hand, "payload": dict.fromkeys(c.required_fields, 1)}))
    return out


def whole_rules(cut: Spec, whole: Spec) -> bool:
    """True when every list of ``cut`` is a prefix of the same list of ``whole``."""
    return all(list(getattr(whole, name))[:len(getattr(cut, name))] == list(getattr(cut, name))
               for name in ("mandatory_checkpoints", "handoff_contracts", "derive"))


def verdicts(spec: Spec, trajectories: list[list[Event]]) -> list[str]:
    return [replay_events(spec, t).verdict for t in trajectories]


class TestSpecTruncation:
    """Replay specs cut after every line."""

    @pytest.mark.parametrize("source", SPECS, ids=lambda p: p.name)
    def test_a_rule_is_never_cut_in_half(self, source: Path, tmp_path: Path) -> None:
        """A cut that loads holds whole rules only: each list a prefix of the whole spec's.

        Whatever such a cut judges more leniently, it does so by leaving out whole
        rules or sections, which only the sha256 pin can tell.
        """
        whole = load_spec(source)
        halves = []
        for n, data in cuts(source.read_bytes()):
            cut = tmp_path / f"cut{n}{source.suffix}"
            cut.write_bytes(data)
            try:
                spec = load_spec(cut)
            except SpecError:
                continue
            if not whole_rules(spec, whole):
                halves.append(n)
        assert halves == []

    @pytest.mark.parametrize("source", SPECS[:3], ids=lambda p: p.name)
    def test_the_examples_never_judge_more_leniently(self, source: Path,
                                                     tmp_path: Path) -> None:
        """The example specs are laid out so that every cut is unusable or judges the same."""
        whole = load_spec(source)
        trajectories = probes(whole)
        expected = verdicts(whole, trajectories)
        assert "BLOCK" in expected
        for n, data in cuts(source.read_bytes()):
            cut = tmp_path / f"cut{n}{source.suffix}"
            cut.write_bytes(data)
            try:
                spec = load_spec(cut)
            except SpecError:
                continue
            got = verdicts(spec, trajectories)
            assert all(b == "BLOCK" for a, b in zip(expected, got, strict=True)
                       if a == "BLOCK"), f"cut after line {n} judges more leniently"

    @pytest.mark.parametrize("source", SPECS, ids=lambda p: p.name)
    def test_a_pinned_sha256_refuses_every_cut(self, source: Path, tmp_path: Path) -> None:
        """With the whole spec's sha256 pinned, no cut loads at all."""
        pin = load_spec(source).sha256
        assert pin is not None and len(pin) == 64
        assert load_spec(source, expect_sha256=pin).sha256 == pin
        for n, data in cuts(source.read_bytes()):
            cut = tmp_path / f"cut{n}{source.suffix}"
            cut.write_bytes(data)
            with pytest.raises(SpecError):
                load_spec(cut, expect_sha256=pin)


class TestCheckpointTruncation:
    """Resume checkpoints cut after every line."""

    @pytest.mark.parametrize("example", CHECKPOINTS, ids=lambda p: p.name)
    def test_no_cut_decides_more_leniently(self, example: Path, tmp_path: Path) -> None:
        """Every cut either fails to load or decides at least as strictly as the whole."""
        site = tmp_path / example.name
        shutil.copytree(example, site)
        whole = revalidate(site / "checkpoint.yaml", now=NOW).decision
        lenient = []
        for n, data in cuts((example / "checkpoint.yaml").read_bytes()):
            cut = site / "cut.yaml"
            cut.write_bytes(data)
            try:
                decision = revalidate(cut, now=NOW).decision
            except SpecError:
                continue
            if STRICTNESS[decision] < STRICTNESS[whole]:
                lenient.append((n, decision))
        assert lenient == []

    @pytest.mark.parametrize("example", CHECKPOINTS, ids=lambda p: p.name)
    def test_a_pinned_sha256_refuses_every_cut(self, example: Path, tmp_path: Path) -> None:
        """With the whole checkpoint's sha256 pinned, no cut loads at all."""
        pin = load_checkpoint(example / "checkpoint.yaml").sha256
        for n, data in cuts((example / "checkpoint.yaml").read_bytes()):
            cut = tmp_path / f"cut{n}.yaml"
            cut.write_bytes(data)
            with pytest.raises(SpecError):
                load_checkpoint(cut, expect_sha256=pin)
