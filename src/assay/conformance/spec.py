"""The replay spec: which checkpoints are mandatory, and what each handoff must carry.

A spec is a JSON or YAML document validated by pydantic. Unknown keys are
refused (a misspelt ``require_verifed`` must not silently turn a check off),
and a spec with nothing to check is unusable: it would pass everything.
"""

from __future__ import annotations

from os import PathLike
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from assay.errors import SpecError
from assay.selectors import Selector, compile_selector

__all__ = [
    "DeriveRule", "HandoffContract", "MandatoryCheckpoint", "Spec", "load_spec", "parse_spec",
]

NonEmpty = Annotated[str, Field(min_length=1)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MandatoryCheckpoint(_Model):
    """A checkpoint that must be recorded before a guarded action runs."""

    checkpoint_id: NonEmpty
    #: One action type, or a list of them, that the checkpoint guards.
    must_precede: NonEmpty | list[NonEmpty]
    #: ``first``: one checkpoint before the first guarded action satisfies the rule.
    #: ``each``: every occurrence of a guarded action needs a checkpoint before it.
    scope: Literal["first", "each"] = "first"
    #: When true, one checkpoint licenses one guarded action only.
    consume: bool = False
    #: When set, a checkpoint counts only if its ``confirmed_by`` is one of these.
    confirmed_by: list[NonEmpty] | None = None
    #: Event selectors after which an earlier checkpoint no longer counts.
    voided_by: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def guarded(self) -> tuple[str, ...]:
        """The guarded action types, as a tuple."""
        m = self.must_precede
        return (m,) if isinstance(m, str) else tuple(m)

    @field_validator("must_precede")
    @classmethod
    def _not_empty_list(cls, v: str | list[str]) -> str | list[str]:
        if isinstance(v, list) and not v:
            raise ValueError("must name at least one action type")
        return v

    @field_validator("voided_by")
    @classmethod
    def _selectors_compile(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for sel in v:
            compile_selector(sel)
        return v

    def void_selectors(self) -> list[Selector]:
        """The compiled ``voided_by`` selectors."""
        return [compile_selector(s) for s in self.voided_by]


class HandoffContract(_Model):
    """What a handoff from one agent to another must carry."""

    from_agent: NonEmpty
    to_agent: NonEmpty
    required_fields: list[NonEmpty] = Field(default_factory=list)
    #: When true, every required field must arrive as ``{"value": v, "verified": true}``.
    require_verified: bool = False


class DeriveRule(_Model):
    """Turns matching events into checkpoint events at the same position."""

    checkpoint_id: NonEmpty
    when: dict[str, Any]

    @field_validator("when")
    @classmethod
    def _selector_compiles(cls, v: dict[str, Any]) -> dict[str, Any]:
        compile_selector(v)
        return v

    def selector(self) -> Selector:
        """The compiled ``when`` selector."""
        return compile_selector(self.when)


class Spec(_Model):
    """A whole replay spec."""

    mandatory_checkpoints: list[MandatoryCheckpoint] = Field(default_factory=list)
    handoff_contracts: list[HandoffContract] = Field(default_factory=list)
    derive: list[DeriveRule] = Field(default_factory=list)
    #: Where the spec was read from (set by :func:`load_spec`; not part of the document).
    source: str | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _has_something_to_check(self) -> Spec:
        if not self.mandatory_checkpoints and not self.handoff_contracts:
            raise ValueError("the spec declares no mandatory checkpoint and no handoff contract; "
                             "it would pass everything")
        seen: set[tuple[str, str]] = set()
        for c in self.handoff_contracts:
            pair = (c.from_agent, c.to_agent)
            if pair in seen:
                raise ValueError(f"two handoff contracts for {pair[0]}->{pair[1]}")
            seen.add(pair)
        return self


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def parse_spec(doc: Any, source: str | None = None) -> Spec:
    """Validate a decoded spec document."""
    if not isinstance(doc, dict):
        raise SpecError(f"the spec must be an object, got {type(doc).__name__}", path=source)
    try:
        spec = Spec.model_validate(doc)
    except ValidationError as exc:
        raise SpecError(f"unusable spec: {_first_error(exc)}", path=source) from None
    return spec.model_copy(update={"source": source})


def load_spec(path: str | PathLike[str]) -> Spec:
    """Read a JSON or YAML spec file."""
    from assay._docs import load_document

    source = str(path)
    return parse_spec(load_document(source, error=SpecError), source)
