"""Which edited files no commit holds: "all changes are committed", checked file by file.

A ``said`` entry with ``every_edit_committed: true`` is backed only when every file
an edit of the session touched (the events its ``after`` picks) is in a successful
``git commit`` after its last edit. A file is in a commit when, after its last edit
and before or in that commit, it was staged:

- ``git add`` naming it, or a folder it is in (``git add src/``), or a glob that
  matches it; or naming everything (``git add -A``, ``--all``, ``-u``, ``.``,
  ``:/``); ``git rm`` naming it;
- ``git commit -a`` (``-am``, ``--all``), or ``git commit PATH`` naming it.

A file put back as it was (``git checkout -- PATH``, ``git restore PATH``, ``git
stash``, ``git reset --hard``) holds no change any more; one taken out of the index
(``git reset``, ``git restore --staged PATH``) is staged no more.

Only what the session shows staged counts: a shell line that cannot be known before
it runs (``eval``, a variable for the command, a script given to a shell, a line the
grammar cannot read) stages only what the commands it was read to run name, and a
staging whose paths or options are only known when it runs (``git add "$F"``), that
stages hunks chosen by hand (``git add -p``, ``-i``), or that only shows what it
would do (``git add -n``, ``git commit --dry-run``) stages
nothing: a claim the check cannot show is rejected.

The files an edit touches are read from the edit tools' arguments (``file_path``,
``path``, ``notebook_path``) and from a patch's ``*** Update File:`` lines (Codex
``apply_patch``, as a tool or run by the shell); an edit whose file is not named
(a shell redirect) is left out. A file named by its full path is checked only
where the session shows where the repository is: a path staged by name that ends a
full edited path gives the repository's folder, and a full path outside every such
folder (a plan written under the home folder) is left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from fnmatch import fnmatchcase

from roadcheck.events import Event

__all__ = ["uncommitted"]

_PATCH_FILE = re.compile(r"(?m)^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|"
                         r"^\*\*\* Move to: (.+?)\s*$")
_PATH_ARGS = ("file_path", "path", "notebook_path")
#: Options of ``git commit`` that take a value (the next word, when not joined).
_COMMIT_VALUED = frozenset({"-m", "-F", "-C", "-c", "-t", "--message", "--file",
                            "--reuse-message", "--reedit-message", "--template", "--author",
                            "--date", "--fixup", "--squash", "--cleanup", "--trailer"})
#: Options of ``git`` itself that take a value, before the subcommand.
_GIT_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_ALL = "*all*"  # staged: every file
#: Options of ``git add`` that stage every file (of its paths, when it names some).
_ADD_ALL = frozenset({"-A", "--all", "-u", "--update", "--no-ignore-removal"})
#: Options of ``git add`` after which what it stages is not shown by its words: hunks
#: chosen by hand, a dry run, paths read from a file.
_ADD_UNSHOWN = ("-p", "--patch", "-i", "--interactive", "-e", "--edit", "-n", "--dry-run",
                "--pathspec-from-file")


def edited_files(event: Event) -> list[str]:
    """The files an edit names: an edit tool's path argument, a patch's file lines."""
    args = event.get("args")
    found: list[str] = []
    if isinstance(args, str):  # a patch given whole (Codex's apply_patch tool)
        found.extend(_patched(args))
    elif isinstance(args, dict):
        for key in _PATH_ARGS:
            value = args.get(key)
            if isinstance(value, str) and value:
                found.append(value)
                break
        for key in ("input", "patch"):
            value = args.get(key)
            if isinstance(value, str):
                found.extend(_patched(value))
    command = event.get("command")
    if isinstance(command, str) and "*** " in command:
        found.extend(_patched(command))
    return list(dict.fromkeys(_clean(f) for f in found))


def _patched(text: str) -> list[str]:
    return [m.group(1) or m.group(2) for m in _PATCH_FILE.finditer(text)]


def _clean(path: str) -> str:
    path = path.strip().strip("\"'")
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/")


def _git_words(words: Sequence[str | None]) -> tuple[str, list[str | None]] | None:
    """The subcommand of a ``git`` command and its words after it, or None. (A wrapper's
    command, ``rtk git commit``, ``sudo git add``, is one the shell reading gives.)"""
    if not words or not isinstance(words[0], str) or words[0].rsplit("/", 1)[-1] != "git":
        return None
    i = 1
    while i < len(words):
        word = words[i]
        if word is None:
            return None
        if word in _GIT_VALUED:
            i += 2
            continue
        if word.startswith("-"):
            i += 1
            continue
        return word, list(words[i + 1:])
    return None


class _Staging:
    """What one shell line stages, puts back and commits, in its order."""

    def __init__(self) -> None:
        #: ("stage"|"unstage"|"restore"|"commit", paths), in the line's order
        self.steps: list[tuple[str, list[str]]] = []

    def read(self, line: str) -> None:
        from roadcheck.shellcmd import read_commands

        # the commands the line was read to run: what cannot be read stages nothing
        for words in read_commands(line).commands:
            git = _git_words(words)
            if git is not None:
                self._git(*git)

    def _git(self, sub: str, rest: list[str | None]) -> None:
        if sub in ("add", "rm", "stage"):
            self.steps.append(("stage", _add_paths(rest)))
        elif sub == "commit":
            if "--dry-run" in rest:
                return  # it shows what it would commit
            paths, every = _commit_paths(rest)
            if every or paths:
                self.steps.append(("stage", [_ALL] if every else paths))
            self.steps.append(("commit", []))
        elif sub == "stash":
            self._stash(rest)
        elif sub == "reset":
            self._reset(rest)
        elif sub == "restore" or (sub == "checkout" and "--" in rest):
            after = rest[rest.index("--") + 1:] if "--" in rest else rest
            staged = any(w in ("--staged", "-S") for w in rest)
            worktree = any(w in ("--worktree", "-W") for w in rest)
            # git restore --staged PATH takes PATH out of the index and leaves its change
            self.steps.append(("unstage" if staged and not worktree else "restore",
                               _add_paths(after)))

    def _stash(self, rest: list[str | None]) -> None:
        """``git stash`` (``push``, ``save``) puts the changes away; ``list``, ``show``,
        ``pop`` and the rest put nothing away."""
        if rest and rest[0] not in ("push", "save") and not str(rest[0]).startswith("-"):
            return
        words = rest[1:] if rest and rest[0] in ("push", "save") else rest
        if any(w is None or w in ("-p", "--patch", "-S", "--staged") for w in words):
            return  # hunks chosen by hand, or words only known when it runs
        paths = [_clean(w) for w in words[words.index("--") + 1:] if w] if "--" in words else []
        self.steps.append(("restore", paths or [_ALL]))

    def _reset(self, rest: list[str | None]) -> None:
        """``git reset`` takes files out of the index (every file: its words may name a
        commit or paths, and taking out more only asks for more); ``--hard`` puts every
        change back; ``--soft`` leaves the index as it is."""
        if "--soft" in rest:
            return
        self.steps.append(("restore" if "--hard" in rest else "unstage", [_ALL]))

def _add_paths(rest: list[str | None]) -> list[str]:
    """The paths ``git add`` (``git rm``, ``git restore``) stages, :data:`_ALL` for every
    file; none when its words do not show them (a word known only when it runs, which
    may be any option or path, or an option of :data:`_ADD_UNSHOWN`)."""
    paths: list[str] = []
    every = literal = False
    for word in rest:
        if word is None or (not literal and word.split("=", 1)[0] in _ADD_UNSHOWN):
            return []
        if not literal and word == "--":
            literal = True
        elif not literal and word in _ADD_ALL:
            every = True
        elif not literal and word.startswith("-"):
            if not word.startswith("--") and any(c in word for c in "pien"):
                return []  # a cluster holding -p, -i, -e or -n
        elif word in (".", ":/", "*"):
            paths.append(_ALL)
        else:
            paths.append(_clean(word))
    return paths or ([_ALL] if every else [])


def _commit_paths(rest: list[str | None]) -> tuple[list[str], bool]:
    """The paths ``git commit`` names, and whether it commits every tracked change."""
    paths: list[str] = []
    every = skip = literal = False
    for word in rest:
        if skip:
            skip = False
        elif word is None:
            continue  # a message, most likely: at most a path, never ``-a``
        elif literal or not word.startswith("-"):
            paths.append(_clean(word))
        elif word == "--":
            literal = True
        elif word == "--all":
            every = True
        elif word in _COMMIT_VALUED:
            skip = True
        elif not word.startswith("--"):
            for i, letter in enumerate(word[1:], 1):
                if letter == "a":
                    every = True
                elif letter in "mFCct":
                    skip = i == len(word) - 1  # the value is the next word, or joined
                    break
    return paths, every


#: A command a code-mode script (Codex ``exec``) runs: ``exec_command({cmd: "..."})``.
_SCRIPT_CMD = re.compile(r'\bexec_command\(\{\s*cmd\s*:\s*("(?:[^"\\]|\\.)*")')


def _command_of(event: Event) -> str | None:
    """The shell line a call ran: its ``command``, or the commands a code-mode script
    runs, one a line."""
    import json

    command = event.get("command")
    if isinstance(command, str):
        return command
    script = event.get("args")
    if event.action_type != "exec" or not isinstance(script, str):
        return None
    lines = []
    for found in _SCRIPT_CMD.finditer(script):
        try:
            lines.append(str(json.loads(found.group(1))))
        except ValueError:
            return "eval unknown"  # a script line it cannot read: it stages nothing
    return "\n".join(lines) or None


def _covers(staged: str, file: str) -> bool:
    if staged == _ALL:
        return True
    if file == staged or file.endswith("/" + staged) or ("/" + staged + "/") in ("/" + file):
        return True
    return any(c in staged for c in "*?[") and (
        fnmatchcase(file, staged) or fnmatchcase(file, "*/" + staged))


def uncommitted(events: Iterable[Event], is_edit: Callable[[Event], bool],
                succeeded: Callable[[Event], bool]) -> list[tuple[str, int]]:
    """The files an edit touched that no successful commit after their last edit holds,
    each with the seq of that edit, in the order of those edits (see the module)."""
    dirty: dict[str, int] = {}  # file -> seq of its last edit not yet committed
    staged: set[str] = set()
    roots: set[str] = set()  # the repository's folder, as full edited paths show it
    for event in events:
        if event.kind != "action":
            continue
        command = _command_of(event)
        staging = _Staging()
        if command is not None and "git" in command and succeeded(event):
            staging.read(command)
        if is_edit(event) and not staging.steps:
            for file in edited_files(event):
                dirty[file] = event.seq
                staged.discard(file)
            continue
        for step, paths in staging.steps:
            if step == "commit":
                for file in staged:
                    dirty.pop(file, None)
                staged.clear()
                continue
            hit = [f for f in dirty if any(_covers(p, f) for p in paths)]
            roots.update(f[:len(f) - len(p)] for f in hit for p in paths
                         if f.startswith("/") and f.endswith("/" + p))
            if step == "restore":
                for file in hit:
                    dirty.pop(file, None)
                    staged.discard(file)
            elif step == "unstage":
                staged.difference_update(hit)
            else:
                staged.update(hit)
    return [(file, seq) for file, seq in sorted(dirty.items(), key=lambda kv: kv[1])
            if not file.startswith("/") or any(file.startswith(r) for r in roots)]
