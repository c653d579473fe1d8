"""What the integrations promise without their frameworks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from roadcheck.integrations import MissingExtraError, require


def test_missing_extra_names_the_extra() -> None:
    with pytest.raises(MissingExtraError) as info:
        require("roadcheck_no_such_framework", "openai-agents")
    assert str(info.value) == (
        "roadcheck_no_such_framework is not installed: pip install 'roadcheck[openai-agents]'")
    assert "\n" not in str(info.value)


def test_importing_roadcheck_imports_no_framework() -> None:
    """``import roadcheck`` and reading the new formats load no framework package."""
    code = ("import sys, roadcheck, roadcheck.ingest.otel, roadcheck.ingest.atif, "
            "roadcheck.ingest.openai_agents\n"
            "bad = [m for m in ('agents', 'langgraph', 'opentelemetry', 'pydantic_ai') "
            "if m in sys.modules]\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter where ``module`` cannot be imported."""
    prelude = f"import sys\nsys.modules[{module!r}] = None\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True,
                          text=True, check=False)


def test_missing_extra_is_one_line_without_traceback() -> None:
    """Importing an integration without its extra prints one line, not a traceback."""
    out = _without("agents", "from roadcheck.integrations.openai_agents import "
                             "RoadcheckTracingProcessor\n")
    assert out.stderr == ("error[missing-extra]: agents.tracing is not installed: "
                          "pip install 'roadcheck[openai-agents]'\n")
    assert out.returncode == 1  # the interpreter's status for any uncaught error


def test_missing_extra_can_still_be_caught_as_import_error() -> None:
    """Code that tries an optional integration keeps working: it is an ImportError."""
    out = _without("langgraph", "try:\n    import roadcheck.integrations.langgraph\n"
                                "except ImportError as exc:\n    print('caught', exc)\n")
    assert out.returncode == 0
    assert out.stdout == "caught langgraph is not installed: pip install 'roadcheck[langgraph]'\n"
    assert out.stderr == ""


def test_missing_extra_under_a_command_exits_2() -> None:
    """Under an ``roadcheck`` command the missing extra is one error line and exit 2."""
    code = ("import roadcheck.conformance as c\n"
            "from roadcheck.integrations import require\n"
            "c.replay_files = lambda *a, **k: require('agents', 'openai-agents')\n"
            "from roadcheck.cli import main\n"
            "main(['replay', 'examples/spec.json', 'examples/fixture_conforms.jsonl'])\n")
    out = _without("agents", code)
    assert out.returncode == 2
    assert out.stderr == ("error[missing-extra]: agents is not installed: "
                          "pip install 'roadcheck[openai-agents]'\n")


def test_missing_extra_is_an_roadcheck_input_error() -> None:
    """The error is both an ImportError and an InputError (reason missing-extra, exit 2)."""
    from roadcheck.errors import InputError

    with pytest.raises(MissingExtraError) as info:
        require("roadcheck_no_such_framework", "langgraph")
    assert isinstance(info.value, ImportError) and isinstance(info.value, InputError)
    assert info.value.reason == "missing-extra" and info.value.exit_code == 2


@pytest.mark.parametrize(("module", "blocked", "missing", "extra"), [
    ("guard_openai_agents", "agents", "agents", "openai-agents"),
    ("guard_langchain", "langchain", "langchain.agents.middleware", "langgraph"),
    ("guard_pydantic_ai", "pydantic_ai", "pydantic_ai.toolsets", "pydantic-ai"),
])
def test_guard_integration_without_its_extra(module: str, blocked: str, missing: str,
                                             extra: str) -> None:
    """Each framework guard without its framework: one line naming the extra to install."""
    out = _without(blocked, f"import roadcheck.integrations.{module}\n")
    assert out.stderr == (f"error[missing-extra]: {missing} is not installed: "
                          f"pip install 'roadcheck[{extra}]'\n")


def test_importing_the_guard_imports_no_framework() -> None:
    """``import roadcheck.guard`` loads no framework package."""
    code = ("import sys, roadcheck.guard\n"
            "bad = [m for m in ('agents', 'langchain', 'langgraph', 'pydantic_ai') "
            "if m in sys.modules]\nprint(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
