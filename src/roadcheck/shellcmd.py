"""Shell command lines as words: what a selector's ``command`` condition matches on.

Coding agents run tools through a shell (Claude Code's ``Bash`` tool, Codex's
``shell``), so the guarded action is often not a tool name but a command
inside a script: ``cd repo && git push origin main``. :func:`simple_commands`
splits a command line into its simple commands (at ``&&``, ``||``, ``;``,
``|``, ``&`` and newlines, and inside ``bash -c SCRIPT``, ``$(...)`` and
backquotes), each a list of words with leading ``VAR=value`` assignments and
wrappers such as ``sudo`` or ``env`` removed. :func:`matches_words` says
whether one of those commands is the program named by the first pattern word
with the other pattern words among its arguments, in order.

A command line that cannot be split (an unclosed quote) is matched on its raw
text instead: every pattern word appearing in it, in order, counts as a match.
A command the reader cannot parse must never slip past a guard, so the
fallback over-matches rather than under-matches.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

__all__ = ["command_text", "matches_words", "simple_commands"]

_OPERATORS = frozenset({"&&", "||", ";", "|", "&", "|&", ";;", "(", ")", "{", "}", "!"})
#: Words that run the rest of the line as a command.
_WRAPPERS = frozenset({"sudo", "env", "nohup", "time", "command", "exec", "nice", "xargs",
                       "doas", "builtin", "timeout", "stdbuf"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SUBST = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")
#: Nesting limit for ``bash -c`` inside ``bash -c``: deeper scripts match on their text.
_DEPTH = 4


class _Unparsed(Exception):
    pass


def command_text(command: object) -> str | None:
    """The command line an action ran, from a string or an argv list; None otherwise.

    An argv of the form ``[bash, -lc, SCRIPT]`` is the script itself; any
    other argv is joined with shell quoting.
    """
    if isinstance(command, str):
        return command
    if isinstance(command, list) and command and all(isinstance(w, str) for w in command):
        words: list[str] = command
        if (len(words) == 3 and _base(words[0]) in _SHELLS and words[1].startswith("-")
                and "c" in words[1]):
            return words[2]
        return shlex.join(words)
    return None


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _split(line: str, depth: int) -> list[list[str]]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    lexer.whitespace = " \t\r"
    try:
        tokens = []
        for tok in lexer:
            tokens.append(tok)
    except ValueError:
        raise _Unparsed from None
    out: list[list[str]] = []
    current: list[str] = []
    for tok in tokens:
        if tok in _OPERATORS or tok == "\n" or (tok and set(tok) <= set(";&|()")):
            if current:
                out.append(current)
            current = []
        else:
            current.append(tok)
    if current:
        out.append(current)
    result: list[list[str]] = []
    for words in out:
        result.extend(_unwrap(words, depth))
    # Command substitutions run commands of their own.
    for m in _SUBST.finditer(line):
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        if inner and depth < _DEPTH:
            result.extend(_split(inner, depth + 1))
    return result


def _unwrap(words: list[str], depth: int) -> list[list[str]]:
    """Drop assignments, redirections and wrappers; expand ``bash -c SCRIPT``."""
    words = [w for w in words if w not in ("<", ">", ">>", "<<", "<<<")]
    i = 0
    while i < len(words) and _ASSIGN.match(words[i]):
        i += 1
    if i < len(words) and _base(words[i]) in _WRAPPERS:
        # A wrapper's own options may take values (``sudo -u root git push``) that cannot
        # be told from the command: every later word is tried as the command's start.
        out: list[list[str]] = [words[i:]]
        for j in range(i + 1, len(words)):
            if not words[j].startswith("-"):
                out.extend(_unwrap(words[j:], depth))
        return out
    rest = words[i:]
    if not rest:
        return []
    if (_base(rest[0]) in _SHELLS and len(rest) >= 3 and rest[1].startswith("-")
            and "c" in rest[1] and depth < _DEPTH):
        return [rest, *_split(rest[2], depth + 1)]
    return [rest]


def simple_commands(line: str) -> list[list[str]]:
    """The simple commands of a command line, each a list of words.

    Raises ``ValueError`` when the line cannot be split (an unclosed quote).
    """
    try:
        return _split(line.replace("\n", " ; "), 0)
    except _Unparsed:
        raise ValueError("the command line cannot be split into words") from None


def matches_words(line: str, pattern: Sequence[str]) -> bool:
    """True when a simple command of ``line`` is ``pattern[0]`` with ``pattern[1:]`` among
    its arguments, in that order (the program compared by its base name: ``/usr/bin/git``
    is ``git``). An unsplittable line matches when the words appear in its text, in order.
    """
    try:
        commands = simple_commands(line)
    except ValueError:
        pos = 0
        for word in pattern:
            found = line.find(word, pos)
            if found < 0:
                return False
            pos = found + len(word)
        return True
    program, args = pattern[0], pattern[1:]
    for words in commands:
        if _base(words[0]) != program and words[0] != program:
            continue
        it = iter(words[1:])
        if all(any(a == want for a in it) for want in args):
            return True
    return False
