"""The anchored head of a store: how many records it holds and the hash of the last one.

The chain alone cannot tell a cut tail from a shorter run, nor an appended
record (with a correct hash) from a real one. The head can: it is rewritten
atomically with every record, and verification compares the chain with it. A
record counts as committed once its head counts it; the engine acts on a record
only after that. With a key, ``mac`` authenticates every other field; without
one a writer of the run directory can rewrite the head as easily as the records.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from roadcheck.evidence.keys import AUTH_ED25519, AUTH_NONE, AnyKey

__all__ = ["Head", "HeadError"]

_HEX64 = re.compile(r"[0-9a-f]{64}")


class HeadError(ValueError):
    """A head document that is not a head."""


@dataclass(frozen=True, slots=True)
class Head:
    """One store's anchor: record count, last hash, manifest digest and authentication."""

    run_id: str
    records: int
    last_hash: str
    manifest_sha256: str | None = None
    auth: str = AUTH_NONE
    key_id: str | None = None
    mac: str | None = None

    def body(self) -> bytes:
        """The canonical bytes the MAC or signature covers: every field but ``mac``;
        for a signed head its RFC 8785 canonical JSON, else sorted compact JSON."""
        doc = self.to_dict()
        del doc["mac"]
        if self.auth == AUTH_ED25519:
            from roadcheck.evidence.signing import canonical

            return canonical(doc)
        return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)

    def sealed(self, key: AnyKey | None) -> Head:
        """This head with its auth mode set and, with a key, its MAC (or, with an Ed25519
        private key, its signature) computed."""
        if key is None:
            if self.auth == AUTH_NONE and self.key_id is None and self.mac is None:
                return self  # frozen: nothing to change
            return dataclasses.replace(self, auth=AUTH_NONE, key_id=None, mac=None)
        unsigned = dataclasses.replace(self, auth=key.auth, key_id=key.key_id, mac=None)
        return dataclasses.replace(unsigned, mac=key.mac(unsigned.body()))

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON shape: every field, in declaration order (all are plain values,
        so this is what :func:`dataclasses.asdict` gives, without its deep copies)."""
        return {"run_id": self.run_id, "records": self.records, "last_hash": self.last_hash,
                "manifest_sha256": self.manifest_sha256, "auth": self.auth,
                "key_id": self.key_id, "mac": self.mac}

    @classmethod
    def from_dict(cls, doc: Any) -> Head:
        """Read a stored head; anything malformed is a :class:`HeadError`."""
        if not isinstance(doc, Mapping):
            raise HeadError("the head is not an object")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(doc) - names
        if unknown:
            raise HeadError(f"the head has unknown field(s) {', '.join(sorted(unknown))}")
        records, last = doc.get("records"), doc.get("last_hash")
        if type(records) is not int or records < 0:
            raise HeadError("the head's 'records' is not a count")
        if not isinstance(last, str) or not _HEX64.fullmatch(last):
            raise HeadError("the head's 'last_hash' is not a sha256")
        for name in ("run_id", "auth"):
            if not isinstance(doc.get(name), str):
                raise HeadError(f"the head's {name!r} is not text")
        for name in ("manifest_sha256", "key_id", "mac"):
            if doc.get(name) is not None and not isinstance(doc.get(name), str):
                raise HeadError(f"the head's {name!r} is not text")
        return cls(**{k: doc[k] for k in names if k in doc})

    def short(self) -> str:
        """``N records, last <12 hex>`` for reports."""
        return f"{self.records} records, last {self.last_hash[:12]}"
