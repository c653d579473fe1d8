"""Every document roadcheck reads, declared once as strict typed structs.

Each document kind (replay spec, accept contract, workflow, resume checkpoint,
native trajectory event, evidence record) is a tree of :mod:`msgspec` structs
with unknown fields forbidden at every depth. One loader
(:mod:`roadcheck.documents.loader`) decodes JSON or YAML, refuses duplicate keys
and nulls that would stand for a default, converts strictly into the structs
and reports the first problem on one line with the file, the line and the
field. The JSON Schema of each kind (``roadcheck schema KIND``) is generated from
the same structs by :mod:`roadcheck.documents.schema`.

This package imports nothing until one of its names is used; each kind's structs
load with the capability that reads them, and a reader of plain documents
(:mod:`roadcheck.documents._read`) loads without the typed conversion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roadcheck._lazy import lazy_dir, lazy_getattr

if TYPE_CHECKING:
    from roadcheck.documents.loader import Loaded, Problem, convert, decode, load, read_document

__all__ = ["Loaded", "Problem", "convert", "decode", "load", "read_document"]

_LAZY = {name: "roadcheck.documents.loader" for name in __all__}

__getattr__ = lazy_getattr("roadcheck.documents", globals(), _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)
