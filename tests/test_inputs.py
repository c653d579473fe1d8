"""What `roadcheck replay` accepts as input: directories, globs, stdin, JSON documents,
swapped arguments, repeated files, an absent --by field and bytes that are not UTF-8."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from roadcheck import _inputs
from roadcheck.cli import cli

from .conftest import EXAMPLES, ROOT

CONFORMS = EXAMPLES / "fixture_conforms.jsonl"
SKIPPED = EXAMPLES / "fixture_skipped.jsonl"
SPEC = EXAMPLES / "spec.json"


def _events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work in a scratch directory holding the spec, so report paths are short and stable."""
    shutil.copy(SPEC, tmp_path / "spec.json")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def replay(*args: str, input: bytes | None = None) -> Result:
    return CliRunner().invoke(cli, ["replay", *args], input=input, catch_exceptions=False)


def ids(result: Result) -> list[str]:
    return [r["id"] for r in orjson.loads(result.stdout)["results"]]


class TestDirectories:
    def _tree(self, root: Path) -> None:
        (root / "runs" / "nested").mkdir(parents=True)
        shutil.copy(CONFORMS, root / "runs" / "b.jsonl")
        shutil.copy(SKIPPED, root / "runs" / "a.jsonl")
        shutil.copy(CONFORMS, root / "runs" / ".hidden.jsonl")
        (root / "runs" / "notes.txt").write_text("not a trajectory\n")
        shutil.copy(CONFORMS, root / "runs" / "nested" / "c.jsonl")

    def test_directory_reads_the_files_directly_inside_sorted(self, here: Path) -> None:
        """A directory is read: files directly inside, by name, hidden ones skipped."""
        self._tree(here)
        result = replay("spec.json", "runs", "--format", "json")
        assert result.exit_code == 1
        assert ids(result) == ["runs/a.jsonl", "runs/b.jsonl"]

    def test_recursive_reads_subdirectories(self, here: Path) -> None:
        """-r also reads the files below, in path order."""
        self._tree(here)
        (here / "runs" / ".git").mkdir()
        shutil.copy(CONFORMS, here / "runs" / ".git" / "x.jsonl")
        for flag in ("-r", "--recursive"):
            result = replay("spec.json", "runs", flag, "--format", "json")
            assert ids(result) == ["runs/a.jsonl", "runs/b.jsonl", "runs/nested/c.jsonl"]

    def test_compressed_and_json_files_count(self, here: Path) -> None:
        """A directory's .json, .jsonl.gz and .zst files are trajectory files too."""
        import gzip

        (here / "runs").mkdir()
        (here / "runs" / "a.jsonl.gz").write_bytes(gzip.compress(CONFORMS.read_bytes()))
        result = replay("spec.json", "runs", "--format", "json")
        assert result.exit_code == 0 and ids(result) == ["runs/a.jsonl.gz"]

    def test_inspect_eval_archives_count(self, here: Path) -> None:
        """A directory's Inspect .eval archives are read too, beside its JSON-lines files."""
        (here / "runs").mkdir()
        shutil.copy(EXAMPLES / "frameworks" / "inspect" / "approved.eval", here / "runs" / "x.eval")
        shutil.copy(CONFORMS, here / "runs" / "a.jsonl")
        (here / "runs" / "x.eval.gz").write_bytes(b"not read: an archive is never compressed again")
        result = replay("spec.json", "runs", "--format", "json")
        assert ids(result) == ["runs/a.jsonl", "runs/x.eval#send/epoch1",
                               "runs/x.eval#lookup-error/epoch1"]

    def test_directory_without_trajectories_is_exit_2(self, here: Path) -> None:
        """A directory holding no trajectory file is an error, never an empty pass."""
        (here / "empty").mkdir()
        (here / "empty" / "README.md").write_text("x")
        result = replay("spec.json", "empty")
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr == ("error[bad-input]: empty: no trajectory files in this directory "
                                 "(*.jsonl, *.ndjson, *.json, optionally .gz or .zst, "
                                 "*.eval and *.traj; -r reads subdirectories)\n")

    def test_unreadable_directory_is_exit_2(self, here: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
        """A directory that cannot be listed is one line and exit 2, not an internal error."""
        (here / "runs" / "sub").mkdir(parents=True)
        shutil.copy(CONFORMS, here / "runs" / "a.jsonl")

        def refuse(path: str) -> object:
            raise PermissionError(13, "Permission denied", path)

        monkeypatch.setattr(os, "scandir", refuse)
        for args in (["runs"], ["runs", "-r"]):
            result = replay("spec.json", *args)
            assert result.exit_code == 2, args
            assert result.stderr.startswith("error[bad-input]: runs")
            assert result.stderr.endswith(": cannot read directory: Permission denied\n")

    def test_spec_inside_the_directory_is_not_judged(self, here: Path) -> None:
        """The spec found in a trajectory directory is left out, and the note says so."""
        (here / "runs").mkdir()
        shutil.copy(SPEC, here / "runs" / "spec.json")
        shutil.copy(CONFORMS, here / "runs" / "a.jsonl")
        result = replay("runs/spec.json", "runs", "--format", "json")
        assert result.exit_code == 0 and ids(result) == ["runs/a.jsonl"]
        assert "note: runs/spec.json is the spec, not read as a trajectory" in result.stderr


class TestGlobs:
    def test_glob_matching_nothing_says_so(self, here: Path) -> None:
        """A glob the shell passed on unexpanded is reported as matching nothing, exit 2."""
        (here / "runs").mkdir()
        result = replay("spec.json", "runs/*.jsonl")
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr == "error[bad-input]: no file matches 'runs/*.jsonl'\n"

    def test_quoted_glob_is_expanded(self, here: Path) -> None:
        """A glob that reaches roadcheck unexpanded (quoted, or on Windows) is expanded, sorted."""
        (here / "runs").mkdir()
        shutil.copy(CONFORMS, here / "runs" / "b.jsonl")
        shutil.copy(SKIPPED, here / "runs" / "a.jsonl")
        result = replay("spec.json", "runs/*.jsonl", "--format", "json")
        assert result.exit_code == 1
        assert ids(result) == ["runs/a.jsonl", "runs/b.jsonl"]

    def test_existing_file_with_glob_characters_is_read_literally(self, here: Path) -> None:
        """A file whose name holds glob characters is read as named, not expanded."""
        shutil.copy(CONFORMS, here / "run[1].jsonl")
        result = replay("spec.json", "run[1].jsonl", "--format", "json")
        assert result.exit_code == 0 and ids(result) == ["run[1].jsonl"]

    def test_missing_plain_file_stays_an_error_verdict(self, here: Path) -> None:
        """A missing file without glob characters is still an ERROR verdict naming it."""
        result = replay("spec.json", "nope.jsonl")
        assert result.exit_code == 2
        assert "verdict : ERROR (bad-input) exit 2" in result.stdout
        assert "cannot read: No such file or directory" in result.stdout


class TestStdin:
    def test_dash_reads_standard_input(self, here: Path) -> None:
        """'-' reads one trajectory file from standard input, with id <stdin>."""
        result = replay("spec.json", "-", "--format", "json", input=SKIPPED.read_bytes())
        assert result.exit_code == 1
        doc = orjson.loads(result.stdout)
        assert [(r["id"], r["path"]) for r in doc["results"]] == [("<stdin>", "<stdin>")]
        assert doc["files"] == [{"path": "<stdin>", "format": "native"}]

    def test_stdin_format_is_detected(self, here: Path) -> None:
        """Standard input may hold any format the reader detects (here gzip + ATIF)."""
        import gzip

        data = (ROOT / "tests" / "data" / "frameworks" / "atif_no_approval.json").read_bytes()
        shutil.copy(ROOT / "tests" / "data" / "frameworks" / "spec.yaml", here / "fw.yaml")
        result = replay("fw.yaml", "-", "--format", "json", input=gzip.compress(data))
        doc = orjson.loads(result.stdout)
        assert doc["files"] == [{"path": "<stdin>", "format": "atif"}]
        assert result.exit_code == 1

    def test_stdin_in_a_real_process(self) -> None:
        """python -m roadcheck replay SPEC - < FILE judges the file."""
        with open(CONFORMS, "rb") as fh:
            out = subprocess.run([sys.executable, "-m", "roadcheck", "replay", str(SPEC), "-"],
                                 stdin=fh, capture_output=True, check=False)
        assert out.returncode == 0, out.stderr
        assert b"[1] <stdin>" in out.stdout

    def test_empty_stdin_is_an_error_verdict(self, here: Path) -> None:
        """Nothing on standard input is ERROR, never a pass."""
        result = replay("spec.json", "-", input=b"")
        assert result.exit_code == 2
        assert "empty trajectory" in result.stdout


class TestJsonDocuments:
    def test_pretty_printed_array_of_native_events_is_read(self, here: Path) -> None:
        """A JSON array of native events, pretty-printed, is read as the same trajectory."""
        Path("a.json").write_text(json.dumps(_events(SKIPPED), indent=2))
        result = replay("spec.json", "a.json", "--format", "json")
        doc = orjson.loads(result.stdout)
        line = replay("spec.json", str(SKIPPED), "--format", "json")
        want = orjson.loads(line.stdout)["results"][0]
        got = doc["results"][0]
        assert result.exit_code == 1
        # the same reasons; each names the line of its own file (a.json is pretty-printed)
        assert [r.pop("line") for r in want["reasons"]] == [5]
        assert [r.pop("line") for r in got["reasons"]] == [53]
        assert got["reasons"] == want["reasons"] and got["verdict"] == "BLOCK"
        assert doc["files"] == [{"path": "a.json", "format": "native"}]

    def test_one_line_array_is_read(self, here: Path) -> None:
        """A JSON array on one line is read too."""
        Path("a.json").write_text(json.dumps(_events(CONFORMS)))
        assert replay("spec.json", "a.json").exit_code == 0

    def test_pretty_printed_objects_one_after_another_are_read(self, here: Path) -> None:
        """Native events pretty-printed one after another (jq's output) are read."""
        Path("a.json").write_text("\n".join(json.dumps(e, indent=2) for e in _events(CONFORMS)))
        assert replay("spec.json", "a.json").exit_code == 0

    def test_array_errors_name_the_line_of_the_item(self, here: Path) -> None:
        """A bad event inside a pretty-printed array is reported at the line it starts on."""
        events = _events(CONFORMS)
        del events[2]["action_type"]
        text = json.dumps(events, indent=2)
        Path("a.json").write_text(text)
        third = [i for i, ln in enumerate(text.splitlines(), 1) if ln == "  {"][2]
        result = replay("spec.json", "a.json")
        assert result.exit_code == 2
        assert (f"detail : line {third}: action event is missing required key 'action_type'"
                in result.stdout)

    def test_broken_pretty_printed_json_names_its_line(self, here: Path) -> None:
        """A syntax error in a JSON document is reported at its own line, not at column 2."""
        text = json.dumps(_events(CONFORMS), indent=2)
        lines = text.splitlines()
        lines[4] = lines[4].rstrip(",")  # drop the comma after "agent": "scanner"
        Path("a.json").write_text("\n".join(lines))
        result = replay("spec.json", "a.json")
        assert result.exit_code == 2
        assert ("detail : line 6: unparseable JSON document: Expecting ',' delimiter at "
                "column 5") in result.stdout
        assert "column 2" not in result.stdout

    def test_array_of_something_else_says_what_native_is(self, here: Path) -> None:
        """A JSON array that does not hold native events says what the native format is."""
        Path("a.json").write_text('[\n  {"name": "x"}\n]\n')
        result = replay("spec.json", "a.json")
        assert result.exit_code == 2
        assert ("detail : line 1: a JSON array that does not hold native events: the native "
                "format is one JSON event per line (or a JSON array of events); "
                "--input-format names the other formats") in result.stdout

    def test_deeply_nested_document_is_an_error_verdict(self, here: Path) -> None:
        """A JSON document nested beyond the parser's depth is ERROR, not an internal error."""
        Path("a.json").write_text("[" * 100_000)
        result = replay("spec.json", "a.json")
        assert result.exit_code == 2
        assert ("detail : line 1: nested more than 250 levels deep (arrays and objects), the "
                "limit for every reader" in result.stdout)

    def test_jsonl_with_a_truncated_line_keeps_its_message(self) -> None:
        """A broken line in a JSONL file is still reported as before (line and column)."""
        result = replay(str(SPEC), str(EXAMPLES / "fixture_bad_input.jsonl"))
        assert "detail : line 2: unparseable JSON: unexpected end of data at column 91" \
            in result.stdout


class TestSwappedArguments:
    @pytest.mark.parametrize("name", ["t.jsonl", "t.json"])
    def test_trajectory_given_as_spec(self, here: Path, name: str) -> None:
        """A trajectory in the SPEC place is recognised, with the order to use."""
        shutil.copy(CONFORMS, here / name)
        result = replay(name, "spec.json")
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr == (f"error[bad-input]: {name}: this looks like a trajectory, not a "
                                 "spec: the spec comes first (roadcheck replay SPEC "
                                 "TRAJECTORY...)\n")

    def test_other_trajectory_formats_as_spec(self, here: Path) -> None:
        """A recorded run in another format given as the spec is recognised too."""
        atif = ROOT / "tests" / "data" / "frameworks" / "atif_no_approval.json"
        result = replay(str(atif), "spec.json")
        assert result.exit_code == 2
        assert "this looks like a trajectory, not a spec" in result.stderr

    def test_a_bad_spec_keeps_its_own_error(self, here: Path) -> None:
        """A spec with a mistake is not mistaken for a trajectory."""
        Path("s.yaml").write_text("mandatory_checkpoints:\n  - [unclosed\n")
        result = replay("s.yaml", str(CONFORMS))
        assert result.exit_code == 2 and "invalid YAML" in result.stderr


class TestDuplicates:
    def test_same_file_twice_is_judged_once(self, here: Path) -> None:
        """A file named twice, under different spellings, is judged once, with a note."""
        shutil.copy(CONFORMS, here / "a.jsonl")
        os.symlink(here / "a.jsonl", here / "link.jsonl")
        (here / "runs").mkdir()
        shutil.copy(SKIPPED, here / "runs" / "b.jsonl")
        result = replay("spec.json", "a.jsonl", "./a.jsonl", "link.jsonl", "runs",
                        "runs/b.jsonl", "--format", "json")
        assert ids(result) == ["a.jsonl", "runs/b.jsonl"]
        assert orjson.loads(result.stdout)["summary"]["pass"] == 1
        assert result.stderr == (
            "note: ./a.jsonl is the same file as a.jsonl; judged once\n"
            "note: link.jsonl is the same file as a.jsonl; judged once\n"
            "note: runs/b.jsonl is given more than once; judged once\n")

    def test_many_files_and_hard_links_are_each_judged_once(self, here: Path) -> None:
        """Among thousands of files, a hard link and a directory named twice are noticed."""
        from roadcheck._inputs import expand_inputs

        (here / "runs").mkdir()
        for i in range(3000):
            (here / "runs" / f"t{i:04d}.jsonl").write_bytes(b"x")
        os.link(here / "runs" / "t0007.jsonl", here / "runs" / "u.jsonl")
        inputs = expand_inputs(["runs", "runs/t2999.jsonl", "./runs"])
        assert len(inputs.paths) == 3000
        assert inputs.paths[0] == "runs/t0000.jsonl"
        assert inputs.paths[-1] == "runs/t2999.jsonl"
        assert "runs/u.jsonl" not in inputs.paths
        assert inputs.notes[0] == "runs/u.jsonl is the same file as runs/t0007.jsonl; judged once"
        assert inputs.notes[1] == "runs/t2999.jsonl is given more than once; judged once"
        assert inputs.notes[2] == "./runs/t0000.jsonl is the same file as runs/t0000.jsonl; " \
            "judged once"
        assert inputs.notes[-1] == ("./runs/u.jsonl is the same file as runs/t0007.jsonl; "
                                    "judged once")
        assert len(inputs.notes) == 3003  # u.jsonl, t2999.jsonl, then all 3001 of ./runs

    def test_stdin_twice(self, here: Path) -> None:
        """'-' given twice reads standard input once."""
        result = replay("spec.json", "-", "-", "--format", "json", input=CONFORMS.read_bytes())
        assert ids(result) == ["<stdin>"]
        assert "note: - is given more than once; judged once" in result.stderr


class TestByField:
    def test_absent_field_warns(self, here: Path) -> None:
        """--by a field no trajectory carries warns on stderr; the report stays as it is."""
        result = replay("spec.json", str(CONFORMS), "--by", "tsak_success")
        assert result.exit_code == 0
        assert "by tsak_success=(absent): 1 PASS, 0 BLOCK, 0 ERROR" in result.stdout
        assert result.stderr == ("warning: no trajectory carries 'tsak_success' in its final "
                                 "event; every result is grouped under (absent)\n")

    def test_present_field_is_quiet(self, here: Path) -> None:
        """A field some trajectory carries gives no warning."""
        result = replay("spec.json", str(CONFORMS), "--by", "task_success")
        assert result.stderr == ""


class TestNotUtf8:
    def test_spec_not_utf8(self, here: Path) -> None:
        """A YAML spec with a Latin-1 byte is one line: file, line, byte and column."""
        Path("s.yaml").write_bytes(b"mandatory_checkpoints:\n  - checkpoint_id: caf\xe9\n")
        result = replay("s.yaml", str(CONFORMS))
        assert result.exit_code == 2
        assert result.stderr == ("error[bad-input]: s.yaml:2: not UTF-8 text (byte 0xe9 at "
                                 "column 23)\n")

    def test_json_spec_not_utf8(self, here: Path) -> None:
        """The same for a JSON spec; the column counts characters, not bytes."""
        Path("s.json").write_bytes('{"x": "é", "y": "?"}'.encode().replace(b"?", b"\xff"))
        result = replay("s.json", str(CONFORMS))
        assert result.stderr == ("error[bad-input]: s.json:1: not UTF-8 text (byte 0xff at "
                                 "column 18)\n")

    def test_trajectory_not_utf8(self, here: Path) -> None:
        """A trajectory with a bad byte is ERROR with the line and the column of the byte."""
        data = CONFORMS.read_bytes().replace(b"billing_db", b"billing_d\x96")
        Path("t.jsonl").write_bytes(data)
        result = replay("spec.json", "t.jsonl")
        assert result.exit_code == 2
        col = CONFORMS.read_text().splitlines()[1].index("billing_db") + 10
        assert f"detail : line 2: not UTF-8 text (byte 0x96 at column {col})" in result.stdout

    def test_other_documents_not_utf8(self, tmp_path: Path) -> None:
        """Contracts, workflows and checkpoints share the same check."""
        from roadcheck import load_contract
        from roadcheck.errors import SpecError

        path = tmp_path / "c.yaml"
        path.write_bytes(b"\xfe\n")
        with pytest.raises(SpecError, match=r"c.yaml:1: not UTF-8 text \(byte 0xfe at column 1\)"):
            load_contract(path)


class TestPathList:
    def test_holds_paths_in_order_as_a_sequence(self) -> None:
        """Indexing, slicing, iteration and membership read back the paths given."""
        from roadcheck._inputs import PathList

        given = ["a.jsonl", "dir/b.jsonl", "caf\u00e9.jsonl", "bad\udcff.jsonl", "-"]
        paths = PathList(given)
        assert list(paths) == given
        assert [paths[i] for i in range(-5, 5)] == given + given
        for cut in (slice(1, 3), slice(0, 5), slice(2, 9), slice(3, 1), slice(4, 4),
                    slice(-2, None), slice(None, None, 2), slice(4, 0, -1)):
            assert paths[cut] == given[cut], cut  # a run of them is decoded at once
        assert "-" in paths and "b.jsonl" not in paths and "a" not in paths
        assert paths == given
        with pytest.raises(IndexError):
            paths[5]


class TestDirectoryListing:
    """A directory argument's files: what is left out, the order, the notes."""

    @pytest.fixture
    def odd(self, here: Path) -> Path:
        """A directory of every kind of entry a listing meets."""
        runs = here / "runs"
        runs.mkdir()
        for name in ("b.jsonl", "a.json", "c.ndjson", "d.jsonl.gz", "e.json.zst",
                     "caf\u00e9.jsonl", "Z.jsonl", "f.jsonl.bz2", "g.txt", ".hidden.jsonl",
                     "h.gz", "x.zst.jsonl", "\u00e9t\u00e9.jsonl", "\U0001f600.jsonl"):
            (runs / name).write_bytes(b"x")
        (runs / "dir.jsonl").mkdir()
        (runs / "dir.jsonl" / "inner.jsonl").write_bytes(b"x")
        os.symlink("b.jsonl", runs / "link-to-file.jsonl")
        os.symlink("dir.jsonl", runs / "link-to-dir.jsonl")
        os.symlink("missing.jsonl", runs / "broken.jsonl")
        os.mkfifo(runs / "fifo.jsonl")
        return runs

    def test_edge_entries(self, odd: Path) -> None:
        """Hidden names, other suffixes, directories, FIFOs and broken links are left out;
        a link to a file is its target (judged once, with the note); sorted by name."""
        inputs = _inputs.expand_inputs(["runs"])
        assert list(inputs.paths) == [
            "runs/Z.jsonl", "runs/a.json", "runs/b.jsonl", "runs/c.ndjson",
            "runs/caf\u00e9.jsonl", "runs/d.jsonl.gz", "runs/e.json.zst",
            "runs/x.zst.jsonl", "runs/\u00e9t\u00e9.jsonl", "runs/\U0001f600.jsonl"]
        assert inputs.notes == (
            "runs/link-to-file.jsonl is the same file as runs/b.jsonl; judged once",)

    def test_after_other_arguments_and_before_them(self, odd: Path) -> None:
        """Files named before or after a listed directory are matched against it."""
        (odd / "link-to-file.jsonl").unlink()
        inputs = _inputs.expand_inputs(["runs/a.json", "runs", "./runs/b.jsonl", "-"])
        assert list(inputs.paths)[:3] == ["runs/a.json", "runs/Z.jsonl", "runs/b.jsonl"]
        assert list(inputs.paths)[-1] == "-" and len(inputs.paths) == 11
        assert inputs.notes == ("runs/a.json is given more than once; judged once",
                                "./runs/b.jsonl is the same file as runs/b.jsonl; judged once")

    def test_spec_inside_is_left_out(self, odd: Path) -> None:
        (odd / "link-to-file.jsonl").unlink()
        inputs = _inputs.expand_inputs(["runs"], spec="runs/c.ndjson")
        assert "runs/c.ndjson" not in inputs.paths
        assert inputs.notes == ("runs/c.ndjson is the spec, not read as a trajectory",)

    def test_names_that_are_not_utf8(self, here: Path) -> None:
        (here / "bytes").mkdir()
        (here / "bytes" / "ok.jsonl").write_bytes(b"x")
        (here / "bytes" / os.fsdecode(b"bad\xff.jsonl")).write_bytes(b"x")
        inputs = _inputs.expand_inputs(["bytes"])
        assert list(inputs.paths) == ["bytes/bad\udcff.jsonl", "bytes/ok.jsonl"]

    def test_a_large_directory(self, here: Path) -> None:
        """Thousands of files; a broken link is nothing, two names of one file one."""
        runs = here / "runs"
        runs.mkdir()
        for i in range(2100):
            (runs / f"t{i:05d}.jsonl").touch()
        os.symlink("gone.jsonl", runs / "t01500-broken.jsonl")
        (runs / "t02099-dir.jsonl").mkdir()
        inputs = _inputs.expand_inputs(["runs"])
        assert len(inputs.paths) == 2100 and not inputs.notes
        os.link(runs / "t00007.jsonl", runs / "t01800-again.jsonl")
        inputs = _inputs.expand_inputs(["runs"])
        assert len(inputs.paths) == 2100
        assert inputs.notes == ("runs/t01800-again.jsonl is the same file as "
                                "runs/t00007.jsonl; judged once",)


class TestNamesNotUtf8Judged:
    """A directory holding a file whose name is not UTF-8 (``os.open(b"runs/!\\xff.jsonl")``):
    every file is judged, with one process and with two, and every report names it as
    the text report escapes it (``runs/!\\udcff.jsonl``, a backslash and ``udcff``)."""

    SHOWN = "runs/!\\udcff.jsonl"

    @pytest.fixture
    def runs(self, here: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        from roadcheck.conformance import batch

        monkeypatch.setattr(batch, "_FILES_PER_WORKER", 1)  # two workers for three files
        runs = here / "runs"
        runs.mkdir()
        shutil.copy(CONFORMS, runs / "a.jsonl")
        fd = os.open(b"runs/!\xff.jsonl", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, SKIPPED.read_bytes())  # it blocks: every format names it
        finally:
            os.close(fd)
        shutil.copy(CONFORMS, runs / "b.jsonl")
        return runs

    @pytest.mark.parametrize("fmt", ["text", "json", "junit", "sarif", "github"])
    @pytest.mark.parametrize("extra", [[], ["--summary-only", "--per-file"],
                                       ["--by", "task_success"]])
    def test_one_and_two_processes_report_it_alike(self, runs: Path, fmt: str,
                                                   extra: list[str]) -> None:
        """The same bytes and exit code with --jobs 1 and --jobs 2, the file named escaped."""
        one = replay("spec.json", "runs", "--format", fmt, "--jobs", "1", *extra)
        two = replay("spec.json", "runs", "--format", fmt, "--jobs", "2", *extra)
        assert one.exit_code == two.exit_code == 1, (one.output, two.output)
        assert one.stdout == two.stdout
        assert "\udcff" not in one.stdout
        if fmt == "sarif":  # the artifact URI percent-encodes the name's own bytes
            assert '"uri":"runs/%21%FF.jsonl"' in one.stdout, one.stdout
        if fmt != "json" or not extra:
            assert self.SHOWN in one.stdout.replace("\\\\", "\\"), one.stdout

    def test_json_names_it(self, runs: Path) -> None:
        """In JSON the file and its result carry the escaped name; the verdicts are kept."""
        doc = orjson.loads(replay("spec.json", "runs", "--format", "json").stdout)
        assert [f["path"] for f in doc["files"]] == [self.SHOWN, "runs/a.jsonl",
                                                     "runs/b.jsonl"]
        assert [(r["id"], r["path"], r["verdict"]) for r in doc["results"]] == [
            (self.SHOWN, self.SHOWN, "BLOCK"), ("runs/a.jsonl", "runs/a.jsonl", "PASS"),
            ("runs/b.jsonl", "runs/b.jsonl", "PASS")]

    def test_a_report_file(self, runs: Path, here: Path) -> None:
        """Written to a file, the text report names it too."""
        result = replay("spec.json", "runs", "--jobs", "2", "-o", "report.txt")
        assert result.exit_code == 1
        text = (here / "report.txt").read_text(encoding="utf-8")
        assert f"[1] {self.SHOWN}\n" in text


def test_a_failure_in_the_parent_leaves_no_worker_waiting(tmp_path: Path) -> None:
    """When taking the workers' chunks fails in the parent (an internal error, exit 70),
    the pool is shut down and the process ends, never waiting on workers for ever."""
    runs = tmp_path / "runs"
    runs.mkdir()
    data = CONFORMS.read_bytes()
    for i in range(400):
        (runs / f"{i:03d}.jsonl").write_bytes(data)
    script = (
        "import time\n"
        "from roadcheck.conformance import batch\n"
        "from roadcheck.report.replay import ReplayReportWriter\n"
        "batch._FILES_PER_WORKER = 1\n"
        "judge = batch._judge_chunk\n"
        "def slow(start, stop):\n"  # the workers still at work when the parent fails
        "    time.sleep(0.2)\n"
        "    return judge(start, stop)\n"
        "batch._judge_chunk = slow\n"
        "def broken(self, chunk):\n"
        "    raise RuntimeError('taking a chunk failed')\n"
        "ReplayReportWriter.merge = broken\n"
        "import sys\n"
        "from roadcheck.__main__ import main\n"  # the console script's way out (quick exit)
        f"sys.argv = ['roadcheck', 'replay', {str(SPEC)!r}, {str(runs)!r}, '--jobs', '2']\n"
        "main()\n")
    import signal

    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the process and the workers it left
        proc.communicate()
        pytest.fail("the process never ended: its workers were left waiting")
    assert proc.returncode == 70, err
    assert "taking a chunk failed" in err


class TestFilesThatHoldNoRun:
    """A Claude Code project folder holds summary files beside the sessions: each is
    noted, not judged, and never an ERROR; nothing judged at all is still exit 2."""

    SESSION = EXAMPLES / "frameworks" / "claude-code" / "approved.jsonl"
    SPEC = EXAMPLES / "frameworks" / "claude-code" / "spec.yaml"
    SUMMARY = ROOT / "tests" / "data" / "coding" / "claude-code-summary" / "summary-only.jsonl"
    NOTE = "a Claude Code summary file, 2 summaries and no session entries"

    def _project(self, here: Path) -> None:
        (here / "project").mkdir()
        shutil.copy(self.SESSION, here / "project" / "b-session.jsonl")
        shutil.copy(self.SUMMARY, here / "project" / "a-summary.jsonl")

    def test_a_project_folder_is_judged_on_its_sessions(self, here: Path) -> None:
        self._project(here)
        result = replay(str(self.SPEC), "project")
        assert result.exit_code == 0, result.output
        assert (f"input: project/a-summary.jsonl (claude-code, 0 trajectories; holds no run: "
                f"{self.NOTE})\n") in result.stdout
        assert "summary: 1 PASS, 0 BLOCK, 0 ERROR -> overall exit 0" in result.stdout
        doc = orjson.loads(replay(str(self.SPEC), "project", "--format", "json").stdout)
        assert doc["files"] == [
            {"path": "project/a-summary.jsonl", "format": "claude-code", "note": self.NOTE},
            {"path": "project/b-session.jsonl", "format": "claude-code"}]
        assert [r["id"] for r in doc["results"]] == ["project/b-session.jsonl"]

    def test_the_library_run_names_the_noted_files(self, here: Path) -> None:
        import roadcheck

        self._project(here)
        run = roadcheck.replay(str(self.SPEC), ["project/a-summary.jsonl",
                                                "project/b-session.jsonl"])
        assert run.notes == (("project/a-summary.jsonl", self.NOTE),)
        assert [f for f, _ in run.files] == ["project/a-summary.jsonl", "project/b-session.jsonl"]
        assert run.exit == 0 and len(run.results) == 1

    @pytest.mark.parametrize("forced", [False, True])
    def test_nothing_but_summaries_judges_nothing(self, here: Path, forced: bool) -> None:
        """No run judged is never a pass, with the format detected or given."""
        shutil.copy(self.SUMMARY, here / "s.jsonl")
        extra = ["--input-format", "claude-code"] if forced else []
        result = replay(str(self.SPEC), "s.jsonl", *extra)
        assert result.exit_code == 2
        assert f"holds no run: {self.NOTE}" in result.stdout
        assert "summary: 0 PASS, 0 BLOCK, 0 ERROR -> overall exit 2" in result.stdout

    @pytest.mark.parametrize("fmt", ["text", "json", "junit"])
    def test_two_processes_note_it_the_same(self, here: Path, fmt: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
        from roadcheck.conformance import batch

        self._project(here)
        shutil.copy(self.SUMMARY, here / "project" / "c-summary.jsonl")
        one = replay(str(self.SPEC), "project", "--format", fmt)
        monkeypatch.setattr(batch, "_FILES_PER_WORKER", 1)
        two = replay(str(self.SPEC), "project", "--format", fmt, "--jobs", "2")
        assert (two.exit_code, two.stdout) == (one.exit_code, one.stdout)
        assert one.exit_code == 0


def test_a_directory_of_swe_agent_runs_is_read(here: Path) -> None:
    """SWE-agent writes a folder per instance, each holding its .traj: -r reads them."""
    src = ROOT / "tests" / "data" / "swe-agent"
    trajs = sorted(src.glob("*.traj"))
    assert trajs
    (here / "runs" / "instance-1").mkdir(parents=True)
    shutil.copy(trajs[0], here / "runs" / "instance-1" / trajs[0].name)
    result = replay(str(src / "spec.yaml"), "runs", "-r", "--format", "json")
    assert ids(result) == [f"runs/instance-1/{trajs[0].name}"]
    assert orjson.loads(result.stdout)["files"][0]["format"] == "swe-agent"
