"""What each light command may import: a gate that takes a second to start is a gate removed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from roadcheck.harness import Workflow

from .conftest import EXAMPLES, ROOT

#: Never on the path of a light command: models, schema validators, terminals, databases,
#: SDKs, crypto, process pools and event loops.
HEAVY = ("pydantic", "jsonschema", "rich", "psycopg", "psycopg_pool", "cryptography",
         "anthropic", "openai", "ray", "zstandard", "multiprocessing", "concurrent",
         "asyncio")

PROBE = """
import json, sys
from roadcheck.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
names = {*sys.modules, *(m.split(".")[0] for m in sys.modules)}
sys.stderr.write(json.dumps([code, sorted(names)]))
"""


def _imports(args: list[str]) -> tuple[int, set[str]]:
    out = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    code, modules = json.loads(out.stderr.splitlines()[-1])
    return code, set(modules)


@pytest.fixture(scope="class")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runs directory holding one completed run, ``r1``."""
    root = tmp_path_factory.mktemp("runs")
    touch = [sys.executable, "-c", "import sys; open(sys.argv[1], 'w').write('x')", "{artifact}"]
    wf = Workflow.from_dict({"workflow": "w", "phases": [
        {"name": "a", "role": "op", "producer": touch, "artifact": "out.txt",
         "gate": {"command": [sys.executable, "-c", "import sys, os; "
                              "sys.exit(not os.path.isfile(sys.argv[1]))", "{artifact}"]}}]})
    result = wf.run(role="op", identity="me", runs_dir=root, run_id="r1")
    assert result.status == "completed", result.message
    return root


#: What the replay of the example fixtures (a JSON spec, one broken file) never loads: the
#: YAML parser, OpenSSL, the format registry and the typed readers, the JSON scanner
#: used for format detection, the other commands' modules, tempfile (a report this
#: small is spooled in memory), and the utf-8-sig codec (a BOM is dropped by hand). (The
#: spec is read into its document structs, so msgspec and the document loader load.)
REPLAY_ABSENT = {"yaml", "hashlib", "_hashlib", "roadcheck.ingest._registry",
                 "roadcheck.ingest._scan", "tempfile", "encodings.utf_8_sig",
                 "roadcheck.cli.accept",
                 "roadcheck.cli.guard", "roadcheck.cli.harness", "roadcheck.cli.keys",
                 "roadcheck.cli.revalidate", "roadcheck.cli.schema", "roadcheck.cli.spectools"}

COMMANDS = {
    "--version": (["--version"], 0, {"yaml", "msgspec"}),
    "replay": (["replay", "examples/spec.json", *sorted(
        str(p.relative_to(ROOT)) for p in EXAMPLES.glob("fixture_*.jsonl"))], 1, REPLAY_ABSENT),
    "accept": (["accept", "-c", "examples/accept/contract.yaml", "-r",
                "examples/accept/result.json", "-t", "examples/accept/trace.jsonl"], 0, set()),
    "revalidate": (["revalidate", "examples/resume/video/checkpoint.yaml", "--now",
                    "2026-08-10T15:00:00Z"], None, set()),
    "evidence verify": (["evidence", "verify", "r1"], 0, set()),
    "audit": (["audit", "r1"], 0, set()),
}


class TestCommandImports:
    @pytest.mark.parametrize("name", sorted(COMMANDS))
    def test_light_commands_import_nothing_heavy(self, name: str, runs_dir: Path) -> None:
        """Each light command runs to its verdict without loading a heavy module."""
        args, expected, also_absent = COMMANDS[name]
        if name in ("evidence verify", "audit"):
            args = [*args, "--runs-dir", str(runs_dir)]
        code, modules = _imports(args)
        if expected is not None:
            assert code == expected
        assert sorted(modules & {*HEAVY, *also_absent}) == []


def test_jsonl_run_loads_no_other_store(tmp_path: Path) -> None:
    """A run on the JSONL store loads neither the PostgreSQL store (nor psycopg) nor SQLite:
    the store modules load only for the store a run names; nor what only other commands
    need (tempfile, secrets, the HTML helpers)."""
    touch = [sys.executable, "-c", "import sys; open(sys.argv[1], 'w').write('x')", "{artifact}"]
    workflow = tmp_path / "wf.json"
    workflow.write_text(json.dumps({"workflow": "w", "phases": [
        {"name": "a", "role": "op", "producer": touch, "artifact": "out.txt",
         "gate": {"command": [sys.executable, "-c", "import sys, os; "
                              "sys.exit(not os.path.isfile(sys.argv[1]))", "{artifact}"]}}]}))
    code, modules = _imports(["run", str(workflow), "--as", "op", "--identity", "me",
                              "--runs-dir", str(tmp_path / "runs")])
    assert code == 0
    assert sorted(modules & {"roadcheck.evidence.postgres", "psycopg", "psycopg_pool",
                             "sqlite3", "_sqlite3", "tempfile", "secrets", "html"}) == []


def test_each_command_is_declared_where_the_cli_looks_for_it() -> None:
    """The table the CLI imports a command's module by names every command, each in the
    module that declares it, and nothing else."""
    from roadcheck.cli import cli
    from roadcheck.cli._base import _Root

    assert isinstance(cli, _Root)
    declared = {name: cmd.callback.__module__ for name, cmd in cli.commands.items()
                if cmd.callback is not None}
    assert declared == {name: f"roadcheck.cli.{module}"
                        for name, module in _Root.modules.items()}
