"""The accept contract: building it in Python and reading it from JSON or YAML files."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadcheck.acceptance import TYPE_NAMES, Claim, Contract, load_contract, parse_contract
from roadcheck.errors import SpecError

DATA = Path(__file__).resolve().parent.parent / "data" / "accept"
EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples" / "accept"


class TestContract:
    """Contracts built in Python."""

    def test_python_types_become_type_names(self) -> None:
        """str, int, float, bool, list, dict and None map to the JSON type names."""
        c = Contract(required={"a": str, "b": int, "c": float, "d": bool, "e": list, "f": dict,
                               "g": None})
        assert c.required == {"a": "string", "b": "integer", "c": "number", "d": "boolean",
                              "e": "array", "f": "object", "g": "null"}

    def test_type_names_are_the_documented_seven(self) -> None:
        """The type names are the seven JSON types, each usable in a contract."""
        assert TYPE_NAMES == ("string", "integer", "number", "boolean", "array", "object", "null")
        Contract(required={n: n for n in TYPE_NAMES})

    def test_a_list_of_types_is_a_union(self) -> None:
        """A list of type names allows any of them."""
        assert Contract(required={"a": ["integer", None]}).required == {"a": ["integer", "null"]}

    @pytest.mark.parametrize("bad", ["strng", "str", object, 3, []])
    def test_unknown_type_is_a_spec_error(self, bad: object) -> None:
        """An unknown type name or a non-type raises SpecError naming the field."""
        with pytest.raises(SpecError, match=r"required\.a"):
            Contract(required={"a": bad})

    def test_enums_are_sorted_for_messages(self) -> None:
        """Allow-lists given as sets come out in a stable order."""
        c = Contract(enums={"s": {"b", "a"}, "n": [3, True, None, 1.5]})
        assert c.enums == {"s": ["a", "b"], "n": [True, 1.5, 3, None]}

    def test_enum_values_must_be_scalars(self) -> None:
        """An allow-list holding an object is refused."""
        with pytest.raises(SpecError, match=r"enums\.s"):
            Contract(enums={"s": [{"a": 1}]})

    def test_claims_accept_names_and_claim_objects(self) -> None:
        """A claim is a tool name or a Claim with bound arguments."""
        c = Contract(claims={"sent": Claim("send_invoice", args={"id": "target_id"}),
                             "created": "create_record"})
        assert c.claims["created"] == Claim("create_record")
        assert c.claims["sent"].args == {"id": "target_id"}

    def test_claim_requires_action_is_merged_into_claims(self) -> None:
        """The reference gate's field name is accepted as another name for claims."""
        c = Contract(claim_requires_action={"updated": "update_record"})
        assert c.claims == {"updated": Claim("update_record")}

    def test_bad_claim_binding_is_refused(self) -> None:
        """Claim args must map argument names to result field names."""
        with pytest.raises(SpecError, match="args"):
            Claim("send_invoice", args={"id": 3})  # type: ignore[dict-item]

    def test_invalid_json_schema_is_refused(self) -> None:
        """A json_schema that is not a valid JSON Schema raises SpecError."""
        with pytest.raises(SpecError, match="not a valid JSON Schema"):
            Contract(json_schema={"type": "objekt"})


class TestLoadContract:
    """Contract files."""

    @pytest.mark.parametrize("name", ["contract.yaml", "contract.json", "contract_schema.yaml"])
    def test_good_files_load(self, name: str) -> None:
        """The example contracts load and remember where they came from."""
        c = load_contract(DATA / name)
        assert c.source == str(DATA / name)

    def test_example_contract_binds_the_customer(self) -> None:
        """The documented example binds send_invoice's customer_id to target_id."""
        c = load_contract(EXAMPLES / "contract.yaml")
        assert c.claims["sent"] == Claim("send_invoice", args={"customer_id": "target_id"})

    @pytest.mark.parametrize(("name", "line", "fragment"), [
        ("unknown_type.yaml", 3, "required.target_id: must be 'string', 'integer', "
                                 "'number', 'boolean', 'array', 'object' or 'null', got 'strng'"),
        ("enum_not_list.json", 2, "enums.status: must be a list"),
        ("claim_unknown_key.yaml", 3, "unknown key 'argz'"),
        ("unknown_key.yaml", 1, "unknown key 'requird'; did you mean 'required'?"),
        ("claim_unknown_key.yaml", 3, "claims.sent: unknown key 'argz'; did you mean 'args'?"),
        ("broken.yaml", 3, "invalid YAML"),
        ("broken.json", 2, "invalid JSON"),
        ("empty_contract.json", None, "declares nothing to check"),
        ("not_object.yaml", None, "must be an object, got array"),
        ("bad_schema.yaml", 2, "not a valid JSON Schema"),
    ])
    def test_bad_files_name_file_and_line(self, name: str, line: int | None,
                                          fragment: str) -> None:
        """An unusable contract raises SpecError with the file, the line where known, and why."""
        path = DATA / "bad" / name
        with pytest.raises(SpecError) as info:
            load_contract(path)
        assert info.value.path == str(path)
        assert info.value.line == line
        assert fragment in info.value.message

    def test_missing_file(self, tmp_path: Path) -> None:
        """A contract that cannot be read is a SpecError naming the file."""
        with pytest.raises(SpecError, match="cannot read contract"):
            load_contract(tmp_path / "nope.yaml")

    def test_parse_contract_refuses_non_objects(self) -> None:
        """A decoded document that is not a mapping is refused."""
        with pytest.raises(SpecError, match="must be an object"):
            parse_contract(["required"])


class TestJsonSchemaSection:
    """The json_schema section of a contract."""

    def test_unknown_dialect_is_refused(self) -> None:
        """A $schema jsonschema does not know is a SpecError, not a silent fallback."""
        with pytest.raises(SpecError, match="unknown"):
            Contract(json_schema={"$schema": "https://example.invalid/my-dialect"})

    def test_known_dialect(self) -> None:
        """A draft the library knows is used as declared."""
        c = Contract(json_schema={"$schema": "http://json-schema.org/draft-07/schema#",
                                  "type": "object"})
        assert type(c.validator).__name__ == "Draft7Validator"


class TestStrictDocument:
    """A contract file is read as strictly as every other document."""

    @pytest.mark.parametrize(("text", "fragment"), [
        ("required: {status: string}\nclaims:\n", "claims: is null"),
        ("required: {status: string}\nclaims: {sent: }\n", "claims.sent: must be"),
        ("required: {status: string}\nrequired: {id: string}\n", "duplicate key 'required'"),
        ("required: {status: string}\nclaims: {sent: {tool: send, args: {id: 3}}}\n",
         "claims.sent.args.id: must be a string, got an integer"),
        ("required: {status: []}\n", "required.status: must not be empty"),
    ])
    def test_refused(self, tmp_path: Path, text: str, fragment: str) -> None:
        """Nulls, duplicate keys and mistyped entries are one located error."""
        path = tmp_path / "c.yaml"
        path.write_text(text)
        with pytest.raises(SpecError) as info:
            load_contract(path)
        assert fragment in info.value.message and info.value.line is not None


class TestOneDeclaration:
    """A contract is the document's structs, read once; no class repeats their fields."""

    def test_claim_is_the_document_struct(self) -> None:
        """Claim is the contract document's claim struct itself."""
        from roadcheck.documents.contract import ClaimDoc

        assert Claim is ClaimDoc

    def test_a_loaded_contract_holds_the_struct_the_loader_read(self) -> None:
        """load_contract keeps the ContractDoc it read; the compiled tables come from it."""
        from roadcheck.documents.contract import ContractDoc

        c = load_contract(EXAMPLES / "contract.yaml")
        assert type(c.doc) is ContractDoc
        assert c.claims["sent"] is c.doc.claims["sent"]
        again = Contract.from_doc(c.doc, c.source)
        assert again.doc is c.doc and again.claims == c.claims and again.enums == c.enums

    def test_a_contract_built_in_python_is_held_as_the_document(self) -> None:
        """Values given in Python are checked and held as the struct a file is read into."""
        from roadcheck.documents.contract import ContractDoc

        c = Contract(required={"a": str, "b": [int, None]}, enums={"s": {"b", "a"}},
                     claims={"sent": "send_invoice"},
                     claim_requires_action={"made": Claim("make", {"id": "a"})})
        assert type(c.doc) is ContractDoc
        assert c.doc.required == {"a": "string", "b": ["integer", "null"]}
        assert c.doc.claims == {"sent": "send_invoice"}
        assert c.claims == {"sent": Claim("send_invoice"), "made": Claim("make", {"id": "a"})}
        assert c.claim_requires_action is None
