"""Read a LangGraph thread's state history as a trajectory.

LangGraph keeps no trace file of its own: a compiled graph with a checkpointer
keeps every step of a thread. :func:`read_langgraph` walks that history, oldest
first, and maps each node run (a task) to events:

- a tool call (in an ``AIMessage`` a task wrote) is an ``action`` of that
  task's agent when its ``ToolMessage`` answer is written, which is when the
  tool ran (``action_type`` = tool name, ``args``, ``call_id``, ``result``;
  ``error`` when the answer's status is error). A call answered by a task
  whose interrupt was resumed with a refusal did not run: no action. A call
  never answered is kept at the end (``answered: false``);
- a task whose agent differs from the previous one is a ``handoff`` (a
  ``Command(goto=...)`` or an active-agent change); its payload is the
  arguments of the previous agent's ``transfer_to_<agent>`` call (else of its
  last tool call, else ``{}``);
- an ``interrupt(value)`` in a task is a ``checkpoint`` before that task's
  writes when the thread was resumed with an approval: ``True``, ``"approved"``
  / ``"approve"`` / ``"yes"``, or a mapping with ``approved: true`` or
  ``decision: "approved"``. Any other resume value, or none yet, is no
  checkpoint. ``checkpoint_id`` is the interrupt value's ``checkpoint_id``
  (else ``<node>_interrupt``); ``confirmed_by`` is the resume mapping's
  ``confirmed_by`` or ``by``;
- the end of the history is the ``final`` event.

::

    traj = read_langgraph(app, {"configurable": {"thread_id": "t1"}})
    Path("run.jsonl").write_text(traj.to_jsonl())   # then: assay replay spec.yaml run.jsonl
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from assay.events import Event, Trajectory
from assay.integrations import require

require("langgraph", "langgraph")

__all__ = ["read_langgraph"]

_APPROVED = frozenset({"approved", "approve", "yes", "accepted", "confirmed"})


def _approval(resume: Any) -> tuple[bool, Any]:
    """(approved?, who) for a resume value."""
    if resume is True:
        return True, None
    if isinstance(resume, str):
        return resume.strip().lower() in _APPROVED, None
    if isinstance(resume, Mapping):
        who = resume.get("confirmed_by", resume.get("by"))
        if resume.get("approved") is True:
            return True, who
        decision = resume.get("decision")
        return isinstance(decision, str) and decision.lower() in _APPROVED, who
    return False, None


def _resumes(graph: Any, config: Mapping[str, Any]) -> dict[str, list[Any]]:
    """Resume values per task id, from the checkpointer's pending writes."""
    out: dict[str, list[Any]] = {}
    saver = getattr(graph, "checkpointer", None)
    if saver is None or not hasattr(saver, "list"):
        return out
    for tup in saver.list(config):
        for task_id, channel, value in tup.pending_writes or []:
            if channel == "__resume__":
                values = value if isinstance(value, list) else [value]
                if task_id not in out or len(values) > len(out[task_id]):
                    out[task_id] = list(values)
    return out


def _messages(result: Any) -> list[Any]:
    if isinstance(result, Mapping):
        msgs = result.get("messages")
        if isinstance(msgs, list):
            return msgs
        if msgs is not None:
            return [msgs]
    return []


def read_langgraph(graph: Any, config: Mapping[str, Any], *,
                   tool_nodes: Collection[str] | None = None,
                   trajectory_id: str | None = None) -> Trajectory:
    """The trajectory of one thread of a compiled graph (``config`` names the thread).

    Tool nodes (``tool_nodes``; by default a node named ``tools`` or ending in
    ``_tools``) are not agents: what they write belongs to the agent that ran
    before them.
    """

    def is_tool_node(name: str) -> bool:
        if tool_nodes is not None:
            return name in tool_nodes
        return name == "tools" or name.endswith("_tools")

    history = list(graph.get_state_history(config))
    history.reverse()
    resumes = _resumes(graph, config)
    events: list[Event] = []
    pending: dict[str, dict[str, Any]] = {}

    def add(kind: str, agent: str | None, ts: str | None, **fields: Any) -> None:
        events.append(Event.make(len(events) + 1, kind, agent, ts=ts, **fields))

    current: str | None = None
    calls: list[tuple[str, Any]] = []  # the current agent's tool calls: (name, args)
    failed = False
    for step, snap in enumerate(history):
        ts = getattr(snap, "created_at", None)
        for task in getattr(snap, "tasks", ()):
            name = task.name
            if name.startswith("__"):
                continue
            if getattr(task, "error", None) is not None:
                failed = True
            agent = current if is_tool_node(name) and current is not None else name
            if agent != current:
                if current is not None:
                    wanted = f"transfer_to_{agent}"
                    args = next((a for n, a in reversed(calls) if n == wanted),
                                calls[-1][1] if calls else {})
                    add("handoff", current, ts, from_agent=current, to_agent=agent,
                        payload=dict(args) if isinstance(args, Mapping) else {"arguments": args},
                        step=step)
                current, calls = agent, []
            values = resumes.get(task.id, [])
            rejected = False
            for i, intr in enumerate(getattr(task, "interrupts", ())):
                if i >= len(values):
                    break  # not resumed (yet): nobody decided
                ok, who = _approval(values[i])
                if not ok:
                    rejected = True  # a rejection is no confirmation
                    continue
                value = getattr(intr, "value", None)
                cid = value.get("checkpoint_id") if isinstance(value, Mapping) else None
                fields: dict[str, Any] = {"checkpoint_id": cid if isinstance(cid, str) and cid
                                          else f"{name}_interrupt", "step": step}
                if who is not None:
                    fields["confirmed_by"] = who
                fields["interrupt_id"] = getattr(intr, "id", None)
                add("checkpoint", agent, ts, **fields)
            for msg in _messages(getattr(task, "result", None)):
                for tc in getattr(msg, "tool_calls", None) or []:
                    args = tc.get("args") or {}
                    calls.append((tc.get("name"), args))
                    pending[tc.get("id") or f"#{len(pending)}"] = {
                        "agent": agent, "action_type": tc.get("name"), "args": args,
                        "call_id": tc.get("id"), "step": step, "ts": ts}
                call_id = getattr(msg, "tool_call_id", None)
                if call_id is None or call_id not in pending:
                    continue
                call = pending.pop(call_id)
                if rejected:
                    continue  # answered by a task whose approval was refused: it did not run
                extra = {"error": True} if getattr(msg, "status", None) == "error" else {}
                add("action", call["agent"], ts, action_type=call["action_type"],
                    args=call["args"], call_id=call_id, result=getattr(msg, "content", None),
                    step=step, **extra)
    for call in pending.values():  # never answered: kept, the call may have run
        add("action", call["agent"], call["ts"], action_type=call["action_type"],
            args=call["args"], call_id=call["call_id"], step=call["step"], answered=False)
    last = history[-1] if history else None
    done = last is not None and not getattr(last, "next", ())
    thread = config.get("configurable", {}).get("thread_id")
    add("final", current, getattr(last, "created_at", None),
        task_success=done and not failed, thread_id=thread)
    tid = trajectory_id or f"langgraph#{thread}"
    return Trajectory(tid, tuple(events), None, "langgraph", {"thread_id": thread})
