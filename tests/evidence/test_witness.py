"""A head witness: a rollback to an earlier head with its records, which a key cannot see,
is detected against a witness statement kept outside the store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.evidence import JsonlStore, verify_run
from roadcheck.evidence.signing import load_signing_key, load_verify_key, new_key_pair
from roadcheck.evidence.witness import read_witness, witness_run

pytestmark = pytest.mark.usefixtures("no_evidence_key")


def _record(i: int) -> dict[str, Any]:
    return {"run_id": "r", "workflow": "w", "phase": f"p{i}", "attempt": 1, "iteration": i,
            "verdict": "pass", "gate": {"kind": "command", "summary": "ok", "detail": "",
                                        "exit_code": 0, "output": ""},
            "artifact": {"path": f"p{i}.txt", "sha256": "ab" * 32, "bytes": 4},
            "role": "writer", "identity": "alice", "started_at": "2026-01-01T00:00:00Z",
            "finished_at": "2026-01-01T00:00:01Z", "params_sha256": "cd" * 32}


@pytest.fixture
def signed_run(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Run ``r`` signed with an evidence key, two records; and a witness key pair."""
    runs, evidence_key, witness_key = tmp_path / "runs", tmp_path / "ev", tmp_path / "wit"
    new_key_pair(evidence_key)
    new_key_pair(witness_key)
    store = JsonlStore(runs / "r", "r", load_signing_key(evidence_key))
    for i in (1, 2):
        store.append(_record(i))
    store.close()
    return runs, evidence_key, witness_key


def _append(runs: Path, evidence_key: Path, i: int) -> None:
    store = JsonlStore(runs / "r", "r", load_signing_key(evidence_key))
    store.append(_record(i))
    store.close()


def test_a_rollback_is_detected_only_with_the_witness(signed_run: tuple[Path, Path, Path],
                                                      tmp_path: Path) -> None:
    runs, evidence_key, witness_key = signed_run
    saved = tmp_path / "saved"
    shutil.copytree(runs / "r", saved)  # the writer keeps the earlier state
    _append(runs, evidence_key, 3)
    statement = witness_run(runs, "r", load_signing_key(evidence_key), str(witness_key))
    assert (statement.records, statement.run_id) == (3, "r")
    public = load_verify_key(f"{witness_key}.pub")
    assert verify_run(runs, "r", load_verify_key(f"{evidence_key}.pub"), witness=statement,
                      witness_key=public).ok
    shutil.rmtree(runs / "r")
    shutil.copytree(saved, runs / "r")  # roll back: an earlier, validly signed head
    without = verify_run(runs, "r", load_verify_key(f"{evidence_key}.pub"))
    assert without.ok  # what a key alone cannot see
    check = verify_run(runs, "r", load_verify_key(f"{evidence_key}.pub"), witness=statement,
                       witness_key=public)
    assert check.problem == "rollback" and check.exit == 1
    assert "the witness saw 3 records" in check.message


def test_a_rewritten_chain_after_the_witnessed_head(signed_run: tuple[Path, Path, Path],
                                                    tmp_path: Path) -> None:
    """Rolled back and then appended to (the same count, another last record)."""
    runs, evidence_key, witness_key = signed_run
    saved = tmp_path / "saved"
    shutil.copytree(runs / "r", saved)
    _append(runs, evidence_key, 3)
    statement = witness_run(runs, "r", load_signing_key(evidence_key), str(witness_key))
    shutil.rmtree(runs / "r")
    shutil.copytree(saved, runs / "r")
    _append(runs, evidence_key, 4)
    check = verify_run(runs, "r", load_signing_key(evidence_key), witness=statement,
                       witness_key=load_verify_key(f"{witness_key}.pub"))
    assert check.problem == "rollback" and "rewritten" in check.message


def test_the_cli_round_trip_and_forged_statements(signed_run: tuple[Path, Path, Path],
                                                  tmp_path: Path) -> None:
    runs, evidence_key, witness_key = signed_run
    out = tmp_path / "witness.json"
    base = ["--runs-dir", str(runs), "--key-file", f"{evidence_key}.pub"]
    made = CliRunner().invoke(cli, ["evidence", "witness", "r", *base, "--key",
                                    str(witness_key), "-o", str(out)])
    assert made.exit_code == 0, made.output
    assert "2 records" in made.stdout
    verify = ["evidence", "verify", "r", *base, "--witness", str(out), "--witness-key",
              f"{witness_key}.pub"]
    ok = CliRunner().invoke(cli, verify)
    assert ok.exit_code == 0, ok.output
    assert "a rollback to before the witnessed head is detected" in ok.stdout
    assert "(a rollback) is not" not in ok.stdout
    doc = json.loads(out.read_text())
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({**doc, "records": 1}))
    bad = CliRunner().invoke(cli, [*verify[:-4], "--witness", str(forged), "--witness-key",
                                   f"{witness_key}.pub"])
    assert bad.exit_code == 1 and "does not verify" in bad.stdout
    other = tmp_path / "other"
    new_key_pair(other)
    pinned = CliRunner().invoke(cli, [*verify[:-2], "--witness-key", f"{other}.pub"])
    assert pinned.exit_code == 2 and "another key" in pinned.stderr
    garbage = tmp_path / "garbage.json"
    garbage.write_text('{"kind": "x"}')
    unread = CliRunner().invoke(cli, [*verify[:-4], "--witness", str(garbage),
                                      "--witness-key", f"{witness_key}.pub"])
    assert unread.exit_code == 2 and "not a head witness" in unread.stderr
    alone = CliRunner().invoke(cli, ["evidence", "verify", "r", *base, "--witness", str(out)])
    assert alone.exit_code == 2 and "go together" in alone.stderr
    assert read_witness(out).records == 2


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_the_rollback_matrix(tmp_path: Path, kind: str) -> None:
    """Roll a signed five-record run back to each earlier head (with its records): the key
    alone detects none, the witness of the last head every one."""
    from roadcheck.evidence import open_store

    evidence_key, witness_key = tmp_path / "ev", tmp_path / "wit"
    new_key_pair(evidence_key)
    new_key_pair(witness_key)
    signer, runs = load_signing_key(evidence_key), tmp_path / "runs"
    saved = []
    for i in range(1, 6):
        store = open_store(runs, "r", kind, signer)
        store.append(_record(i))
        store.close()
        if i < 5:
            saved.append(tmp_path / f"at{i}")
            shutil.copytree(runs / "r", saved[-1])
    statement = witness_run(runs, "r", signer, str(witness_key))
    public, witness_public = load_verify_key(f"{evidence_key}.pub"), load_verify_key(
        f"{witness_key}.pub")
    by_key = with_witness = 0
    for earlier in saved:
        shutil.rmtree(runs / "r")
        shutil.copytree(earlier, runs / "r")
        by_key += not verify_run(runs, "r", public).ok
        with_witness += verify_run(runs, "r", public, witness=statement,
                                   witness_key=witness_public).problem == "rollback"
    print(f"\nrollback ({kind}): key alone {by_key}/{len(saved)}, "
          f"with a witness {with_witness}/{len(saved)}")
    assert (by_key, with_witness) == (0, len(saved))
