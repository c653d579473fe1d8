"""Finding the line of a field in a JSON or YAML document, for one-line errors."""

from __future__ import annotations

__all__ = ["line_of"]


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

