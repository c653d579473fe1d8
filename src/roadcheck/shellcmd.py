"""Shell command lines as bash reads them: what a selector's ``command`` condition matches.

Coding agents run tools through a shell (Claude Code's ``Bash`` tool, Codex's
``shell``), so the guarded action is often not a tool name but a command inside a
script: ``cd repo && git push origin main``. :func:`read_commands` parses a line
with a real shell grammar (tree-sitter's bash grammar) and finds every simple
command bash would run: in lists and pipelines, inside ``if``, ``for``, ``while``,
``case``, functions, subshells and ``{ }`` groups, in command and process
substitutions, with comments, line continuations and redirections in any position
read as bash reads them, quoting (single, double, ANSI-C ``$'...'``) resolved.
The scripts of ``bash|sh|zsh ... -c SCRIPT`` (with any flags), of a heredoc or
here-string fed to a shell, of ``watch``, ``su -c``, ``flock -c`` and ``env -S``
are read the same way, to :data:`DEPTH` levels, and so are the command strings of
``ssh``, ``tmux``, ``script -c``, ``sg -c``, ``nix-shell --run``, ``trap`` and the
script fed to ``at``. Programs that run another command are looked through
(``env``, ``sudo``, ``nohup``, ``timeout``, ``setsid``, ``xargs``, ``nice``,
``flock``, ``time``, ``command``, ``builtin``, ``exec``, ``docker exec``, ``uv
run``, ``npx``..., and ``find -exec``): each later word is tried as the start of the
command.

Where the words cannot be known before the line runs, the line is *unknown* and
every pattern matches it, so a guarded call is asked about, never let through:
``eval``; a command name built from a variable or a substitution; a pipe or a
script file given to a shell (``echo ... | bash``, ``bash deploy.sh``, ``source
x.sh``); code given to an interpreter on the line (``python -c``, ``perl -e``);
an ``alias`` definition; ``git -c alias.NAME=...``; brace expansion; nesting deeper than
:data:`DEPTH`; and a line the grammar cannot read. A word whose value is only known
when the line runs (``$REMOTE``, ``"$(cat msg)"``) may be any operand or flag.

:func:`matches_words` then says whether one of the commands is the program named
by the first pattern word (by its base name: ``/usr/bin/git`` is ``git``) with the
pattern's subcommand where the command's subcommand stands, its other operands after
it in order, and its flags among those the command sets (short flags as sets, long
and short spellings as one). Parsing is linear in the length of the line.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = ["DEPTH", "ShellCommands", "command_text", "matches_words", "read_commands",
           "simple_commands"]

#: How deep scripts inside scripts (``bash -c``, heredocs, ``watch``) are read; deeper is
#: unknown.
DEPTH = 16
#: How many later words of a wrapper (``sudo -u root git push``) are tried as the start
#: of its command; a wrapper with more is unknown.
_TRIES = 64

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox"})
#: Programs that run the rest of their words as a command.
_WRAPPERS = frozenset({
    "sudo", "doas", "env", "nohup", "time", "command", "builtin", "exec", "nice", "ionice",
    "chrt", "taskset", "timeout", "stdbuf", "setsid", "flock", "xargs", "unbuffer", "strace",
    "ltrace", "chroot", "runuser", "su", "caffeinate", "systemd-run", "torsocks", "parallel",
    "watch", "find", "pkexec", "unshare", "nsenter", "firejail", "chronic", "coproc",
    "screen", "ip", "docker", "podman", "kubectl", "uv", "uvx", "poetry", "pipx", "pdm",
    "hatch", "npx", "bunx", "pnpx", "direnv", "ssh", "tmux", "script", "sg", "nix-shell",
    "rtk"})
#: Options of a wrapper whose value is a whole script.
_SCRIPT_OPTIONS = {"su": ("-c", "--command"), "runuser": ("-c", "--command"),
                   "flock": ("-c", "--command"), "env": ("-S", "--split-string"),
                   "script": ("-c", "--command"), "sg": ("-c",),
                   "nix-shell": ("--run", "--command")}
#: Wrappers that join their command's words into one line and give it to a shell.
_JOINED = frozenset({"watch", "ssh", "tmux"})
#: Interpreters, and the options whose value is code run inline (``python -c ...``).
_INLINE = {"perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "--eval", "-p", "--print"),
           "nodejs": ("-e", "--eval", "-p", "--print"), "deno": ("eval",), "bun": ("-e", "--eval"),
           "php": ("-r",), "lua": ("-e",), "Rscript": ("-e",), "osascript": ("-e",)}
_PYTHON = re.compile(r"python(?:[23](?:\.\d+)?)?|pypy3?")
#: Shell options that take a value (which is not the script).
_SHELL_VALUED = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_BRACES = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
_ANSI = re.compile(r"\\(?:x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}"
                   r"|c.|.)", re.S)
_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}

#: a word: its text, or None when its value is only known when the line runs
Word = str | None


@dataclass(frozen=True, slots=True)
class ShellCommands:
    """The simple commands of a line, and why the line is unknown (None when it is not)."""

    commands: tuple[tuple[Word, ...], ...]
    unknown: str | None = None


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


_PARSER: Any = None


def _bash_grammar() -> Any:
    """The bash grammar of ``tree_sitter_bash``, loaded from its compiled module alone.

    The package's ``__init__`` imports ``importlib.resources`` (for its highlighting
    queries), which costs a guard hook process more than the parser does; the grammar
    itself is one function of the compiled ``_binding`` module beside it.
    """
    import importlib.machinery
    import importlib.util

    spec = importlib.util.find_spec("tree_sitter_bash")
    for where in (spec.submodule_search_locations or []) if spec else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(where, "_binding" + suffix)
            if os.path.isfile(path):
                loader = importlib.machinery.ExtensionFileLoader("tree_sitter_bash._binding",
                                                                 path)
                module = importlib.util.module_from_spec(
                    importlib.util.spec_from_loader(loader.name, loader))  # type: ignore[arg-type]
                loader.exec_module(module)
                return module.language()
    import tree_sitter_bash  # laid out otherwise: the package's own way

    return tree_sitter_bash.language()


def _parse(text: str) -> Any:
    """The tree-sitter tree of a script (the grammar is loaded on first use)."""
    global _PARSER
    if _PARSER is None:
        import tree_sitter

        _PARSER = tree_sitter.Parser(tree_sitter.Language(_bash_grammar()))
    return _PARSER.parse(text.encode("utf-8", "surrogatepass"))


# ---------------------------------------------------------------- words

def _unquoted(text: str) -> str:
    """An unquoted word as bash reads it: a backslash keeps the next character."""
    return re.sub(r"\\(.)", r"\1", text, flags=re.S) if "\\" in text else text


def _ansi(body: str) -> str:
    """The value of ``$'...'``: its backslash escapes decoded."""
    def one(m: re.Match[str]) -> str:
        esc = m.group(0)[1:]
        if esc[0] in "xuU":
            return chr(int(esc[1:], 16)) if int(esc[1:], 16) <= 0x10FFFF else ""
        if esc[0] in "01234567":
            return chr(int(esc, 8) & 0xFF)
        if esc[0] == "c" and len(esc) == 2:
            return chr(ord(esc[1]) & 0x1F)
        return _ANSI_SIMPLE.get(esc, "\\" + esc)

    return _ANSI.sub(one, body)


def _double_quoted(node: Any) -> Word:
    """The value of ``"..."``; None when it expands anything."""
    parts = []
    for child in node.children:
        if child.type == "string_content":
            parts.append(re.sub(r'\\([$`"\\\n])', r"\1", child.text.decode()).replace(
                "\\\n", ""))
        elif child.type != '"':
            return None
    return "".join(parts)


def _value(node: Any) -> Word:
    """A word's text as the command receives it, or None when only running it would tell."""
    kind = node.type
    if kind in ("word", "number"):
        return _unquoted(node.text.decode())
    if kind == "raw_string":
        return str(node.text.decode()[1:-1])
    if kind in ("string", "translated_string"):
        inner = node.children[-1] if kind == "translated_string" else node
        return _double_quoted(inner)
    if kind == "ansi_c_string":
        return _ansi(node.text.decode()[2:-1])
    if kind == "concatenation":
        parts = [_value(c) for c in node.children]
        if any(p is None for p in parts):
            return None
        bare = "".join(c.text.decode() for c in node.children if c.type == "word")
        if _BRACES.search(bare) or ("{" in bare and "}" in bare):
            return None  # a brace expansion makes several words
        return "".join(p for p in parts if p is not None)
    return None


# ---------------------------------------------------------------- commands

class _Reader:
    """Walks a parsed line and collects its simple commands."""

    def __init__(self) -> None:
        self.commands: list[tuple[Word, ...]] = []
        self.unknown: str | None = None
        #: the commands a wrapper's words were already tried as (each suffix once)
        self.tried: set[tuple[Word, ...]] = set()
        #: words a redirection after a statement gives its last command (by node id)
        self.extra: dict[int, list[Word]] = {}

    def fail(self, why: str) -> None:
        if self.unknown is None:
            self.unknown = why

    def script(self, text: Word, depth: int) -> None:
        """Read a script: a line, or one a command runs."""
        if text is None:
            self.fail("a script whose text is only known when it runs")
            return
        if depth > DEPTH:
            self.fail(f"scripts nested more than {DEPTH} deep")
            return
        tree = _parse(text)
        if tree.root_node.has_error:
            self.fail("the shell grammar cannot read the line")
            return
        self.walk(tree.root_node, depth)

    def walk(self, root: Any, depth: int) -> None:
        """Every command of a tree, in compound commands and substitutions alike, in the
        order they stand in the line."""
        stack: list[tuple[Any, Any]] = [(root, None)]
        while stack:
            node, stdin = stack.pop()
            children = node.children
            if node.type == "command":
                self.command(node, stdin, depth)
            if node.type == "pipeline":
                # every command after the first reads the one before it
                nxt = [(c, "pipe" if i else stdin) for i, c in enumerate(children)]
            elif node.type == "redirected_statement":
                nxt = self._redirected(node, stdin, depth)
            else:
                nxt = [(c, None) for c in children]
            stack.extend(reversed(nxt))

    def _redirected(self, node: Any, stdin: Any, depth: int) -> list[tuple[Any, Any]]:
        """A statement with redirections after it. The grammar files the words after a
        redirection's target as further targets (``cmd >log arg``), where bash takes only
        the first: the rest are arguments of the last simple command before it. A heredoc
        or here-string is the statement's standard input."""
        fed = self._fed(node) or stdin
        body = node.child_by_field_name("body")
        extra = [w for c in node.children if body is None or c != body
                 for w in _after_targets(c)]
        if extra and body is not None:
            last = body
            while last.type in ("list", "pipeline", "redirected_statement") and last.named_children:
                last = (last.child_by_field_name("body") if last.type == "redirected_statement"
                        else last.named_children[-1]) or last.named_children[-1]
            if last.type == "command":
                self.extra[last.id] = extra
            else:
                self.fail("words after a redirection of a compound command")
        return [(c, fed if body is not None and c == body else None) for c in node.children]

    @staticmethod
    def _fed(node: Any) -> Any:
        """What a heredoc or a here-string gives a command on its standard input."""
        for child in node.children:
            if child.type == "heredoc_redirect":
                body = next((c for c in child.children if c.type == "heredoc_body"), None)
                if body is None:
                    return ("text", "")
                if any(c.type != "heredoc_content" for c in body.children):
                    return ("text", None)  # it expands something
                return ("text", body.text.decode())
            if child.type == "herestring_redirect":
                return ("text", _value(child.children[-1]))
        return None

    def command(self, node: Any, stdin: Any, depth: int) -> None:
        name = node.child_by_field_name("name")
        if name is None:
            return  # assignments alone
        words = [_value(name.children[0]) if name.children else None]
        for i, child in enumerate(node.children):
            if node.field_name_for_child(i) == "argument":
                words.append(_value(child))
            elif child.type in ("file_redirect", "heredoc_redirect"):
                words.extend(_after_targets(child))
        self.resolve([*words, *self.extra.pop(node.id, ())], stdin, depth)

    def resolve(self, words: list[Word], stdin: Any, depth: int) -> None:
        """Record one simple command and read what it runs in turn."""
        if not words or words[0] is None:
            self.fail("a command name built when the line runs")
            return
        self.commands.append(tuple(words))
        program = _base(words[0])
        if program.startswith("git-") and len(program) > 4:
            # git's own program for a subcommand (git-core/git-push) is that subcommand
            self.commands.append(("git", program[4:], *words[1:]))
        if program in _SHELLS:
            self.shell(words, stdin, depth)
        elif program in ("eval", ".", "source", "alias"):
            self.fail(f"{program} runs words only known when the line runs"
                      if program != "alias" else "alias defines a command on the line")
        elif program == "git" and _git_alias(words):
            self.fail("git -c alias... defines a command on the line")
        elif _inline_code(program, words):
            self.fail(f"{program} runs code given on the line")
        elif program == "trap":
            if len(words) > 2 and words[1] != "-" and not str(words[1]).startswith("-"):
                self.script(words[1], depth + 1)
        elif program in ("at", "batch"):
            if isinstance(stdin, tuple) and "-f" not in words:
                self.script(stdin[1], depth + 1)
            else:
                self.fail(f"{program} reads the commands it runs from a file or a pipe")
        elif program in _WRAPPERS:
            self.wrapper(program, words, depth)

    def shell(self, words: list[Word], stdin: Any, depth: int) -> None:
        """``bash -c SCRIPT``, a heredoc or here-string to a shell, or a shell whose
        script cannot be known (a file, a pipe)."""
        args = words[1:]
        has_c, i = False, 0
        while i < len(args):
            arg = args[i]
            if arg is None or not arg.startswith(("-", "+")) or arg in ("-", "--"):
                break
            if arg in _SHELL_VALUED:
                i += 1
            elif not arg.startswith("--") and "c" in arg[1:]:
                has_c = True
            i += 1
        rest = args[i + 1:] if i < len(args) and args[i] in ("-", "--") else args[i:]
        if has_c:
            self.script(rest[0] if rest else None, depth + 1)
        elif rest:
            self.fail("a shell runs a script file whose text the line does not hold")
        elif isinstance(stdin, tuple):
            self.script(stdin[1], depth + 1)
        else:
            self.fail("a shell reads its script from a pipe or a terminal")

    def wrapper(self, program: str, words: list[Word], depth: int) -> None:
        """A program that runs another command: each later word may start it."""
        options = _SCRIPT_OPTIONS.get(program, ())
        for k, word in enumerate(words[1:-1], 1):
            if word in options or _in_cluster(word, options):
                self.script(words[k + 1], depth + 1)
        if program == "find":
            self.find(words, depth)
            return
        starts = [j for j in range(1, len(words))
                  if words[j] is None or not str(words[j]).startswith("-")]
        if len(starts) > _TRIES or depth >= DEPTH:
            self.fail("a wrapper with more words than are tried as its command")
            return
        for j in starts:
            suffix = tuple(words[j:])
            if suffix in self.tried:
                continue
            self.tried.add(suffix)
            if program not in _JOINED:
                self.resolve(list(suffix), None, depth + 1)
            elif any(w is None for w in suffix):  # it runs its words through a shell
                self.fail(f"{program} runs words only known when the line runs")
            else:
                self.script(" ".join(w for w in suffix if w is not None), depth + 1)

    def find(self, words: list[Word], depth: int) -> None:
        """``find ... -exec CMD ... ;`` (and ``-execdir``, ``-ok``, ``-okdir``)."""
        k = 1
        while k < len(words):
            if words[k] in _EXEC:
                end = next((e for e in range(k + 1, len(words)) if words[e] in (";", "+")),
                           len(words))
                if end > k + 1:
                    self.resolve(words[k + 1:end], None, depth + 1)
                k = end
            k += 1


#: git's own options (before the subcommand) that take the next word as their value
_GIT_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                         "--config-env", "--exec-path", "--super-prefix"})


def _in_cluster(word: Word, options: tuple[str, ...]) -> bool:
    """Whether a cluster of short options ends with one of ``options`` (``-qc`` for ``-c``),
    whose value is then the next word."""
    if word is None or len(word) < 3 or word.startswith("--") or not word.startswith("-"):
        return False
    return word[1:].isalpha() and any(len(o) == 2 and word.endswith(o[1]) for o in options)


def _inline_code(program: str, words: list[Word]) -> bool:
    """Whether an interpreter is given code to run on the line (``python -c``, ``perl
    -e``, ``node -e``): what that code runs cannot be read from the line."""
    if _PYTHON.fullmatch(program):
        options: tuple[str, ...] = ("-c",)
    else:
        options = _INLINE.get(program, ())
    if not options:
        return False
    valued = False
    for word in words[1:]:
        if valued:
            valued = False
            continue
        if word is None or word in options or _in_cluster(word, options):
            return True
        if not word.startswith("-") or word == "-m":
            return False  # a script file or a module: its own words end here
        valued = word in ("-W", "-X", "-r", "--require", "-I")
    return False


def _after_targets(redirect: Any) -> list[Word]:
    """The words the grammar filed after a redirection's target, which are arguments of
    the command (``>/dev/null git push``: the target is ``/dev/null``)."""
    if redirect.type == "file_redirect":
        return [_value(d) for d in redirect.children_by_field_name("destination")[1:]]
    if redirect.type == "heredoc_redirect":
        return [w for c in redirect.children if c.type == "file_redirect"
                for w in _after_targets(c)]
    return []


def _git_alias(words: list[Word]) -> bool:
    """Whether git's own options set a config value that may define an alias
    (``-c alias.x=...``, or one only known when the line runs): it runs anything."""
    k = 1
    while k < len(words):
        word = words[k]
        if word is None or not word.startswith("-"):
            return False  # the subcommand: git's own options end here
        if word in ("-c", "--config-env"):
            value = words[k + 1] if k + 1 < len(words) else ""
            if value is None or value.lower().startswith("alias."):
                return True
        elif word.startswith("-c") and word[2:].lower().startswith("alias."):
            return True
        k += 2 if word in _GIT_VALUED else 1
    return False


def _read(line: str) -> ShellCommands:
    reader = _Reader()
    reader.script(line, 0)
    return ShellCommands(tuple(reader.commands), reader.unknown)


#: lines up to this long are remembered (a guard matches one line against many rules)
_CACHED = 16_384
_read_cached = lru_cache(maxsize=256)(_read)


def read_commands(line: str) -> ShellCommands:
    """The simple commands of a command line as bash would run them, each a tuple of
    words (None for a word only known when it runs), and why the line is unknown."""
    return _read_cached(line) if len(line) <= _CACHED else _read(line)


def runs_command(line: str, match: Callable[[str], object], *, unknown: bool = True) -> bool:
    """True when a simple command of ``line``, its words joined by single spaces, is
    matched by ``match`` (a compiled pattern's ``match``: from the command's start). Where
    it guards (``unknown`` True), a line that cannot be read, or a command holding a word
    known only when it runs, matches; where it picks evidence, only the commands the line
    was read to run count, a word known only when it runs standing as a NUL character
    (``pytest "$ARGS"`` runs ``pytest``), as :func:`matches_words` reads them."""
    found = read_commands(line)
    if found.unknown is not None and unknown:
        return True
    for words in found.commands:
        if None in words and unknown:
            return True
        if match(" ".join("\0" if w is None else w for w in words)):
            return True
    return False


def simple_commands(line: str) -> list[list[Word]]:
    """The simple commands of a line; ``ValueError`` when the line is unknown."""
    found = read_commands(line)
    if found.unknown is not None:
        raise ValueError(f"the command line cannot be known before it runs: {found.unknown}")
    return [list(c) for c in found.commands]


#: The spellings of one flag, per program: each maps to one name, so that a pattern's
#: ``-rf`` matches ``rm -r -f``, ``rm -fr`` and ``rm --recursive --force``. A program not
#: listed compares each short letter and each long name as written.
_RECURSIVE_FORCE = {"-r": "recursive", "-R": "recursive", "--recursive": "recursive",
                    "-f": "force", "--force": "force"}
_FLAG_NAMES: dict[str, dict[str, str]] = {
    "rm": {**_RECURSIVE_FORCE, "-d": "dir", "--dir": "dir", "-v": "verbose",
           "--verbose": "verbose", "-i": "interactive", "-I": "interactive-once"},
    "cp": {**_RECURSIVE_FORCE, "-a": "archive", "--archive": "archive"},
    "mv": {"-f": "force", "--force": "force"},
    "chmod": {"-R": "recursive", "--recursive": "recursive"},
    "chown": {"-R": "recursive", "--recursive": "recursive"},
    "chgrp": {"-R": "recursive", "--recursive": "recursive"},
    "git": {"-f": "force", "--force": "force"},
    "docker": {"-f": "force", "--force": "force"},
    "podman": {"-f": "force", "--force": "force"},
}


def _flags(word: str, names: dict[str, str]) -> list[str]:
    """The flags one option word sets, each by its one name: ``-rf`` is two, ``--force=x``
    one; the letters of a short cluster end where a value starts (``-n5`` is ``-n``)."""
    if word.startswith("--"):
        long = word.split("=", 1)[0]
        return [names.get(long, long)]
    out = []
    for letter in word[1:]:
        if not letter.isalpha():
            break
        short = "-" + letter
        out.append(names.get(short, short))
    return out


def _options_and_operands(args: Sequence[Word], names: dict[str, str]
                          ) -> tuple[set[str], bool, list[tuple[Word, bool]]]:
    """The flags ``args`` set, whether a word known only at run time is among them (it may
    be any flag), and the other words in order, each with whether it directly follows an
    option (so that it may be that option's value rather than a subcommand)."""
    flags: set[str] = set()
    unknown = False
    operands: list[tuple[Word, bool]] = []
    after_option = ended = False
    for word in args:
        if word is None:
            unknown = True
            operands.append((None, after_option))
            after_option = False
        elif not ended and word == "--":
            ended = True
            after_option = False
        elif not ended and len(word) > 1 and word.startswith("-"):
            flags.update(_flags(word, names))
            after_option = "=" not in word
        else:
            operands.append((word, after_option))
            after_option = False
    return flags, unknown, operands


def _matches(words: tuple[Word, ...], pattern: Sequence[str]) -> bool:
    """Whether one simple command is ``pattern``: the program, then the pattern's other
    words. Its words that are not options are the subcommand and its operands, and
    must stand where they stand in the command: the first at the subcommand (the first
    operand, or one that follows the program's own options and may be one's value),
    the rest after it in order. Its options are a set of flags the command must set,
    in any order and spelling (``-rf``, ``-r -f``, ``--recursive --force``). A word
    known only at run time may be any operand or flag: the command is then held."""
    name = words[0]
    assert name is not None
    program = _base(name)
    if program != pattern[0] and name != pattern[0]:
        return False
    names = _FLAG_NAMES.get(program, {})
    wanted = [w for w in pattern[1:] if len(w) > 1 and w.startswith("-")]
    places = [w for w in pattern[1:] if not (len(w) > 1 and w.startswith("-"))]
    flags, unknown, operands = _options_and_operands(words[1:], names)
    if not unknown and not all(f in flags for w in wanted for f in _flags(w, names)):
        return False
    if not places:
        return True
    for at, (word, after_option) in enumerate(operands):
        if word is None or word == places[0]:
            rest = iter(w for w, _ in operands[at + 1:])
            if all(any(w is None or w == want for w in rest) for want in places[1:]):
                return True
        if not after_option:
            return False  # the subcommand stands here: later operands are its arguments
    return False


def matches_words(line: str, pattern: Sequence[str], *, unknown: bool = True) -> bool:
    """True when a simple command of ``line`` is ``pattern[0]`` with ``pattern[1:]`` among
    its arguments, in that order. When the line is unknown (see the module docstring) and
    ``unknown`` is True, where the pattern guards, it matches: a command that cannot be
    read never slips past a guard. Where it picks evidence (``unknown`` False) only the
    commands the line was read to run count: ``eval true`` is no test run, and
    ``rtk git commit -m "$(cat <<EOF ...)"`` still shows its commit."""
    found = read_commands(line)
    if found.unknown is not None and unknown:
        return True
    return any(_matches(words, pattern) for words in found.commands)
