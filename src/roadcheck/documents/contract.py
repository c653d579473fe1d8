"""The accept contract document: result types, allow-lists and what backs each claim."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

__all__ = ["ClaimDoc", "ContractDoc"]

Text = Annotated[str, msgspec.Meta(min_length=1)]
TypeName = Literal["string", "integer", "number", "boolean", "array", "object", "null"]
TypeNames = Annotated[list[TypeName], msgspec.Meta(min_length=1)]
Scalar = str | int | float | bool | None


class ClaimDoc(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A claim backed by a call of ``tool`` whose ``args`` equal fields of the result.

    ``ClaimDoc("send_invoice", args={"id": "target_id"})`` is backed only by a
    ``send_invoice`` call whose ``id`` argument equals the result's ``target_id``.
    """

    tool: Text
    #: Argument name of the call -> field name of the result.
    args: dict[Text, Text] = {}

    def __post_init__(self) -> None:
        # A claim built in Python is held to what a decoded one already meets.
        from collections.abc import Mapping

        from roadcheck.errors import SpecError

        if not isinstance(self.tool, str) or not self.tool:
            raise SpecError(f"a claim's tool must be a non-empty string, got {self.tool!r}")
        if not isinstance(self.args, Mapping):
            raise SpecError(f"claim '{self.tool}': args must map argument names to result fields")
        for arg, fld in self.args.items():
            if not isinstance(arg, str) or not arg or not isinstance(fld, str) or not fld:
                raise SpecError(f"claim '{self.tool}': args must map argument names to result "
                                f"field names, got {arg!r}: {fld!r}")


Claim = Text | ClaimDoc


class ContractDoc(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """An accept contract (JSON or YAML)."""

    #: Field name -> the JSON type it must have (a name or a list of names).
    required: dict[Text, TypeName | TypeNames] = {}
    #: Field name -> the values it may take.
    enums: dict[Text, list[Scalar]] = {}
    #: Claimed verb -> the tool call that must back it.
    claims: dict[Text, Claim] = {}
    #: Another name for ``claims``; both are merged.
    claim_requires_action: dict[Text, Claim] = {}
    #: A JSON Schema the result must also satisfy.
    json_schema: dict[str, Any] | None = None
