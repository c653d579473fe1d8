"""An RFC 3161 time-stamp token as a head witness: a rollback a key cannot see is detected
against a token a time-stamping authority made, and a token that does not verify is
refused with one line.

The tokens are real: a throwaway CA and TSA certificate are made here, and ``openssl
ts -reply`` answers the request ``roadcheck evidence witness --tsq`` writes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from roadcheck.cli import cli
from roadcheck.evidence import JsonlStore
from roadcheck.evidence.signing import load_signing_key, new_key_pair
from roadcheck.evidence.timestamp import head_statement

pytestmark = pytest.mark.usefixtures("no_evidence_key")

_TSA_CONFIG = """\
[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
dir = .
serial = {dir}/serial
crypto_device = builtin
signer_cert = {dir}/tsa.pem
signer_key = {dir}/tsa.key
certs = {dir}/tsa.pem
default_policy = 1.2.3.4.1
digests = sha256
accuracy = secs:1
ordering = yes
tsa_name = no
ess_cert_id_chain = no
ess_cert_id_alg = sha256
signer_digest = sha256
"""
_NOW = dt.datetime.now(dt.UTC)
_DAY = dt.timedelta(days=1)


def _openssl() -> str:
    found = shutil.which("openssl")
    if found is None:
        pytest.fail("openssl is needed to make the time-stamp tokens these tests verify")
    return found


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _cert(subject: str, key: Any, issuer: str, issuer_key: Any, *, ca: bool,
          not_before: dt.datetime = _NOW - _DAY,
          not_after: dt.datetime = _NOW + 30 * _DAY) -> x509.Certificate:
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(not_before).not_valid_after(not_after)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(digital_signature=False, content_commitment=False,
                          key_encipherment=False, data_encipherment=False, key_agreement=False,
                          key_cert_sign=True, crl_sign=True, encipher_only=False,
                          decipher_only=False), critical=True)
    else:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _tsa(directory: Path, name: str = "Test TSA", *, self_signed: bool = False,
         **validity: dt.datetime) -> Path:
    """A TSA in ``directory``: ``ca.pem`` (unless self-signed), ``tsa.pem``, its key and
    the ``openssl ts`` configuration that signs with them."""
    directory.mkdir(parents=True)
    tsa_key = ec.generate_private_key(ec.SECP256R1())
    if self_signed:
        tsa = _cert(name, tsa_key, name, tsa_key, ca=False, **validity)
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = _cert(f"{name} CA", ca_key, f"{name} CA", ca_key, ca=True)
        (directory / "ca.pem").write_bytes(_pem(ca))
        tsa = _cert(name, tsa_key, f"{name} CA", ca_key, ca=False, **validity)
    (directory / "tsa.pem").write_bytes(_pem(tsa))
    (directory / "tsa.key").write_bytes(tsa_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    (directory / "serial").write_text("01\n")
    (directory / "tsa.cnf").write_text(_TSA_CONFIG.format(dir=directory))
    return directory


def _reply(tsa: Path, query: Path, out: Path) -> Path:
    """The DER time-stamp response ``openssl ts -reply`` gives to ``query``."""
    subprocess.run([_openssl(), "ts", "-reply", "-config", str(tsa / "tsa.cnf"), "-queryfile",
                    str(query), "-out", str(out)], check=True, capture_output=True)
    return out


def _record(i: int, run: str = "r") -> dict[str, Any]:
    return {"run_id": run, "workflow": "w", "phase": f"p{i}", "attempt": 1, "iteration": i,
            "verdict": "pass", "gate": {"kind": "command", "summary": "ok", "detail": "",
                                        "exit_code": 0, "output": ""},
            "artifact": {"path": f"p{i}.txt", "sha256": "ab" * 32, "bytes": 4},
            "role": "writer", "identity": "alice", "started_at": "2026-01-01T00:00:00Z",
            "finished_at": "2026-01-01T00:00:01Z", "params_sha256": "cd" * 32}


def _append(runs: Path, key: Path, i: int, run: str = "r") -> None:
    store = JsonlStore(runs / run, run, load_signing_key(key))
    store.append(_record(i, run))
    store.close()


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Run ``r`` signed with an evidence key, two records; and a TSA."""
    runs, key = tmp_path / "runs", tmp_path / "ev"
    new_key_pair(key)
    for i in (1, 2):
        _append(runs, key, i)
    return runs, key, _tsa(tmp_path / "tsa")


def _stamp(runs: Path, key: Path, tsa: Path, out: Path, run: str = "r") -> Path:
    """Ask for a time-stamp of ``run``'s head and have the TSA answer: the response file."""
    query = out.with_suffix(".tsq")
    made = CliRunner().invoke(cli, ["evidence", "witness", run, "--runs-dir", str(runs),
                                    "--key-file", f"{key}.pub", "--tsq", "-o", str(query)])
    assert made.exit_code == 0, made.output
    return _reply(tsa, query, out)


def _verify(runs: Path, key: Path, tsr: Path, tsa_cert: Path, *more: str) -> Result:
    return CliRunner().invoke(cli, ["evidence", "verify", "r", "--runs-dir", str(runs),
                                    "--key-file", f"{key}.pub", "--witness", str(tsr),
                                    "--tsa-cert", str(tsa_cert), *more])


def test_the_request_stamps_the_sha256_of_the_head_statement(setup: tuple[Path, Path, Path],
                                                             tmp_path: Path) -> None:
    """The bytes stamped are exactly the documented statement: openssl agrees."""
    runs, key, tsa = setup
    tsr = _stamp(runs, key, tsa, tmp_path / "head.tsr")
    head = JsonlStore(runs / "r", "r")._read_slot()
    assert not isinstance(head, str) and head is not None
    statement = head_statement("r", 2, head.last_hash)
    assert statement == (b'{"kind":"roadcheck-head","last_hash":"' + head.last_hash.encode()
                         + b'","records":2,"run_id":"r"}')
    (tmp_path / "statement.json").write_bytes(statement)
    checked = subprocess.run([_openssl(), "ts", "-verify", "-data", str(tmp_path /
                              "statement.json"), "-in", str(tsr), "-CAfile",
                              str(tsa / "ca.pem"), "-untrusted", str(tsa / "tsa.pem")],
                             capture_output=True, text=True)
    assert "Verification: OK" in checked.stdout, checked.stdout + checked.stderr
    made = CliRunner().invoke(cli, ["evidence", "witness", "r", "--runs-dir", str(runs),
                                    "--key-file", f"{key}.pub", "--tsq", "-o",
                                    str(tmp_path / "again.tsq")])
    assert hashlib.sha256(statement).hexdigest() in made.stdout


def test_a_good_token_and_a_chain_that_extends_it(setup: tuple[Path, Path, Path],
                                                  tmp_path: Path) -> None:
    runs, key, tsa = setup
    tsr = _stamp(runs, key, tsa, tmp_path / "head.tsr")
    _append(runs, key, 3)  # the run goes on after the stamp
    ok = _verify(runs, key, tsr, tsa / "tsa.pem", "--tsa-chain", str(tsa / "ca.pem"))
    assert ok.exit_code == 0, ok.output
    assert "time-stamped by CN=Test TSA at " in ok.stdout
    assert "2 records, last " in ok.stdout and "the chain extends that head" in ok.stdout
    assert "a rollback to before the witnessed head is detected" in ok.stdout
    as_json = _verify(runs, key, tsr, tsa / "tsa.pem", "--tsa-chain", str(tsa / "ca.pem"),
                      "--format", "json")
    assert as_json.exit_code == 0 and '"records": 3' in as_json.stdout


def test_a_rollback_is_detected(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """Back to an earlier, validly signed head with its records: the key alone accepts it,
    the token does not."""
    runs, key, tsa = setup
    saved = tmp_path / "saved"
    shutil.copytree(runs / "r", saved)
    _append(runs, key, 3)
    tsr = _stamp(runs, key, tsa, tmp_path / "head.tsr")
    shutil.rmtree(runs / "r")
    shutil.copytree(saved, runs / "r")
    alone = CliRunner().invoke(cli, ["evidence", "verify", "r", "--runs-dir", str(runs),
                                     "--key-file", f"{key}.pub"])
    assert alone.exit_code == 0, alone.output
    rolled = _verify(runs, key, tsr, tsa / "tsa.pem", "--tsa-chain", str(tsa / "ca.pem"))
    assert rolled.exit_code == 1, rolled.output
    assert "rollback" in rolled.stdout and "no head of this chain of 2 records" in rolled.stdout


def test_a_token_of_another_head(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """Another run's head, or other bytes stamped by the same TSA: no head of this chain."""
    runs, key, tsa = setup
    _append(runs, key, 1, run="other")
    other = _stamp(runs, key, tsa, tmp_path / "other.tsr", run="other")
    refused = _verify(runs, key, other, tsa / "tsa.pem", "--tsa-chain", str(tsa / "ca.pem"))
    assert refused.exit_code == 1 and "another run's head" in refused.stdout
    (tmp_path / "x.txt").write_bytes(b"something else")
    query = tmp_path / "x.tsq"
    subprocess.run([_openssl(), "ts", "-query", "-data", str(tmp_path / "x.txt"), "-sha256",
                    "-cert", "-out", str(query)], check=True, capture_output=True)
    stray = _reply(tsa, query, tmp_path / "x.tsr")
    assert _verify(runs, key, stray, tsa / "tsa.pem", "--tsa-chain",
                   str(tsa / "ca.pem")).exit_code == 1


def test_a_refused_request_is_no_token(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """A response that grants nothing (a policy the TSA does not serve) is refused."""
    runs, key, tsa = setup
    (tmp_path / "x.txt").write_bytes(b"x")
    query = tmp_path / "x.tsq"
    subprocess.run([_openssl(), "ts", "-query", "-data", str(tmp_path / "x.txt"), "-sha256",
                    "-tspolicy", "1.2.3.9", "-out", str(query)], check=True, capture_output=True)
    rejected = _reply(tsa, query, tmp_path / "x.tsr")
    result = _verify(runs, key, rejected, tsa / "tsa.pem", "--tsa-chain", str(tsa / "ca.pem"))
    assert result.exit_code == 2, result.output
    assert "did not grant the time-stamp (status 2: Requested policy is not supported" \
        in result.stderr


def _flip(data: bytes, at: int) -> bytes:
    out = bytearray(data)
    out[at] ^= 0x01
    return bytes(out)


def test_a_tampered_or_misshapen_token_is_refused(setup: tuple[Path, Path, Path],
                                                  tmp_path: Path) -> None:
    runs, key, tsa = setup
    tsr = _stamp(runs, key, tsa, tmp_path / "head.tsr")
    data = tsr.read_bytes()
    head = JsonlStore(runs / "r", "r")._read_slot()
    assert not isinstance(head, str) and head is not None
    imprint = data.find(hashlib.sha256(head_statement("r", 2, head.last_hash)).digest())
    assert imprint > 0
    signature = len(data) - 10  # inside the signature, the last field of the token
    for name, bad, why in (("imprint", _flip(data, imprint), "digest failure"),
                           ("signature", _flip(data, signature), "signature failure"),
                           ("cut", data[: len(data) // 2], "not an RFC 3161"),
                           ("garbage", b"\x30\x03abc", "not an RFC 3161")):
        path = tmp_path / f"{name}.tsr"
        path.write_bytes(bad)
        result = _verify(runs, key, path, tsa / "tsa.pem", "--tsa-chain", str(tsa / "ca.pem"))
        assert result.exit_code == 2, (name, result.output)
        assert result.stderr.count("\n") == 1 and str(path) in result.stderr, result.stderr
        assert why in result.stderr, result.stderr
        assert "Traceback" not in result.output


def test_another_tsa_certificate_is_refused(setup: tuple[Path, Path, Path],
                                            tmp_path: Path) -> None:
    runs, key, tsa = setup
    tsr = _stamp(runs, key, tsa, tmp_path / "head.tsr")
    other = _tsa(tmp_path / "other")
    for cert, chain in ((other / "tsa.pem", other / "ca.pem"), (tsa / "tsa.pem", other / "ca.pem"),
                        (other / "tsa.pem", tsa / "ca.pem")):
        result = _verify(runs, key, tsr, cert, "--tsa-chain", str(chain))
        assert result.exit_code == 2, result.output
        assert "does not verify with the TSA certificate" in result.stderr
    unchained = _verify(runs, key, tsr, tsa / "tsa.pem")
    assert unchained.exit_code == 2 and "--tsa-chain" in unchained.stderr
    # The root twice, and the root of a TSA of another name beside it. (A second root of
    # the same name, as ``other``'s, is a different question: which of the two a verifier
    # tries first is not fixed, so it is not asked here.)
    third = _tsa(tmp_path / "third", "Third TSA")
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes((tsa / "ca.pem").read_bytes() * 2 + (third / "ca.pem").read_bytes())
    assert _verify(runs, key, tsr, tsa / "tsa.pem", "--tsa-chain", str(bundle)).exit_code == 0


@pytest.mark.parametrize("validity", [
    {"not_before": _NOW - 30 * _DAY, "not_after": _NOW - _DAY},
    {"not_before": _NOW + _DAY, "not_after": _NOW + 30 * _DAY}], ids=["expired", "not-yet"])
def test_a_certificate_not_valid_when_it_stamped(tmp_path: Path,
                                                 validity: dict[str, dt.datetime]) -> None:
    runs, key = tmp_path / "runs", tmp_path / "ev"
    new_key_pair(key)
    _append(runs, key, 1)
    tsa = _tsa(tmp_path / "tsa", **validity)
    tsr = _stamp(runs, key, tsa, tmp_path / "head.tsr")
    result = _verify(runs, key, tsr, tsa / "tsa.pem", "--tsa-chain", str(tsa / "ca.pem"))
    assert result.exit_code == 2, result.output
    assert "does not verify" in result.stderr
    assert ("has expired" if validity["not_after"] < _NOW else "not yet valid") in result.stderr


def test_a_self_signed_tsa_needs_no_chain(tmp_path: Path) -> None:
    runs, key = tmp_path / "runs", tmp_path / "ev"
    new_key_pair(key)
    _append(runs, key, 1)
    tsa = _tsa(tmp_path / "tsa", self_signed=True)
    tsr = _stamp(runs, key, tsa, tmp_path / "head.tsr")
    ok = _verify(runs, key, tsr, tsa / "tsa.pem")
    assert ok.exit_code == 0, ok.output
    assert "1 records" in ok.stdout


def test_options_that_do_not_go_together(setup: tuple[Path, Path, Path],
                                         tmp_path: Path) -> None:
    runs, key, tsa = setup
    tsr = _stamp(runs, key, tsa, tmp_path / "head.tsr")
    base = ["evidence", "verify", "r", "--runs-dir", str(runs), "--key-file", f"{key}.pub"]
    for extra in (["--witness", str(tsr)],
                  ["--witness", str(tsr), "--tsa-cert", str(tsa / "tsa.pem"), "--witness-key",
                   f"{key}.pub"],
                  ["--tsa-cert", str(tsa / "tsa.pem")]):
        result = CliRunner().invoke(cli, [*base, *extra])
        assert result.exit_code == 2 and "go together" in result.stderr, result.output
    empty = tmp_path / "empty.pem"
    empty.write_text("")
    result = _verify(runs, key, tsr, empty)
    assert result.exit_code == 2 and "no PEM certificate" in result.stderr
    witness = ["evidence", "witness", "r", "--runs-dir", str(runs), "-o", str(tmp_path / "o")]
    for extra in ([], ["--tsq", "--key", str(key)]):
        result = CliRunner().invoke(cli, [*witness, *extra])
        assert result.exit_code == 2 and "--tsq" in result.stderr, result.output


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_the_tamper_matrix_without_a_key_but_with_a_token(tmp_path: Path, kind: str) -> None:
    """An unkeyed run, time-stamped at its last head: every class of the tamper matrix that
    touches a stamped record is detected, re-hashed and rewritten heads included; a record
    appended after the stamped head, with a head to match, is not (the witness's blind
    spot, as docs/security.md says)."""
    from tests.evidence.test_tamper_matrix import build, run_matrix

    from roadcheck.evidence.timestamp import read_timestamp

    base = build(tmp_path / "base", kind, None)
    tsa = _tsa(tmp_path / "tsa")
    query = tmp_path / "head.tsq"
    made = CliRunner().invoke(cli, ["evidence", "witness", "r", "--runs-dir", str(base),
                                    "--tsq", "-o", str(query)])
    assert made.exit_code == 0, made.output
    stamp = read_timestamp(_reply(tsa, query, tmp_path / "head.tsr"), tsa / "tsa.pem",
                           tsa / "ca.pem")
    counts = run_matrix(tmp_path / "m", kind, None, base=base, witness=stamp)
    print(f"\ntamper matrix ({kind}, no key, a token of the last head): "
          + ", ".join(f"{name} {d}/{t}" for name, (d, t) in counts.items()))
    assert counts.pop("append") == (0, 1)
    assert all(d == t for d, t in counts.values()), counts


def test_without_the_timestamp_extra(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """Without rfc3161-client, asking for a request or giving a token is one line naming
    the extra, exit 2; the statement witness is untouched."""
    import sys

    runs, key, tsa = setup
    tsr = _stamp(runs, key, tsa, tmp_path / "head.tsr")
    for args in (["witness", "r", "--tsq", "-o", str(tmp_path / "again.tsq")],
                 ["verify", "r", "--witness", str(tsr), "--tsa-cert", str(tsa / "tsa.pem")]):
        argv = ["evidence", *args, "--runs-dir", str(runs), "--key-file", f"{key}.pub"]
        code = ("import sys\nsys.modules['rfc3161_client'] = None\n"
                f"from roadcheck.cli import main\nmain({argv!r})\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=False)
        assert out.returncode == 2, out.stderr
        assert out.stderr == ("error[missing-extra]: rfc3161_client is not installed: "
                              "pip install 'roadcheck[timestamp]'\n")
