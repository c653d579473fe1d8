"""Write docs/cli.md from the commands' own --help text.

Run ``python scripts/gen_cli_docs.py`` after changing a command;
``tests/test_docs.py`` fails while docs/cli.md is out of date.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "cli.md"

INTRO = """# CLI reference

Generated from each command's `--help` by `scripts/gen_cli_docs.py`; a test
fails when this page and the commands disagree.

Exit codes, for every command: 0 pass, 1 the evidence says no, 2 could not
judge (bad input, never a pass), 3 paused (waiting for another identity or an
operator). Across many inputs the worst verdict wins: 1 over 2 over 3 over 0.
An internal bug exits 70. Ctrl-C exits 130 (`replay` first prints the results
it judged and says after how many of its files it stopped).

Every error is one line on stderr, `error[CODE]: WHERE: message`, with the
file, line and field when they are known. A usage error (a missing argument,
an unknown option, a bad option value) names the command and exits 2:

```text
error[usage]: replay: missing argument 'TRAJECTORIES...'; see 'roadcheck replay --help'
```

## Input size

Every command reads at most 1 GiB of any one input (a trajectory, standard
input, what a compressed file decompresses to, a trace, a result, a spec or a
contract) and refuses a larger one with one line (a trajectory: its ERROR in the
report; any other input: exit 2); reading stops at the limit and one byte, so
`/dev/zero` or an endless pipe is refused rather than read for ever.
`ROADCHECK_MAX_INPUT_SIZE` changes the limit: bytes, or a number with `K`, `M`,
`G` or `T` (binary multiples), such as `ROADCHECK_MAX_INPUT_SIZE=4G`. See
[formats.md](formats.md#input-size).

## Shell completion

roadcheck completes its commands, options and choices in bash (4.4 or later), zsh
and fish. Turn it on for the current shell, or add the line to its start-up
file (`~/.bashrc`, `~/.zshrc`, `~/.config/fish/completions/roadcheck.fish`):

<!-- norun: it changes the completion of the shell it runs in -->
```console
eval "$(_ROADCHECK_COMPLETE=bash_source roadcheck)"      # bash
eval "$(_ROADCHECK_COMPLETE=zsh_source roadcheck)"       # zsh
_ROADCHECK_COMPLETE=fish_source roadcheck | source       # fish
```
"""


def _commands(group: click.Group, prefix: list[str]) -> list[list[str]]:
    out = []
    for name in sorted(group.commands):
        cmd = group.commands[name]
        out.append([*prefix, name])
        if isinstance(cmd, click.Group):
            out.extend(_commands(cmd, [*prefix, name]))
    return out


def render() -> str:
    """The whole page, as the current commands describe themselves."""
    from roadcheck.cli import cli

    runner = CliRunner()
    parts = [INTRO]
    for path in [[], *_commands(cli, [])]:
        result = runner.invoke(cli, [*path, "--help"], prog_name="roadcheck", terminal_width=88)
        if result.exit_code != 0:
            raise SystemExit(f"roadcheck {' '.join(path)} --help failed: {result.output}")
        title = " ".join(["roadcheck", *path])
        # help text is output, not a command to run: a text block, not a shell block
        parts.append(f"\n## `{title}`\n\n```text\n{result.output.rstrip()}\n```\n")
    return "".join(parts)


if __name__ == "__main__":
    TARGET.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {TARGET.relative_to(ROOT)}\n")
