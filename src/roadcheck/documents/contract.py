"""The accept contract document: result types, allow-lists and what backs each claim."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

__all__ = ["ClaimDoc", "ContractDoc", "SaidDoc"]

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


class SaidDoc(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A claim the agent makes in its own words, and the call that must back it.

    ``pattern`` is searched in the agent's final message; where it is found, the last
    action ``backed_by`` selects must exist and have succeeded, come after the last
    event ``after`` selects (when given), and, with ``value_in``, hold the text of the
    pattern's first group in its ``result`` or its ``args``.
    """

    #: A name for the claim, quoted in every finding about it.
    id: Text
    #: A regular expression (Python syntax; ``(?i)`` for any case).
    pattern: Text
    #: The calls that would make the claim true: a selector over actions, or a list
    #: of selectors (a call any of them picks).
    backed_by: dict[Text, Any] | list[dict[Text, Any]]
    #: The backing call must come after the last event this selector (or any
    #: selector of this list) picks.
    after: dict[Text, Any] | list[dict[Text, Any]] | None = None
    #: Where the first group of ``pattern`` must appear in the backing call (a list:
    #: in any of them).
    value_in: Literal["result", "args"] | list[Literal["result", "args"]] | None = None
    #: A regular expression: words found in a list or a line under a lead-in this
    #: matches (a heading, or a line ending with a colon: "Acceptance criteria:")
    #: announce work to do, and make no claim.
    not_under: Text | None = None
    #: A regular expression: words found after words this matches in their own
    #: sentence (a condition, "if", "when"; a modal, "should", "will be", "needs to be")
    #: make no claim.
    not_after: Text | None = None
    #: Words that begin inside a quotation ("...", “...”) or inline code (`...`) on
    #: their line, or inside a fenced code block, make no claim: they show text.
    not_quoted: bool = False
    #: A regular expression: where the claim's sentence holds words it matches ("all
    #: changes", "everything", "each feature"), every file an ``after`` event edited
    #: must be in a successful ``git commit`` after its last edit (staged by ``git
    #: add`` naming it or everything, or by ``git commit -a``), not only the last edit.
    #: Needs ``edits`` or ``after``.
    every_edit_committed: Text | None = None
    #: A regular expression: a backing call that failed (a timeout, an exit status)
    #: whose output (``result`` or ``error``) matches it did its work all the same (git
    #: push's ref update line before the shell's timeout).
    shows_done: Text | None = None
    #: A selector (or list): once an event it picks comes after the backing call,
    #: later ``after`` events no longer make that call stale (edits after a switch to
    #: a new branch are that branch's work).
    after_unless: dict[Text, Any] | list[dict[Text, Any]] | None = None
    #: With ``value_in``: calls that also back the claim where it names its value and
    #: they hold it (git's record of a commit the claim names: ``git show``, ``git log``).
    value_backed_by: dict[Text, Any] | list[dict[Text, Any]] | None = None
    #: The edits ``every_edit_committed`` checks: a selector or a list of selectors
    #: (default: ``after``).
    edits: dict[Text, Any] | list[dict[Text, Any]] | None = None


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
    #: Claims found in the agent's final message, each with the call that backs it.
    said: list[SaidDoc] = []
