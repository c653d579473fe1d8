"""``roadcheck.Workflow``: load a workflow spec once, run or resume it as a role."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roadcheck.evidence.keys import AnyKey
from roadcheck.evidence.store import StoreKind
from roadcheck.harness.engine import execute
from roadcheck.harness.model import WorkflowSpec, load_workflow_spec, parse_workflow_spec
from roadcheck.harness.result import RunResult
from roadcheck.harness.resume import Revalidator
from roadcheck.harness.roles import default_identity

__all__ = ["Workflow"]


class Workflow:
    """A validated workflow: ordered phases, each advanced only by a passing, durable gate.

    >>> wf = Workflow.load(examples / "doc_pipeline" / "workflow.yaml")
    >>> doc = examples / "doc_pipeline" / "corpus" / "01_clean_release_notes.txt"
    >>> wf.run(role="writer", identity="alice", runs_dir=tmp, params={"doc": str(doc)}).status
    'paused'
    """

    def __init__(self, spec: WorkflowSpec, *, source: str | None = None,
                 base_dir: str | os.PathLike[str] | None = None) -> None:
        self.spec = spec
        self.source = source
        #: ``{spec_dir}`` in templates; schema files and callable modules resolve here.
        self.spec_dir = Path(base_dir if base_dir is not None
                             else (Path(source).parent if source else ".")).resolve()

    @classmethod
    def load(cls, path: str | Path) -> Workflow:
        """Read a JSON or YAML workflow file; a bad spec raises :class:`roadcheck.SpecError`."""
        return cls(load_workflow_spec(path), source=str(path))

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], *,
                  base_dir: str | os.PathLike[str] | None = None) -> Workflow:
        """Validate an in-memory workflow document."""
        return cls(parse_workflow_spec(dict(doc)), base_dir=base_dir)

    @property
    def name(self) -> str:
        """The workflow's name."""
        return self.spec.workflow

    def run(self, *, role: str, identity: str | None = None, run_id: str | None = None,
            resume: str | None = None, runs_dir: str | os.PathLike[str] = "runs",
            store: StoreKind = "jsonl", params: Mapping[str, str] | None = None,
            revalidate: Revalidator | None = None, gated: bool = True,
            key: AnyKey | None = None,
            key_file: str | os.PathLike[str] | None = None) -> RunResult:
        """Run the workflow, or resume run ``resume``, acting as ``role`` and ``identity``.

        Returns a :class:`RunResult` whose ``exit`` is 0 completed, 1 hard-stop or
        refused, 3 paused. ``identity`` defaults to ``ROADCHECK_IDENTITY``, else the OS
        user. ``gated=False`` runs the same producers with every gate, record and
        role check skipped: a baseline for measuring what the gates stop, never a
        way to ship work. ``key`` (or ``key_file``; by default ``ROADCHECK_EVIDENCE_KEY_FILE``
        or ``ROADCHECK_EVIDENCE_KEY``) authenticates the run's evidence; a run created with a
        key is only resumed with it.
        """
        return execute(self.spec, spec_dir=self.spec_dir, params=dict(params or {}),
                       runs_dir=Path(runs_dir), role=role,
                       identity=identity or default_identity(), run_id=run_id, resume=resume,
                       store_kind=store, spec_source=self.source, revalidate=revalidate,
                       gated=gated, key=key, key_file=key_file)
