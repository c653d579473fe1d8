"""The harness in the public API, and the lean import path of ``roadcheck replay``."""

from __future__ import annotations

import subprocess
import sys

import roadcheck
from roadcheck.harness import Workflow


class TestPublicApi:
    """``roadcheck.Workflow`` is public and loaded only on first use."""

    def test_workflow_is_exported(self) -> None:
        """roadcheck.Workflow and roadcheck.RunResult resolve and are listed in __all__."""
        assert roadcheck.Workflow is Workflow
        assert {"Workflow", "RunResult"} <= set(roadcheck.__all__)

    def test_cli_import_does_not_load_the_harness(self) -> None:
        """Importing roadcheck and its CLI loads neither the harness nor the evidence stores."""
        code = ("import sys, roadcheck, roadcheck.cli; "
                "bad = [m for m in sys.modules if m.startswith(('roadcheck.harness', "
                "'roadcheck.evidence')) or m == 'sqlite3']; print(bad); sys.exit(bool(bad))")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
