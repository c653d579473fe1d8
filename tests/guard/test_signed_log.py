"""A guard signing its decision log with an Ed25519 key, and ``roadcheck audit
--public-key`` checking the log and the signed approvals in it with the public key alone."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import msgspec
import orjson
import pytest
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.evidence.signing import SigningKey, new_key_pair
from roadcheck.evidence.store import SqliteStore
from roadcheck.guard.store import GuardStore, decision_record

from .test_signed_approvals import CALL, _approval, _spec


def _session(tmp_path: Path, *, sign: bool = True) -> tuple[Path, Path, SigningKey]:
    """A session whose call was asked, approved with a signed approval, then allowed."""
    approver = new_key_pair(tmp_path / "approver")
    if sign:
        new_key_pair(tmp_path / "guard-sign")
    state = tmp_path / "state"
    store = GuardStore(state, _spec(approver), key_file=str(tmp_path / "guard.key"),
                       sign_key_file=str(tmp_path / "guard-sign") if sign else None)
    with store.session("s", create=True) as live:
        asked = live.check(CALL)
        assert asked.verdict == "ask"
        live.guard.approve(asked, "x", approval=_approval(approver))
        assert live.check(CALL).verdict == "allow"
    return state, tmp_path / "approver.pub", approver


def _audit(state: Path, *keys: Path) -> tuple[int, str]:
    args = ["audit", "s", "--runs-dir", str(state)]
    for key in keys:
        args += ["--public-key", str(key)]
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.stdout + result.stderr


def test_a_signed_log_verifies_with_the_public_keys_alone(tmp_path: Path) -> None:
    state, approver_pub, approver = _session(tmp_path)
    code, out = _audit(state, tmp_path / "guard-sign.pub", approver_pub)
    sign_id = json.loads(
        SqliteStore(state / "s", "s").side_doc("signature") or "{}")["key_id"]
    assert code == 0, out
    assert f"signed: decision log: 2 records signed by key {sign_id}" in out
    assert "signed: 1 signed approvals verify" in out
    assert "chain: OK" in out and approver.key_id != sign_id


def _append_unsigned(state: Path, tmp_path: Path) -> None:
    """A decision appended by someone with the guard's HMAC key but not the signing key."""
    from roadcheck.guard import seal
    from roadcheck.guard.core import Guard

    key = seal.guard_key(tmp_path / "guard.key").key
    log = SqliteStore(state / "s", "s", key)
    decision = Guard(_spec(SigningKey.generate())).check(CALL)
    log.extend([decision_record("s", 3, decision, "x", "2026-01-01T00:00:00Z")])
    log.close()


def _forge_signature(state: Path, tmp_path: Path) -> None:
    db = sqlite3.connect(state / "s" / "evidence.sqlite")
    (doc,) = db.execute("SELECT doc FROM side WHERE name = 'signature'").fetchone()
    signed = orjson.loads(doc)
    signed["signature"] = SigningKey.generate().sign({"anything": 1})
    db.execute("UPDATE side SET doc = ? WHERE name = 'signature'", (orjson.dumps(signed).decode(),))
    db.commit()
    db.close()


def _edit_approval(state: Path, tmp_path: Path) -> None:
    path = state / "s" / "guard.json"
    line, _, payload = path.read_bytes().partition(b"\n")
    doc = orjson.loads(payload)
    for event in doc["events"]:
        if "approval" in event:
            event["approval"]["expires_at"] = "2099-01-01T00:00:00Z"
    path.write_bytes(line + b"\n" + orjson.dumps(doc))


@pytest.mark.parametrize(("forgery", "says"), [
    (_append_unsigned, "is not this log (3 records)"),
    (_forge_signature, "does not verify with key"),
    (_edit_approval, "approval's signature does not verify"),
])
def test_a_forged_log_or_approval_is_reported(tmp_path: Path,
                                           forgery: Callable[[Path, Path], None],
                                           says: str) -> None:
    state, approver_pub, _ = _session(tmp_path)
    assert _audit(state, tmp_path / "guard-sign.pub", approver_pub)[0] == 0
    forgery(state, tmp_path)
    code, out = _audit(state, tmp_path / "guard-sign.pub", approver_pub)
    assert code == 1, out
    assert "signature: BROKEN:" in out and says in out
    page = tmp_path / "audit.html"
    CliRunner().invoke(cli, ["audit", "s", "--runs-dir", str(state), "--html", str(page),
                             "--public-key", str(tmp_path / "guard-sign.pub"),
                             "--public-key", str(approver_pub)])
    html = page.read_text()
    assert "signature BROKEN" in html and 'class="banner outcome bad"' in html


def test_an_unsigned_log_or_an_unknown_approver_is_reported(tmp_path: Path) -> None:
    state, approver_pub, approver = _session(tmp_path, sign=False)
    code, out = _audit(state, approver_pub)
    assert code == 1 and "carries no signature" in out, out
    # with the guard's own key, the approvals alone are checked against the keys given
    other = new_key_pair(tmp_path / "other")
    args = ["audit", "s", "--runs-dir", str(state), "--key-file", str(tmp_path / "guard.key")]
    good = CliRunner().invoke(cli, [*args, "--public-key", str(approver_pub)])
    assert good.exit_code == 0 and "1 signed approvals verify" in good.stdout, good.output
    bad = CliRunner().invoke(cli, [*args, "--public-key", str(tmp_path / "other.pub")])
    assert bad.exit_code == 1, bad.output
    assert f"its key {approver.key_id} is not one of the public keys given" not in bad.stdout
    assert f"key {approver.key_id} is not one of the public keys given" in bad.stdout
    assert other.key_id != approver.key_id


def test_a_bad_public_key_file_is_a_usage_error(tmp_path: Path) -> None:
    state, _, _ = _session(tmp_path)
    (tmp_path / "junk.pub").write_text("not a key\n")
    code, out = _audit(state, tmp_path / "junk.pub")
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert msgspec  # the approval documents are msgspec structs


def test_evidence_verify_checks_a_signed_log_with_its_public_key(tmp_path: Path) -> None:
    state, _, _ = _session(tmp_path)
    args = ["evidence", "verify", "s", "--runs-dir", str(state), "--key-file",
            str(tmp_path / "guard-sign.pub"), "--format", "json"]
    good = CliRunner().invoke(cli, args)
    assert good.exit_code == 0, good.output
    doc = json.loads(good.stdout)
    assert doc["auth"] == "ed25519" and doc["authenticated"] and doc["records"] == 2
    _append_unsigned(state, tmp_path)
    bad = CliRunner().invoke(cli, args)
    assert bad.exit_code == 1, bad.output
    assert json.loads(bad.stdout)["problem"] == "forged"
    other = new_key_pair(tmp_path / "other")
    wrong = CliRunner().invoke(cli, [*args[:-3], str(tmp_path / "other.pub")])
    assert wrong.exit_code == 1 and f"not by {other.key_id}" in wrong.stdout, wrong.output
