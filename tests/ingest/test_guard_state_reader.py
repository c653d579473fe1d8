"""The guard session reader: a session's guard.json is a trajectory replay judges."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadcheck.conformance import load_spec, replay_events
from roadcheck.ingest import ReadFailure, detect_format, load

ROOT = Path(__file__).resolve().parent.parent.parent
RECORDED = ROOT / "tests" / "data" / "guard-state" / "mcp_session.json"
SPEC = ROOT / "tests" / "guard" / "mcp" / "spec.yaml"


def test_a_recorded_proxy_session_reads_and_passes() -> None:
    fmt, entries = load(str(RECORDED))
    assert fmt == "guard-state"
    (trajectory,) = entries
    assert trajectory.meta == {"session": "mcp-recorded"}
    kinds = [(e.kind, e.data.get("action_type") or e.data.get("checkpoint_id"))
             for e in trajectory.events if e.kind != "message"]
    assert kinds == [("action", "list_files"), ("checkpoint", "approve_send"),
                     ("action", "send_report")]
    assert trajectory.events[0].data["read_only_hint"] is True
    assert replay_events(load_spec(SPEC), trajectory.events, trajectory.id).verdict == "PASS"


@pytest.mark.parametrize(("payload", "says"), [
    (b"{not json", "not JSON"),
    (b'{"format": "other", "events": []}', "not roadcheck-guard-state/3"),
    (b'{"format": "roadcheck-guard-state/3", "events": {}}', "'events' must be a list"),
    (b'{"format": "roadcheck-guard-state/3", "events": [{"seq": 1}]}', "events[0]"),
    (b'{"format": "roadcheck-guard-state/3", "events": [{"seq": 2, "event": "message", '
     b'"role": "user"}, {"seq": 1, "event": "message", "role": "user"}]}',
     "events[1]: seq 1 does not follow seq 2"),
])
def test_a_broken_state_is_one_located_error(tmp_path: Path, payload: bytes, says: str) -> None:
    path = tmp_path / "guard.json"
    path.write_bytes(b"roadcheck-seal/1 kind=state name=s n=1 bind=- len=1 auth=none key=- "
                     b"mac=" + b"0" * 64 + b"\n" + payload)
    assert detect_format(path.read_bytes()) == "guard-state"
    _, (entry,) = load(str(path))
    assert isinstance(entry, ReadFailure)
    assert says in entry.error.message
    assert entry.error.line == 2
