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
run``, ``npx``..., and ``find -exec``): the one command a wrapper runs starts after
its own options, their values and its operands (:data:`_GRAMMARS`: ``time echo
pytest`` runs ``echo``, ``timeout 5 pytest`` runs ``pytest``). Where a pattern
guards, each later word is also tried as the start of the command (a guess,
:attr:`ShellCommands.guesses`), so an option the grammar does not know hides
nothing from a guard; where it picks evidence, only the command read counts.

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
    """The simple commands of a line, and why the line is unknown (None when it is not).

    ``commands`` are the commands the line is read to run; ``guesses`` the further
    commands a wrapper's later words may start (``time echo pytest`` runs ``echo``, and
    ``pytest`` is a guess), which only a selector that guards counts."""

    commands: tuple[tuple[Word, ...], ...]
    unknown: str | None = None
    guesses: tuple[tuple[Word, ...], ...] = ()


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
        #: the commands a wrapper's later words may start, beside the one it runs
        self.guesses: list[tuple[Word, ...]] = []
        #: above 0 while a wrapper's guesses are read: what they run is a guess too
        self.guessing = 0
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
        found = self.guesses if self.guessing else self.commands
        found.append(tuple(words))
        program = _base(words[0])
        if program.startswith("git-") and len(program) > 4:
            # git's own program for a subcommand (git-core/git-push) is that subcommand
            found.append(("git", program[4:], *words[1:]))
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
        """A program that runs another command. The one command it runs is read from its
        grammar (:data:`_GRAMMARS`); where a selector guards, each later word may start
        it as well (a guess), so that an option the grammar does not know, or a
        wrapper it has none for, never hides a command from a guard."""
        found = _wrapped(words)
        # a script option is the wrapper's own before its command starts (env grep -S x
        # is grep's -S); one of a wrapper whose words cannot be told is a guess
        mine = len(words) if program not in _GRAMMAR_PROGRAMS else (
            found[1] if found is not None else 0)
        options = _SCRIPT_OPTIONS.get(program, ())
        for k, word in enumerate(words[1:-1], 1):
            if word in options or _in_cluster(word, options):
                self.guessing += k >= mine
                try:
                    self.script(words[k + 1], depth + 1)
                finally:
                    self.guessing -= k >= mine
        if program == "find":
            self.find(words, depth)
            return
        if found is not None and found[1] < len(words) and depth < DEPTH:
            key, start = found
            runs = list(words[start:])
            if key == "uv run" and words[start - 1] in ("-m", "--module"):
                runs = ["python", "-m", *runs]  # uv run -m MODULE: python runs it
            if not (self.guessing and tuple(runs) in self.tried):
                self.tried.add(tuple(runs))
                self.run(program, runs, depth)
        self.guessing += 1
        try:
            self.guess(program, words, depth)
        finally:
            self.guessing -= 1

    def run(self, program: str, words: list[Word], depth: int) -> None:
        """The command a wrapper runs: its words, or a line of them given to a shell."""
        if program not in _JOINED:
            self.resolve(words, None, depth + 1)
        elif any(w is None for w in words):  # it runs its words through a shell
            self.fail(f"{program} runs words only known when the line runs")
        else:
            self.script(" ".join(w for w in words if w is not None), depth + 1)

    def guess(self, program: str, words: list[Word], depth: int) -> None:
        """Each later word of a wrapper that is no option, tried as the start of its
        command (each suffix once in a line): the commands a guard holds."""
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
            self.run(program, list(suffix), depth)

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


# ---------------------------------------------------------------- wrappers

@dataclass(frozen=True, slots=True)
class _Grammar:
    """A wrapper's own words before the command it runs: its options (short letters and
    long names, each with or without a value), how many operands it takes after them
    (``timeout DURATION``), whether ``NAME=VALUE`` words may come next (``env``), and the
    options after which it runs no command whose end it waits for (``command -v``,
    ``sudo -l``, ``setsid -f``)."""

    flags: frozenset[str]
    valued: frozenset[str]
    stops: frozenset[str]
    operands: int = 0
    assigns: bool = False
    #: short letters whose value, if any, is joined to them (``xargs -l5``, ``nsenter -m``)
    optional: frozenset[str] = frozenset()
    #: any ``--long`` word is an option with its value joined (firejail)
    any_long: bool = False
    #: ``-5`` is an option (nice's adjustment)
    numeric: bool = False


def _grammar(spec: str, operands: int = 0, assigns: bool = False) -> _Grammar:
    """A grammar from its words: ``-x`` a flag, ``-x:`` an option with a value, ``-x?``
    one whose value is joined if it has one, ``-x!`` an option that runs nothing to wait
    for, ``--*`` any long option, ``-#`` a numeric option."""
    flags: set[str] = set()
    valued: set[str] = set()
    stops: set[str] = set()
    optional: set[str] = set()
    for word in spec.split():
        name, mark = (word[:-1], word[-1]) if word[-1] in ":?!" else (word, "")
        {":": valued, "?": optional, "!": stops, "": flags}[mark].add(name)
    return _Grammar(frozenset(flags - {"--*", "-#"}), frozenset(valued), frozenset(stops),
                    operands, assigns, frozenset(o[1] for o in optional),
                    "--*" in flags, "-#" in flags)


_SUDO = ("-A -b -E -H -i -K -k -n -P -S -s -B -N --askpass --background --preserve-env "
         "--set-home --login --remove-timestamp --reset-timestamp --non-interactive "
         "--preserve-groups --stdin --shell --bell --no-update -u: -g: -C: -D: -p: -r: -t: "
         "-T: -U: -R: --user: --group: --close-from: --chdir: --prompt: --role: --type: "
         "--command-timeout: --other-user: --chroot: --host: -l! -e! -v! -V! --list! "
         "--edit! --validate! --version! --help!")
_UV_RUN = ("--all-extras --no-dev --dev --only-dev --all-groups --no-default-groups --frozen "
           "--locked --no-sync --isolated --active --no-active --no-project --no-editable "
           "--exact --inexact --all-packages --no-cache -n --offline -q -v --quiet --verbose "
           "--native-tls --no-config --no-env-file --no-progress --preview --upgrade -U "
           "--reinstall --refresh --compile-bytecode --no-build --no-binary "
           "--no-build-isolation --managed-python --no-managed-python --no-python-downloads "
           "--with: --with-editable: --with-requirements: --extra: --group: --only-group: "
           "--no-group: --package: --python: -p: --directory: --project: --env-file: "
           "--index: --default-index: --index-url: -i: --extra-index-url: --find-links: "
           "-f: --index-strategy: --keyring-provider: --resolution: --prerelease: "
           "--exclude-newer: --link-mode: --config-setting: -C: --cache-dir: --color: "
           "--config-file: --allow-insecure-host: --python-platform: --upgrade-package: -P: "
           "--reinstall-package: --refresh-package: --no-build-package: "
           "--no-binary-package: --script! -s! --gui-script! --help! -h!")
_UVX = ("--isolated --offline --no-cache -n --refresh --reinstall --upgrade -U -q -v --quiet "
        "--verbose --lfs --native-tls --no-config --no-progress --preview --managed-python "
        "--no-managed-python --from: --with: --with-editable: --with-requirements: --python: "
        "-p: --index: --default-index: --index-url: -i: --extra-index-url: --find-links: -f: "
        "--constraints: -c: --overrides: --build-constraints: -b: --cache-dir: --color: "
        "--prerelease: --resolution: --exclude-newer: --python-preference: --help! -h! "
        "--version! -V!")
_NPX = ("-y --yes --no -q --quiet --no-install --ignore-existing --prefer-online "
        "--prefer-offline --bun --silent --verbose -p: --package: --node-options: --cache: "
        "--registry: -c! --call! --help! -h!")
_SSH = ("-4 -6 -A -a -C -G -g -K -k -M -n -q -s -T -t -V -v -X -x -Y -y -B: -b: -c: -D: "
        "-E: -e: -F: -I: -i: -J: -L: -l: -m: -O: -o: -p: -Q: -R: -S: -W: -w: -f! -N!")

#: The grammar of each wrapper whose command can be told from its words, by program (and
#: for ``docker exec``, ``uv run``... by program and subcommand, the subcommand's words
#: first). A wrapper not here (``watch``, ``tmux``, ``screen``, ``parallel``, ``su``,
#: ``systemd-run``...) runs no command a selector that picks evidence counts: its command
#: runs detached, repeated or through words it does not give as a command.
_GRAMMARS: dict[tuple[str, ...], _Grammar] = {
    ("time",): _grammar("-p -v -a -q --portability --verbose --append --quiet -o: -f: "
                        "--output: --format:"),
    ("env",): _grammar("- -i -0 -v --ignore-environment --null --debug --block-signal "
                       "--default-signal --ignore-signal -u: -C: --unset: --chdir: -S! "
                       "--split-string! --list-signal-handling! --help! --version!",
                       assigns=True),
    ("sudo",): _grammar(_SUDO, assigns=True),
    ("doas",): _grammar("-n -s -u: -a: -C! -L!"),
    ("nohup",): _grammar("--help! --version!"),
    ("command",): _grammar("-p -v! -V!"),
    ("builtin",): _grammar(""),
    ("exec",): _grammar("-c -l -a:"),
    ("nice",): _grammar("-# -n: --adjustment: --help! --version!"),
    ("ionice",): _grammar("-t --ignore -c: -n: --class: --classdata: -p! -P! -u! --pid! "
                          "--pgid! --uid!"),
    ("chrt",): _grammar("-a -b -d -f -i -o -r -R -v --all-tasks --batch --deadline --fifo "
                        "--idle --other --rr --reset-on-fork --verbose -T: -P: -D: "
                        "--sched-runtime: --sched-period: --sched-deadline: -p! -m! --pid! "
                        "--max!", operands=1),
    ("taskset",): _grammar("-a -c --all-tasks --cpu-list -p! --pid!", operands=1),
    ("timeout",): _grammar("-v --foreground --preserve-status --verbose -k: -s: "
                           "--kill-after: --signal: --help! --version!", operands=1),
    ("stdbuf",): _grammar("-i: -o: -e: --input: --output: --error:"),
    ("setsid",): _grammar("-c -w --ctty --wait -f! --fork!"),
    ("flock",): _grammar("-s -x -e -u -n -o -F --shared --exclusive --unlock --nonblock "
                         "--nb --close --no-fork --verbose -w: -E: --timeout: --wait: "
                         "--conflict-exit-code: -c! --command!", operands=1),
    ("xargs",): _grammar("-0 -r -t -p -x -o --null --no-run-if-empty --verbose "
                         "--interactive --exit --open-tty -e? -i? -l? -a: -d: -E: -I: -L: "
                         "-n: -P: -s: --arg-file: --delimiter: --max-args: --max-procs: "
                         "--max-chars: --process-slot-var: --max-lines: --replace: --eof: "
                         "--show-limits! --help! --version!"),
    ("unbuffer",): _grammar("-p"),
    ("strace",): _grammar("-f -F -c -C -d -D -h -i -k -q -r -t -T -v -V -w -x -y -z -Z -n "
                          "-Y -e: -o: -s: -u: -a: -b: -E: -I: -O: -S: -P: -X: -U: -p:"),
    ("ltrace",): _grammar("-f -c -C -h -i -L -r -S -t -T -V -b -a: -A: -D: -e: -F: -l: -n: "
                          "-o: -p: -s: -u: -x: -w:"),
    ("chroot",): _grammar("--skip-chdir --userspec: --groups:", operands=1),
    ("caffeinate",): _grammar("-d -i -m -s -u -t: -w:"),
    ("pkexec",): _grammar("--disable-internal-agent --keep-cwd --user:"),
    ("unshare",): _grammar("-m -u -i -n -p -U -C -T -f -r -c --fork --map-root-user "
                           "--map-current-user --mount-proc --kill-child --mount --uts "
                           "--ipc --net --pid --user --cgroup --time --keep-caps -S: -G: "
                           "-R: -w: --setuid: --setgid: --root: --wd: --propagation: "
                           "--setgroups: --map-user: --map-group: --map-users: "
                           "--map-groups: --monotonic: --boottime:"),
    ("nsenter",): _grammar("-F -Z -a --preserve-credentials --no-fork --all --mount --uts "
                           "--ipc --net --pid --user --cgroup --time --root --wd -m? -u? -i? "
                           "-n? -p? -U? -C? -T? -r? -w? -t: -S: -G: --target: --setuid: "
                           "--setgid:"),
    ("firejail",): _grammar("--*"),
    ("chronic",): _grammar("-e -v"),
    ("torsocks",): _grammar("-i -d -q --isolate --debug --quiet -u: -p: -a: -P: --user: "
                            "--pass: --address: --port:"),
    ("rtk",): _grammar("-v -u --verbose --ultra-compact"),
    ("rtk", "proxy"): _grammar(""),
    ("rtk", "test"): _grammar(""),
    ("rtk", "err"): _grammar(""),
    ("rtk", "summary"): _grammar(""),
    ("docker", "exec"): _grammar("-i -t --interactive --tty --privileged -e: -u: -w: --env: "
                                 "--env-file: --user: --workdir: --detach-keys: -d! "
                                 "--detach!", operands=1),
    ("podman", "exec"): _grammar("-i -t -l --interactive --tty --privileged --latest -e: "
                                 "-u: -w: --env: --env-file: --user: --workdir: "
                                 "--detach-keys: --preserve-fds: -d! --detach!", operands=1),
    ("ip", "netns", "exec"): _grammar("", operands=1),
    ("uv", "run"): _grammar(_UV_RUN),
    ("uv", "tool", "run"): _grammar(_UVX),
    ("uvx",): _grammar(_UVX),
    ("poetry", "run"): _grammar("-q -v -n --quiet --verbose --no-interaction --no-plugins "
                                "--no-cache --ansi --no-ansi -C: -P: --directory: "
                                "--project:"),
    ("pipx", "run"): _grammar("--no-cache --pypackages --system-site-packages -e "
                              "--editable -q -v --quiet --verbose --spec: --python: "
                              "--index-url: -i: --pip-args:"),
    ("pdm", "run"): _grammar("-s --site-packages -q -v --quiet --verbose -p: --project: "
                             "-l! --list! -j! --json!"),
    ("hatch", "run"): _grammar(""),
    ("npx",): _grammar(_NPX),
    ("pnpx",): _grammar(_NPX),
    ("bunx",): _grammar(_NPX),
    ("direnv", "exec"): _grammar("", operands=1),
    ("ssh",): _grammar(_SSH, operands=1),
}


#: The programs with a grammar (their script options stand among their own options).
_GRAMMAR_PROGRAMS = frozenset(key[0] for key in _GRAMMARS)


def _option_word(word: str, grammar: _Grammar) -> tuple[bool, bool] | None:
    """How an option word stands: (whether it stops the command, whether the next word
    is its value), or None when the grammar does not know it."""
    if word.startswith("--"):
        name, joined = word.split("=", 1)[0], "=" in word
        if name in grammar.stops:
            return True, False
        if name in grammar.valued:
            return False, not joined
        known = name in grammar.flags or grammar.any_long
        return (False, False) if known else None
    if word in grammar.flags or (grammar.numeric and word[1:].isdigit()):
        return False, False  # a word of its own: env's ``-``, nice's ``-5``
    return _short_options(word, grammar)


def _short_options(word: str, grammar: _Grammar) -> tuple[bool, bool] | None:
    """How a cluster of short options stands (``-it``, ``-n5``, ``-sKILL``)."""
    for at, letter in enumerate(word[1:], 1):
        short = "-" + letter
        if short in grammar.stops:
            return True, False
        if short in grammar.valued:
            return False, at == len(word) - 1
        if letter in grammar.optional:
            return False, False
        if short not in grammar.flags:
            return None
    return False, False


def _assignment(word: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word, re.S) is not None


def _grammar_of(words: Sequence[Word]) -> tuple[tuple[str, ...], int]:
    """The key of a wrapper's grammar (its program, and the subcommand's words of
    ``docker exec``, ``ip netns exec``, ``rtk proxy``...) and the index after them."""
    key: tuple[str, ...] = (_base(str(words[0])),)
    i = 1
    for _ in range(2):
        if i < len(words) and (*key, words[i]) in _GRAMMARS:
            key = (*key, str(words[i]))
            i += 1
        elif i + 1 < len(words) and (*key, words[i], words[i + 1]) in _GRAMMARS:
            key = (*key, str(words[i]), str(words[i + 1]))
            i += 2
    return key, i


def _wrapped(words: Sequence[Word]) -> tuple[str, int] | None:
    """Where the one command a wrapper runs starts (the grammar's key and the index of
    its first word; the index is ``len(words)`` when it runs none), or None when its
    words cannot tell (an option it does not know, a word known only when it runs
    where an option may stand, a form it has no grammar for)."""
    key, i = _grammar_of(words)
    if key == ("kubectl",) and "exec" in words and "--" in words[words.index("exec"):]:
        return "kubectl", words.index("--") + 1  # kubectl exec POD [options] -- COMMAND
    grammar = _GRAMMARS.get(key)
    if grammar is None:
        return None
    name = " ".join(key)
    while i < len(words):
        word = words[i]
        if word is None:
            return None  # an option, its value or the command: only running tells
        if word == "--" or (key == ("uv", "run") and word in ("-m", "--module")):
            i += 1  # the options end; uv run -m MODULE: python runs it
            break
        if (len(word) < 2 or not word.startswith("-")) and word not in grammar.flags:
            break
        how = _option_word(word, grammar)
        if how is None:
            return None
        if how[0]:
            return name, len(words)
        i += 2 if how[1] else 1
    i += grammar.operands
    if i < len(words) and words[i] in grammar.stops:
        return name, len(words)  # flock FILE -c SCRIPT: the script is read apart
    while grammar.assigns and i < len(words) and words[i] is not None and _assignment(
            str(words[i])):
        i += 1
    if grammar.assigns and i < len(words) and words[i] is None:
        return None  # an assignment or the command: only running tells
    return name, min(i, len(words))

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
    return ShellCommands(tuple(reader.commands), reader.unknown, tuple(reader.guesses))


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
    for words in (*found.commands, *found.guesses) if unknown else found.commands:
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
    return any(_matches(words, pattern)
               for words in ((*found.commands, *found.guesses) if unknown else found.commands))
