"""JSON Schemas of the document kinds, generated from the same structs the loader uses.

``roadcheck schema KIND`` prints one; an editor given it completes and checks a
spec, contract, workflow or checkpoint as it is typed. The schema states what
the loader enforces beyond msgspec's defaults: a key with a default takes no
null, and a workflow gate's kind is the key that names it.
"""

from __future__ import annotations

import importlib
import json
from typing import Any, get_args

import msgspec

from roadcheck.documents.loader import _is_struct, _members, _unwrap

__all__ = ["KINDS", "render_schema", "schema"]

#: Document kind -> (module, root type). ``spec`` .. ``checkpoint`` are read by the loader.
KINDS: dict[str, tuple[str, str]] = {
    "spec": ("roadcheck.documents.spec", "SpecDoc"),
    "contract": ("roadcheck.documents.contract", "ContractDoc"),
    "workflow": ("roadcheck.documents.workflow", "WorkflowSpec"),
    "checkpoint": ("roadcheck.documents.checkpoint", "CheckpointDoc"),
    "event": ("roadcheck.documents.event", "Event"),
    "evidence": ("roadcheck.documents.evidence", "EvidenceRecord"),
}
#: Kinds whose tag is written as the key that names it rather than as a field.
_KEYED_TAGS = {"workflow"}
#: Kinds read leniently about nulls (a native event's null means absent).
_NULLS_ALLOWED = {"event", "evidence"}


def _structs(t: Any, seen: dict[str, type[msgspec.Struct]]) -> None:
    for m in _members(t):
        base = _unwrap(m)
        if _is_struct(base):
            if base.__name__ in seen:
                continue
            seen[base.__name__] = base
            for f in msgspec.structs.fields(base):
                _structs(f.type, seen)
        else:
            for arg in get_args(base):
                _structs(arg, seen)


def _no_null(prop: dict[str, Any]) -> dict[str, Any]:
    prop = dict(prop)
    prop.pop("default", None)
    options = [o for o in prop.get("anyOf", ()) if o != {"type": "null"}]
    if "anyOf" in prop:
        del prop["anyOf"]
        if len(options) == 1:
            prop.update(options[0])
        else:
            prop["anyOf"] = options
    return prop


def _drop_discriminators(node: Any) -> None:
    if isinstance(node, dict):
        node.pop("discriminator", None)
        for v in node.values():
            _drop_discriminators(v)
    elif isinstance(node, list):
        for v in node:
            _drop_discriminators(v)


def schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one document kind."""
    module, name = KINDS[kind]
    root = getattr(importlib.import_module(module), name)
    doc: dict[str, Any] = msgspec.json.schema(root)
    defs = doc.get("$defs", {})
    structs: dict[str, type[msgspec.Struct]] = {}
    _structs(root, structs)
    for cls_name, cls in structs.items():
        props = defs[cls_name].setdefault("properties", {})
        if kind not in _NULLS_ALLOWED:
            for f in msgspec.structs.fields(cls):
                if not f.required and f.default is None:
                    props[f.encode_name] = _no_null(props[f.encode_name])
        tag_field = cls.__struct_config__.tag_field
        if kind in _KEYED_TAGS and tag_field is not None:
            props.pop(tag_field, None)
            required = [r for r in defs[cls_name].get("required", []) if r != tag_field]
            defs[cls_name]["required"] = required
    if kind in _KEYED_TAGS:
        _drop_discriminators(doc)
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    doc["title"] = f"roadcheck {kind}"
    return doc


def render_schema(kind: str) -> str:
    """The schema as deterministic text: sorted keys, 2-space indent, one final newline."""
    return json.dumps(schema(kind), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
