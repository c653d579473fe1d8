"""A large results file is decoded one run at a time, with the results of a whole read."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

import roadcheck.ingest.transcripts as transcripts
from roadcheck.conformance import load_spec, replay

from ..conftest import EXAMPLES, ROOT

TAU = ROOT / "tests" / "data" / "tau"
FILES = {"tau-bench": TAU / "taubench" / "gpt-4o-airline.json.gz",
         "tau2": TAU / "tau2" / "gpt-4o-airline-50.json.gz"}


def _both(monkeypatch: pytest.MonkeyPatch, path: Path) -> tuple[list[dict], list[dict]]:
    spec = load_spec(EXAMPLES / "tau" / "airline.yaml")
    whole = [r.to_dict() for r in replay(spec, [str(path)]).results]
    monkeypatch.setattr(transcripts, "LARGE_FILE", 0)
    one_by_one = [r.to_dict() for r in replay(spec, [str(path)]).results]
    return whole, one_by_one


class TestOneRunAtATime:
    @pytest.mark.parametrize("fmt", sorted(FILES))
    def test_same_results(self, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
        """Every run of a recorded results file is judged the same either way."""
        whole, one_by_one = _both(monkeypatch, FILES[fmt])
        assert len(whole) > 1 and one_by_one == whole

    def test_the_large_path_is_taken(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Both recorded files pass the checks that let runs be decoded one at a time."""
        for name, path in FILES.items():
            data = gzip.decompress(path.read_bytes())
            field = "simulations" if name == "tau2" else None
            assert transcripts._one_at_a_time(data, field) is not None

    @pytest.mark.parametrize(("doc", "field"), [
        pytest.param(b'[{"task_id": 1, "task_id": 2, "traj": []}]', None, id="repeated-key"),
        pytest.param(b'[{"task_id": 1, "traj": [}]', None, id="broken"),
        pytest.param(b'{"task_id": 1}', None, id="not-a-list"),
        pytest.param(b'{"simulations": [], "simulations": [{"id": 1}]}', "simulations",
                     id="repeated-top-key"),
        pytest.param(b'{"a:b": 1, "simulations": []}', "simulations", id="colon-in-top-key"),
        pytest.param(b'{"info": {"x": 1, "x": 2}, "simulations": []}', "simulations",
                     id="repeated-key-beside"),
    ])
    def test_what_a_whole_read_must_name(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                         doc: bytes, field: str | None) -> None:
        """A file the checks refuse is read whole, so its error is the one it always was."""
        assert transcripts._one_at_a_time(doc, field) is None
        path = tmp_path / "results.json"
        path.write_bytes(doc)
        whole, one_by_one = _both(monkeypatch, path)
        assert one_by_one == whole
