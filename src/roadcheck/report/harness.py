"""Harness reports: the run summary, chain verification, and the audit trail (text/HTML)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roadcheck.evidence.chain import ChainCheck
from roadcheck.harness.result import RunResult
from roadcheck.report._text import dump_json, plural, text_lines

if TYPE_CHECKING:  # the audit trail and the HTML helpers load with an audit, not with a run
    from roadcheck.harness.audit import RunTrail

__all__ = ["audit_html", "audit_text", "run_report", "verify_report"]

HEADER = "roadcheck run: a phase advances only on a passing gate with a durable evidence record"


def esc(value: Any) -> str:
    """:func:`roadcheck.report._html.esc`, loaded with the first HTML report."""
    from roadcheck.report._html import esc as escape

    return escape(value)


def page(title: str, body: str) -> str:
    """:func:`roadcheck.report._html.page`, loaded with the first HTML report."""
    from roadcheck.report._html import page as whole

    return whole(title, body)


def _indent(text: str, limit: int = 40) -> list[str]:
    lines = text.rstrip().splitlines()
    if len(lines) > limit:
        lines = ["...", *lines[-limit:]]
    return [f"  | {line}" for line in lines]


def run_report(result: RunResult, *, fmt: str = "text") -> str:
    """Render a run result as text or as the public JSON document."""
    if fmt == "json":
        return dump_json(result.to_dict())
    width = max((len(p.name) for p in result.phases), default=5)
    lines = [HEADER, f"workflow: {result.workflow}  run: {result.run_id}  store: {result.store}",
             f"run dir : {result.run_dir}"]
    for p in result.phases:
        lines.append(f"phase {p.name:<{width}}  {p.status:<9} role {p.role}, "
                     f"{plural(p.attempts, 'attempt')}, iteration {p.iteration}")
    lines.extend(f"note : {n}" for n in result.notes)
    lines.append(f"status : {result.status} (exit {result.exit})")
    lines.append(result.message)
    if result.next_command is not None:
        lines.append(f"next   : {result.next_command}")
    if result.last_output.strip():
        lines.append("last gate output:")
        lines.extend(_indent(result.last_output))
    return text_lines(lines)


def _check_lines(check: ChainCheck) -> list[str]:
    lines = []
    if check.head_records is not None:
        lines.append(f"head : {check.head_records} records, last {str(check.head_hash)[:16]}")
    lines.append(f"scope: {check.scope}")
    lines.extend(f"note : {n}" for n in check.notes)
    return lines


def _params_line(params: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in sorted(params.items()))
    return f"params: {shown or '(none)'} (fixed when the run was created)"


def verify_report(check: ChainCheck, *, fmt: str = "text") -> str:
    """Render a chain verification: the verdict, the head, and what the check cannot see."""
    if fmt == "json":
        return dump_json(check.to_dict())
    word = "OK" if check.ok else f"BROKEN ({check.problem})"
    return text_lines([f"evidence {check.run_id}: {word}: {check.message}",
                       *_check_lines(check)])


def _guard_lines(trail: RunTrail) -> list[str]:
    """A guard session's decision log: one line per decision, its reasons indented below."""
    import orjson

    lines = [f"audit: guard session {trail.run_id} ({trail.store} store), "
             f"{plural(len(trail.records), 'decision')}",
             f"chain: {'OK' if trail.check.ok else f'BROKEN ({trail.check.problem})'}: "
             f"{trail.check.message}",
             *_check_lines(trail.check), *_signature_lines(trail)]
    for r in trail.records:
        gate, art = _part(r, "gate"), _part(r, "artifact")
        try:
            decision = orjson.loads(str(gate.get("output")))
        except orjson.JSONDecodeError:
            decision = None
        if not isinstance(decision, dict):
            decision = {}
        verdict = str(decision.get("verdict", gate.get("summary"))).upper()
        digest = art.get("sha256")
        who = f" | approved by {r.get('identity')}" if r.get("identity") else ""
        call = f" call {decision['call_id']}" if decision.get("call_id") else ""
        lines.append(f"#{r.get('attempt')} {r.get('finished_at')} {verdict} {r.get('phase')}"
                     f"{call} | args sha256 {str(digest)[:16] if digest else '-'}{who}")
        reasons = decision.get("reasons")
        for reason in reasons if isinstance(reasons, list) else []:
            if not isinstance(reason, dict):
                continue
            need = f" (needs {reason['satisfy']})" if reason.get("satisfy") else ""
            lines.append(f"    {reason.get('code')}: {reason.get('message')}{need}")
    return lines


def audit_text(trail: RunTrail) -> str:
    """The evidence trail as plain text, one line per record (per decision for a guard)."""
    if trail.workflow == "guard" and not trail.manifest:
        return text_lines(_guard_lines(trail))
    lines = [f"audit: run {trail.run_id} of workflow {trail.workflow} ({trail.store} store)",
             _params_line(trail.params),
             f"chain: {'OK' if trail.check.ok else f'BROKEN ({trail.check.problem})'}: "
             f"{trail.check.message}",
             *_check_lines(trail.check), *_signature_lines(trail)]
    lines.extend(f"set aside: {name} (a last record that never committed)"
                 for name in trail.set_aside)
    for r in trail.records:
        gate, art = _part(r, "gate"), _part(r, "artifact")
        lines.append(f"#{r.get('iteration')} {r.get('phase')} attempt {r.get('attempt')} "
                     f"{str(r.get('verdict')).upper()} [{gate.get('kind')}] {gate.get('summary')}"
                     f" | {r.get('role')}/{r.get('identity')} | sha256 "
                     f"{str(art.get('sha256'))[:16]}{_producer(r)}")
    return text_lines(lines)


def _signature_lines(trail: RunTrail) -> list[str]:
    """What the public keys given vouch for, and each signature that does not verify."""
    return [*(f"signed: {line}" for line in trail.signed),
            *(f"signature: BROKEN: {problem}" for problem in trail.signature_problems)]


def _producer(record: dict[str, Any]) -> str:
    """`` | agent PROVIDER/MODEL, N tokens[, cost C]`` for a record an agent producer made."""
    p = _part(_part(record, "artifact"), "producer")
    if not p:
        return ""
    usage = p.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    cost = p.get("cost")
    return (f" | agent {p.get('provider')}/{p.get('model')}, {usage.get('total_tokens')} tokens"
            + ("" if cost is None else f", cost {cost}"))


def _part(record: dict[str, Any], key: str) -> dict[str, Any]:
    """A record's ``gate`` or ``artifact`` object; anything else (a broken record) shows empty."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def _cell(value: Any) -> str:
    """A value for a table cell: escaped, and ``-`` for a missing or empty one (never None)."""
    return "-" if value is None or value == "" else esc(value)


def _digest(value: Any, keep: int = 12) -> str:
    """A digest shortened to ``keep`` hex digits, the full value on hover."""
    if value is None or value == "":
        return "-"
    text = str(value)
    short = text if len(text) <= keep + 1 else text[:keep] + "\u2026"
    return f"<code title=\"{esc(text)}\">{esc(short)}</code>"


#: How each record verdict is shown: its word and its CSS class.
_VERDICTS = {"pass": ("PASS", "pass"), "fail": ("FAIL", "fail"),
             "refused": ("REFUSED", "fail")}


def _record_row(index: int, r: dict[str, Any], broken: int | None) -> str:
    gate, art = _part(r, "gate"), _part(r, "artifact")
    verdict = str(r.get("verdict"))
    word, css = _VERDICTS.get(verdict, (verdict.upper() or "-", "fail"))
    event = "role guard refused" if verdict == "refused" else "gate evaluation"
    output = str(gate.get("output") or "")
    detail = "<br>" + esc(gate.get("detail")) if gate.get("detail") else ""
    exit_code = gate.get("exit_code")
    row_css = " class=\"broken\"" if index == broken else ""
    mark = " <b class=\"fail\">BROKEN HERE</b>" if index == broken else ""
    return (
        f"<tr id=\"record-{index}\"{row_css}>"
        f"<td>{index}{mark}</td><td>{_cell(r.get('iteration'))}</td>"
        f"<td>{_cell(r.get('phase'))}</td><td>{_cell(r.get('attempt'))}</td>"
        f"<td class=\"{css}\">{esc(word)}<br><span class=\"meta\">{event}</span></td>"
        f"<td><b>{_cell(gate.get('kind'))}</b>: {_cell(gate.get('summary'))}{detail}"
        f"{'' if exit_code is None else f'<br>exit code: {esc(exit_code)}'}"
        f"{'<pre>' + esc(output) + '</pre>' if output.strip() else ''}</td>"
        f"<td><code>{_cell(art.get('path'))}</code><br>{_digest(art.get('sha256'))}"
        f"<br>{_cell(art.get('bytes'))} bytes</td>"
        f"<td>{_cell(r.get('role'))}<br>{_cell(r.get('identity'))}"
        f"{'<br>' + esc(_producer(r)[3:]) if _producer(r) else ''}</td>"
        f"<td>{_cell(r.get('started_at'))}<br>{_cell(r.get('finished_at'))}</td>"
        f"<td>{_digest(r.get('hash'))}</td>"
        "</tr>"
    )


def _pause_row(trail: RunTrail) -> str:
    """The pause as the last event: the run waits, and nothing is recorded for it."""
    return ("<tr class=\"paused\"><td>-</td><td>-</td><td>-</td><td>-</td>"
            "<td class=\"wait\">PAUSED<br><span class=\"meta\">run paused</span></td>"
            "<td colspan=\"5\">the run stopped to wait for another role or identity; "
            "resuming it continues from here</td></tr>")


def _phase_rows(trail: RunTrail) -> str:
    phases: dict[str, dict[str, Any]] = {}
    for r in trail.records:
        p = phases.setdefault(str(r.get("phase")), {"attempts": 0, "verdict": "", "role": ""})
        p["attempts"] += 1
        p["verdict"] = str(r.get("verdict"))
        p["role"] = f"{r.get('role') or '-'} / {r.get('identity') or '-'}"
    rows = []
    for name, p in phases.items():
        word, css = _VERDICTS.get(p["verdict"], (p["verdict"].upper() or "-", "fail"))
        rows.append(f"<tr><td>{_cell(name)}</td><td class=\"{css}\">{esc(word)}"
                    f"</td><td>{esc(p['attempts'])}</td><td>{esc(p['role'])}</td></tr>")
    if not rows:
        rows.append("<tr><td colspan=\"4\">(no phase recorded)</td></tr>")
    return "".join(rows)


def _param_rows(params: dict[str, Any]) -> str:
    if not params:
        return "<tr><td colspan=\"2\">(none)</td></tr>"
    return "".join(f"<tr><td>{_cell(k)}</td><td>{_cell(v)}</td></tr>"
                   for k, v in sorted(params.items()))


def outcome_line(trail: RunTrail) -> tuple[str, str]:
    """The run's outcome in one sentence, and its CSS class (``ok``, ``wait``, ``bad``)."""
    last = trail.records[-1] if trail.records else {}
    gate = _part(last, "gate")
    where = (f"phase {last.get('phase')} attempt {last.get('attempt')}"
             if last else "no record")
    status = trail.status
    if trail.workflow == "guard" and not trail.manifest:
        return (f"Guard session: {plural(len(trail.records), 'decision')} recorded"
                f"{'; the last: ' + str(gate.get('summary')) if gate.get('summary') else ''}."), \
            "ok" if trail.exit == 0 else "bad"
    if status == "completed":
        return (f"Completed: every phase passed its gate "
                f"({plural(len(trail.records), 'record')})."), "ok"
    if status == "paused":
        return (f"Paused: waiting for another role or identity after {where} "
                f"({last.get('verdict') or 'no verdict'})."), "wait"
    if status == "hard-stop":
        return (f"Hard-stop at {where}: {gate.get('summary') or 'the gate failed'}."), "bad"
    if status == "refused":
        return (f"Refused at {where}: {gate.get('summary') or 'the role guard refused'}."), \
            "bad"
    return (f"Outcome not recorded (no run trajectory); the last record is {where}"
            f"{' (' + str(last.get('verdict')) + ')' if last else ''}."), "wait"


def audit_html(trail: RunTrail) -> str:
    """One self-contained page of a run's evidence trail, safe to email."""
    ok = trail.check.ok
    broken = trail.check.position if not ok else None
    shown = broken if broken is not None and 1 <= broken <= len(trail.records) else None
    outcome, outcome_css = outcome_line(trail)
    link = (f" <a href=\"#record-{shown}\">Go to record {shown}</a>."
            if shown is not None else "")
    rows = [_record_row(i, r, shown) for i, r in enumerate(trail.records, 1)]
    if trail.status == "paused":
        rows.append(_pause_row(trail))
    body = [
        f"<p class=\"banner outcome {outcome_css}\" id=\"outcome\"><b>{esc(outcome)}</b></p>",
        f"<h1>Evidence trail: run {esc(trail.run_id)}</h1>",
        f"<p class=\"meta\">workflow <b>{_cell(trail.workflow)}</b> &middot; {esc(trail.store)} "
        f"store &middot; {esc(len(trail.records))} records</p>",
        f"<div class=\"banner {'ok' if ok else 'bad'}\">hash chain "
        f"{'intact' if ok else f'BROKEN ({esc(trail.check.problem)})'}: "
        f"{esc(trail.check.message)}{link}</div>",
        f"<p class=\"meta\">{esc(trail.check.scope)}</p>",
        *(f"<p class=\"meta\">note: {esc(n)}</p>" for n in trail.check.notes),
        *(f"<p class=\"meta\">signed: {esc(line)}</p>" for line in trail.signed),
        *(f"<div class=\"banner bad\">signature BROKEN: {esc(p)}</div>"
          for p in trail.signature_problems),
        *(f"<p class=\"meta\">set aside: <code>{esc(name)}</code> (a last record that "
          "never committed)</p>" for name in trail.set_aside),
        "<h2>Params</h2><p class=\"meta\">Fixed when the run was created; every record "
        "carries their sha256.</p><table><tr><th>param</th><th>value</th></tr>"
        f"{_param_rows(trail.params)}</table>",
        "<h2>Phases</h2><table><tr><th>phase</th><th>latest verdict</th><th>attempts</th>"
        f"<th>role / identity</th></tr>{_phase_rows(trail)}</table>",
        "<h2>Events</h2><p class=\"meta\">One row per gate evaluation or refusal, each "
        "written and made durable before the transition it justifies; a pause is the last "
        "row. Digests are shortened: hover for the full value.</p>",
        "<table class=\"records\"><tr><th>#</th><th>iter</th><th>phase</th><th>attempt</th>"
        "<th>verdict</th><th>gate</th><th>artifact</th><th>role / identity</th>"
        "<th>started / finished</th><th>hash</th></tr>",
        *rows,
        "</table>",
    ]
    return page(f"roadcheck audit {trail.run_id}", "\n".join(body))
