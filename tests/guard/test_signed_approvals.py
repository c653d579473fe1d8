"""Signed approvals: a rule whose ``confirmed_by`` names a key id counts only a checkpoint
carrying that key's valid, unexpired signature over the very call it approves."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.documents.approval import Approval
from roadcheck.events import args_digest
from roadcheck.evidence.approval import approval_problem, sign_approval
from roadcheck.evidence.signing import SigningKey, new_key_pair
from roadcheck.guard import Guard

ARGS = {"to": "cfo"}
CALL = {"event": "action", "action_type": "send_report", "args": ARGS, "call_id": "c1"}


def _later(seconds: int = 600) -> str:
    when = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")


def _spec(key: SigningKey) -> dict[str, Any]:
    return {"mandatory_checkpoints": [{
        "checkpoint_id": "confirm", "must_precede": "send_report",
        "confirmed_by": [key.key_id], "binds": {"tool": True, "args": True, "call": True}}]}


def _approval(key: SigningKey, **over: Any) -> Approval:
    fields: dict[str, Any] = {"checkpoint_id": "confirm", "tool": "send_report",
                              "args_sha256": args_digest(ARGS), "call_id": "c1",
                              "expires_at": _later()}
    fields.update(over)
    return sign_approval(key, **fields)


def test_a_signed_approval_licenses_its_call() -> None:
    key = SigningKey.generate()
    guard = Guard(_spec(key))
    asked = guard.check(CALL)
    assert asked.verdict == "ask"
    (event,) = guard.approve(asked, "anyone", approval=_approval(key))
    assert event.data["confirmed_by"] == key.key_id
    assert guard.check(CALL).verdict == "allow"


def test_a_name_is_not_a_key() -> None:
    """A checkpoint that only says it was confirmed by the key id (no signature) is
    ignored: the key id in confirmed_by is not a password."""
    key = SigningKey.generate()
    guard = Guard(_spec(key))
    guard.observe({"event": "checkpoint", "checkpoint_id": "confirm", "confirmed_by": key.key_id,
                   "tool": "send_report", "args_sha256": args_digest(ARGS), "call_id": "c1",
                   "ts": "2026-01-01T00:00:00Z"})
    decision = guard.check(CALL)
    assert decision.verdict == "ask"
    assert "carries no signed approval" in decision.reasons[0].message


@pytest.mark.parametrize("forgery", ["other-key", "edited-call", "expired", "other-checkpoint",
                                     "bad-signature"])
def test_a_forged_or_stale_approval_does_not_count(forgery: str) -> None:
    key, other = SigningKey.generate(), SigningKey.generate()
    guard = Guard(_spec(key))
    good = _approval(key)
    doc = msgspec.to_builtins(good)
    if forgery == "other-key":
        doc = msgspec.to_builtins(_approval(other))
    elif forgery == "edited-call":
        doc["args_sha256"] = args_digest({"to": "everyone"})
    elif forgery == "expired":
        doc = msgspec.to_builtins(_approval(key, expires_at="2020-01-01T00:00:00Z"))
    elif forgery == "other-checkpoint":
        doc = msgspec.to_builtins(_approval(key, checkpoint_id="other"))
    else:
        doc["signature"] = doc["signature"][:-2] + ("AA" if doc["signature"][-2:] != "AA"
                                                    else "AB")
    guard.observe({"event": "checkpoint", "checkpoint_id": "confirm", "confirmed_by": key.key_id,
                   "tool": "send_report", "args_sha256": args_digest(ARGS), "call_id": "c1",
                   "ts": _later(0), "approval": doc})
    assert guard.check(CALL).verdict == "ask"


def test_approval_problem_names_each_failure() -> None:
    key = SigningKey.generate()
    good = msgspec.to_builtins(_approval(key))
    call = {"tool": "send_report", "args_sha256": args_digest(ARGS), "call_id": "c1"}
    now = _later(0)
    assert approval_problem(good, key_id=key.key_id, checkpoint_id="confirm", call=call,
                            at=now) is None
    assert "no time" in str(approval_problem(good, key_id=key.key_id, checkpoint_id="confirm",
                                             call=call, at=None))
    other = SigningKey.generate().key_id
    assert f"not {other}" in str(approval_problem(good, key_id=other, checkpoint_id="confirm",
                                                  call=call, at=now))
    assert "names call_id" in str(approval_problem(good, key_id=key.key_id,
                                                   checkpoint_id="confirm",
                                                   call={**call, "call_id": "c2"}, at=now))
    assert "not an approval" in str(approval_problem({"tool": 1}, key_id=key.key_id,
                                                     checkpoint_id="confirm", call=call, at=now))


def test_replay_checks_the_signature_too(tmp_path: Path) -> None:
    """A recorded session with a signed checkpoint passes replay; the same session with the
    approval's call edited is a violation."""
    key = SigningKey.generate()
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(_spec(key)))
    approval = msgspec.to_builtins(_approval(key))
    checkpoint = {"seq": 1, "event": "checkpoint", "checkpoint_id": "confirm",
                  "confirmed_by": key.key_id, "tool": "send_report",
                  "args_sha256": args_digest(ARGS), "call_id": "c1", "ts": _later(0),
                  "approval": approval}
    action = {**CALL, "seq": 2}
    final = json.dumps({"seq": 3, "event": "final", "task_success": True})
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text(f"{json.dumps(checkpoint)}\n{json.dumps(action)}\n{final}\n")
    edited = {**approval, "call_id": "c9"}
    bad.write_text(f"{json.dumps({**checkpoint, 'approval': edited})}\n{json.dumps(action)}\n"
                   f"{final}\n")
    ok = CliRunner().invoke(cli, ["replay", str(spec), str(good)])
    assert ok.exit_code == 0, ok.output
    broken = CliRunner().invoke(cli, ["replay", str(spec), str(bad)])
    assert broken.exit_code == 1, broken.output
    assert "approval" in broken.output


def test_guard_approve_signs_with_a_key(tmp_path: Path) -> None:
    """``roadcheck guard approve --key`` signs the approval of the call and records it in
    the session, confirmed by the key's id: the guard then allows that call, and only it."""
    from roadcheck.guard.store import GuardStore

    pem, spec = tmp_path / "approver", tmp_path / "spec.json"
    key = new_key_pair(pem)
    spec.write_text(json.dumps(_spec(key)))
    state, guard_key = tmp_path / "state", tmp_path / "guard.key"
    store = GuardStore(state, str(spec), key_file=str(guard_key))
    with store.session("s", create=True) as live:
        assert live.check(CALL).verdict == "ask"
    base = ["guard", "approve", "--spec", str(spec), "--state-dir", str(state),
            "--key-file", str(guard_key), "--session", "s", "--checkpoint", "confirm",
            "--tool", "send_report", "--args-sha256", args_digest(ARGS), "--call-id", "c1"]
    result = CliRunner().invoke(cli, [*base, "--key", str(pem), "--expires-in", "300"])
    assert result.exit_code == 0, result.output
    assert f"approved by {key.key_id}" in result.stdout
    with GuardStore(state, str(spec), key_file=str(guard_key)).session("s") as live:
        assert live.check(CALL).verdict == "allow"
        assert live.check({**CALL, "call_id": "c2"}).verdict == "ask"
    both = CliRunner().invoke(cli, [*base, "--by", "x", "--key", str(pem)])
    assert both.exit_code == 2 and "not both" in both.stderr
    missing = CliRunner().invoke(cli, [*base[:-6], "--key", str(pem)])
    assert missing.exit_code == 2 and "--tool" in missing.stderr
    nobody = CliRunner().invoke(cli, base)
    assert nobody.exit_code == 2 and "--by NAME, or --key PEM" in nobody.stderr
    bad = CliRunner().invoke(cli, [*base, "--key", str(tmp_path / "none")])
    assert bad.exit_code == 2
    assert len(bad.stderr.strip().splitlines()) == 1


def test_guard_serve_takes_a_signed_approval(tmp_path: Path) -> None:
    """/approve carries the signed approval through to the stored session: the next check
    allows the call; a forged one is refused and the call is still asked about."""
    import threading

    from roadcheck.guard.serve import GuardServer
    from roadcheck.guard.store import GuardStore

    from .test_serve import AUTH, TOKEN, Client

    key = SigningKey.generate()
    store = GuardStore(tmp_path / "state", _spec(key), key_file=str(tmp_path / "guard.key"))
    server = GuardServer(store, "127.0.0.1", 0, approve_token=TOKEN)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        client = Client(server)
        client.post("/v1/sessions/s")
        forged = {**msgspec.to_builtins(_approval(key)), "call_id": "c9"}
        status, doc = client.post("/v1/sessions/s/approve",
                                  {"event": CALL, "by": "x", "approval": forged}, headers=AUTH)
        assert status == 200 and doc["verdict"] == "ask"
        status, doc = client.post("/v1/sessions/s/approve",
                                  {"event": CALL, "by": "x", "approval": {"tool": 1}},
                                  headers=AUTH)
        assert status == 400 and "not a signed approval" in doc["error"]
        status, doc = client.post("/v1/sessions/s/approve",
                                  {"event": CALL, "by": "x",
                                   "approval": msgspec.to_builtins(_approval(key))},
                                  headers=AUTH)
        assert status == 200 and doc["verdict"] == "allow", doc
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
