"""``roadcheck accept``: exit codes, output shapes, bad inputs and the self-test."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from roadcheck.cli import cli

TESTS = Path(__file__).resolve().parent.parent
DATA = TESTS / "data" / "accept"
EXAMPLES = TESTS.parent / "examples" / "accept"


def run(*args: str | Path) -> Result:
    """Invoke the CLI in-process."""
    return CliRunner().invoke(cli, ["accept", *map(str, args)], catch_exceptions=False)


def accept(result: str, trace: str | None = None, contract: str = "contract.json",
           *extra: str) -> Result:
    """Run accept on data files."""
    args: list[str | Path] = ["-c", DATA / contract, "-r", DATA / result]
    if trace is not None:
        args += ["-t", DATA / trace]
    return run(*args, *extra)


class TestAcceptCommand:
    """Verdicts and their exit codes."""

    def test_accepted_exits_0(self) -> None:
        """A backed, well-formed result exits 0 with an ACCEPTED block."""
        r = accept("result_sent.json", "trace_sent.jsonl")
        assert r.exit_code == 0
        assert r.stdout.splitlines()[0] == f"[ACCEPTED] {DATA / 'result_sent.json'}"
        assert all(line.startswith("       ok - ") for line in r.stdout.splitlines()[1:])

    def test_rejected_exits_1(self) -> None:
        """A claim backed only by a call to another customer exits 1."""
        r = accept("result_sent.json", "trace_other_customer.json")
        assert r.exit_code == 1
        assert r.stdout.startswith("[REJECTED] ")
        assert "    FAIL - claims 'sent' but no 'send_invoice' call has id='cust_1002'" in r.stdout

    def test_malformed_result_is_judged_not_an_error(self) -> None:
        """A result that does not parse is REJECTED (exit 1), not bad input."""
        r = accept("result_broken.json", "trace_sent.jsonl")
        assert r.exit_code == 1
        assert "result is not valid JSON" in r.stdout

    @pytest.mark.parametrize(("result", "trace", "line"), [
        ("result_list.json", None, "    FAIL - result is an array, expected a JSON object"),
        ("result_sent.json", "trace_read_only.json",
         "    FAIL - claims 'sent' but the trace has no 'send_invoice' call "
         "(tools called: ['read_record'])"),
    ])
    def test_rejections_from_files(self, result: str, trace: str | None, line: str) -> None:
        """A non-object result and a claim with no call are REJECTED with their reason."""
        r = accept(result, trace, "contract.json",
                   *(["--claims-unchecked"] if trace is None else []))
        assert r.exit_code == 1
        assert r.stdout.splitlines()[-1] == line

    def test_result_from_stdin(self) -> None:
        """'-' reads the result from standard input."""
        r = CliRunner().invoke(cli, ["accept", "-c", str(DATA / "contract.json"), "-r", "-",
                                     "-t", str(DATA / "trace_sent.jsonl")],
                               input='{"status": "sent", "target_id": "cust_1002", '
                                     '"amount": null}')
        assert r.exit_code == 0, r.output

    def test_claims_without_a_trace_cannot_be_judged(self) -> None:
        """A claimed 'sent' with no trace is exit 2 with one line, never ACCEPTED."""
        r = accept("result_sent.json")
        assert r.exit_code == 2
        assert r.stdout == ""
        assert r.stderr.startswith("error[bad-input]: the contract checks claims")
        assert "--claims-unchecked" in r.stderr and r.stderr.count("\n") == 1

    def test_claims_unchecked_is_said_in_text_and_json(self) -> None:
        """With --claims-unchecked the claims go unchecked, and both reports say so."""
        r = accept("result_sent.json", None, "contract.json", "--claims-unchecked")
        assert r.exit_code == 0, r.output
        assert r.stdout.splitlines()[:2] == [
            f"[ACCEPTED] {DATA / 'result_sent.json'}",
            "UNCHECKED - the result claims 'sent': NOT checked, no trace was given "
            "(--claims-unchecked)"]
        doc = json.loads(accept("result_sent.json", None, "contract.json", "--claims-unchecked",
                                "--format", "json").stdout)
        assert (doc["claims_checked"], doc["unchecked_claims"]) == (False, ["sent"])

    def test_json_format(self) -> None:
        """--format json prints the public shape: verdict, exit, reasons."""
        r = accept("result_sent.json", "trace_errored.json", "contract.json", "--format", "json")
        doc = json.loads(r.stdout)
        assert r.exit_code == 1
        assert list(doc) == ["verdict", "exit", "reasons", "claims_checked"]
        assert doc["verdict"] == "REJECTED"
        assert doc["exit"] == 1
        assert [(x["ok"], x["check"]) for x in doc["reasons"]] == [(True, "contract"),
                                                                   (False, "claim")]

    @pytest.mark.parametrize("fmt", ["text", "json"])
    def test_byte_identical_output(self, fmt: str) -> None:
        """The same inputs give byte-identical output."""
        outs = {accept("result_sent.json", "trace_other_customer.json", "contract.json",
                       "--format", fmt).stdout_bytes for _ in range(3)}
        assert len(outs) == 1

    def test_probe_cmd_confirms(self) -> None:
        """--probe-cmd exit 0 adds an ok probe reason."""
        cmd = shlex.join([sys.executable, "-c", "pass"])
        r = accept("result_sent.json", "trace_sent.jsonl", "contract.json", "--probe-cmd", cmd)
        assert r.exit_code == 0
        assert r.stdout.splitlines()[-1].startswith("       ok - probe command")

    def test_probe_cmd_failure_rejects(self) -> None:
        """--probe-cmd with a non-zero exit rejects with wrong-effect."""
        cmd = shlex.join([sys.executable, "-c", "raise SystemExit(2)"])
        r = accept("result_sent.json", "trace_sent.jsonl", "contract.json", "--probe-cmd", cmd)
        assert r.exit_code == 1
        assert "(wrong-effect); exit 2" in r.stdout

    def test_example_files(self) -> None:
        """The documented example is ACCEPTED with its trace."""
        r = run("-c", EXAMPLES / "contract.yaml", "-r", EXAMPLES / "result.json",
                "-t", EXAMPLES / "trace.jsonl")
        assert r.exit_code == 0, r.output

    @pytest.mark.parametrize(("trace", "fragment"), [
        ("trace_wrong_customer.json", "no 'send_invoice' call has customer_id='cust_1002'"),
        ("trace_failed_send.json", "the matching 'send_invoice' call returned an error"),
    ])
    def test_example_rejections(self, trace: str, fragment: str) -> None:
        """The documented rejected examples fail for the documented reason."""
        r = run("-c", EXAMPLES / "contract.yaml", "-r", EXAMPLES / "result.json",
                "-t", EXAMPLES / trace)
        assert r.exit_code == 1
        assert fragment in r.stdout


class TestAcceptBadInput:
    """Inputs that cannot be judged exit 2 with one line naming the file, never a traceback."""

    @pytest.mark.parametrize(("args", "where"), [
        (["-c", "bad/unknown_type.yaml", "-r", "result_sent.json"], "bad/unknown_type.yaml:3: "),
        (["-c", "bad/broken.json", "-r", "result_sent.json"], "bad/broken.json:2: "),
        (["-c", "bad/empty_contract.json", "-r", "result_sent.json"], "bad/empty_contract.json: "),
        (["-c", "missing.yaml", "-r", "result_sent.json"], "missing.yaml: cannot read contract"),
        (["-c", "contract.json", "-r", "missing.json"], "missing.json: cannot read result"),
        (["-c", "contract.json", "-r", "result_sent.json", "-t", "bad/trace_broken.jsonl"],
         "bad/trace_broken.jsonl:2: "),
        (["-c", "contract.json", "-r", "result_sent.json", "-t", "bad/trace_no_tool.json"],
         "bad/trace_no_tool.json: call 2"),
        (["-c", "contract.json", "-r", "result_sent.json", "-t", "missing.jsonl"],
         "missing.jsonl: cannot read"),
    ])
    def test_exit_2_one_line(self, args: list[str], where: str) -> None:
        """Each bad input exits 2 with a single error[bad-input] line naming the file."""
        full = [str(DATA / a) if not a.startswith("-") else a for a in args]
        r = CliRunner().invoke(cli, ["accept", *full])
        assert r.exit_code == 2
        assert r.stdout == ""
        lines = r.stderr.splitlines()
        assert len(lines) == 1
        assert lines[0].startswith("error[bad-input]: ")
        assert f"{DATA}/{where}" in lines[0]
        assert "Traceback" not in r.output

    @pytest.mark.parametrize(("extra", "fragment"), [
        (["--probe-cmd", "x", "--probe-url", "http://127.0.0.1/"], "give one probe"),
        (["--probe-cmd", "'unclosed"], "--probe-cmd: No closing quotation"),
        (["--probe-cmd", ""], "--probe-cmd: the command is empty"),
        (["--probe-url", "ftp://127.0.0.1/x"], "--probe-url: a probe URL must be"),
        (["--probe-cmd", "x", "--probe-timeout", "0"], "--probe-timeout must be positive"),
    ])
    def test_bad_probe_options(self, extra: list[str], fragment: str) -> None:
        """Unusable probe options exit 2 before anything runs."""
        r = accept("result_sent.json", None, "contract.json", *extra)
        assert r.exit_code == 2
        assert fragment in r.stderr

    def test_contract_and_result_are_required(self) -> None:
        """Without --contract and --result (and no --self-test) it is a usage error."""
        r = CliRunner().invoke(cli, ["accept", "-c", str(DATA / "contract.json")])
        assert r.exit_code == 2
        assert "--contract and --result are required" in r.stderr


class TestSelfTest:
    """``roadcheck accept --self-test``."""

    def test_text_layout(self, golden: Any) -> None:
        """The self-test prints the four verdict blocks and exits 0."""
        r = run("--self-test")
        assert r.exit_code == 0
        golden("accept/self_test.txt", r.stdout)
        blocks = [line for line in r.stdout.splitlines() if line.startswith("[")]
        assert blocks == [
            "[ACCEPTED] agent created cust_1001",
            "[REJECTED] agent output is malformed JSON",
            "[REJECTED] agent claims updated, trace has only read_record",
            "[REJECTED] agent claims sent to cust_9999 (not allow-listed)",
        ]

    def test_json(self) -> None:
        """--format json gives one entry per fixture with the public result shape."""
        r = run("--self-test", "--format", "json")
        doc = json.loads(r.stdout)
        assert doc["exit"] == 0
        assert [c["verdict"] for c in doc["self_test"]] == ["ACCEPTED", "REJECTED", "REJECTED",
                                                           "REJECTED"]
        assert all(c["verdict"] == c["expected"] for c in doc["self_test"])


def _doc_sessions() -> list[tuple[list[str], str]]:
    """The ``$ roadcheck accept ...`` commands in docs/accept.md with the output shown for each."""
    text = (TESTS.parent / "docs" / "accept.md").read_text(encoding="utf-8")
    sessions: list[tuple[list[str], str]] = []
    for block in text.split("```console\n")[1:]:
        body = block.split("```", 1)[0]
        for chunk in body.split("$ ")[1:]:
            command, _, output = chunk.partition("\n")
            if command.startswith("roadcheck accept "):
                sessions.append((shlex.split(command)[2:], output))
    return sessions


class TestDocs:
    """docs/accept.md shows real output."""

    @pytest.mark.parametrize(("args", "shown"), _doc_sessions())
    def test_console_examples(self, args: list[str], shown: str,
                              monkeypatch: pytest.MonkeyPatch) -> None:
        """Each documented command prints exactly what the page shows."""
        monkeypatch.chdir(TESTS.parent)
        r = CliRunner().invoke(cli, ["accept", *args])
        assert r.stdout == shown

    def test_every_option_is_documented(self) -> None:
        """Each option of roadcheck accept appears in the page."""
        command = cli.commands["accept"]
        text = (TESTS.parent / "docs" / "accept.md").read_text(encoding="utf-8")
        for param in command.params:
            for opt in param.opts:
                if opt.startswith("--"):
                    assert opt in text, opt


class TestMisspeltTraceKey:
    """The reproduction: a failed send whose ``result`` key is misspelt was ACCEPTED."""

    def test_failed_call_with_misspelt_result_is_exit_2(self, tmp_path: Path) -> None:
        """Exit 2, one line naming the file, the line and the key, never ACCEPTED."""
        trace = tmp_path / "trace.json"
        trace.write_text(
            (EXAMPLES / "trace_failed_send.json").read_text(encoding="utf-8")
            .replace('"result":', '"reslt":'), encoding="utf-8")
        r = CliRunner().invoke(cli, ["accept", "-c", str(EXAMPLES / "contract.yaml"),
                                     "-r", str(EXAMPLES / "result.json"), "-t", str(trace)])
        assert r.exit_code == 2, r.output
        assert r.stdout == ""
        assert r.stderr.splitlines() == [
            f"error[bad-input]: {trace}:2: call 1: unknown key 'reslt'; did you mean "
            "'result'?"]


class TestSessionTraces:
    """``--trace`` takes a session of any format replay reads."""

    RECORDED = TESTS / "data" / "recorded"

    def _contract(self, tmp_path: Path) -> tuple[Path, Path]:
        contract = tmp_path / "contract.yaml"
        contract.write_text("required: {status: string}\nenums: {status: [pushed]}\n"
                            "claims: {pushed: Bash}\n")
        result = tmp_path / "result.json"
        result.write_text('{"status": "pushed"}')
        return contract, result

    def test_claude_code_session_backs_a_claim(self, tmp_path: Path) -> None:
        contract, result = self._contract(tmp_path)
        r = run("-c", contract, "-r", result, "-t",
                self.RECORDED / "claude-code" / "push-after-failed-tests.jsonl")
        assert r.exit_code == 0, r.output
        assert "claim 'pushed' is backed by a 'Bash' call (seq 4)" in r.output

    def test_codex_session_without_the_tool_is_rejected(self, tmp_path: Path) -> None:
        contract, result = self._contract(tmp_path)
        r = run("-c", contract, "-r", result, "-t",
                self.RECORDED / "codex" / "rollout-0.34.0-approved-push.jsonl")
        assert r.exit_code == 1
        assert "the trace has no 'Bash' call (tools called: ['shell'])" in r.output

    def test_unknown_trace_format_is_exit_2(self, tmp_path: Path) -> None:
        contract, result = self._contract(tmp_path)
        r = CliRunner().invoke(cli, ["accept", "-c", str(contract), "-r", str(result), "-t",
                                     str(DATA / "trace_sent.jsonl"), "--trace-format", "bogus"])
        assert r.exit_code == 2
        (line,) = r.output.strip().splitlines()
        assert line.startswith("error[bad-input]: unknown input format 'bogus'; choose one "
                               "of native, openai-chat, ")
