"""Every document assay reads, declared once as strict typed structs.

Each document kind (replay spec, accept contract, workflow, resume checkpoint,
native trajectory event, evidence record) is a tree of :mod:`msgspec` structs
with unknown fields forbidden at every depth. One loader
(:mod:`assay.documents.loader`) decodes JSON or YAML, refuses duplicate keys
and nulls that would stand for a default, converts strictly into the structs
and reports the first problem on one line with the file, the line and the
field. The JSON Schema of each kind (``assay schema KIND``) is generated from
the same structs by :mod:`assay.documents.schema`.

This package imports only the loader's small helpers; each kind's structs load
with the capability that reads them.
"""

from __future__ import annotations

from assay.documents.loader import Loaded, Problem, convert, decode, load, read_document

__all__ = ["Loaded", "Problem", "convert", "decode", "load", "read_document"]
