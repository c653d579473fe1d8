"""The docs cover what the code offers: every reason code, every command."""

from __future__ import annotations

import re

from roadcheck.reasons import Reason

from .conftest import ROOT, load_script


def _gen_cli_docs():  # type: ignore[no-untyped-def]
    return load_script(ROOT / "scripts" / "gen_cli_docs.py")


class TestDocs:
    def test_every_reason_code_is_documented(self) -> None:
        """docs/reasons.md has a row for every reason code."""
        text = (ROOT / "docs" / "reasons.md").read_text()
        documented = set(re.findall(r"^\| `([a-zA-Z0-9-]+)` \|", text, flags=re.M))
        missing = {r.value for r in Reason} - documented
        assert not missing, f"undocumented reason codes: {sorted(missing)}"

    def test_reason_descriptions_are_current(self) -> None:
        """src/roadcheck/_reason_docs.py is what scripts/gen_reason_docs.py writes from
        docs/reasons.md today: the SARIF rules and the page say the same."""
        gen = load_script(ROOT / "scripts" / "gen_reason_docs.py")
        expected = gen.render((ROOT / "docs" / "reasons.md").read_text(encoding="utf-8"))
        actual = (ROOT / "src" / "roadcheck" / "_reason_docs.py").read_text(encoding="utf-8")
        assert actual == expected, ("src/roadcheck/_reason_docs.py is stale: run "
                                    "python scripts/gen_reason_docs.py")

    def test_the_home_is_the_one_in_the_package_metadata(self) -> None:
        """The links reports carry (SARIF's informationUri, its help links) lead to the
        project's Homepage as pyproject.toml declares it."""
        import tomllib

        from roadcheck._version import HOME

        meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
        assert meta["project"]["urls"]["Homepage"] == HOME

    def test_cli_reference_is_current(self) -> None:
        """docs/cli.md is exactly what scripts/gen_cli_docs.py writes today."""
        expected = _gen_cli_docs().render()
        actual = (ROOT / "docs" / "cli.md").read_text()
        assert actual == expected, "docs/cli.md is stale: run python scripts/gen_cli_docs.py"

    def test_every_command_has_help(self) -> None:
        """Every command and option carries help text."""
        from roadcheck.cli import cli

        def walk(group, prefix):  # type: ignore[no-untyped-def]
            for name, cmd in group.commands.items():
                assert cmd.help, f"{prefix}{name} has no help"
                for param in cmd.params:
                    if param.param_type_name == "option":
                        assert param.help, f"{prefix}{name} {param.opts} has no help"
                if hasattr(cmd, "commands"):
                    walk(cmd, f"{prefix}{name} ")

        walk(cli, "")

    def test_readme_quick_start_is_what_ci_runs(self) -> None:
        """The README's test command is the command .ci/run executes."""
        readme = (ROOT / "README.md").read_text()
        ci = (ROOT / ".ci" / "run").read_text()
        commands = re.findall(r"^((?:scripts/test-services && )?python3 -m venv .*)$", readme,
                              flags=re.M)
        assert len(commands) == 2, commands
        assert commands[1].startswith("scripts/test-services && ")
        assert commands[1] in ci.splitlines()
