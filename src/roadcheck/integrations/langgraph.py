"""Read a LangGraph thread's state history as a trajectory.

LangGraph keeps no trace file of its own: a compiled graph with a checkpointer
keeps every step of a thread. :func:`read_langgraph` walks that history, oldest
first, and maps each node run (a task) to events:

- a tool call (in an ``AIMessage`` a task wrote) is an ``action`` of that
  task's agent when its ``ToolMessage`` answer is written, which is when the
  tool ran (``action_type`` = tool name, ``args``, ``call_id``, ``result``;
  ``error`` when the answer's status is error). An answer from the tool
  node means the tool ran, even when its interrupt was resumed with a refusal
  (``refused: true``): what a refused tool did is not recorded, so evidence
  that it ran outranks the decision. A call answered by a node that is
  neither agent nor tool (a middleware's refusal) did not run. A call never
  answered is kept at the end (``answered: false``) while the thread waits,
  and is no action once the thread finished;
- a subgraph (a node that is a compiled graph, or a node that invokes one) is
  read from its own checkpoints, where its interrupts and resumes are; the
  messages it returns repeat calls already read and are not read again (calls
  are told apart by their id);
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
    Path("run.jsonl").write_text(traj.to_jsonl())   # then: roadcheck replay spec.yaml run.jsonl
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from roadcheck.events import Event, Trajectory
from roadcheck.integrations import require

require("langgraph", "langgraph")

__all__ = ["read_langgraph"]

_APPROVED = frozenset({"approved", "approve", "yes", "accepted", "confirmed", "accept"})
#: Decision types of LangChain's ``HumanInTheLoopMiddleware`` and of agent-inbox
#: responses that confirm the call (``edit`` runs the call as the human edited it).
_CONFIRMING = frozenset({"approve", "edit", "accept"})


def _who(resume: Any) -> Any:
    return resume.get("confirmed_by", resume.get("by")) if isinstance(resume, Mapping) else None


def _approval(resume: Any) -> tuple[bool, Any]:
    """(approved?, who) for a plain resume value."""
    if resume is True:
        return True, None
    if isinstance(resume, str):
        return resume.strip().lower() in _APPROVED, None
    if isinstance(resume, Mapping):
        who = _who(resume)
        if resume.get("approved") is True:
            return True, who
        decision = resume.get("decision")
        return isinstance(decision, str) and decision.lower() in _APPROVED, who
    return False, None


def _requested(value: Any) -> list[str | None] | None:
    """The tool names a structured approval request asks about, in order, else None.

    ``HumanInTheLoopMiddleware``: ``{"action_requests": [{"name": ...}]}``;
    agent-inbox: ``[{"action_request": {"action": ...}}]`` (or one such mapping).
    """
    if isinstance(value, Mapping) and isinstance(value.get("action_requests"), list):
        return [r.get("name") if isinstance(r, Mapping) else None
                for r in value["action_requests"]]
    items = value if isinstance(value, list) else [value]
    if items and all(isinstance(i, Mapping) and isinstance(i.get("action_request"), Mapping)
                     for i in items):
        return [i["action_request"].get("action") for i in items]
    return None


def _named(value: Any) -> str | None:
    """The tool a plain interrupt value names (``tool``, ``tool_name`` or ``name``)."""
    if isinstance(value, Mapping):
        for key in ("tool", "tool_name", "name"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return None


def _decisions(value: Any, resume: Any) -> list[tuple[str | None, bool, Any, str | None]]:
    """Per tool the interrupt asked about: (tool, confirmed?, who, decision type).

    Structured requests (``HumanInTheLoopMiddleware`` decisions, agent-inbox
    responses) give one entry per request, matched by position; a plain
    interrupt gives one entry for the tool its value names (or ``None``).
    """
    names = _requested(value)
    if names is not None:
        if isinstance(resume, Mapping) and isinstance(resume.get("decisions"), list):
            answers: list[Any] = list(resume["decisions"])
        elif isinstance(resume, list):
            answers = list(resume)
        else:
            answers = [resume]
        out: list[tuple[str | None, bool, Any, str | None]] = []
        for i, name in enumerate(names):
            answer = answers[i] if i < len(answers) else None
            kind = answer.get("type") if isinstance(answer, Mapping) else None
            ok = isinstance(kind, str) and kind.lower() in _CONFIRMING
            out.append((name, ok, _who(answer) or _who(resume),
                        kind if isinstance(kind, str) else None))
        return out
    ok, who = _approval(resume)
    return [(_named(value), ok, who, None)]


#: Node kinds: an ``agent`` (its own events), a ``tool`` node (runs the current
#: agent's calls) or ``other`` (approval, routing, middleware: its work belongs to
#: the current agent and it never starts a handoff).
NodeKind = str


def _default_kind(name: str) -> NodeKind:
    if name == "tools" or name.endswith("_tools"):
        return "tool"
    # LangChain middleware nodes are named "<Middleware>.<hook>" (before_model,
    # after_model, before_agent, after_agent); approval nodes by their job.
    if "." in name or name in ("human_review", "human_approval", "approval", "approve",
                               "review", "router", "route"):
        return "other"
    return "agent"


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


def _subgraph(task: Any) -> Mapping[str, Any] | None:
    """The config of the subgraph a task ran, when its own checkpoints are kept."""
    state = getattr(task, "state", None)
    if isinstance(state, Mapping):
        conf = state.get("configurable")
        if isinstance(conf, Mapping) and conf.get("checkpoint_ns"):
            return state
    return None


class _Walk:
    """The events of one thread, built while its history (and its subgraphs') is walked."""

    def __init__(self, graph: Any, resumes: dict[str, list[Any]], kind_of: Any,
                 agent_name: Any, agents: Mapping[str, str] | None) -> None:
        self.graph = graph
        self.resumes = resumes
        self.kind_of = kind_of
        self.agent_name = agent_name
        self.agents = agents
        self.events: list[Event] = []
        self.pending: dict[str, dict[str, Any]] = {}
        self.seen: set[str] = set()  # every call id met, answered or not
        self.current: str | None = None
        self.calls: list[tuple[str, Any]] = []  # the current agent's tool calls: (name, args)
        self.failed = False

    def add(self, kind: str, agent: str | None, ts: str | None, **fields: Any) -> None:
        self.events.append(Event.make(len(self.events) + 1, kind, agent, ts=ts, **fields))

    def history(self, snaps: list[Any], step: int | None, outer: str | None) -> None:
        """Walk ``snaps`` oldest first; inside a subgraph, ``step`` and ``outer`` are its node's."""
        for i, snap in enumerate(snaps):
            for task in getattr(snap, "tasks", ()):
                if not task.name.startswith("__"):
                    self.task(task, getattr(snap, "created_at", None),
                              i if step is None else step, outer)

    def switch(self, agent: str, ts: str | None, step: int) -> None:
        if agent == self.current:
            return
        if self.current is not None:
            wanted = f"transfer_to_{agent}"
            args = next((a for n, a in reversed(self.calls) if n == wanted),
                        self.calls[-1][1] if self.calls else {})
            self.add("handoff", self.current, ts, from_agent=self.current, to_agent=agent,
                     payload=dict(args) if isinstance(args, Mapping) else {"arguments": args},
                     step=step)
        self.current, self.calls = agent, []

    def task(self, task: Any, ts: str | None, step: int, outer: str | None) -> None:
        name = task.name
        if getattr(task, "error", None) is not None:
            self.failed = True
        kind = self.kind_of(name)
        if kind != "agent" and self.current is not None:
            agent = self.current
        elif outer is not None and not (self.agents is not None and name in self.agents):
            agent = outer  # a node inside a subgraph works for the subgraph's agent
        else:
            agent = self.agent_name(name)
        self.switch(agent, ts, step)
        sub = _subgraph(task)
        snaps = list(self.graph.get_state_history(sub)) if sub is not None else []
        if snaps:
            # The subgraph's own steps hold its interrupts, resumes and calls; what the
            # node returns repeats them (and the parent's messages) and adds nothing new.
            snaps.reverse()
            self.history(snaps, step, agent)
            self.messages(task, "other" if kind == "other" else "agent", agent, ts, step,
                          set())
            return
        refused = self.checkpoints(task, name, agent, ts, step)
        self.messages(task, kind, agent, ts, step, refused)

    def checkpoints(self, task: Any, name: str, agent: str, ts: str | None,
                    step: int) -> set[str | None]:
        """A checkpoint per confirmed interrupt of ``task``; the tools refused, returned."""
        values = self.resumes.get(task.id, [])
        refused: set[str | None] = set()
        for i, intr in enumerate(getattr(task, "interrupts", ())):
            if i >= len(values):
                break  # not resumed (yet): nobody decided
            value = getattr(intr, "value", None)
            for tool, ok, who, decision in _decisions(value, values[i]):
                if not ok:
                    refused.add(tool)  # a rejection is no confirmation
                    continue
                cid = value.get("checkpoint_id") if isinstance(value, Mapping) else None
                if not (isinstance(cid, str) and cid):
                    cid = f"approve_{tool}" if _requested(value) is not None and tool \
                        else f"{name}_interrupt"
                fields: dict[str, Any] = {"checkpoint_id": cid, "step": step}
                if who is not None:
                    fields["confirmed_by"] = who
                if tool is not None:
                    fields["tool_name"] = tool
                if decision is not None:
                    fields["decision"] = decision
                fields["interrupt_id"] = getattr(intr, "id", None)
                self.add("checkpoint", agent, ts, **fields)
        return refused

    def messages(self, task: Any, kind: NodeKind, agent: str, ts: str | None, step: int,
                 refused: set[str | None]) -> None:
        msgs = _messages(getattr(task, "result", None))
        answered = [m for m in msgs if getattr(m, "tool_call_id", None) in self.pending]
        for msg in msgs:
            for tc in getattr(msg, "tool_calls", None) or []:
                args = tc.get("args") or {}
                cid = tc.get("id") or f"#{len(self.seen)}"
                if kind == "other" and cid in self.pending:
                    self.pending[cid]["args"] = args  # the call as the reviewer left it
                    continue
                if kind == "other" or cid in self.seen:
                    continue  # a repeat of a call already read (middleware, subgraph output)
                self.seen.add(cid)
                self.calls.append((tc.get("name"), args))
                self.pending[cid] = {
                    "agent": agent, "action_type": tc.get("name"), "args": args,
                    "call_id": tc.get("id"), "step": step, "ts": ts}
            call_id = getattr(msg, "tool_call_id", None)
            if call_id is None or call_id not in self.pending:
                continue
            call = self.pending.pop(call_id)
            if kind == "other":
                continue  # answered by an approval node instead of running the tool
            tool = call["action_type"]
            extra: dict[str, Any] = {}
            if getattr(msg, "status", None) == "error":
                extra["error"] = True
            if tool in refused or (None in refused and len(answered) == 1):
                # The human said no, yet the tool answered: it ran, and what it did is
                # not recorded. Evidence that a tool ran outranks the decision.
                extra["refused"] = True
            self.add("action", call["agent"], ts, action_type=tool, args=call["args"],
                     call_id=call_id, result=getattr(msg, "content", None), step=step, **extra)


def read_langgraph(graph: Any, config: Mapping[str, Any], *,
                   tool_nodes: Collection[str] | None = None,
                   other_nodes: Collection[str] | None = None,
                   agents: Mapping[str, str] | None = None,
                   trajectory_id: str | None = None) -> Trajectory:
    """The trajectory of one thread of a compiled graph (``config`` names the thread).

    Each node is an agent, a tool node or neither:

    - ``tool_nodes`` (by default a node named ``tools`` or ending in ``_tools``)
      run the calls of the agent that ran before them;
    - ``other_nodes`` (by default LangChain middleware nodes, named
      ``<Middleware>.<hook>``, and nodes named ``human_review``,
      ``human_approval``, ``approval``, ``approve``, ``review``, ``router``,
      ``route``) are neither: their interrupts are the current agent's
      checkpoints, they start no handoff, and a tool answer they write (a
      refusal) means the call did not run;
    - every other node is an agent, named by ``agents`` (node -> agent name;
      by default the node's name, and for ``create_agent``'s ``model`` node the
      graph's name when it has one). A node inside a subgraph works for the
      agent of the subgraph's node, unless ``agents`` names it.
    """
    graph_name = getattr(graph, "name", None)

    def kind_of(name: str) -> NodeKind:
        if tool_nodes is not None and name in tool_nodes:
            return "tool"
        if other_nodes is not None and name in other_nodes:
            return "other"
        if agents is not None and name in agents:
            return "agent"
        kind = _default_kind(name)
        if tool_nodes is not None and kind == "tool":
            return "agent"
        return kind

    def agent_name(name: str) -> str:
        if agents is not None and name in agents:
            return agents[name]
        if name == "model" and isinstance(graph_name, str) and graph_name not in (
                "", "LangGraph"):
            return graph_name
        return name

    history = list(graph.get_state_history(config))
    history.reverse()
    walk = _Walk(graph, _resumes(graph, config), kind_of, agent_name, agents)
    walk.history(history, None, None)
    last = history[-1] if history else None
    done = last is not None and not getattr(last, "next", ())
    if not done:
        for call in walk.pending.values():  # waiting: kept, the call may still run
            walk.add("action", call["agent"], call["ts"], action_type=call["action_type"],
                     args=call["args"], call_id=call["call_id"], step=call["step"],
                     answered=False)
    thread = config.get("configurable", {}).get("thread_id")
    walk.add("final", walk.current, getattr(last, "created_at", None),
             task_success=done and not walk.failed, thread_id=thread)
    tid = trajectory_id or f"langgraph#{thread}"
    return Trajectory(tid, tuple(walk.events), None, "langgraph", {"thread_id": thread})
