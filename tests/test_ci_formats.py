"""The CI formats (JUnit XML, SARIF 2.1.0, GitHub annotations) of replay, accept and revalidate.

JUnit output is validated against the JUnit 10 schema pytest's own tests use,
SARIF against the official SARIF 2.1.0 JSON schema; both are vendored under
``tests/data/schemas/`` with their licences.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import xmlschema

from roadcheck.cli import main
from roadcheck.conformance.result import Finding, ReplayResult, ReplayRun
from roadcheck.findings import Location
from roadcheck.report.cases import replay_cases
from roadcheck.report.ci import ci_report, located_paths
from roadcheck.report.github import escape_data, escape_property

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SCHEMAS = Path(__file__).parent / "data" / "schemas"
FIXTURES = sorted(str(p.relative_to(ROOT)) for p in EXAMPLES.glob("fixture_*.jsonl"))
HOSTILE = "a\nb\r%c\x1b[31m \u202e</failure>&<x> ::error::boom ]]>"


@pytest.fixture(scope="module")
def junit_schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd"))


@pytest.fixture(scope="module")
def sarif_validator() -> jsonschema.Draft7Validator:
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    assert isinstance(info.value.code, int)
    return info.value.code, out, err


def _replay(capsys: pytest.CaptureFixture[str], fmt: str, *paths: str) -> tuple[int, str]:
    code, out, err = _main(capsys, "replay", "examples/spec.json", *paths,
                           "--format", fmt)
    assert err == ""
    return code, out


def _hostile_run() -> ReplayRun:
    bad = Finding("checkpoint-skipped", HOSTILE, 3)
    return ReplayRun("spec.json", [
        ReplayResult(HOSTILE, "dir/we ird,na:me%.jsonl", "BLOCK", (bad,)),
        ReplayResult("ok", None, "PASS", (Finding("trajectory-conforms", "fine"),),
                     warnings=(Finding("uncontracted-handoff", HOSTILE),)),
    ])


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


class TestJUnit:
    def test_replay_validates_against_the_schema(
            self, capsys: pytest.CaptureFixture[str], junit_schema: xmlschema.XMLSchema) -> None:
        """The replay of every fixture is a valid JUnit document, exit code unchanged."""
        code, out = _replay(capsys, "junit", *FIXTURES)
        assert code == 1
        junit_schema.validate(out)

    def test_one_testcase_per_trajectory_with_reasons_as_failure_text(
            self, capsys: pytest.CaptureFixture[str]) -> None:
        """Each trajectory is a testcase; a BLOCK is a failure, an ERROR an error."""
        _, out = _replay(capsys, "junit", *FIXTURES)
        doc = xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd")).to_dict(out)
        suite = doc["testsuite"][0]
        assert (suite["@tests"], suite["@failures"], suite["@errors"]) == ("8", "4", "1")
        cases = {Path(c["@name"]).name: c for c in suite["testcase"]}
        assert "checkpoint-skipped: checkpoint 'confirm_with_user' is absent" in \
            cases["fixture_skipped.jsonl"]["failure"][0]["$"]
        assert "error" in cases["fixture_bad_input.jsonl"]
        assert "failure" not in cases["fixture_conforms.jsonl"]

    def test_hostile_values_stay_text(self, junit_schema: xmlschema.XMLSchema) -> None:
        """Markup, controls and bidi characters in a value cannot break the document."""
        out = ci_report("junit", "replay", replay_cases(_hostile_run()), 1)
        junit_schema.validate(out)
        assert "\x1b" not in out and "\u202e" not in out
        assert "\\x1b[31m" in out and "\\u202e" in out
        assert "&lt;/failure&gt;&amp;&lt;x&gt;" in out

    def test_accept_and_revalidate(self, capsys: pytest.CaptureFixture[str],
                                   junit_schema: xmlschema.XMLSchema) -> None:
        """accept and revalidate write valid JUnit with their own exit codes."""
        code, out, _ = _main(capsys, "accept", "-c", "examples/accept/contract.yaml", "-r",
                             "examples/accept/result.json", "-t",
                             "examples/accept/trace_wrong_customer.json", "--format", "junit")
        assert code == 1
        junit_schema.validate(out)
        assert "<failure type=\"REJECTED\" message=\"claim\">" in out
        code, out, _ = _main(capsys, "revalidate", "examples/resume/video/checkpoint.yaml",
                             "--now", "2026-08-10T15:00:00Z", "--format", "junit")
        assert code == 0
        junit_schema.validate(out)
        assert 'tests="1" failures="0" errors="0"' in out


class TestSarif:
    def test_replay_validates_against_the_schema(
            self, capsys: pytest.CaptureFixture[str],
            sarif_validator: jsonschema.Draft7Validator) -> None:
        """The replay of every fixture is a valid SARIF 2.1.0 log."""
        code, out = _replay(capsys, "sarif", *FIXTURES)
        assert code == 1
        log = json.loads(out)
        sarif_validator.validate(log)
        assert log["version"] == "2.1.0"

    def test_every_rule_a_result_names_is_described_with_a_help_link(
            self, capsys: pytest.CaptureFixture[str]) -> None:
        """Each result's rule is in ``tool.driver.rules`` at its ``ruleIndex``, with the
        words of docs/reasons.md and a link to the section of the page that holds it."""
        _, out = _replay(capsys, "sarif", *FIXTURES)
        run = json.loads(out)["runs"][0]
        driver = run["tool"]["driver"]
        assert driver["informationUri"] == "https://github.com/roadcheck/roadcheck"
        rules = driver["rules"]
        used = {r["ruleId"] for r in run["results"]}
        assert [r["id"] for r in rules] == sorted(used, key=[r["id"] for r in rules].index)
        assert {r["id"] for r in rules} == used
        headings = {"#" + re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-")
                    for h in re.findall(r"^## (.+)$", (ROOT / "docs" / "reasons.md").read_text(),
                                        flags=re.M)}
        for result in run["results"]:
            rule = rules[result["ruleIndex"]]
            assert rule["id"] == result["ruleId"]
            assert rule["shortDescription"]["text"]
            assert "`" not in rule["fullDescription"]["text"]
            page, anchor = rule["helpUri"].split("/blob/main/")[1].split("#")
            assert page == "docs/reasons.md" and "#" + anchor in headings
        skipped = next(r for r in rules if r["id"] == "checkpoint-skipped")
        assert skipped["shortDescription"]["text"] == (
            "a guarded action ran with no valid checkpoint before it and none after it")
        assert skipped["helpUri"].endswith("docs/reasons.md#replay")
        propagated = next(r for r in rules if r["id"].startswith("unverified-claim-propagated"))
        assert propagated["name"] == "unverified-claim-propagated-N-hops"

    def test_one_result_per_reason_at_the_line_of_its_event(
            self, capsys: pytest.CaptureFixture[str]) -> None:
        """A reason points at the file and the line of the event it names (seq 6 is line 5)."""
        _, out = _replay(capsys, "sarif", "examples/fixture_skipped.jsonl")
        (result,) = json.loads(out)["runs"][0]["results"]
        assert result["ruleId"] == "checkpoint-skipped"
        assert result["level"] == "error"
        physical = result["locations"][0]["physicalLocation"]
        assert physical == {"artifactLocation": {"uri": "examples/fixture_skipped.jsonl"},
                            "region": {"startLine": 5}}
        assert result["properties"]["seq"] == 6

    def test_unreadable_native_file_points_at_its_bad_line(
            self, capsys: pytest.CaptureFixture[str]) -> None:
        """An ERROR on a native file that does not parse points at the line that broke."""
        code, out = _replay(capsys, "sarif", "examples/fixture_bad_input.jsonl")
        assert code == 2
        (result,) = json.loads(out)["runs"][0]["results"]
        assert result["ruleId"] == "bad-input"
        assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 2}
        assert json.loads(out)["runs"][0]["invocations"][0] == {
            "executionSuccessful": False, "exitCode": 2}

    def test_broken_contract_gives_two_results(
            self, capsys: pytest.CaptureFixture[str]) -> None:
        """Two reasons of one trajectory are two results; a PASS without warnings is none."""
        _, out = _replay(capsys, "sarif", "examples/fixture_broken_contract.jsonl",
                         "examples/fixture_conforms.jsonl")
        rules = [r["ruleId"] for r in json.loads(out)["runs"][0]["results"]]
        assert rules == ["handoff-contract-violation",
                         "unverified-claim-consumed-as-ground-truth"]

    def test_no_results_is_still_valid(self, capsys: pytest.CaptureFixture[str],
                                       sarif_validator: jsonschema.Draft7Validator) -> None:
        """A passing replay is a valid log with an empty results array."""
        code, out = _replay(capsys, "sarif", "examples/fixture_conforms.jsonl")
        assert code == 0
        log = json.loads(out)
        sarif_validator.validate(log)
        assert log["runs"][0]["results"] == []

    def test_hostile_values(self, sarif_validator: jsonschema.Draft7Validator) -> None:
        """A path with spaces and reserved characters becomes a valid URI reference."""
        log = json.loads(ci_report("sarif", "replay", replay_cases(_hostile_run()), 1))
        sarif_validator.validate(log)
        uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"][
            "artifactLocation"]["uri"]
        assert uri == "dir/we%20ird%2Cna%3Ame%25.jsonl"
        assert log["runs"][0]["results"][0]["message"]["text"] == HOSTILE

    def test_accept_and_revalidate(self, capsys: pytest.CaptureFixture[str],
                                   sarif_validator: jsonschema.Draft7Validator) -> None:
        """accept and revalidate write valid SARIF."""
        _, out, _ = _main(capsys, "accept", "-c", "examples/accept/contract.yaml", "-r",
                          "examples/accept/result.json", "-t",
                          "examples/accept/trace_wrong_customer.json", "--format", "sarif")
        sarif_validator.validate(json.loads(out))
        _, out, _ = _main(capsys, "revalidate", "examples/resume/video/checkpoint.yaml",
                          "--now", "2026-08-10T15:00:00Z", "--format", "sarif")
        sarif_validator.validate(json.loads(out))


class TestGitHub:
    def test_annotations_point_at_file_and_line(
            self, capsys: pytest.CaptureFixture[str]) -> None:
        """One ::error per reason with file and line, a ::warning per warning, one notice."""
        code, out = _replay(capsys, "github", "examples/fixture_skipped.jsonl",
                            "examples/fixture_uncontracted.jsonl")
        assert code == 1
        lines = out.splitlines()
        assert lines[0] == (
            "::error file=examples/fixture_skipped.jsonl,line=5,title=BLOCK checkpoint-skipped"
            "::checkpoint 'confirm_with_user' is absent from the trajectory; the guarded "
            "action 'send_report' ran at seq 6")
        assert lines[1].startswith("::warning file=examples/fixture_uncontracted.jsonl,line=7,")
        assert lines[2] == ("::notice title=roadcheck replay::2 trajectories: 1 passed, 1 failed, "
                            "0 could not be judged -> exit 1")

    @pytest.mark.parametrize(("raw", "data", "prop"), [
        ("50%", "50%25", "50%25"),
        ("a\nb\rc", "a%0Ab%0Dc", "a%0Ab%0Dc"),
        ("k: v, w", "k: v, w", "k%3A v%2C w"),
        ("\x1b[2J\u202e", "\\x1b[2J\\u202e", "\\x1b[2J\\u202e"),
    ])
    def test_escaping(self, raw: str, data: str, prop: str) -> None:
        """Values are escaped the way the runner reads them back."""
        assert escape_data(raw) == data
        assert escape_property(raw) == prop

    def test_hostile_value_cannot_start_a_command(self) -> None:
        """Every annotation stays on its own line, whatever the values hold."""
        out = ci_report("github", "replay", replay_cases(_hostile_run()), 1)
        lines = out.splitlines()
        assert len(lines) == 3
        assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines)
        assert "file=dir/we ird%2Cna%3Ame%25.jsonl" in lines[0]


class TestLocatedPaths:
    def test_only_files_whose_reasons_name_an_event_are_read_again(self) -> None:
        """SARIF and GitHub re-read BLOCK files and warned files, HTML all, JUnit none."""
        seq = Finding("checkpoint-skipped", "ran at seq 3", 3)
        run = ReplayRun("spec.json", [
            ReplayResult("a", "a.jsonl", "BLOCK", (seq,)),
            ReplayResult("b", "b.jsonl", "PASS", (Finding("trajectory-conforms", "fine"),)),
            ReplayResult("c", "c.jsonl", "PASS", (Finding("trajectory-conforms", "fine"),),
                         warnings=(Finding("uncontracted-handoff", "seq 2", 2),)),
            ReplayResult("d", "d.jsonl", "ERROR", (Finding("bad-input", "line 2: bad"),)),
        ])
        paths = ["a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl"]
        assert located_paths(run, "sarif", paths) == ["a.jsonl", "c.jsonl"]
        assert located_paths(run, "github", paths) == ["a.jsonl", "c.jsonl"]
        assert located_paths(run, "html", paths) == paths
        assert located_paths(run, "junit", paths) == []
        assert located_paths(run, "json", paths) == []

    def test_findings_that_carry_their_line_need_no_second_reading(self) -> None:
        """A native file's findings carry their line; a transcript has no line per event."""
        lined = Finding("checkpoint-skipped", "ran at seq 3", Location(seq=3, line=3))
        seq = Finding("checkpoint-skipped", "ran at seq 3", 3)
        run = ReplayRun("spec.json", [
            ReplayResult("a", "a.jsonl", "BLOCK", (lined,)),
            ReplayResult("b", "b.json", "BLOCK", (seq,), source="openai-chat"),
            ReplayResult("c", "c.jsonl", "BLOCK", (lined, seq)),
        ])
        paths = ["a.jsonl", "b.json", "c.jsonl"]
        assert located_paths(run, "sarif", paths) == ["c.jsonl"]
        assert located_paths(run, "github", paths) == ["c.jsonl"]
        assert located_paths(run, "html", paths) == paths

    def test_cli_reads_a_native_file_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """replay --format github of native files points at lines without reading them again."""
        from click.testing import CliRunner

        from roadcheck.cli import cli
        from roadcheck.ingest import locate as locate_module

        read: list[list[str]] = []
        real = locate_module.locate

        def spy(paths, input_format=None):  # type: ignore[no-untyped-def]
            read.append(list(paths))
            return real(paths, input_format)

        monkeypatch.setattr(locate_module, "locate", spy)
        result = CliRunner().invoke(cli, ["replay", str(EXAMPLES / "spec.json"),
                                          str(EXAMPLES / "fixture_skipped.jsonl"),
                                          "--format", "github"])
        assert result.exit_code == 1
        assert ",line=5," in result.output
        assert not any(read)  # no file read a second time


class TestOutputFile:
    @pytest.mark.parametrize("fmt", ["text", "json", "junit", "sarif", "github"])
    def test_output_file_holds_what_stdout_would(
            self, capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str) -> None:
        """--output writes the same bytes the report prints, and prints nothing."""
        _, shown = _replay(capsys, fmt, *FIXTURES)
        target = tmp_path / "report.out"
        code, out, err = _main(capsys, "replay", "examples/spec.json", *FIXTURES,
                               "--format", fmt, "--output", str(target))
        assert (code, out, err) == (1, "", "")
        assert target.read_text() == shown

    def test_output_to_a_missing_directory_is_exit_2(
            self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """A report that cannot be written is one error line and exit 2, nothing left."""
        code, out, err = _main(capsys, "replay", "examples/spec.json", FIXTURES[0],
                               "--format", "junit", "--output", str(tmp_path / "no" / "r.xml"))
        assert code == 2
        assert out == ""
        assert err.startswith("error[bad-input]: ") and "does not exist" in err
        assert list(tmp_path.iterdir()) == []

    def test_self_test_refuses_ci_formats(self, capsys: pytest.CaptureFixture[str]) -> None:
        """accept --self-test has no CI format: a usage error, exit 2."""
        code, _, err = _main(capsys, "accept", "--self-test", "--format", "junit")
        assert code == 2
        assert err.startswith("error[usage]: ")

    def test_deterministic(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Same inputs, byte-identical CI reports."""
        for fmt in ("junit", "sarif", "github"):
            assert _replay(capsys, fmt, *FIXTURES) == _replay(capsys, fmt, *FIXTURES)
