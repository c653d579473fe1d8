"""The scenario table in docs/frameworks/index.md is the one the matrix tests run."""

from __future__ import annotations

from . import matrix


def test_the_doc_table_is_generated_from_the_scenario_table() -> None:
    text = matrix.DOC.read_text(encoding="utf-8")
    assert matrix.render() in text, "run: .venv/bin/python -m tests.frameworks.matrix"


def test_every_cell_is_run_or_documented() -> None:
    """Each (framework, scenario) is a test, or an n/a cell with its reason; bugs are run."""
    names = {s.name for s in matrix.SCENARIOS}
    for framework, scenario in [*matrix.NOT_EXPRESSIBLE, *matrix.KNOWN_BUGS]:
        assert framework in matrix.FRAMEWORKS and scenario in names
    assert not set(matrix.NOT_EXPRESSIBLE) & set(matrix.KNOWN_BUGS)
    assert all(why.strip() for why in matrix.NOT_EXPRESSIBLE.values())


def test_a_stale_table_is_replaced_in_place() -> None:
    stale = f"intro\n\n{matrix.BEGIN}\nold\n{matrix.END}\n\nafter\n"
    assert matrix.updated_doc(stale) == f"intro\n\n{matrix.render()}\n\nafter\n"
