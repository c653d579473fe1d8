"""Importing the gate stays light: heavy modules load only when a contract needs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "accept"
HEAVY = ("pydantic", "jsonschema", "yaml", "click")


def loaded_after(code: str) -> dict[str, bool]:
    """Run ``code`` in a fresh interpreter and say which heavy modules it loaded."""
    probe = (f"import sys\n{code}\nimport json\n"
             f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


class TestImportWeight:
    """What ``from roadcheck import verify`` pulls in."""

    def test_verify_imports_nothing_heavy(self) -> None:
        """Importing and calling verify with a Python contract loads no heavy module."""
        seen = loaded_after(
            "from roadcheck import verify, Contract\n"
            "c = Contract(required={'status': str}, enums={'status': ['sent']},\n"
            "             claims={'sent': 'send_invoice'})\n"
            "assert verify({'status': 'sent'}, c, trace=[{'tool': 'send_invoice'}]).accepted\n")
        assert seen == dict.fromkeys(HEAVY, False)

    def test_json_contract_needs_no_yaml(self) -> None:
        """A JSON contract file loads without YAML, jsonschema or pydantic."""
        seen = loaded_after(f"from roadcheck import load_contract\n"
                            f"load_contract({str(DATA / 'contract.json')!r})\n")
        assert seen == dict.fromkeys(HEAVY, False)

    def test_yaml_and_schema_load_when_used(self) -> None:
        """YAML loads for a YAML contract, jsonschema for a json_schema section; pydantic never."""
        seen = loaded_after(f"from roadcheck import load_contract\n"
                            f"load_contract({str(DATA / 'contract_schema.yaml')!r})\n")
        assert seen == {"pydantic": False, "jsonschema": True, "yaml": True, "click": False}


class TestPublicApi:
    """The gate's names on the top-level package."""

    def test_exported(self) -> None:
        """verify, GateResult, Contract and load_contract are public and resolve."""
        import roadcheck
        from roadcheck.acceptance import Contract, GateResult, load_contract, verify

        for name in ("verify", "GateResult", "Contract", "load_contract"):
            assert name in roadcheck.__all__
        assert (roadcheck.verify, roadcheck.GateResult, roadcheck.Contract,
                roadcheck.load_contract) == (verify, GateResult, Contract, load_contract)
