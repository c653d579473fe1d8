"""The Claude Code reader's edges: which error a broken file gets, and what the chain decides.

A transcript can be wrong in more than one way at once; the reader names one
error, chosen in a fixed order: a line that is no entry (bad JSON, a repeated key,
a misshapen ``type``, ``uuid``, ``parentUuid``, ``logicalParentUuid`` or
``isSidechain``) anywhere in the file first, then an empty file, a subagent run
(sidechain entries) in a main transcript that does not hang together, a uuid given
twice with different contents, a looping chain, and last the first entry whose
content cannot be read. Whether an entry is on the
live chain decides some of it: a message off the chain is not read at all.
"""

from __future__ import annotations

import json

import pytest

from roadcheck.ingest import ReadFailure
from roadcheck.ingest.claude_code import read_claude_code


def _entry(uuid, parent, typ, content, **extra):
    rec = {"parentUuid": parent, "isSidechain": False, "sessionId": "s1", "type": typ,
           "message": {"role": typ, "content": content}, "uuid": uuid,
           "timestamp": "2026-03-02T10:00:00.000Z"}
    rec.update(extra)
    return json.dumps(rec)


def _call(call_id, name="Bash", **args):
    return [{"type": "tool_use", "id": call_id, "name": name, "input": args}]


def _result(call_id, text="ok", **extra):
    return [{"type": "tool_result", "tool_use_id": call_id, "content": text, **extra}]


def _read(lines, text=True):
    data = ("\n".join(lines) + "\n").encode()
    (item,) = read_claude_code("s.jsonl", data, text=text)
    return item


def _error(lines):
    item = _read(lines)
    assert isinstance(item, ReadFailure), item
    return item.error.line, item.error.message


def _events(lines, text=True):
    item = _read(lines, text)
    assert not isinstance(item, ReadFailure), item.error
    return [(e.kind, e.agent, dict(e.data)) for e in item.events]


PROMPT = _entry("u1", None, "user", "go")
BAD_BLOCK = _entry("a1", "u1", "assistant", [{"type": "tool_use", "name": "Bash"}])


def test_a_line_that_is_no_entry_wins_over_an_earlier_unreadable_one():
    assert _error([PROMPT, BAD_BLOCK, "{not json"]) == (
        3, "unparseable JSON: unexpected character, expected a string key")
    assert _error([PROMPT, BAD_BLOCK, json.dumps({"uuid": "x"})]) == (
        3, "missing required key 'type'")
    assert _error([PROMPT, BAD_BLOCK, _entry("x", 5, "user", "hi")]) == (
        3, "'parentUuid' must be a string, got int")
    assert _error([PROMPT, BAD_BLOCK, _entry("x", "u1", "user", "hi", logicalParentUuid=[])]) == (
        3, "'logicalParentUuid' must be a string, got list")
    assert _error([PROMPT, BAD_BLOCK, _entry(None, "u1", "user", "hi", isSidechain=1)]) == (
        3, "'isSidechain' must be true or false, got int")


def test_the_first_misshapen_key_of_a_line_is_named():
    line = _entry(1, 2, "user", "hi", logicalParentUuid=3, isSidechain="no")
    assert _error([line]) == (1, "'uuid' must be a string, got int")


def test_an_empty_file_and_a_blank_one():
    assert _error([]) == (1, "empty transcript: no entries")
    assert _error(["", "  ", "\t"]) == (1, "empty transcript: no entries")


def _runs(lines, text=True):
    data = ("\n".join(lines) + "\n").encode()
    items = list(read_claude_code("s.jsonl", data, text=text))
    assert not any(isinstance(i, ReadFailure) for i in items), items
    return {t.id: [(e.kind, e.agent, e.line, e.get("text") or e.get("action_type"))
                   for e in t.events] for t in items}


#: Older Claude Code wrote each subagent run into the main transcript, marked isSidechain.
MIXED = [
    _entry("u1", None, "user", "go"),
    _entry("a1", "u1", "assistant", _call("t1", "Task", prompt="look", subagent_type="x")),
    _entry("s1", None, "user", "look", isSidechain=True),
    _entry("s2", "s1", "assistant", _call("b1", command="ls"), isSidechain=True),
    _entry("s3", "s2", "user", _result("b1", "a.py"), isSidechain=True),
    _entry("s4", "s3", "assistant", "found a.py", isSidechain=True),
    _entry("r1", "a1", "user", _result("t1", "found a.py")),
    _entry("a2", "r1", "assistant", "done"),
]


def test_subagent_runs_in_a_main_transcript_are_runs_of_their_own():
    assert _runs(MIXED) == {
        "s.jsonl#main": [("message", "user", 1, "go"), ("action", "claude", 2, "Task"),
                         ("handoff", "claude", 2, None), ("message", "claude", 8, "done"),
                         ("final", None, None, None)],
        "s.jsonl#sidechain-3": [("message", "user", 3, "look"),
                                ("action", "subagent", 4, "Bash"),
                                ("message", "subagent", 6, "found a.py"),
                                ("final", None, None, None)]}


def test_interleaved_subagent_runs_are_told_apart_by_their_chains():
    lines = [_entry("u1", None, "user", "go"),
             _entry("s1", None, "user", "one", isSidechain=True),
             _entry("t1", None, "user", "two", isSidechain=True),
             _entry("s2", "s1", "assistant", "one done", isSidechain=True),
             _entry("t2", "t1", "assistant", "two done", isSidechain=True, agentId="f00"),
             _entry("s2", "s1", "assistant", "one done", isSidechain=True),  # written again
             _entry("a1", "u1", "assistant", "both done")]
    runs = _runs(lines)
    assert list(runs) == ["s.jsonl#main", "s.jsonl#sidechain-2", "s.jsonl#sidechain-3"]
    assert runs["s.jsonl#sidechain-2"][:2] == [("message", "user", 2, "one"),
                                               ("message", "subagent", 4, "one done")]
    assert runs["s.jsonl#sidechain-3"][:2] == [("message", "user", 3, "two"),
                                               ("message", "agent-f00", 5, "two done")]


def test_a_file_of_one_thread_is_one_run_as_before():
    (only,) = read_claude_code("s.jsonl", ("\n".join(MIXED[:2]) + "\n").encode())
    assert only.id == "s.jsonl"
    side = [line for line in MIXED[2:6]]
    (only,) = read_claude_code("s.jsonl", ("\n".join(side) + "\n").encode())
    assert only.id == "s.jsonl" and only.events[1].agent == "subagent"


@pytest.mark.parametrize(("at", "line", "message"), [
    (3, _entry("s1", "a1", "user", "look", isSidechain=True),
     "a sidechain entry hangs from 'a1', an entry of the main thread (line 2)"),
    (3, _entry("s1", "zz", "user", "look", isSidechain=True),
     "a sidechain entry hangs from 'zz', which no entry of the file gives"),
    (3, json.dumps({"type": "progress", "isSidechain": True}),
     "a sidechain entry with neither 'uuid' nor 'parentUuid' belongs to no subagent run"),
    (3, _entry("u1", None, "user", "look", isSidechain=True),
     "uuid 'u1' is given to a sidechain entry and to an entry of the main thread (first at "
     "line 1)"),
    (3, _entry("s1", "s4", "user", "look", isSidechain=True),
     "the parentUuid chain loops at 's1'"),
    # an error inside a run is the file's error, at its line: no run of it is read
    (5, _entry("s3", "s2", "user", _result("nope"), isSidechain=True),
     "content block 0: a tool result answers call id 'nope', which no earlier tool call made"),
    (7, _entry("r1", "s4", "user", _result("t1", "found a.py")),
     "an entry of the main thread hangs from 's4', a sidechain entry (line 6)"),
])
def test_a_misshapen_subagent_run_in_a_main_transcript_is_refused(at, line, message):
    lines = list(MIXED)
    lines[at - 1] = line
    assert _error_of_file(lines) == (at, message)


def _error_of_file(lines):
    items = list(read_claude_code("s.jsonl", ("\n".join(lines) + "\n").encode()))
    assert len(items) == 1 and isinstance(items[0], ReadFailure), items
    return items[0].error.line, items[0].error.message


def test_the_runs_read_without_text_as_with_it():
    assert {k: [e[:3] for e in v] for k, v in _runs(MIXED, text=False).items()} == {
        k: [e[:3] for e in v] for k, v in _runs(MIXED).items()}


def test_a_uuid_given_twice_is_compared_on_what_the_reader_reads():
    same = [PROMPT, PROMPT, _entry("a1", "u1", "assistant", "hi")]
    assert [k for k, _, _ in _events(same)] == ["message", "message", "final"]
    other_cwd = [PROMPT, _entry("u1", None, "user", "go", cwd="/elsewhere"),
                 _entry("a1", "u1", "assistant", "hi")]
    assert len(_events(other_cwd)) == 3
    changed = [PROMPT, BAD_BLOCK, _entry("u1", None, "user", "go", isMeta=False)]
    assert _error(changed) == (3, "uuid 'u1' is given twice (first at line 1)")
    # the first difference in line order is the one named
    assert _error([PROMPT, _entry("a1", "u1", "assistant", "x"),
                   _entry("a1", "u1", "assistant", "y"),
                   _entry("u1", None, "user", "again")]) == (
        3, "uuid 'a1' is given twice (first at line 2)")


def test_an_entry_written_twice_is_read_once():
    """The same entry written again (a resumed session copies its entries) is one event:
    a copied call is one call, and a copied approval licenses what the first one did."""
    call = _entry("a1", "u1", "assistant", _call("t1", command="git push"))
    answer = _entry("r1", "a1", "user", _result("t1"))
    once = [PROMPT, call, answer]
    assert _events([PROMPT, call, answer, call, answer]) == _events(once)
    assert _events([PROMPT, PROMPT, call, PROMPT, answer]) == _events(once)


def test_a_copied_approval_licenses_no_second_push(tmp_path):
    """One "yes, push" written twice between two pushes is one approval: under
    ``consume`` the second push is unlicensed (read twice, it passed)."""
    from roadcheck import replay

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({
        "mandatory_checkpoints": [{"checkpoint_id": "push_ok", "consume": True, "scope": "each",
                                   "must_precede": {"action_type": "Bash",
                                                    "command": {"words": ["git", "push"]}}}],
        "derive": [{"checkpoint_id": "push_ok",
                    "when": {"event": "message", "role": "user", "text": {"regex": "push"}}}]}))
    yes = _entry("u1", None, "user", "yes, push")
    lines = [yes, _entry("a1", "u1", "assistant", _call("t1", command="git push")),
             _entry("r1", "a1", "user", _result("t1")), yes,
             _entry("a2", "r1", "assistant", _call("t2", command="git push")),
             _entry("r2", "a2", "user", _result("t2"))]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (result,) = replay(str(spec), [str(path)]).results
    assert result.verdict == "BLOCK"


def test_text_claude_code_writes_itself_is_no_user_message():
    """An interrupt marker, a local command's output, a notification, a compaction
    summary are system text: a derive rule on the user's words does not match them.
    A slash command the user typed, and ``!`` input, stay the user's."""
    texts = ["[Request interrupted by user for tool use]",
             "<local-command-stdout>pushed</local-command-stdout>",
             "<bash-stdout>git push: ok</bash-stdout>",
             "<task-notification>push task done</task-notification>",
             "This session is being continued from a previous conversation that ran out "
             "of context. The user asked to push."]
    lines = [_entry(f"u{i}", f"u{i - 1}" if i else None, "user", t) for i, t in enumerate(texts)]
    lines.append(_entry("s1", f"u{len(texts) - 1}", "user", "Summary: push it",
                        isCompactSummary=True))
    lines.append(_entry("c1", "s1", "user", "<command-name>/push</command-name>"))
    lines.append(_entry("b1", "c1", "user", [{"type": "text",
                                              "text": "<bash-input>git push</bash-input>"}]))
    roles = [d["role"] for k, _, d in _events(lines) if k == "message"]
    assert roles == ["system"] * 6 + ["user", "user"]


def test_a_looping_chain_is_an_error_at_the_entry_it_loops_at():
    lines = [_entry("u1", "a1", "user", "go"), _entry("a1", "u1", "assistant", "hi")]
    assert _error(lines) == (2, "the parentUuid chain loops at 'a1'")
    # the loop comes before a block that cannot be read
    assert _error([*lines, BAD_BLOCK.replace('"a1"', '"a9"')]) == (
        1, "the parentUuid chain loops at 'u1'")


def test_an_unreadable_message_off_the_chain_is_not_read():
    bad_text = [{"type": "text", "text": 5}]
    lines = [PROMPT, _entry("a1", "u1", "assistant", bad_text),
             _entry("u2", None, "user", "start over")]
    assert [e["text"] for _, _, e in _events(lines)[:-1]] == ["start over"]
    lines = [PROMPT, _entry("a1", "u1", "assistant", bad_text)]
    assert _error(lines) == (2, "content part 0 has no 'text' string")
    # an unreadable message on the chain comes before a later block error
    lines = [PROMPT, _entry("a1", "u1", "assistant", bad_text),
             _entry("a2", "a1", "assistant", [{"type": "tool_use", "name": "Bash"}])]
    assert _error(lines) == (2, "content part 0 has no 'text' string")
    # and a block error before it comes first
    lines = [PROMPT, _entry("a0", "u1", "assistant", [{"type": "tool_use", "name": "Bash"}]),
             _entry("a1", "a0", "assistant", bad_text)]
    assert _error(lines) == (2, "content block 0: a tool_use has no 'id'")


def test_a_tool_result_off_the_chain_is_still_checked():
    lines = [PROMPT, _entry("a1", "u1", "assistant", _call("t1", command="ls")),
             _entry("r1", "zz", "user", [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": [3]}]),
             _entry("u2", None, "user", "start over")]
    assert _error(lines) == (3, "content part 0 is int, not an object")


def test_an_off_chain_call_between_the_text_and_the_prompt_keeps_the_turn_open():
    lines = [PROMPT, _entry("a1", "u1", "assistant", [{"type": "text", "text": "done"}]),
             _entry("x1", "zz", "assistant", _call("t9", command="ls")),
             _entry("u2", "a1", "user", "next"), _entry("a2", "u2", "assistant", "bye")]
    events = _events(lines)
    assert [(k, e.get("text"), e.get("yields_turn")) for k, _, e in events] == [
        ("message", "go", None), ("message", "done", False), ("message", "next", None),
        ("message", "bye", True), ("final", None, None)]
    lines[2] = _entry("x1", "zz", "user", "elsewhere")
    assert [e.get("yields_turn") for _, _, e in _events(lines)][1] is True


def test_a_results_entry_off_the_chain_answers_on_it_when_its_parent_is_on_it():
    ask = _call("q1", "AskUserQuestion", questions=[])
    lines = [PROMPT, _entry("a1", "u1", "assistant", ask),
             _entry("r1", "a1", "user", _result("q1", "yes"),
                    toolUseResult={"answers": {"Ship?": "yes"}}),
             _entry("a2", "a1", "assistant", "later")]
    events = _events(lines)
    assert [(k, who) for k, who, _ in events] == [
        ("message", "user"), ("action", "claude"), ("checkpoint", "user"),
        ("message", "claude"), ("final", None)]
    assert events[2][2] == {"seq": 3, "ts": "2026-03-02T10:00:00.000Z", "agent": "user",
                            "event": "checkpoint", "checkpoint_id": "AskUserQuestion",
                            "confirmed_by": "user", "text": "yes", "call_id": "q1",
                            "answers": {"Ship?": "yes"}}
    # a results entry with a text block beside the result does not hang off its call
    lines[2] = _entry("r1", "a1", "user", [*_result("q1", "yes"), {"type": "text", "text": "x"}])
    assert [k for k, _, _ in _events(lines)] == ["message", "action", "message", "final"]


def test_a_subagent_file_is_named_by_its_first_agent_id_wherever_it_is():
    lines = [_entry("u1", None, "user", "go", isSidechain=True),
             _entry("a1", "u1", "assistant", _call("t1", command="ls"), isSidechain=True),
             json.dumps({"type": "progress", "agentId": "f00"}),
             _entry("a2", "a1", "assistant", "done", isSidechain=True, agentId="bar")]
    assert [who for _, who, _ in _events(lines)] == ["user", "agent-f00", "agent-f00", None]
    lines[2] = json.dumps({"type": "progress", "agentId": ""})
    assert [who for _, who, _ in _events(lines)] == ["user", "subagent", "subagent", None]


def test_the_session_is_the_first_set_one_of_a_message():
    lines = [json.dumps({"type": "summary", "sessionId": "s0"}),
             _entry("u1", None, "user", "go", sessionId=""),
             _entry("a1", "u1", "assistant", "hi", sessionId="s2")]
    assert _read(lines).meta == {"session_id": "s2"}
    lines[2] = _entry("a1", "u1", "assistant", "hi", sessionId=["s2"])
    assert _read(lines).meta == {}


@pytest.mark.parametrize("text", [True, False])
def test_the_fields_of_each_event_and_their_order(text):
    task = _call("t2", "Task", subagent_type="Plan", prompt="look")
    lines = [PROMPT,
             _entry("a1", "u1", "assistant", [{"type": "text", "text": "on it"},
                                               *_call("t1", command=["bash", "-lc", "ls"])]),
             _entry("r1", "a1", "user", _result("t1", "fine", is_error=True)),
             _entry("a2", "r1", "assistant", task, timestamp=None),
             _entry("r2", "a2", "user", _result("t2", [{"type": "text", "text": "a"},
                                                       {"type": "image"},
                                                       {"type": "text", "text": "b"}])),
             _entry("m1", "r2", "user", "note", isMeta=True)]
    ts = "2026-03-02T10:00:00.000Z"
    got = [e for _, _, e in _events(lines, text)]
    want = [
        {"seq": 1, "ts": ts, "agent": "user", "event": "message", "role": "user", "text": "go"},
        {"seq": 2, "ts": ts, "agent": "claude", "event": "action", "action_type": "Bash",
         "args": {"command": ["bash", "-lc", "ls"]}, "call_id": "t1", "command": "ls",
         "error": "fine"},
        {"seq": 3, "ts": ts, "agent": "claude", "event": "message", "role": "assistant",
         "text": "on it", "yields_turn": False},
        {"seq": 4, "agent": "claude", "event": "action", "action_type": "Task",
         "args": {"subagent_type": "Plan", "prompt": "look"}, "call_id": "t2",
         "result": "a\nb"},
        {"seq": 5, "agent": "claude", "event": "handoff", "from_agent": "claude",
         "to_agent": "Plan", "payload": {"subagent_type": "Plan", "prompt": "look"},
         "call_id": "t2"},
        {"seq": 6, "ts": ts, "agent": "system", "event": "message", "role": "system",
         "text": "note"},
        {"seq": 7, "event": "final", "task_success": False},
    ]
    if not text:
        for rec in want:
            for key in ("text", "result", "error"):
                rec.pop(key, None)
    assert [list(e.items()) for e in got] == [list(e.items()) for e in want]


def test_answers_without_uuids_each_hang_off_their_own_parent():
    ask = _call("q1", "AskUserQuestion", questions=[])
    lines = [PROMPT, _entry("a1", "u1", "assistant", ask),
             _entry("x1", None, "user", "elsewhere"),
             _entry("b1", "x1", "assistant", _call("q2", "AskUserQuestion", questions=[])),
             _entry(None, "a1", "user", _result("q1", "yes")),
             _entry(None, "b1", "user", _result("q2", "no")),
             _entry("a2", "a1", "assistant", "done")]
    checkpoints = [e["text"] for k, _, e in _events(lines) if k == "checkpoint"]
    assert checkpoints == ["yes"]


def test_blank_lines_and_crlf_endings_count_as_lines():
    lines = ["", PROMPT + "\r", "   ", _entry("a1", "u1", "assistant", "hi") + "\r", "\t"]
    assert [e.line for e in _read(lines).events] == [2, 4, None]
    assert _error([*lines, '{"type": "user", "uuid": 7}']) == (
        6, "'uuid' must be a string, got int")


SUMMARY = json.dumps({"type": "summary", "summary": "Push the release", "leafUuid": "a3"})
SNAPSHOT = json.dumps({"type": "file-history-snapshot", "messageId": "m1",
                       "snapshot": {"trackedFileBackups": {}}, "isSnapshotUpdate": False})


def test_a_file_of_summaries_holds_no_run():
    """Claude Code writes files of summaries (and file snapshots) beside its sessions: they
    are recognised as its own and hold no run; a session with summaries is a session."""
    from roadcheck.ingest import detect_format
    from roadcheck.ingest.claude_code import no_run

    data = (SUMMARY + "\n" + SUMMARY + "\n\n" + SNAPSHOT + "\n").encode()
    assert detect_format(data) == "claude-code"
    assert no_run(data) == ("a Claude Code summary file, 2 summaries and 1 file snapshot and "
                            "no session entries")
    assert no_run((SNAPSHOT + "\n").encode()) == (
        "a Claude Code file snapshot file, 1 file snapshot and no session entries")
    assert no_run((SUMMARY + "\n" + PROMPT + "\n").encode()) is None
    assert no_run((SUMMARY + "\n{broken\n").encode()) is None
    assert no_run(b"\n\n") is None
    # read directly (not through replay, which notes it), it is no run to judge
    (item,) = read_claude_code("s.jsonl", data)
    assert isinstance(item, ReadFailure)
    assert item.error.message == ("holds no run: a Claude Code summary file, 2 summaries and "
                                  "1 file snapshot and no session entries")
    assert [k for k, _, _ in _events([SUMMARY, PROMPT])] == ["message", "final"]


@pytest.mark.parametrize("command", [{"words": ["git", "push"]}, 7, None, ["git", 7]],
                         ids=["object", "number", "null", "argv-with-a-number"])
def test_a_bash_call_whose_command_is_not_text_is_refused(command):
    """A ``Bash`` call's ``input.command`` is the line it ran: given as anything but a string
    (or an argv of strings), the call would be read with no command, and a rule on the
    command (a held ``git push``) would never match it. The file's ERROR names the line."""
    lines = [PROMPT, _entry("a1", "u1", "assistant", _call("t1", command=command)),
             _entry("r1", "a1", "user", _result("t1"))]
    line, message = _error(lines)
    assert line == 2
    assert message.startswith("content block 0: a Bash call's 'input.command' must be"), message


def test_a_bash_call_given_an_argv_is_read_as_its_line():
    lines = [PROMPT, _entry("a1", "u1", "assistant", _call("t1", command=["git", "push"])),
             _entry("r1", "a1", "user", _result("t1"))]
    (action,) = [data for kind, _, data in _events(lines) if kind == "action"]
    assert action["command"] == "git push"


def test_a_parent_missing_from_the_middle_of_the_file_is_an_error():
    """A parentUuid naming no entry, on an entry after the file's first: a line is missing
    (the push's tool result, say), and the chain would start after the gap, dropping every
    call before it. The entry is named; the file is not read."""
    lines = [PROMPT, _entry("a1", "u1", "assistant", _call("t1", command="git push")),
             _entry("u2", "a1", "user", _result("t1")),
             _entry("a2", "u2", "assistant", [{"type": "text", "text": "Pushed."}])]
    assert not isinstance(_read(lines), ReadFailure)
    line, message = _error([lines[0], lines[1], lines[3]])
    assert line == 3 and "parentUuid 'u2' names no entry of the file" in message


def test_a_first_entry_whose_parent_is_in_an_earlier_file_is_read():
    """A transcript whose first entry hangs from an entry of another file (a resumed
    session) starts its chain there."""
    lines = [_entry("u1", "x0", "user", "go on"),
             _entry("a1", "u1", "assistant", [{"type": "text", "text": "ok"}])]
    assert [k for k, _, _ in _events(lines)] == ["message", "message", "final"]


def test_a_compaction_boundary_may_name_a_message_never_written():
    """A ``compact_boundary`` hangs by ``logicalParentUuid`` from the message before the
    compaction, which Claude Code may not have written to the file (a ``/compact`` run by
    the person): the chain starts at the boundary, as before."""
    boundary = json.dumps({"parentUuid": None, "logicalParentUuid": "gone", "isSidechain": False,
                           "type": "system", "subtype": "compact_boundary", "sessionId": "s1",
                           "content": "Conversation compacted", "uuid": "b1",
                           "timestamp": "2026-03-02T10:00:00.000Z"})
    lines = [PROMPT, _entry("a1", "u1", "assistant", [{"type": "text", "text": "ok"}]),
             boundary, _entry("u2", "b1", "user", "go on"),
             _entry("a2", "u2", "assistant", [{"type": "text", "text": "done"}])]
    assert not isinstance(_read(lines), ReadFailure)
