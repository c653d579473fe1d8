"""The public API: what ``import roadcheck`` exports, pinned, and what it costs to import."""

from __future__ import annotations

import subprocess
import sys

import roadcheck

from .conftest import ROOT

EXPECTED = {
    "RoadcheckError", "Contract", "Decision", "Event", "GateResult", "Guard", "GuardDenied",
    "GuardStore", "InputError", "ReplayResult", "ReplayRun",
    "Revalidation", "RunResult", "Spec", "SpecError", "StoreError", "TraceError", "Trajectory",
    "Workflow", "__version__", "load_contract", "load_spec", "load_trajectories", "parse_spec",
    "read_trajectory", "replay", "revalidate", "verify",
}


class TestExports:
    def test_all_is_pinned(self) -> None:
        """__all__ lists exactly the public names, each once: additions and removals are
        deliberate."""
        assert sorted(roadcheck.__all__) == sorted(EXPECTED)

    def test_every_name_resolves(self) -> None:
        """Every name in __all__ can be fetched from the package."""
        for name in roadcheck.__all__:
            assert getattr(roadcheck, name) is not None, name

    def test_dir_lists_every_public_name_before_it_loads(self) -> None:
        """dir(roadcheck) shows the lazily loaded names in a fresh interpreter, loading nothing."""
        code = ("import sys, roadcheck\n"
                "names = set(dir(roadcheck))\n"
                "sys.stdout.write(repr((sorted(set(roadcheck.__all__) - names), "
                "'roadcheck.harness' in sys.modules)))\n")
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                             text=True, check=True)
        assert out.stdout == "([], False)"

    def test_replay_function_survives_submodule_import(self) -> None:
        """roadcheck.replay stays the function even after the conformance package is imported."""
        import roadcheck.conformance

        assert callable(roadcheck.replay)
        run = roadcheck.replay(roadcheck.load_spec(ROOT / "examples" / "spec.json"),
                           [ROOT / "examples" / "fixture_conforms.jsonl"])
        assert run.exit == 0

    def test_read_trajectory(self) -> None:
        """read_trajectory returns the Trajectory of a native file."""
        traj = roadcheck.read_trajectory(str(ROOT / "examples" / "fixture_skipped.jsonl"))
        assert len(traj) == 6 and traj.task_success is True


class TestImportCost:
    def test_replay_path_imports_nothing_heavy(self) -> None:
        """Running roadcheck replay loads neither pydantic, jsonschema, yaml nor rich."""
        code = (
            "import sys\n"
            "from roadcheck.cli import main\n"
            "try:\n"
            "    main(['replay', 'examples/spec.json', 'examples/fixture_conforms.jsonl'])\n"
            "except SystemExit:\n"
            "    pass\n"
            "heavy = [m for m in ('pydantic', 'jsonschema', 'yaml', 'rich') if m in sys.modules]\n"
            "sys.stderr.write(repr(heavy))\n"
        )
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                             text=True, check=True)
        assert out.stderr == "[]"
