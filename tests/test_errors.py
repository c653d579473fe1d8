"""The exception tree and the exit-code contract."""

from __future__ import annotations

import pytest

from roadcheck.errors import (
    EXIT_INTERNAL,
    InputError,
    RoadcheckError,
    SpecError,
    StoreError,
    TraceError,
    worst_exit,
)


class TestErrors:
    @pytest.mark.parametrize(("cls", "code"), [
        (RoadcheckError, 2), (InputError, 2), (SpecError, 2), (TraceError, 2), (StoreError, 2)])
    def test_every_error_exits_2(self, cls: type[RoadcheckError], code: int) -> None:
        """Could-not-judge errors exit 2 and carry a reason code."""
        assert cls.exit_code == code
        assert cls("x").reason

    @pytest.mark.parametrize(("kwargs", "text"), [
        ({}, "boom"),
        ({"path": "a.json"}, "a.json: boom"),
        ({"path": "a.json", "line": 3}, "a.json:3: boom"),
        ({"line": 3}, "line 3: boom"),
    ])
    def test_location_message(self, kwargs: dict[str, object], text: str) -> None:
        """The one-line message names the file and line that are known."""
        assert InputError("boom", **kwargs).location_message() == text  # type: ignore[arg-type]


class TestWorstExit:
    @pytest.mark.parametrize(("codes", "worst"), [
        ([], 0), ([0, 0], 0), ([0, 2], 2), ([2, 1], 1), ([1, 2, 0], 1), ([0, 3], 3),
        ([3, 2], 2), ([3, 1], 1), ([0, 5], EXIT_INTERNAL)])
    def test_fold(self, codes: list[int], worst: int) -> None:
        """BLOCK outranks ERROR outranks PAUSED outranks PASS; unknown codes are a bug."""
        assert worst_exit(codes) == worst
