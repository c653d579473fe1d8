"""Run the shell blocks of README.md and docs/, and compare or refresh the output they show.

Every fenced shell block (info string ``console``, ``shell``, ``sh``, ``bash`` or
none) in README.md and docs/**/*.md carries one marker, an HTML comment on the
line right above its opening fence:

``<!-- run -->``, ``<!-- run: exit=1 -->``, ``<!-- run: exit=3,0 -->``
    A ```console block that is run and checked. ``$ `` lines are commands (a
    command whose line ends in ``\\`` continues on the next line); the lines
    after a command, up to the next ``$ ``, are its expected output, stdout
    and stderr together. ``exit=N`` is the exit code of every command,
    ``exit=N1,N2,...`` one code per command; without it every command exits 0.
    A line that is exactly ``...`` stands for any number of output lines, so a
    long output may show a checked prefix, suffix or excerpt.
``<!-- synopsis -->``
    A usage synopsis (``roadcheck replay SPEC TRAJECTORY... [--format ...]``): not run.
``<!-- norun: REASON -->``
    Shown but not run (installing, long benchmarks); the reason is required.

The commands of one block run in order in one ``bash`` process, with the
repository's copy as working directory, so ``cd``, shell variables and files
written by one command are seen by the next. Each block gets a fresh copy of
the repository (without .git, .venv, caches, runs/ and build/), so commands
may write files without touching the working tree. ``roadcheck`` is the one next
to this interpreter (its directory comes first on PATH); ``ROADCHECK_*`` variables
are removed and ``TZ=UTC``, ``COLUMNS=80``, ``PYTHONUNBUFFERED=1`` are set.

Before comparing, only what must vary is normalised (``SUBSTITUTIONS``): the
copy's absolute path prints as ``/path/to/roadcheck``, and generated run ids,
wall-clock timestamps, the evidence head's hash and durations are masked on
both sides; trailing spaces and trailing blank lines are ignored.

    .venv/bin/python scripts/refresh_docs_output.py            # rewrite outputs that drifted
    .venv/bin/python scripts/refresh_docs_output.py --check    # only report, exit 1 on drift
    .venv/bin/python scripts/refresh_docs_output.py docs/accept.md

Refreshing rewrites a drifted command's output (keeping its ``...`` elisions
where the excerpt can still be found) and the ``exit=`` of its marker; blocks
that still match are left byte for byte. Refresh only for an intended change,
and read the diff. ``tests/test_docs_run.py`` runs the same check.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC_GLOBS = ("README.md", "docs/**/*.md")
SHELL_LANGS = frozenset({"", "console", "shell", "sh", "bash", "zsh", "shell-session"})
ELLIPSIS = "..."
PROMPT = "$ "
DISPLAY_ROOT = "/path/to/roadcheck"
TIMEOUT = 120             # seconds for one block
NO_EXIT = -1              # the exit code of a command that never finished
REFRESH_HINT = ("if the change is intended, run "
                "`.venv/bin/python scripts/refresh_docs_output.py` and review the diff")

# What must vary between runs, masked on both sides before comparing. Keep it small:
# every entry hides something the check can no longer see.
SUBSTITUTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    # generated run ids: 20260711T031405Z-a1b2c3
    (re.compile(r"\b\d{8}T\d{6}Z-[0-9a-f]{6}\b"), "<run-id>"),
    # wall-clock timestamps with fractional seconds (fixed example times have none)
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(?:Z|[+-]\d\d:\d\d)?"), "<time>"),
    # the evidence head's hash, which covers the records' wall-clock times
    (re.compile(r"\blast [0-9a-f]{16}\b"), "last <hash>"),
    # measured durations, which always carry decimals: 0.42 s, 12.5 ms, 3.0 us
    (re.compile(r"\b\d+\.\d+ ?(?:s|ms|us|µs)(?!\w)"), "<duration>"),
)

_FENCE = re.compile(r"^(?P<indent>[ ]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_MARKER = re.compile(r"^\s*<!--\s*(?P<kind>run|synopsis|norun)\b(?P<rest>.*?)-->\s*$")
_EXIT = re.compile(r"^exit=(\d+(?:,\d+)*)$")


@dataclass
class Command:
    """One ``$ `` command of a run block and the output shown after it."""

    text: str                 # without the prompt; continuation lines joined with newlines
    expected: list[str]       # shown output lines, ``...`` lines included
    first: int                # index in the file of the command's first line
    end: int                  # index in the file after its last expected line


@dataclass
class Block:
    """One fenced block of a Markdown file."""

    path: Path
    fence_index: int          # 0-based index of the opening fence line
    close_index: int          # 0-based index of the closing fence line
    indent: str
    lang: str
    marker: str | None = None
    marker_index: int | None = None
    options: str = ""
    exits: list[int] | None = None
    commands: list[Command] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{_rel(self.path)}:{self.fence_index + 1}"


@dataclass
class Outcome:
    """What the commands of one run block printed, and how that compares."""

    block: Block
    outputs: list[list[str]]  # per command, display form (the copy's path replaced)
    exits: list[int]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown page under docs/, in a stable order."""
    found: set[Path] = set()
    for pattern in DOC_GLOBS:
        found.update(p for p in root.glob(pattern) if p.is_file())
    return sorted(found)


def parse(path: Path, text: str | None = None) -> tuple[list[Block], list[str]]:
    """The fenced blocks of one file, and every marker problem found on the way."""
    lines = (path.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks: list[Block] = []
    problems: list[str] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent = m["fence"], m["indent"]
        close = i + 1
        while close < len(lines):
            c = lines[close].strip()
            if c.startswith(fence[0] * len(fence)) and not c.strip(fence[0]):
                break
            close += 1
        block = Block(path, i, close, indent, m["info"].strip().split(" ")[0].lower())
        where = block.where
        if close >= len(lines):
            problems.append(f"{where}: the fence is never closed")
        marker = _MARKER.match(lines[i - 1]) if i > 0 else None
        if marker:
            block.marker, block.marker_index = marker["kind"], i - 1
            block.options = marker["rest"].strip()
            problems.extend(_check_marker(block, lines[i + 1:close]))
        elif block.lang in SHELL_LANGS:
            problems.append(
                f"{where}: shell block without a marker: put <!-- run -->, "
                "<!-- synopsis --> or <!-- norun: REASON --> on the line above its fence")
        blocks.append(block)
        i = close + 1
    return blocks, problems


def _check_marker(block: Block, body: list[str]) -> list[str]:
    where = block.where
    if block.marker == "synopsis":
        return [] if not block.options else [f"{where}: <!-- synopsis --> takes no options"]
    if block.marker == "norun":
        reason = block.options.removeprefix(":").strip()
        return [] if block.options.startswith(":") and reason else [
            f"{where}: <!-- norun --> needs a reason: <!-- norun: REASON -->"]
    # run
    problems: list[str] = []
    if block.lang != "console":
        problems.append(f"{where}: a run block is a ```console block, not ```{block.lang}")
    opts = block.options
    if opts:
        if not opts.startswith(":"):
            return [f"{where}: write options as <!-- run: exit=N -->"]
        for opt in opts[1:].split():
            em = _EXIT.match(opt)
            if em is None:
                problems.append(f"{where}: unknown run option {opt!r} (known: exit=N[,N...])")
            else:
                block.exits = [int(x) for x in em[1].split(",")]
    block.commands = _commands(block, body, problems)
    if not block.commands:
        problems.append(f"{where}: a run block needs at least one '$ ' command")
    elif block.exits is not None and len(block.exits) not in (1, len(block.commands)):
        problems.append(f"{where}: exit= gives {len(block.exits)} codes for "
                        f"{len(block.commands)} commands")
    return problems


def _commands(block: Block, body: list[str], problems: list[str]) -> list[Command]:
    commands: list[Command] = []
    start = block.fence_index + 1
    j = 0
    while j < len(body):
        line = body[j].removeprefix(block.indent)
        if not line.startswith(PROMPT):
            if not commands:
                problems.append(f"{_rel(block.path)}:{start + j + 1}: output before the "
                                "first '$ ' command")
            else:
                commands[-1].expected.append(line.rstrip())
                commands[-1].end = start + j + 1
            j += 1
            continue
        first = j
        parts = [line[len(PROMPT):]]
        while parts[-1].endswith("\\") and j + 1 < len(body):
            j += 1
            parts.append(body[j].removeprefix(block.indent))
        commands.append(Command("\n".join(parts), [], start + first, start + j + 1))
        j += 1
    return commands


_SKIP_ANYWHERE = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
                            ".hypothesis", ".corpus"})
_SKIP_AT_TOP = frozenset({".git", ".venv", "venv", "runs", "build", "dist"})


def _ignore_for(root: Path) -> Callable[[str, list[str]], set[str]]:
    """A copytree filter: caches anywhere; the checkout's own state at the top only."""
    top = root.resolve()

    def ignore(directory: str, names: list[str]) -> set[str]:
        skip = {n for n in names if n in _SKIP_ANYWHERE or n.endswith((".egg-info", ".pyc"))}
        if Path(directory).resolve() == top:
            skip |= _SKIP_AT_TOP.intersection(names)
        return skip

    return ignore


def _environment(base: Path) -> dict[str, str]:
    """A block's environment: no ROADCHECK_ variable (but ROADCHECK_GUARD_DAEMON=0), and the
    user's state and config
    directories (where the guard keeps its sessions, its key and its sessions' heads)
    in the block's own temporary directory ``base``, so each block starts afresh."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROADCHECK_")}
    for name in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "LOCALAPPDATA", "APPDATA"):
        env[name] = str(base / "user" / name.lower())
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", os.defpath)
    env.update(TZ="UTC", COLUMNS="80", PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8",
               NO_COLOR="1")
    env.pop("VIRTUAL_ENV", None)
    # the hook commands answer in process: no guard daemon is started, none outlives a block
    env["ROADCHECK_GUARD_DAEMON"] = "0"
    return env


class Sandbox:
    """A copy of the repository to run blocks in, copied again whenever a block changed it.

    Copying is the slow part of a block, and most blocks only read; so one copy
    serves every block until one writes, deletes or touches a file in it.
    """

    def __init__(self, root: Path = ROOT) -> None:
        self.root = root
        self._tmp = tempfile.TemporaryDirectory(prefix="roadcheck-docs-")
        self.base = Path(self._tmp.name)
        self.work = self.base / "roadcheck"
        self._seen: dict[str, tuple[int, int]] | None = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._tmp.cleanup()

    def _manifest(self) -> dict[str, tuple[int, int]]:
        seen: dict[str, tuple[int, int]] = {}
        for directory, dirs, files in os.walk(self.work):
            for name in dirs + files:
                st = os.lstat(os.path.join(directory, name))
                seen[os.path.join(directory, name)] = (st.st_size, st.st_mtime_ns)
        return seen

    def fresh(self) -> Path:
        """The copy, exactly as the repository is: recopied if a block changed it."""
        if self._seen is not None and self._manifest() == self._seen:
            return self.work
        if self.work.exists():
            shutil.rmtree(self.work)
        shutil.copytree(self.root, self.work, ignore=_ignore_for(self.root), symlinks=True)
        self._seen = self._manifest()
        return self.work


def execute(block: Block, sandbox: Sandbox) -> tuple[list[list[str]], list[int]]:
    """Run a block's commands in the sandbox's copy; their output and exit codes."""
    work = sandbox.fresh()
    with tempfile.TemporaryDirectory(prefix="block-", dir=sandbox.base) as tmp:
        out = Path(tmp)
        script = ["set +e"]
        for n, cmd in enumerate(block.commands):
            script.append(f"{{ {cmd.text}\n}} >'{out}/{n}.out' 2>&1 </dev/null")
            script.append(f"__rc=$?; echo $__rc >'{out}/{n}.rc'; (exit $__rc)")
        (out / "block.sh").write_text("\n".join(script) + "\n", encoding="utf-8")
        shell = subprocess.Popen(["bash", "--noprofile", "--norc", str(out / "block.sh")],
                                 cwd=work, env=_environment(out),
                                 start_new_session=True)
        try:
            shell.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            # the commands still running get no exit code, which compare() reports
            os.killpg(shell.pid, signal.SIGKILL)
            shell.wait()
        outputs: list[list[str]] = []
        exits: list[int] = []
        for n in range(len(block.commands)):
            text = _read(out / f"{n}.out")
            for path in sorted({str(work.resolve()), str(work)}, key=len, reverse=True):
                text = text.replace(path, DISPLAY_ROOT)
            outputs.append(_lines(text))
            rc = _read(out / f"{n}.rc").strip()
            exits.append(int(rc) if rc.isdigit() else NO_EXIT)
    return outputs, exits


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace") if path.exists() else ""


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def normalise(line: str) -> str:
    """A line with what must vary masked (``SUBSTITUTIONS``)."""
    for pattern, token in SUBSTITUTIONS:
        line = pattern.sub(token, line)
    return line.rstrip()


def _segments(pattern: Sequence[str]) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for line in pattern:
        if line == ELLIPSIS:
            segments.append([])
        else:
            segments[-1].append(line)
    return segments


def matches(pattern: Sequence[str], actual: Sequence[str]) -> bool:
    """Whether ``actual`` fits ``pattern``, where a ``...`` line matches any lines."""
    pat = [p if p == ELLIPSIS else normalise(p) for p in _lines("\n".join(pattern))]
    act = [normalise(a) for a in actual]
    segments = _segments(pat)
    if len(segments) == 1:
        return pat == act
    head, *middle, tail = segments
    if act[:len(head)] != head or len(act) < len(head) + len(tail):
        return False
    pos, end = len(head), len(act) - len(tail)
    if tail and act[end:] != tail:
        return False
    for seg in middle:
        found = _find(act, seg, pos, end)
        if found is None:
            return False
        pos = found + len(seg)
    return True


def _find(lines: Sequence[str], seg: Sequence[str], start: int, end: int) -> int | None:
    for k in range(start, end - len(seg) + 1):
        if list(lines[k:k + len(seg)]) == list(seg):
            return k
    return None


def project(pattern: Sequence[str], actual: Sequence[str]) -> list[str] | None:
    """``actual`` shown the way ``pattern`` shows it: the same elisions, fresh lines.

    The head and tail keep their number of lines; an excerpt between two ``...``
    is found again by its first line. None when an excerpt can no longer be found.
    """
    segments = _segments(pattern)
    if len(segments) == 1:
        return list(actual)
    head, *middle, tail = segments
    norm = [normalise(a) for a in actual]
    shown: list[str] = [*actual[:len(head)], ELLIPSIS]
    pos, end = len(head), len(actual) - len(tail)
    for seg in middle:
        if not seg:
            continue
        found = _find(norm, [normalise(seg[0])], pos, end)
        if found is None:
            return None
        shown += [*actual[found:found + len(seg)], ELLIPSIS]
        pos = found + len(seg)
    if tail:
        shown += list(actual[max(end, pos):])
    return shown


def compare(block: Block, outputs: list[list[str]], exits: list[int]) -> list[str]:
    """Every difference between what a block shows and what its commands did."""
    problems: list[str] = []
    want = _expected_exits(block)
    for n, (cmd, got, rc) in enumerate(zip(block.commands, outputs, exits, strict=True)):
        label = f"{_rel(block.path)}:{cmd.first + 1}: $ {cmd.text.splitlines()[0]}"
        if rc == NO_EXIT:
            problems.append(f"{label}\n  did not finish within {TIMEOUT} s")
        elif rc != want[n]:
            problems.append(f"{label}\n  exit code {rc}, the block says {want[n]}")
        if not matches(cmd.expected, got):
            shown = project(cmd.expected, got) or got
            diff = difflib.unified_diff(cmd.expected, shown, "shown in the docs",
                                        "printed now", lineterm="", n=2)
            problems.append(f"{label}\n  output differs:\n" + "\n".join(diff))
    return problems


def _expected_exits(block: Block) -> list[int]:
    exits = block.exits or [0]
    return exits * len(block.commands) if len(exits) == 1 else exits


def check_block(block: Block, sandbox: Sandbox) -> Outcome:
    """Run one run block and compare what it shows with what its commands print."""
    outputs, exits = execute(block, sandbox)
    return Outcome(block, outputs, exits, compare(block, outputs, exits))


def run_blocks(paths: Iterable[Path]) -> tuple[list[Block], list[str]]:
    """Every run block of ``paths``, and every marker problem in them."""
    runnable: list[Block] = []
    problems: list[str] = []
    for path in paths:
        blocks, found = parse(path)
        problems += found
        runnable += [b for b in blocks if b.marker == "run" and b.commands]
    return runnable, problems


def refresh(outcomes: Sequence[Outcome]) -> list[str]:
    """Rewrite the drifted outputs and exit codes of ``outcomes`` in their files.

    Returns the blocks that could not be refreshed (an excerpt no longer found).
    """
    stuck: list[str] = []
    by_file: dict[Path, list[Outcome]] = {}
    for outcome in outcomes:
        if not outcome.ok:
            by_file.setdefault(outcome.block.path, []).append(outcome)
    for path, items in by_file.items():
        raw = path.read_text(encoding="utf-8")
        lines = raw.splitlines()
        # bottom-up, so earlier line indices stay valid
        for outcome in sorted(items, key=lambda o: -o.block.fence_index):
            block = outcome.block
            for cmd, got in reversed(list(zip(block.commands, outcome.outputs, strict=True))):
                if matches(cmd.expected, got):
                    continue
                shown = project(cmd.expected, got)
                if shown is None:
                    stuck.append(f"{_rel(path)}:{cmd.first + 1}: an excerpt between '...' "
                                 "lines is no longer printed; edit this block by hand")
                    continue
                lines[cmd.end - len(cmd.expected):cmd.end] = [
                    (block.indent + s) if s else "" for s in shown]
            if outcome.exits != _expected_exits(block) and block.marker_index is not None:
                lines[block.marker_index] = block.indent + _marker(outcome.exits)
        path.write_text("\n".join(lines) + ("\n" if raw.endswith("\n") else ""),
                        encoding="utf-8")
    return stuck


def _marker(exits: Sequence[int]) -> str:
    if set(exits) == {0}:
        return "<!-- run -->"
    if len(set(exits)) == 1:
        return f"<!-- run: exit={exits[0]} -->"
    return f"<!-- run: exit={','.join(map(str, exits))} -->"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path,
                        help="Markdown files (default: README.md and docs/**/*.md)")
    parser.add_argument("--check", action="store_true",
                        help="only compare; print every difference and exit 1 on any")
    args = parser.parse_args(argv)
    blocks, problems = run_blocks([p.resolve() for p in args.files] or doc_files())
    for problem in problems:
        print(problem, file=sys.stderr)
    with Sandbox() as sandbox:
        outcomes = [check_block(b, sandbox) for b in blocks]
    drifted = [o for o in outcomes if not o.ok]
    if args.check:
        for o in drifted:
            print("\n".join(o.problems), file=sys.stderr)
        print(f"{len(outcomes)} blocks run, {len(drifted)} drifted")
        return 1 if drifted or problems else 0
    stuck = refresh(drifted)
    for o in drifted:
        print(f"refreshed {o.block.where}")
    for s in stuck:
        print(s, file=sys.stderr)
    print(f"{len(outcomes)} blocks run, {len(drifted)} refreshed")
    return 1 if stuck or problems else 0


if __name__ == "__main__":
    sys.exit(main())
