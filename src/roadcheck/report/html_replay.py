"""The replay report as one self-contained HTML page.

A summary by verdict, by reason code and by ``--by`` group, then one section
per trajectory: its verdict, the ``task_success`` contrast, its reasons, and
the timeline of its events, each reason linked to the events it names. The page
reads without scripts; one small inline script (allowed by hash in the page's
CSP, nothing else is) filters the sections by verdict and reason code. Every
value is escaped, controls and bidi characters shown as ``repr`` shows them.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Any

import orjson

from roadcheck.conformance.result import Finding, ReplayResult, ReplayRun, scalar_text
from roadcheck.events import Event, Trajectory
from roadcheck.report._html import esc as _html_esc
from roadcheck.report._text import escape_controls, plural

__all__ = ["replay_html"]

_SCRIPT = """
(function(){
var v=document.getElementById('f-verdict'),c=document.getElementById('f-code'),
n=document.getElementById('f-count'),box=document.getElementById('trajs'),
pager=document.getElementById('pager'),at=document.getElementById('p-at'),
prev=document.getElementById('p-prev'),next=document.getElementById('p-next'),
size=+box.dataset.page,all=[],shown=[],page=0,
els=box.querySelectorAll('section.traj'),more=document.getElementById('more');
for(var i=0;i<els.length;i++){var e=els[i];
all.push([e.dataset.verdict,e.dataset.codes,e.outerHTML]);}
if(more){all=all.concat(JSON.parse(more.textContent));}
function draw(){var pages=Math.max(1,Math.ceil(shown.length/size)),h=[];
if(page>=pages){page=pages-1;}
for(var i=page*size;i<Math.min(shown.length,(page+1)*size);i++){h.push(shown[i][2]);}
box.innerHTML=h.join('');at.textContent='page '+(page+1)+' of '+pages;
pager.hidden=pages<2;prev.disabled=page===0;next.disabled=page>=pages-1;}
function apply(){shown=[];for(var i=0;i<all.length;i++){var s=all[i];
if((!v.value||s[0]===v.value)&&(!c.value||(' '+s[1]+' ').indexOf(' '+c.value+' ')>=0)){
shown.push(s);}}
n.textContent=shown.length+' of '+all.length+' shown';page=0;draw();}
v.addEventListener('change',apply);c.addEventListener('change',apply);
prev.addEventListener('click',function(){page--;draw();window.scrollTo(0,box.offsetTop);});
next.addEventListener('click',function(){page++;draw();window.scrollTo(0,box.offsetTop);});
var rest=document.getElementById('rest');if(rest){rest.hidden=true;}
document.getElementById('filters').hidden=false;apply();})();
""".strip()

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:1.5rem auto;
max-width:78rem;color:#1d1d1f;padding:0 1rem}
h1{font-size:1.4rem;margin:.2rem 0}h2{font-size:1.15rem;margin:1.6rem 0 .4rem}
h3{font-size:1rem;margin:0 0 .3rem;word-break:break-all}
.meta{color:#555}table{border-collapse:collapse;margin:.4rem 0}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f6}code{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;
word-break:break-all}
.v{font-weight:700;padding:0 .35rem;border-radius:3px}
.PASS{color:#0a6b2a;background:#e5f4ea}.BLOCK{color:#a1221a;background:#fce8e6}
.ERROR{color:#7a4b00;background:#fdf1d8}
section.traj{border:1px solid #ddd;border-radius:6px;padding:.7rem .9rem;margin:.8rem 0}
.contrast{background:#f6f6f9;padding:.3rem .5rem;border-left:3px solid #888}
tr.named{background:#fff4d6}tr:target{outline:2px solid #a1221a}
ul.reasons{margin:.3rem 0;padding-left:1.2rem}
.x{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;word-break:break-all;color:#333;
margin-top:.15rem}details.x summary{cursor:pointer}
.mark{font-size:11px;padding:0 .3rem;margin-left:.4rem;border-radius:3px}
.rec{background:#e6eefc;color:#1a3f8a}.der{background:#efe6fc;color:#4b1a8a}
#filters{margin:.6rem 0}label{margin-right:1rem}
"""


def esc(value: Any) -> str:
    """HTML-escape a value after showing its controls and bidi characters as text."""
    return _html_esc(escape_controls("" if value is None else str(value)))


_SEQ = re.compile(r"\bseq (\d+)")


def _linked(message: str, anchor: str, seqs: set[int]) -> str:
    """The escaped message with each ``seq N`` that names an event linked to its row."""
    text = esc(message)

    def link(m: re.Match[str]) -> str:
        seq = int(m.group(1))
        if seq not in seqs:
            return m.group(0)
        return f'<a href="#{anchor}-e{seq}">{m.group(0)}</a>'

    return _SEQ.sub(link, text)


def _named(findings: Iterable[Finding], seqs: set[int]) -> set[int]:
    out: set[int] = set()
    for f in findings:
        # the event the finding is about and the one that voided its checkpoint, as data
        out.update(s for s in (f.seq, f.location.voided_by_seq) if s is not None and s in seqs)
        out.update(int(s) for s in _SEQ.findall(f.message) if int(s) in seqs)
    return out


#: How much of an event's text, command or arguments a row shows on one line, and how much
#: it holds behind its ``<details>`` (a timeline row is evidence to read, not an archive).
_SHORT, _LONG = 120, 2000


def _detail(text: str) -> str:
    """``text`` for a timeline cell: whole when short, else its start with the rest (up to
    :data:`_LONG` characters) behind ``<details>``; escaped."""
    if len(text) <= _SHORT:
        return f'<div class="x">{esc(text)}</div>'
    rest = len(text) - _LONG
    more = f" &hellip; ({rest} more characters)" if rest > 0 else ""
    return (f'<details class="x"><summary>{esc(text[:_SHORT])}&hellip;</summary>'
            f"{esc(text[:_LONG])}{more}</details>")


def _shown(event: Event) -> str | None:
    """What a row shows of the event beside its name: a message's or checkpoint's text,
    an action's command, else its arguments as JSON."""
    d = event.data
    if event.kind in ("message", "checkpoint"):
        text = d.get("text")
        return text if isinstance(text, str) and text else None
    if event.kind != "action":
        return None
    command = d.get("command")
    if isinstance(command, str) and command:
        return command
    args = d.get("args")
    if args in (None, {}, []):
        return None
    try:
        return orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return scalar_text(args)


def _what(event: Event) -> str:
    d = event.data
    if event.kind == "action":
        flag = " (irreversible)" if event.irreversible else ""
        return f"{d.get('action_type')}{flag}"
    if event.kind == "checkpoint":
        by = f" by {d.get('confirmed_by')}" if d.get("confirmed_by") else ""
        return f"{d.get('checkpoint_id')}{by}"
    if event.kind == "handoff":
        payload = d.get("payload")
        fields = ", ".join(sorted(payload)) if isinstance(payload, Mapping) else ""
        return f"{d.get('from_agent')} -> {d.get('to_agent')}" + (f" [{fields}]" if fields
                                                                     else "")
    if event.kind == "final":
        return ", ".join(f"{k}={scalar_text(v)}" for k, v in sorted(d.items())
                         if k not in ("seq", "event", "agent", "ts"))
    return str(d.get("role") or d.get("content") or "")[:200]


def _marks(event: Event, derived: Mapping[int, list[str]]) -> str:
    """The badges of a row: a checkpoint recorded in the run, the checkpoints a derive
    rule took from the event."""
    out = ['<span class="mark rec">recorded checkpoint</span>'] if event.kind == "checkpoint" \
        else []
    out += [f'<span class="mark der">derived checkpoint <code>{esc(cid)}</code></span>'
            for cid in derived.get(event.seq, ())]
    return "".join(out)


def _timeline(anchor: str, traj: Trajectory, named: set[int],
              derived: Iterable[tuple[int, str]] = ()) -> str:
    took: dict[int, list[str]] = {}
    for seq, cid in derived:
        took.setdefault(seq, []).append(cid)
    rows = []
    for e in traj.events:
        cls = ' class="named"' if e.seq in named else ""
        line = "" if e.line is None else str(e.line)
        shown = _shown(e)
        rows.append(f'<tr id="{anchor}-e{e.seq}"{cls}><td>{e.seq}</td><td>{esc(line)}</td>'
                    f"<td>{esc(e.kind)}</td><td>{esc(e.agent or '')}</td>"
                    f"<td><code>{esc(_what(e))}</code>{_marks(e, took)}"
                    f"{'' if shown is None else _detail(shown)}</td></tr>")
    where = "line" if traj.source == "native" else "message"
    return ("<details open><summary>timeline: "
            f"{esc(plural(len(traj.events), 'event'))}</summary><table><tr><th>seq</th>"
            f"<th>{where}</th><th>event</th><th>agent</th><th>what</th></tr>"
            + "".join(rows) + "</table></details>")


def _section(index: int, r: ReplayResult, traj: Trajectory | None) -> str:
    anchor = f"t{index}"
    seqs = {e.seq for e in traj.events} if traj is not None else set()
    codes = " ".join(sorted({f.code for f in (*r.reasons, *r.warnings)}))
    label = "reason" if r.verdict != "PASS" else "detail"
    items = [f"<li>{label} <code>{esc(f.code)}</code>: {_linked(f.message, anchor, seqs)}</li>"
             for f in r.reasons]
    items += [f"<li>warning <code>{esc(f.code)}</code>: {_linked(f.message, anchor, seqs)}"
              "</li>" for f in r.warnings]
    items += [f"<li>note: {_linked(f.message, anchor, seqs)}</li>" for f in r.notes]
    contrast = (f'<p class="contrast">final metric says <b>task_success='
                f"{esc(scalar_text(r.task_success))}</b> &middot; the trajectory says "
                f'<b class="v {r.verdict}">{esc(r.headline)}</b></p>')
    where = f'<p class="meta">file <code>{esc(r.path)}</code></p>' if r.path else ""
    timeline = ("" if traj is None else
                _timeline(anchor, traj, _named((*r.reasons, *r.warnings), seqs), r.derived))
    return (f'<section class="traj" id="{anchor}" data-verdict="{r.verdict}" '
            f'data-codes="{esc(codes)}"><h3><span class="v {r.verdict}">{r.verdict}</span> '
            f"[{index}] {esc(r.id)}</h3>{where}{contrast}"
            f'<ul class="reasons">{"".join(items)}</ul>{timeline}</section>')


#: Trajectories a page shows: the first page is in the page itself (read without the
#: script); the others are held as data and drawn by the script, a page at a time, so a
#: report of 100,000 runs opens as fast as one of fifty.
PAGE = 50


def _script_data(value: Any) -> str:
    """``value`` as JSON that cannot end or change the ``<script>`` element holding it."""
    text = orjson.dumps(value).decode()
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def _count_table(head: str, rows: Iterable[tuple[str, Mapping[str, int]]]) -> str:
    body = "".join(f"<tr><td><code>{esc(k)}</code></td><td>{c['pass']}</td>"
                   f"<td>{c['block']}</td><td>{c['error']}</td></tr>" for k, c in rows)
    return (f"<table><tr><th>{esc(head)}</th><th>PASS</th><th>BLOCK</th><th>ERROR</th></tr>"
            f"{body}</table>")


def _by_code(run: ReplayRun) -> list[tuple[str, dict[str, int]]]:
    out: dict[str, dict[str, int]] = {}
    for r in run.results:
        for code in dict.fromkeys(f.code for f in (*r.reasons, *r.warnings)):
            g = out.setdefault(code, {"pass": 0, "block": 0, "error": 0})
            g[r.verdict.lower()] += 1
    return sorted(out.items())


def replay_html(run: ReplayRun, spec: Any, *, by_field: str | None = None,
                located: Mapping[tuple[str, str], Trajectory] | None = None) -> str:
    """One self-contained page of a replay run; ``located`` gives the timelines."""
    located = located or {}
    c = run.counts()
    codes = sorted({f.code for r in run.results for f in (*r.reasons, *r.warnings)})
    verdicts = Counter(r.verdict for r in run.results)
    parts = [
        "<h1>roadcheck replay</h1>",
        f'<p class="meta">spec <code>{esc(run.spec_source or "<in memory>")}</code>'
        + (f" &middot; sha256 <code>{esc(run.spec_sha256)}</code>" if run.spec_sha256 else "")
        + f" &middot; {esc(plural(len(run.results), 'trajectory', 'trajectories'))}</p>",
        f'<p><span class="v PASS">{c["pass"]} PASS</span> '
        f'<span class="v BLOCK">{c["block"]} BLOCK</span> '
        f'<span class="v ERROR">{c["error"]} ERROR</span> &middot; overall exit '
        f"<b>{c['exit']}</b>" + (" (interrupted: partial)" if run.interrupted else "") + "</p>",
        "<h2>By reason code</h2>", _count_table("reason code", _by_code(run)),
    ]
    if by_field is not None:
        parts += [f"<h2>By {esc(by_field)}</h2>",
                  _count_table(by_field, run.by(by_field).items())]
    options = "".join(f'<option value="{v}">{v} ({verdicts[v]})</option>'
                      for v in ("PASS", "BLOCK", "ERROR"))
    code_options = "".join(f'<option value="{esc(k)}">{esc(k)}</option>' for k in codes)
    parts += [
        "<h2>Trajectories</h2>",
        '<div id="filters" hidden><label>verdict <select id="f-verdict">'
        f'<option value="">all</option>{options}</select></label>'
        '<label>reason code <select id="f-code"><option value="">all</option>'
        f'{code_options}</select></label><span id="f-count" class="meta"></span>'
        '<span id="pager" hidden> <button id="p-prev" type="button">previous</button> '
        '<span id="p-at" class="meta"></span> <button id="p-next" type="button">next'
        "</button></span></div>",
    ]
    sections = (_section(i, r, located.get((r.path, r.id)) if r.path is not None else None)
                for i, r in enumerate(run.results, 1))
    parts.append(f'<div id="trajs" data-page="{PAGE}">'
                 + "".join(islice(sections, PAGE)) + "</div>")
    rest = len(run.results) - PAGE
    if rest > 0:
        # the other pages: held as data, drawn a page at a time by the script
        others = esc(plural(rest, "more trajectory", "more trajectories"))
        parts.append(f'<p id="rest" class="meta">{others} on the next pages: the '
                     "page&#x27;s script shows them.</p>")
        more = [[r.verdict, " ".join(sorted({f.code for f in (*r.reasons, *r.warnings)})),
                 html] for r, html in zip(run.results[PAGE:], sections, strict=True)]
        parts.append('<script type="application/json" id="more">' + _script_data(more)
                     + "</script>")
    csp = (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'; "
           "img-src 'none'; base-uri 'none'; form-action 'none'")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>roadcheck replay report</title><style>{_CSS}</style></head>\n<body>\n"
            + "\n".join(parts) + f"\n<script>{_SCRIPT}</script>\n</body></html>\n")
