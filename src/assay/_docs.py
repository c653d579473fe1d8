"""Reading JSON and YAML documents with one-line errors that name file and line."""

from __future__ import annotations

from typing import Any

from assay.errors import InputError

__all__ = ["load_document", "parse_document"]


def load_document(path: str, error: type[InputError] = InputError) -> Any:
    """Read a JSON (``.json``) or YAML (anything else) document from ``path``."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", path=path) from None
    return parse_document(data, path, error)


def parse_document(data: bytes, path: str, error: type[InputError] = InputError) -> Any:
    """Decode a JSON or YAML document; JSON is tried first when the name says so."""
    if not data.strip():
        raise error("empty document", path=path)
    if path.endswith(".json"):
        import orjson

        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            line = data.count(b"\n", 0, exc.pos) + 1
            raise error(f"invalid JSON: {exc.msg}", path=path, line=line) from None
    import yaml

    try:
        return yaml.safe_load(data)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        yaml_line = mark.line + 1 if mark is not None else None
        raise error(f"invalid YAML: {exc.problem}", path=path, line=yaml_line) from None
    except yaml.YAMLError as exc:
        raise error(f"invalid YAML: {exc}", path=path) from None
