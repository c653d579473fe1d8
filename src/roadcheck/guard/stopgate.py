"""The success gate at the end of a turn: the agent's last words against its own calls.

When the assistant hands the turn back (Claude Code ``Stop`` / ``SubagentStop``,
Codex ``Stop``, Gemini CLI ``AfterAgent``), a hook given ``--contract`` reads the
agent's final message and checks each claim it makes with the contract's ``said``
entries (:mod:`roadcheck.acceptance.said`, the engine ``roadcheck accept`` uses)
against the session so far. An unbacked claim holds the stop with a reason the
model can act on; a stop held :attr:`StopGate.limit` times in a row is let through
with a warning for the person.

The count of re-prompts is read from the guard's own sealed session state: each
held stop is observed as the assistant's message with ``held`` naming the claims
it failed, and the count is the run of held stops of that agent since the last
user message or the last stop let through. A file the agent can write plays no
part in it.

Where the evidence comes from:

* the final message: the text the CLI sends with the event
  (``last_assistant_message``, ``prompt_response``), else the last assistant
  message of its transcript (``transcript_path``), else the last one the guard saw;
* the calls: the guard's own session events; for a subagent whose event names its
  own transcript (``agent_transcript_path``), that transcript's calls, so a
  subagent that reports work and made no call at all is held.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_LIMIT", "NO_MESSAGE", "UNREAD", "StopGate", "held_before"]

#: Re-prompts per turn before a stop with unbacked claims is let through with a warning.
DEFAULT_LIMIT = 2
#: The mark of a stop held because its final message could not be read.
NO_MESSAGE = "no-final-message"
#: The mark of a subagent's stop held because its own transcript could not be read.
UNREAD = "unreadable-transcript"

_ACT = ("run the call again and report what it shows, or say plainly what is not done "
        "or not verified")


class StopGate:
    """The contract a stop is checked against, read on the first stop it judges.

    ``contract``: a contract file or ``builtin:NAME``; ``limit``: re-prompts per
    turn; ``transcript_format``: the reader of the CLI's transcripts (None where
    there is none). A plain class: every hook process builds the classes it imports.
    """

    __slots__ = ("_rules", "contract", "limit", "transcript_format")

    def __init__(self, contract: str, limit: int = DEFAULT_LIMIT,
                 transcript_format: str | None = None) -> None:
        if limit < 0:
            raise ValueError("the re-prompt limit must be 0 or more")
        self.contract = contract
        self.limit = limit
        self.transcript_format = transcript_format
        self._rules: tuple[Any, ...] | None = None

    def rules(self) -> tuple[Any, ...]:
        """The contract's compiled ``said`` entries; a contract that cannot be read, or
        that looks for no claim, raises (the hook's failure answer, never a pass)."""
        if self._rules is None:
            from roadcheck.acceptance.contract import load_contract
            from roadcheck.acceptance.files import contract_file
            from roadcheck.errors import InputError

            loaded = load_contract(contract_file(self.contract))
            if not loaded._said:
                raise InputError(f"the contract {self.contract} looks for no claim in the "
                                 "agent's words (no 'said'): it cannot judge a stop")
            self._rules = tuple(loaded._said)
        return self._rules

    def judge(self, live: Any, request: Any) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
        """``(held, warning, marks)`` for a stop ``request`` on the locked session ``live``.

        ``held``: one line per unbacked claim, for the model (empty: the stop may
        happen); ``warning``: for the person, when the limit let a stop with unbacked
        claims through; ``marks``: the claim ids the stop is held for, kept on the
        observed message (the sealed count of re-prompts).
        """
        from roadcheck.errors import RoadcheckError

        rules = self.rules()
        prior = held_before(live.guard.records, request.agent)
        if getattr(request, "active", None) is True:
            prior = max(prior, 1)  # the CLI says this stop already follows a hook's block
        try:
            text, events = self._evidence(live, request)
        except RoadcheckError as exc:  # held, and it counts toward the limit
            text, events = None, []
            unread: str | None = f"{exc.reason}: {exc.location_message()}"
        else:
            unread = None
        if unread is not None:
            problems: tuple[str, ...] = (
                f"your own transcript could not be read ({unread}), so the claims of your "
                "final message cannot be checked against your calls",)
            marks: tuple[str, ...] = (UNREAD,)
        elif text is None:
            problems = (
                "your final message could not be read, so the claims in it cannot be checked "
                "against the session; end the turn with a message that says what you did",)
            marks = (NO_MESSAGE,)
        else:
            from roadcheck.acceptance.said import check_said

            bad = [s for s in check_said(text, events, rules) if not s.ok]
            problems = tuple(s.message for s in bad)
            marks = tuple(s.claim for s in bad)
        if not problems:
            return (), "", ()
        if prior >= self.limit:
            times = f"{prior} re-prompt{'s' if prior != 1 else ''}"
            return (), (f"roadcheck guard: let the agent stop after {times} this turn, though "
                        "its final message is not backed by the session: "
                        + "; ".join(problems)), ()
        return tuple(f"{p}; {_ACT}" for p in problems), "", marks

    def _evidence(self, live: Any, request: Any) -> tuple[str | None, list[Any]]:
        """The final message and the events its claims are checked against."""
        from roadcheck.acceptance.said import final_message
        from roadcheck.events import Event

        own = [Event.from_dict(rec) for rec in live.guard.records]
        sub = getattr(request, "agent_transcript", None)
        if sub and self.transcript_format:
            events = self._read(sub)  # a subagent's own calls: unreadable holds the stop
            return (request.text if request.text is not None else final_message(events)), events
        if request.text is not None:
            return request.text, own
        if request.transcript and self.transcript_format:
            from roadcheck.errors import RoadcheckError

            try:
                text = final_message(self._read(request.transcript))
            except RoadcheckError:  # no message: held, and it counts toward the limit
                text = None
            if text is not None:
                return text, own
        return final_message(own), own

    def _read(self, path: str) -> list[Any]:
        from roadcheck.acceptance.trace import load_session

        return list(load_session(path, self.transcript_format).events)


def held_before(records: list[Any], agent: str | None) -> int:
    """How many stops of ``agent`` were held in a row this turn: back from the last
    record, up to the last user message or the last stop of that agent let through."""
    count = 0
    for rec in reversed(records):
        if rec.get("event") != "message":
            continue
        if rec.get("role") == "user":
            break
        if rec.get("yields_turn") is True and rec.get("agent") == agent:
            if not rec.get("held"):
                break
            count += 1
    return count
