"""Claims in the agent's own words: "all tests pass", "I pushed the fix", "opened PR #12".

A contract's ``said`` entries each name a pattern searched in the agent's final
message and the call that would make it true. Where the pattern is found, the claim
is backed only when the session holds such a call, the **last** one succeeded, came
after the last event the claim's ``after`` picks (the test run after the last edit),
and, with ``value_in``, holds the text the pattern captured (the PR number in the
``gh pr create`` output): with a value, the call judged is the last one that holds
it. Anything else rejects, with the claim's text and what the
session shows instead. Checks never print; the findings are data.

Words make no claim under a lead-in announcing work to do (``not_under``), after a
condition or a modal in their own sentence (``not_after``), or inside a quotation
or code (``not_quoted``). A call still running when its first output was read is
judged on the poll that read its end; one that failed but whose output shows its
work done (``shows_done``) succeeded. Edits after an event ``after_unless`` picks
(a switch to a new branch) leave the call standing, and where the claim's sentence
says every change (``every_edit_committed``), each edited file must be in a commit
after its last edit (:mod:`roadcheck.acceptance.committed`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from roadcheck.documents.contract import SaidDoc
from roadcheck.events import Event

__all__ = ["SaidRule", "Shown", "TurnEnd", "check_said", "check_turn_ends", "compile_said",
           "final_message", "turn_ends"]

#: How much of an event's command, or of the claim's text, a finding quotes.
_QUOTE = 80


@dataclass(frozen=True, slots=True)
class SaidRule:
    """One compiled ``said`` entry."""

    doc: SaidDoc
    search: Callable[[str], re.Match[str] | None]
    backed_by: Callable[[Event], bool]
    after: Callable[[Event], bool] | None
    #: Every match ``search`` would take, in order.
    search_all: Callable[[str], Iterator[re.Match[str]]]
    #: When the claim's sentence matches it, every edited file must be committed.
    every_edit: re.Pattern[str] | None = None
    #: The edits ``every_edit`` checks (``edits``, else ``after``).
    edits: Callable[[Event], bool] | None = None
    #: Output that shows a failed backing call did its work.
    shows_done: re.Pattern[str] | None = None
    #: An event after which the ``after`` events no longer make the backing call stale.
    unless: Callable[[Event], bool] | None = None
    #: Calls that back the claim too where it names a value they hold.
    value_backing: Callable[[Event], bool] | None = None


@dataclass(frozen=True, slots=True)
class Shown:
    """One finding about one claim: whether it holds, and why."""

    ok: bool
    claim: str
    message: str


def compile_said(docs: Sequence[SaidDoc]) -> tuple[SaidRule, ...]:
    """Compile the ``said`` entries; a problem raises :class:`Problem` located in them."""
    from roadcheck.documents.loader import Problem
    from roadcheck.selectors import check_selector, compile_selector

    rules: list[SaidRule] = []
    seen: set[str] = set()
    for i, doc in enumerate(docs):
        loc: tuple[str | int, ...] = ("said", i)
        if doc.id in seen:
            raise Problem((*loc, "id"), f"claim id {doc.id!r} is given twice")
        seen.add(doc.id)
        if doc.every_edit_committed is not None and doc.after is None and doc.edits is None:
            raise Problem((*loc, "every_edit_committed"), "every_edit_committed needs "
                          "'edits' or 'after': the edits whose files a commit must hold")
        pattern, lead, mood, every, done = (_regex(loc, key, given) for key, given in (
            ("pattern", doc.pattern), ("not_under", doc.not_under),
            ("not_after", doc.not_after), ("every_edit_committed", doc.every_edit_committed),
            ("shows_done", doc.shows_done)))
        assert pattern is not None
        search = pattern.search
        search_all: Callable[[str], Iterator[re.Match[str]]] = pattern.finditer
        if lead is not None or mood is not None or doc.not_quoted:
            search = partial(_search_no_lead, pattern, lead, mood, doc.not_quoted)
            search_all = partial(_all_no_lead, pattern, lead, mood, doc.not_quoted)
        if doc.value_in is not None and pattern.groups < 1:
            raise Problem((*loc, "value_in"), "value_in needs a group in the pattern: the "
                                              "text it captures is what the call must hold")
        selectors: list[Callable[[Event], bool] | None] = []
        if doc.value_backed_by is not None and doc.value_in is None:
            raise Problem((*loc, "value_backed_by"), "value_backed_by needs value_in: the "
                          "value its calls must hold")
        for key, spec in (("backed_by", doc.backed_by), ("after", doc.after),
                          ("edits", doc.edits), ("after_unless", doc.after_unless),
                          ("value_backed_by", doc.value_backed_by)):
            if spec is None:
                selectors.append(None)
                continue
            specs = spec if isinstance(spec, list) else [spec]
            if not specs:
                raise Problem((*loc, key), "an empty list of selectors picks no call")
            compiled = []
            for j, one in enumerate(specs):
                at: tuple[str | int, ...] = (key, j) if isinstance(spec, list) else (key,)
                try:
                    check_selector(one)
                except Problem as p:
                    raise Problem((*loc, *at, *p.loc), p.message) from None
                compiled.append(compile_selector(one, checked=True))
            selectors.append(compiled[0] if len(compiled) == 1 else _any_of(tuple(compiled)))
        backed = selectors[0]
        assert backed is not None
        rules.append(SaidRule(doc, search, backed, selectors[1], search_all, every,
                              selectors[2] or selectors[1], done, selectors[3],
                              selectors[4]))
    return tuple(rules)


def _regex(loc: tuple[str | int, ...], key: str, given: str | None) -> re.Pattern[str] | None:
    from roadcheck.documents.loader import Problem

    try:
        return re.compile(given) if given is not None else None
    except re.error as exc:
        raise Problem((*loc, key), f"not a valid regular expression: {exc}") from None


#: A list item's marker: "-", "*", "+", "1." or "1)", with an optional checkbox.
_ITEM = re.compile(r"(?:[-*+]|\d+[.)])\s")


def _search_no_lead(pattern: re.Pattern[str], lead: re.Pattern[str] | None,
                    mood: re.Pattern[str] | None, quoted: bool,
                    text: str) -> re.Match[str] | None:
    """The first match of ``pattern`` in ``text`` neither under a lead-in ``lead``
    matches, nor after words ``mood`` matches in its own sentence, nor (``quoted``)
    inside a quotation or code."""
    return next(_all_no_lead(pattern, lead, mood, quoted, text), None)


def _all_no_lead(pattern: re.Pattern[str], lead: re.Pattern[str] | None,
                 mood: re.Pattern[str] | None, quoted: bool,
                 text: str) -> Iterator[re.Match[str]]:
    """Every match :func:`_search_no_lead` would take, in order."""
    for found in pattern.finditer(text):
        words = found.group(0)
        at = found.start() + len(words) - len(words.lstrip())
        if lead is not None and _under(text, at, lead):
            continue
        if mood is not None and mood.search(_sentence_before(text, at)) is not None:
            continue
        if quoted and _quoted(text, at):
            continue
        yield found


#: Where a sentence (or a clause that stands alone) ends: ., !, ?, ; or : before a
#: space or the end, and a line break.
_SENTENCE_END = re.compile(r"[.!?;:](?=\s|$)|\n")


def _sentence_of(found: re.Match[str]) -> str:
    """The sentence a match stands in, whole."""
    text = found.string
    end = _SENTENCE_END.search(text, found.end())
    return _sentence_before(text, found.start()) + text[found.start():
                                                        end.start() if end else len(text)]


def _sentence_before(text: str, at: int) -> str:
    """The words of the sentence ``at`` stands in, before it (a ``:`` or ``.`` inside
    inline code ends no sentence: "Once `mode: full` is committed")."""
    start = 0
    for end in _SENTENCE_END.finditer(text, 0, at):
        line = text.rfind("\n", 0, end.start()) + 1
        if end.group() == "\n" or text.count("`", line, end.start()) % 2 == 0:
            start = end.end()
    return text[start:at]


def _under(text: str, at: int, lead: re.Pattern[str]) -> bool:
    """True when the words at ``at`` stand after a lead-in on their own line
    ("Next steps: commit"), in a list below one, or on the line just below one: a
    heading, or a line ending with a colon, that ``lead`` matches."""
    start = text.rfind("\n", 0, at) + 1
    head = text[start:at]
    if ":" in head and lead.search(head[:head.rindex(":")]) is not None:
        return True
    end = text.find("\n", at)
    item = _ITEM.match(_bare(text[start:end if end >= 0 else len(text)])) is not None
    for line in reversed(text[:start].split("\n")[:-1]):
        bare = _bare(line)
        if item and (not bare or _ITEM.match(bare)):
            continue  # a list item: up through the list to its lead-in
        if bare.startswith("#") or bare.rstrip("*_ ").endswith(":"):
            return lead.search(bare) is not None
        return False
    return False


def _bare(line: str) -> str:
    """A line without its indent and its blockquote markers ("> - item" is "- item")."""
    bare = line.strip()
    while bare.startswith(">"):
        bare = bare[1:].strip()
    return bare


#: A fenced code block's fence: three backticks or tildes opening a line.
_FENCE = re.compile(r"^[ \t>]*(?:```|~~~)", re.M)


def _quoted(text: str, at: int) -> bool:
    """True when ``at`` is inside a fenced code block, or, on its line, inside inline
    code (`...`) or a quotation ("...", “...”): text shown, not words said."""
    if len(_FENCE.findall(text, 0, at)) % 2:
        return True
    line = text[text.rfind("\n", 0, at) + 1:at]
    return (line.count("`") % 2 == 1 or line.count('"') % 2 == 1
            or line.count("\u201c") > line.count("\u201d"))


def _any_of(selectors: tuple[Callable[[Event], bool], ...]) -> Callable[[Event], bool]:
    return lambda event: any(select(event) for select in selectors)


def final_message(events: Sequence[Event]) -> str | None:
    """The text of the last message the agent (not the user or the system) wrote."""
    for event in reversed(events):
        if event.kind == "message" and event.get("role") not in ("user", "system"):
            text = event.get("text")
            if isinstance(text, str) and text.strip():
                return text
    return None


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """The claims one turn end makes, each judged on the session up to that message."""

    seq: int
    text: str
    shown: tuple[Shown, ...]


def _agent_text(event: Event) -> str | None:
    if event.kind != "message" or event.get("role") in ("user", "system"):
        return None
    text = event.get("text")
    return text if isinstance(text, str) and text.strip() else None


def turn_ends(events: Sequence[Event]) -> list[int]:
    """The indices of the messages that hand a turn back: the agent's last message
    before each message of the user's, and its last message of the session."""
    out: list[int] = []
    last: int | None = None
    for i, event in enumerate(events):
        if event.kind == "message" and event.get("role") == "user":
            if last is not None:
                out.append(last)
            last = None
        elif _agent_text(event) is not None:
            last = i
    if last is not None:
        out.append(last)
    return out


def check_turn_ends(events: Sequence[Event], rules: Sequence[SaidRule]) -> list[TurnEnd]:
    """Each turn end's claims, judged as :func:`check_said` judges the final message,
    on the events up to and including that message (what the session showed then)."""
    out: list[TurnEnd] = []
    for i in turn_ends(events):
        text = _agent_text(events[i])
        assert text is not None
        shown = check_said(text, events[:i + 1], rules)
        out.append(TurnEnd(events[i].seq, text, tuple(shown)))
    return out


def check_said(text: str, events: Sequence[Event], rules: Sequence[SaidRule]) -> list[Shown]:
    """Each claim ``text`` makes, backed or not by ``events``; claims not made are left out."""
    actions = [e for e in events if e.kind == "action"]
    out: list[Shown] = []
    for rule in rules:
        found = rule.search(text)
        if found is None:
            continue
        if rule.doc.value_in is not None and not found.group(1):
            found = _naming(rule, text, found)
        shown = _judge(rule, found, events, actions)
        if shown.ok and rule.doc.value_in is not None:
            # each other value the message names is a claim of its own ("All unit tests
            # pass, all integration tests pass"): the first that is not backed rejects
            seen = {found.group(1)}
            for other in rule.search_all(text):
                if other.group(1) and other.group(1) not in seen:
                    seen.add(other.group(1))
                    judged = _judge(rule, other, events, actions)
                    if not judged.ok:
                        shown = judged
                        break
        out.append(shown)
    return out


def _naming(rule: SaidRule, text: str, found: re.Match[str]) -> re.Match[str]:
    """The first match of the claim that names its value ("committed in HEAD
    (`73bb7a0`)" after "the changes are committed"), the most telling of its words;
    else ``found``."""
    return next((m for m in rule.search_all(text) if m.group(1)), found)


def _judge(rule: SaidRule, found: re.Match[str], events: Sequence[Event],
           actions: list[Event]) -> Shown:
    said = _quote(found.group(0))
    name = rule.doc.id
    named = rule.doc.value_in is not None and bool(found.group(1))
    extra = rule.value_backing if named else None
    backing = [e for e in actions if rule.backed_by(e) or (extra is not None and extra(e))]
    if not backing:
        return Shown(False, name, f"you said {said}, but the session has no call that "
                                  f"would back it ({_calls(actions)})")
    last = backing[-1]
    where = rule.doc.value_in
    value = found.group(1) if where is not None else None
    if where is not None and value:
        # The claim names its object (the file, the PR number): judge the last call
        # that holds it, not the last call of the kind (an edit of another file).
        wheres = [where] if isinstance(where, str) else where
        holding = [e for e in backing if any(_holds(e.get(w), value) for w in wheres)]
        if not holding:
            nor = ", nor does any such call before it" if len(backing) > 1 else ""
            return Shown(False, name, f"you said {said}, but {_show(last)} has no "
                                      f"{value!r} in its {' or '.join(wheres)}{nor}")
        last = holding[-1]
    failure = _failure(_polled(last, events))
    if failure is not None and rule.shows_done is not None and any(
            isinstance(t, str) and rule.shows_done.search(t) is not None
            for t in (last.get("result"), last.get("error"))):
        failure = None  # its output shows the work done (a push that then timed out)
    if failure is not None:
        return Shown(False, name, f"you said {said}, but the last such call, {_show(last)}, "
                                  f"failed: {failure}")
    if rule.after is not None:
        later = [e for e in events if rule.after(e) and e.seq > last.seq]
        if later and rule.unless is not None:
            # work after a switch to another branch is on that branch, not this one
            switch = next((e.seq for e in events if e.seq > last.seq and rule.unless(e)), None)
            later = [e for e in later if switch is None or e.seq < switch]
        if later:
            return Shown(False, name, f"you said {said}, but the last such call, "
                                      f"{_show(last)}, came before {_show(later[-1])}")
    if rule.every_edit is not None and rule.edits is not None and rule.every_edit.search(
            _sentence_of(found)) is not None:
        from roadcheck.acceptance.committed import uncommitted

        left = uncommitted(events, rule.edits, lambda e: _failure(e) is None)
        if left:
            (file, seq), more = left[0], len(left) - 1
            also = f" (and {more} more file{'s' if more > 1 else ''})" if more else ""
            return Shown(False, name, f"you said {said}, but {_quote(file)}, edited at "
                                      f"seq {seq}, is in no commit after that{also}")
    return Shown(True, name, f"you said {said}: backed by {_show(last)}")


#: A Codex ``exec_command`` whose first output was read while it still ran.
_RUNNING = re.compile(r"\bProcess running with session ID (\d+)")


def _polled(call: Event, events: Sequence[Event]) -> Event:
    """The call whose outcome is ``call``'s: for a command still running when its first
    output was read (Codex's ``exec_command``, "Process running with session ID N"),
    the last later ``write_stdin`` to that session, which read the rest of its output
    and its exit status; else ``call`` itself."""
    result = call.get("result")
    running = _RUNNING.search(result[:500]) if isinstance(result, str) else None
    if running is None:
        return call
    session = int(running.group(1))
    polls = [e for e in events if e.seq > call.seq and e.kind == "action"
             and e.action_type == "write_stdin" and isinstance(e.get("args"), dict)
             and e.get("args").get("session_id") in (session, str(session))]
    return polls[-1] if polls else call


def _failure(event: Event) -> str | None:
    """Why a call failed, as the recording says, or None when it succeeded.

    A call failed where the selectors' ``ok`` says so (:func:`roadcheck.selectors.succeeded`:
    an error, a refusal, a result marked as an error, a non-zero exit status) or where the
    accept gate's own test does (``ok: false``, ``is_error``, an error in the result)."""
    from roadcheck.acceptance.trace import call_errored
    from roadcheck.selectors import succeeded

    if succeeded(event) is not False and not call_errored(event.data):
        return None
    code = event.get("exit_code")
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        return f"exit {code}"
    error = event.get("error")
    if code is None and "exit_code" in event.data and error is None:
        return "its exit status is not known"  # a hook that reports none (Cursor's shell)
    if not isinstance(error, str):
        result = event.get("result")
        error = result.get("error") if isinstance(result, dict) else None
    return _quote(error) if isinstance(error, str) and error else "an error is recorded"


def _holds(where: Any, value: str) -> bool:
    """True when ``value`` stands as a whole word in the text of ``where``."""
    import json

    text = where if isinstance(where, str) else json.dumps(where, ensure_ascii=False,
                                                           sort_keys=True)
    if "/" in value:  # a path: a Windows one (a\\b, JSON-escaped a\\\\b) names it too
        text = text.replace("\\\\", "/").replace("\\", "/")
    # a short commit hash names the whole one (73bb7a0 in 73bb7a0fffb9...)
    more = "[0-9a-f]*" if re.fullmatch(r"[0-9a-f]{7,40}", value) else ""
    if value.isalpha():  # a word: in any case, between any two non-letters (test:e2e_x)
        return re.search(rf"(?i)(?<![a-z]){re.escape(value)}(?![a-z])", text) is not None
    return re.search(rf"(?<!\w){re.escape(value)}{more}(?!\w)", text) is not None


def _show(event: Event) -> str:
    command = event.get("command")
    what = command if isinstance(command, str) else event.action_type or event.kind
    if event.kind != "action":
        what = f"{event.kind} {what}" if what != event.kind else what
    if event.action_type and not isinstance(command, str):
        target = (event.get("args") or {}).get("file_path") if isinstance(
            event.get("args"), dict) else None
        if isinstance(target, str):
            what = f"{event.action_type} {target}"
    return f"{_quote(str(what))} at seq {event.seq}"


def _calls(actions: list[Event]) -> str:
    if not actions:
        return "it records no call at all"
    names = sorted({str(e.action_type) for e in actions})
    return f"calls made: {', '.join(names)}"


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= _QUOTE else flat[:_QUOTE - 3] + "...")
