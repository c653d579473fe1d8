"""Ed25519 signatures over RFC 8785 canonical JSON, and the keys that make them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.errors import InputError
from roadcheck.evidence.signing import (
    SigningKey,
    canonical,
    load_signing_key,
    load_verify_key,
    new_key_pair,
)


class TestCanonical:
    def test_rfc_8785_order_and_numbers(self) -> None:
        """Keys by UTF-16 code units (an astral character before U+E000), integers and
        floats in their shortest ECMAScript form, no whitespace."""
        doc = {"b": 1, "a": [1.0, 1e21, 0.5, -0.0], "\ue000": 1, "\U0001f600": 2}
        assert canonical(doc) == ('{"a":[1,1e+21,0.5,0],"b":1,"\U0001f600":2,"\ue000":1}'
                                  .encode())

    def test_a_document_json_cannot_hold_is_refused(self) -> None:
        with pytest.raises(InputError, match="cannot sign"):
            canonical({"n": float("nan")})


class TestSignatures:
    def test_a_signature_verifies_with_the_public_key_only(self) -> None:
        key = SigningKey.generate()
        doc = {"run_id": "r1", "records": 3, "last_hash": "ab" * 32}
        sig = key.sign(doc)
        assert key.public.verify(doc, sig)
        assert key.public.verify({"last_hash": "ab" * 32, "records": 3, "run_id": "r1"}, sig)

    @pytest.mark.parametrize("change", [{"records": 2}, {"records": 4}, {"run_id": "r2"},
                                        {"extra": True}])
    def test_any_change_to_the_document_is_refused(self, change: dict[str, object]) -> None:
        key = SigningKey.generate()
        doc = {"run_id": "r1", "records": 3}
        assert not key.public.verify({**doc, **change}, key.sign(doc))

    def test_another_key_or_a_mangled_signature_is_refused(self) -> None:
        key, other = SigningKey.generate(), SigningKey.generate()
        doc = {"a": 1}
        sig = key.sign(doc)
        assert not other.public.verify(doc, sig)
        middle = len(sig) // 2
        flipped = sig[:middle] + ("A" if sig[middle] != "A" else "B") + sig[middle + 1:]
        for bad in (sig[:-2], flipped, sig + "==", "", "!!", None, 5):
            assert not key.public.verify(doc, bad)

    def test_a_signature_has_one_spelling(self) -> None:
        """The last character of 64 bytes in base64url carries 2 bits: the other 4 must be
        zero, so no second text of the same signature verifies."""
        key = SigningKey.generate()
        doc = {"a": 1}
        sig = key.sign(doc)
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        others = [sig[:-1] + c for c in alphabet if c != sig[-1]]
        assert not [o for o in others if key.public.verify(doc, o)]

    def test_key_ids_name_the_public_key(self) -> None:
        key = SigningKey.generate()
        assert key.key_id == key.public.key_id
        assert key.key_id.startswith("ed25519:") and len(key.key_id) == len("ed25519:") + 16
        assert SigningKey.generate().key_id != key.key_id


class TestKeyFiles:
    def test_a_pair_is_written_private_0600_and_read_back(self, tmp_path: Path) -> None:
        key = new_key_pair(tmp_path / "k")
        assert stat.S_IMODE(os.stat(tmp_path / "k").st_mode) == 0o600
        assert load_signing_key(tmp_path / "k").key_id == key.key_id
        assert load_verify_key(tmp_path / "k.pub").key_id == key.key_id
        assert load_verify_key(tmp_path / "k").key_id == key.key_id  # a private key's half
        sig = load_signing_key(tmp_path / "k").sign({"x": 1})
        assert load_verify_key(tmp_path / "k.pub").verify({"x": 1}, sig)

    def test_a_key_is_never_overwritten(self, tmp_path: Path) -> None:
        first = new_key_pair(tmp_path / "k")
        with pytest.raises(InputError, match="never overwritten"):
            new_key_pair(tmp_path / "k")
        assert load_signing_key(tmp_path / "k").key_id == first.key_id
        (tmp_path / "j.pub").write_text("taken")
        with pytest.raises(InputError, match="never overwritten"):
            new_key_pair(tmp_path / "j")
        assert not (tmp_path / "j").exists()

    def test_files_that_are_no_key_say_so(self, tmp_path: Path) -> None:
        (tmp_path / "text").write_text("hello")
        (tmp_path / "pem").write_text(
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
        with pytest.raises(InputError, match="not a PEM file"):
            load_verify_key(tmp_path / "text")
        with pytest.raises(InputError, match="cannot be read"):
            load_verify_key(tmp_path / "pem")
        with pytest.raises(InputError, match="cannot read the signing key"):
            load_signing_key(tmp_path / "missing")

    def test_a_key_of_another_algorithm_is_refused(self, tmp_path: Path) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        other = ec.generate_private_key(ec.SECP256R1())
        (tmp_path / "ec").write_bytes(other.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        with pytest.raises(InputError, match="not an Ed25519 key"):
            load_signing_key(tmp_path / "ec")


class TestKeysCommand:
    def test_new_and_id(self, tmp_path: Path) -> None:
        name = str(tmp_path / "signer")
        made = CliRunner().invoke(cli, ["keys", "new", name])
        assert made.exit_code == 0, made.output
        key_id = made.output.split()[0]
        shown = CliRunner().invoke(cli, ["keys", "id", name + ".pub"])
        assert shown.exit_code == 0 and shown.output.strip() == key_id
        again = CliRunner().invoke(cli, ["keys", "new", name])
        assert again.exit_code == 2
        assert "a key is never overwritten" in again.output
        assert again.output.count("\n") == 1

    def test_id_of_a_file_that_is_no_key(self, tmp_path: Path) -> None:
        (tmp_path / "x").write_text("x")
        res = CliRunner().invoke(cli, ["keys", "id", str(tmp_path / "x")])
        assert res.exit_code == 2 and "not a PEM file" in res.output


class TestSignedRuns:
    """A run sealed with an Ed25519 private key, checked with its public key."""

    def _signed(self, tmp_path: Path, kind: str = "jsonl") -> tuple[Path, SigningKey]:
        from tests.evidence.test_tamper_matrix import build

        key = new_key_pair(tmp_path / "signer")
        return build(tmp_path / "base", kind, key), key

    def test_the_public_key_file_verifies(self, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
        import json

        from roadcheck.evidence import load_key

        monkeypatch.delenv("ROADCHECK_EVIDENCE_KEY", raising=False)
        runs, key = self._signed(tmp_path)
        assert load_key(tmp_path / "signer.pub").key_id == key.key_id  # type: ignore[union-attr]
        res = CliRunner().invoke(cli, ["evidence", "verify", "--runs-dir", str(runs), "r",
                                       "--key-file", str(tmp_path / "signer.pub"),
                                       "--format", "json"])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.output)
        assert (doc["auth"], doc["authenticated"], doc["key_id"]) == ("ed25519", True,
                                                                      key.key_id)

    def test_without_a_key_it_asks_for_the_public_key(self, tmp_path: Path) -> None:
        from roadcheck.evidence import verify_run

        runs, _ = self._signed(tmp_path)
        with pytest.raises(InputError, match=r"signed .ed25519.*its public key"):
            verify_run(runs, "r", None)

    def test_an_hmac_key_is_not_its_key(self, tmp_path: Path) -> None:
        from roadcheck.evidence import EvidenceKey, verify_run

        runs, _ = self._signed(tmp_path)
        with pytest.raises(InputError, match="the key given is an hmac-sha256 key"):
            verify_run(runs, "r", EvidenceKey(b"s" * 32))

    def test_another_public_key_is_refused(self, tmp_path: Path) -> None:
        from roadcheck.evidence import verify_run

        runs, _ = self._signed(tmp_path)
        with pytest.raises(InputError, match="is not the key of run"):
            verify_run(runs, "r", SigningKey.generate().public)

    def test_a_public_key_cannot_append(self, tmp_path: Path) -> None:
        from roadcheck.evidence.store import open_store

        runs, key = self._signed(tmp_path)
        store = open_store(runs, "r", "jsonl", key.public)
        from tests.evidence.test_tamper_matrix import _record

        with pytest.raises(InputError, match="cannot sign its head"):
            store.append(_record(99, {"doc": "a"}))
        store.close()
        from roadcheck.evidence import verify_run

        check = verify_run(runs, "r", key.public)
        assert check.ok and check.records == 5, check.message  # nothing was half-written
