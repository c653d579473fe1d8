"""The one document loader: duplicate keys, nulls, strict types and located errors."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import pytest

from roadcheck.documents.loader import load, normalize_sha256
from roadcheck.errors import SpecError


class Inner(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    name: Annotated[str, msgspec.Meta(min_length=1)]
    scope: Literal["first", "each"] = "first"
    require_verified: bool = False
    note: str | None = None


class Outer(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    rules: list[Inner]
    named: dict[str, Inner] = {}
    maybe: int | None = None
    nullable: int | None


def _load(tmp_path: Path, name: str, text: str, **kw: str) -> Outer:
    path = tmp_path / name
    path.write_text(text)
    return load(str(path), Outer, what="thing", **kw).value


def _error(tmp_path: Path, name: str, text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        _load(tmp_path, name, text)
    return info.value


class TestDecoding:
    """JSON and YAML, and what neither may hold."""

    def test_yaml_and_json_give_the_same_struct(self, tmp_path: Path) -> None:
        """The same document in either syntax converts to an equal struct."""
        a = _load(tmp_path, "a.yaml", "rules: [{name: x, scope: each}]\nnullable: null\n")
        b = _load(tmp_path, "a.json", '{"rules": [{"name": "x", "scope": "each"}], '
                                      '"nullable": null}')
        assert a == b and a.rules[0].scope == "each"

    @pytest.mark.parametrize(("name", "text", "line"), [
        ("d.yaml", "rules: []\nnullable: 1\nrules: []\n", 3),
        ("d.yaml", "rules:\n  - name: a\n    scope: each\n    scope: first\nnullable: 1\n", 4),
        ("d.json", '{"rules": [],\n "nullable": 1,\n "rules": []}', 3),
        ("d.json", '{"rules": [{"name": "a",\n  "name": "b"}], "nullable": 1}', 2),
    ])
    def test_duplicate_keys_are_refused(self, tmp_path: Path, name: str, text: str,
                                        line: int) -> None:
        """A repeated key is an error naming the key and the line of its repetition."""
        err = _error(tmp_path, name, text)
        assert "duplicate key" in err.message and err.line == line

    def test_yaml_timestamps_stay_text(self, tmp_path: Path) -> None:
        """An unquoted YAML timestamp is text; the field decides what it means."""
        err = _error(tmp_path, "t.yaml", "rules: []\nnullable: 2026-08-10T00:00:00Z\n")
        assert "nullable: must be an integer or null, got a string" in err.message

    @pytest.mark.parametrize("name", ["s.json", "s.yaml"])
    def test_bytes_that_are_not_utf8_are_refused(self, tmp_path: Path, name: str) -> None:
        """An encoded surrogate (bytes ED A0 80) is not UTF-8, in either syntax."""
        path = tmp_path / name
        path.write_bytes(b'{"rules": [{"name": "a\xed\xa0\x80"}],\n "nullable": 1}')
        with pytest.raises(SpecError) as info:
            load(str(path), Outer, what="thing")
        assert "UTF-8" in info.value.message or "YAML" in info.value.message

    @pytest.mark.parametrize(("name", "text"), [
        ("s.json", '{"rules": [{"name": "a\\ud800"}],\n "nullable": 1}'),
        ("s.yaml", 'rules: [{name: "a\\udc00"}]\nnullable: 1\n'),
        ("s.yaml", '"\\ud800": 1\nrules: []\nnullable: 1\n'),
    ])
    def test_a_lone_surrogate_is_not_text(self, tmp_path: Path, name: str, text: str) -> None:
        """An escaped lone surrogate decodes to no character: refused (libyaml refuses it too)."""
        err = _error(tmp_path, name, text)
        assert "lone surrogate" in err.message or "invalid Unicode" in err.message

    def test_nan_is_not_json(self, tmp_path: Path) -> None:
        """NaN is refused in JSON documents."""
        assert "invalid JSON" in _error(tmp_path, "n.json",
                                        '{"rules": [], "nullable": NaN}').message


class TestNulls:
    """A null never stands for a default."""

    @pytest.mark.parametrize("text", [
        "rules:\nnullable: 1\n",
        "rules: [{name: a, scope: }]\nnullable: 1\n",
        "rules: [{name: a, note: null}]\nnullable: 1\n",
        "rules: []\nmaybe: ~\nnullable: 1\n",
        "rules: []\nnamed: {a: {name: a, require_verified: null}}\nnullable: 1\n",
    ])
    def test_null_for_a_defaulted_key_is_refused(self, tmp_path: Path, text: str) -> None:
        """``key:`` with nothing, or ``key: null``, is an error unless null is a value there."""
        assert "null" in _error(tmp_path, "n.yaml", text).message

    def test_null_where_the_type_allows_it(self, tmp_path: Path) -> None:
        """A required field whose type allows null takes it."""
        assert _load(tmp_path, "n.yaml", "rules: []\nnullable:\n").nullable is None


class TestLocatedErrors:
    """Every problem is one line with the file, the line and the field."""

    def test_unknown_key_suggests_the_closest(self, tmp_path: Path) -> None:
        """A misspelt key names the right one and its own line."""
        err = _error(tmp_path, "u.yaml",
                     "rules:\n  - name: a\n    require_verifed: true\nnullable: 1\n")
        assert err.message == ("unusable thing: rules.0: unknown key 'require_verifed'; "
                               "did you mean 'require_verified'?")
        assert err.line == 3

    def test_missing_required_field(self, tmp_path: Path) -> None:
        """A missing required field is named with its parent's line."""
        err = _error(tmp_path, "m.yaml", "rules:\n  - scope: each\nnullable: 1\n")
        assert err.message == "unusable thing: rules.0.name: required" and err.line == 2

    def test_literal_lists_the_choices(self, tmp_path: Path) -> None:
        """A value outside a fixed set names the choices."""
        err = _error(tmp_path, "l.yaml", "rules:\n  - name: a\n    scope: all\nnullable: 1\n")
        assert err.message.endswith("rules.0.scope: must be 'first' or 'each', got 'all'")
        assert err.line == 3

    def test_map_entries_are_named(self, tmp_path: Path) -> None:
        """A problem inside a map entry names the entry's key, not a placeholder."""
        err = _error(tmp_path, "e.yaml", "rules: []\nnamed:\n  ok: {name: a}\n  bad: "
                                         "{name: b, scop: each}\nnullable: 1\n")
        assert "named.bad: unknown key 'scop'; did you mean 'scope'?" in err.message
        assert err.line == 4

    def test_wrong_type(self, tmp_path: Path) -> None:
        """A wrong type says what was expected and what was found."""
        err = _error(tmp_path, "w.json", '{"rules": [{"name": "a", "require_verified": '
                                         '"true"}], "nullable": 1}')
        assert "rules.0.require_verified: must be true or false, got a string" in err.message


class TestSha256:
    """The document's bytes are hashed and can be pinned."""

    def test_sha256_of_the_bytes(self, tmp_path: Path) -> None:
        """The loaded document carries the sha256 of exactly the bytes read."""
        path = tmp_path / "s.yaml"
        path.write_text("rules: []\nnullable: 1\n")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert load(str(path), Outer, what="thing").sha256 == digest
        assert load(str(path), Outer, what="thing", expect_sha256="sha256:" + digest.upper())
        with pytest.raises(SpecError, match="not the pinned one"):
            load(str(path), Outer, what="thing", expect_sha256="0" * 64)

    def test_malformed_pin(self) -> None:
        """A pin that is not 64 hex digits is refused."""
        with pytest.raises(ValueError, match="not a sha256"):
            normalize_sha256("abc")


class TestByteOrderMark:
    def test_a_json_document_may_start_with_one(self, tmp_path: Path) -> None:
        """A leading BOM is dropped, as the ``utf-8-sig`` codec drops it; the sha256 is of
        the bytes as they are; a second BOM is text, and so no JSON."""
        path = tmp_path / "doc.json"
        path.write_bytes(b"\xef\xbb\xbf" + b'{"rules": [{"name": "a"}], "nullable": null}')
        loaded = load(str(path), Outer, what="doc")
        assert loaded.value == Outer(rules=[Inner(name="a")], nullable=None)
        assert loaded.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        path.write_bytes(b"\xef\xbb\xbf" * 2 + b'{"rules": [], "nullable": null}')
        with pytest.raises(SpecError, match="invalid JSON"):
            load(str(path), Outer, what="doc")
