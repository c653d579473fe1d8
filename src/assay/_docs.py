"""Reading JSON and YAML documents with one-line errors that name file and line."""

from __future__ import annotations

from typing import Any

from assay._text_check import check_utf8
from assay.errors import InputError

__all__ = ["line_of", "load_document", "parse_document"]


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
    check_utf8(data, path, error)
    if not data.strip():
        raise error("empty document", path=path)
    if path.endswith(".json"):
        import orjson

        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise error(f"invalid JSON: {exc.msg} at column {exc.colno}", path=path,
                        line=exc.lineno) from None
    import yaml

    try:
        # the libyaml loader, when built, is the same safe loader at C speed
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return yaml.load(data, Loader=loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        raise error(f"invalid YAML: {exc.problem}", path=path,
                    line=None if mark is None else mark.line + 1) from None
    except yaml.YAMLError as exc:
        raise error(f"invalid YAML: {exc}", path=path) from None


def line_of(path: str, loc: tuple[int | str, ...]) -> int | None:
    """The 1-based line of the node at ``loc`` in a JSON/YAML file, or None.

    Only used on the error path: validation errors know the field, not the
    line, and a person fixing the file wants the line.
    """
    import yaml

    try:
        with open(path, "rb") as fh:
            node = yaml.compose(fh)
    except (OSError, yaml.YAMLError):
        return None
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if k.value == str(part)]
            if not match:
                break
            key, node = match[0]
            line = key.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) \
                and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line

