"""Every report prints the sha256 of the spec or checkpoint it used, and a CI run can pin it."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from roadcheck.cli import cli

from ..conftest import EXAMPLES

SPEC = EXAMPLES / "spec.json"
TRAJ = str(EXAMPLES / "fixture_conforms.jsonl")
NOW = "2026-08-10T15:00:00Z"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


class TestReplay:
    """roadcheck replay and --expect-spec-sha256."""

    def test_reports_print_the_spec_sha256(self) -> None:
        """The text header and the JSON document carry the sha256 of the spec's bytes."""
        code, out, _ = _invoke("replay", str(SPEC), TRAJ)
        assert code == 0 and f"spec-sha256: {_sha(SPEC)}\n" in out
        code, out, _ = _invoke("replay", str(SPEC), TRAJ, "--format", "json")
        assert json.loads(out)["spec_sha256"] == _sha(SPEC)

    def test_matching_pin_runs(self) -> None:
        """A pin that matches (any case, sha256: prefix allowed) judges as usual."""
        for pin in (_sha(SPEC), "sha256:" + _sha(SPEC).upper()):
            assert _invoke("replay", str(SPEC), TRAJ, "--expect-spec-sha256", pin)[0] == 0

    def test_other_bytes_are_exit_2(self, tmp_path: Path) -> None:
        """The whole spec's pin refuses a spec that lost its last rule: exit 2, one line."""
        cut = tmp_path / "spec.json"
        doc = json.loads(SPEC.read_text())
        doc["handoff_contracts"] = doc["handoff_contracts"][:1]
        cut.write_text(json.dumps(doc))
        code, out, err = _invoke("replay", str(cut), TRAJ, "--expect-spec-sha256", _sha(SPEC))
        assert code == 2 and out == ""
        assert err.startswith(f"error[bad-input]: {cut}: the spec is not the pinned one")
        assert err.count("\n") == 1

    def test_malformed_pin_is_a_usage_error(self) -> None:
        """A pin that is not a sha256 is exit 2 before anything is read."""
        code, _, err = _invoke("replay", str(SPEC), TRAJ, "--expect-spec-sha256", "abc")
        assert code == 2 and "not a sha256" in err


class TestRevalidate:
    """roadcheck revalidate and --expect-checkpoint-sha256."""

    def test_reports_print_the_checkpoint_sha256(self, tmp_path: Path) -> None:
        """The text header and the JSON document carry the checkpoint's sha256."""
        site = tmp_path / "video"
        shutil.copytree(EXAMPLES / "resume" / "video", site)
        cp = site / "checkpoint.yaml"
        code, out, _ = _invoke("revalidate", str(cp), "--now", NOW)
        assert code == 0 and f"checkpoint-sha256: {_sha(cp)}\n" in out
        code, out, _ = _invoke("revalidate", str(cp), "--now", NOW, "--format", "json")
        assert json.loads(out)["checkpoint_sha256"] == _sha(cp)

    def test_pin(self, tmp_path: Path) -> None:
        """A matching pin revalidates; other bytes are exit 2 and nothing is written."""
        site = tmp_path / "video"
        shutil.copytree(EXAMPLES / "resume" / "video", site)
        cp = site / "checkpoint.yaml"
        pin = _sha(cp)
        assert _invoke("revalidate", str(cp), "--now", NOW,
                       "--expect-checkpoint-sha256", pin)[0] == 0
        cp.write_bytes(cp.read_bytes() + b"# edited\n")
        code, _, err = _invoke("revalidate", str(cp), "--now", NOW, "--write-next",
                               str(site / "next.yaml"), "--expect-checkpoint-sha256", pin)
        assert code == 2 and "the checkpoint is not the pinned one" in err
        assert not (site / "next.yaml").exists()


ACCEPT = EXAMPLES / "accept"


class TestAccept:
    """roadcheck accept and --expect-contract-sha256."""

    def _cut(self, tmp_path: Path) -> Path:
        """The example contract cut after its 'updated' claim: still a valid contract."""
        text = (ACCEPT / "contract.yaml").read_text(encoding="utf-8")
        cut = tmp_path / "contract.yaml"
        cut.write_text(text[:text.index("  sent:\n")], encoding="utf-8")
        return cut

    def _accept(self, contract: Path, *extra: str) -> tuple[int, str, str]:
        return _invoke("accept", "-c", str(contract), "-r", str(ACCEPT / "result.json"),
                       "-t", str(ACCEPT / "trace_failed_send.json"), *extra)

    def test_a_cut_contract_accepts_without_a_pin(self, tmp_path: Path) -> None:
        """The reproduction: cut at an entry boundary, the contract no longer checks the
        'sent' claim, and the failed send is ACCEPTED; the whole one rejects it."""
        assert self._accept(ACCEPT / "contract.yaml")[0] == 1
        assert self._accept(self._cut(tmp_path))[0] == 0

    def test_matching_pin_runs(self) -> None:
        """A pin that matches (any case, sha256: prefix allowed) judges as usual."""
        whole = ACCEPT / "contract.yaml"
        for pin in (_sha(whole), "sha256:" + _sha(whole).upper()):
            code, out, _ = self._accept(whole, "--expect-contract-sha256", pin)
            assert code == 1 and out.startswith("[REJECTED]")

    def test_other_bytes_are_exit_2(self, tmp_path: Path) -> None:
        """The whole contract's pin refuses the cut one: exit 2, one line."""
        cut = self._cut(tmp_path)
        code, out, err = self._accept(cut, "--expect-contract-sha256",
                                      _sha(ACCEPT / "contract.yaml"))
        assert code == 2 and out == ""
        assert err.startswith(f"error[bad-input]: {cut}: the contract is not the pinned one: "
                              f"its sha256 is {_sha(cut)}, expected "
                              f"{_sha(ACCEPT / 'contract.yaml')}")
        assert err.count("\n") == 1

    def test_malformed_pin_is_a_usage_error(self) -> None:
        """A pin that is not a sha256 is exit 2 before anything is read."""
        code, _, err = self._accept(ACCEPT / "contract.yaml", "--expect-contract-sha256", "abc")
        assert code == 2 and "not a sha256" in err

    def test_library(self, tmp_path: Path) -> None:
        """load_contract and accept_files take the pin too."""
        import pytest

        from roadcheck.acceptance import accept_files, load_contract
        from roadcheck.errors import SpecError

        whole = ACCEPT / "contract.yaml"
        assert load_contract(whole, expect_sha256=_sha(whole)).claims
        with pytest.raises(SpecError, match="not the pinned one"):
            load_contract(self._cut(tmp_path), expect_sha256=_sha(whole))
        with pytest.raises(SpecError, match="not the pinned one"):
            accept_files(self._cut(tmp_path), ACCEPT / "result.json",
                         ACCEPT / "trace_failed_send.json", expect_contract_sha256=_sha(whole))
