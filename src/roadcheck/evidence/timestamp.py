"""Anchoring a run's head to an RFC 3161 time-stamping authority, so a rollback is seen.

The head witness of :mod:`roadcheck.evidence.witness` is a statement signed with a
key of one's own. A time-stamp token is the same anchor made by a third party any
verifier can name by its certificate: a time-stamping authority (TSA) signs the
time and the SHA-256 of the head statement, and a store rolled back to before
that head no longer holds it.

The head statement of a run whose chain holds ``records`` records, the last of
them hashed ``last_hash``, is the RFC 8785 canonical JSON of::

    {"kind": "roadcheck-head", "last_hash": last_hash, "records": records,
     "run_id": run_id}

that is, with the run id's letters and the hash's hex digits as they are, the
bytes ``{"kind":"roadcheck-head","last_hash":"<64 hex>","records":<n>,
"run_id":"<run id>"}``. Its SHA-256 is the token's message imprint.

``roadcheck evidence witness RUN --tsq -o head.tsq`` verifies the run and writes
the DER ``TimeStampReq`` for its head (SHA-256, a random nonce, the TSA's
certificate asked for): ``openssl ts -reply`` or any TSA answers it with a DER
``TimeStampResp``. ``roadcheck evidence verify RUN --witness head.tsr --tsa-cert
TSA.pem [--tsa-chain CA.pem]`` then checks, after the chain and head verify:

1. the file is a granted time-stamp response whose token is signed by the TSA
   certificate given, which chains to a root in ``--tsa-chain`` (or is its own
   root), was valid at the token's time and is a time-stamping certificate;
   its imprint is a SHA-256. Anything else is one line, exit 2;
2. the imprint is the statement of a head of this chain: the chain up to some
   record (or the empty chain) is what the TSA saw at its time, and the chain
   extends it. Else ``rollback``, exit 1: the store was rolled back to before
   that head or rewritten after it (a token of another run's head cannot be told
   from one of a head this store no longer holds; neither is vouched for).

Needs the ``timestamp`` extra (``rfc3161-client``, ``rfc8785``), imported on first use.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from roadcheck._files import read_input
from roadcheck.errors import InputError
from roadcheck.evidence.chain import ChainCheck
from roadcheck.evidence.record import GENESIS, AnyRecord, as_dict

__all__ = ["HEAD_KIND", "Timestamp", "apply_timestamp", "head_statement", "is_timestamp",
           "read_timestamp", "timestamp_request"]

#: The ``kind`` of a head statement.
HEAD_KIND = "roadcheck-head"
_SHA256_OID = "2.16.840.1.101.3.4.2.1"
_HEX64 = re.compile(r"[0-9a-f]{64}")


def head_statement(run_id: str, records: int, last_hash: str) -> bytes:
    """The RFC 8785 canonical JSON of a run's head statement: the bytes a token stamps."""
    from roadcheck.evidence.signing import canonical

    return canonical({"kind": HEAD_KIND, "run_id": run_id, "records": records,
                      "last_hash": last_hash})


def _client() -> Any:
    from roadcheck.integrations import require

    return require("rfc3161_client", "timestamp")


def timestamp_request(run_id: str, records: int, last_hash: str) -> bytes:
    """The DER ``TimeStampReq`` for a head: SHA-256 of its statement, a nonce, certReq."""
    client = _client()
    request = (client.TimestampRequestBuilder()
               .data(head_statement(run_id, records, last_hash))
               .hash_algorithm(client.HashAlgorithm.SHA256)
               .nonce(nonce=True).cert_request(cert_request=True).build())
    return bytes(request.as_bytes())


@dataclasses.dataclass(frozen=True, slots=True)
class Timestamp:
    """A time-stamp token whose signature and certificate verified: what the TSA saw."""

    #: The SHA-256 the TSA stamped (the imprint).
    digest: bytes
    #: When the TSA says it stamped it (UTC).
    gen_time: dt.datetime
    serial: int
    #: The TSA certificate's subject.
    tsa: str

    @property
    def when(self) -> str:
        """``gen_time`` in RFC 3339, to the second."""
        return self.gen_time.astimezone(dt.UTC).isoformat(timespec="seconds").replace(
            "+00:00", "Z")


def is_timestamp(path: str | Path) -> bool:
    """Whether ``path`` holds DER (an ASN.1 SEQUENCE) rather than a JSON statement."""
    try:
        with open(path, "rb") as fh:
            first = fh.read(1)
    except OSError as exc:
        raise InputError(f"cannot read the witness: {exc.strerror or exc}",
                         path=str(path)) from None
    return first == b"\x30"


def _certificates(path: str | Path, what: str) -> list[Any]:
    from cryptography import x509

    data = read_input(path, f"the {what}")
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError:
        certs = []
    if not certs:
        raise InputError(f"the {what} holds no PEM certificate", path=str(path))
    return certs


def read_timestamp(path: str | Path, tsa_cert: str | Path,
                   tsa_chain: str | Path | None = None) -> Timestamp:
    """The verified token of the DER ``TimeStampResp`` in ``path``: granted, signed by the
    certificate in ``tsa_cert`` (valid then, for time-stamping) chaining to a root in
    ``tsa_chain`` (or itself self-signed), a SHA-256 imprint. Anything else is one line
    naming the file, exit 2: a token that does not verify is never used."""
    client = _client()
    (tsa,) = _certificates(tsa_cert, "TSA certificate")[:1]
    given = _certificates(tsa_chain, "TSA chain") if tsa_chain is not None else []
    chain = [c for i, c in enumerate(given) if c not in given[:i]]  # each certificate once
    roots = [c for c in [tsa, *chain] if c.subject == c.issuer]
    if not roots:
        raise InputError("the TSA certificate is not self-signed: give the certificates it "
                         "chains to, up to a root, with --tsa-chain PEM", path=str(tsa_cert))
    data = read_input(path, "the time-stamp response")
    try:
        response = client.decode_timestamp_response(data)
        if response.status != 0:  # granted; anything else carries no token to rely on
            said = "; ".join(response.status_string) or "no reason given"
            raise InputError(f"the TSA did not grant the time-stamp (status "
                             f"{response.status}: {said})", path=str(path))
        info = response.tst_info
        algorithm = info.message_imprint.hash_algorithm.dotted_string
        digest = bytes(info.message_imprint.message)
    except ValueError as exc:
        raise InputError(f"not an RFC 3161 time-stamp response: {_why(exc)}",
                         path=str(path)) from None
    if algorithm != _SHA256_OID or len(digest) != 32:
        raise InputError(f"the time-stamp token's imprint is not a SHA-256 (algorithm "
                         f"{algorithm}): it cannot stamp a head statement", path=str(path))
    builder = client.VerifierBuilder(tsa_certificate=tsa)
    for cert in chain:
        builder = (builder.add_root_certificate(cert) if cert.subject == cert.issuer
                   else builder.add_intermediate_certificate(cert))
    if tsa.subject == tsa.issuer and tsa not in chain:
        builder = builder.add_root_certificate(tsa)
    try:
        builder.build().verify(response, digest)
    except (client.VerificationError, ValueError) as exc:
        raise InputError(f"the time-stamp token does not verify with the TSA certificate "
                         f"{tsa.subject.rfc4514_string()!r}: {_why(exc)}",
                         path=str(path)) from None
    when = info.gen_time
    when = when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)
    return Timestamp(digest, when, int(info.serial_number), tsa.subject.rfc4514_string())


def _why(exc: BaseException) -> str:
    """What a verification error says, in a few words: the certificate check's own words
    (``certificate has expired``) or the reasons OpenSSL gave (``signature failure``)."""
    text = str(exc)
    said = re.search(r'Verify error: ([^"]+)"', text)
    if said:
        return said.group(1)
    reasons = list(dict.fromkeys(re.findall(r'reason: "([^"]+)"', text)))
    if reasons:
        return "; ".join(reasons)
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if len(line) <= 200 else line[:197] + "..."


def _statement_digests(run_id: str, hashes: Sequence[object]) -> dict[bytes, int]:
    """``{sha256 of the head statement: its record count}`` for every head of the chain
    ``hashes`` (the empty chain included).

    Where the run id and a hash need no escaping the canonical bytes are put together
    around them, once the empty chain's statement so put together is found equal to
    :func:`head_statement`'s; any other head is encoded by :func:`head_statement`."""
    out: dict[bytes, int] = {}
    template = None
    if re.fullmatch(r"[A-Za-z0-9._-]+", run_id):
        head = b'{"kind":"' + HEAD_KIND.encode() + b'","last_hash":"'
        tail = b',"run_id":"' + run_id.encode() + b'"}'
        if head + GENESIS.encode() + b'","records":0' + tail \
                == head_statement(run_id, 0, GENESIS):
            template = head, tail
    for n, last in enumerate([GENESIS, *hashes]):
        if template is not None and isinstance(last, str) and _HEX64.fullmatch(last):
            data = template[0] + last.encode() + b'","records":' + str(n).encode() + template[1]
        elif isinstance(last, str):
            data = head_statement(run_id, n, last)
        else:
            continue  # a hash that is no text is no head a statement was made of
        out.setdefault(hashlib.sha256(data).digest(), n)
    return out


def apply_timestamp(check: ChainCheck, stamp: Timestamp,
                    records: Sequence[AnyRecord]) -> ChainCheck:
    """``check`` with the token's verdict: ``rollback`` when no head of the chain is the
    one stamped, else a note naming the stamped head and its time."""
    if not check.ok:
        return check
    hashes = [as_dict(r).get("hash") for r in records]
    found = _statement_digests(check.run_id, hashes).get(stamp.digest)
    if found is None:
        return dataclasses.replace(
            check, problem="rollback", position=None,
            message=(f"rolled back or rewritten: the head the TSA stamped at {stamp.when} "
                     f"(imprint {stamp.digest.hex()[:12]}) is no head of this chain of "
                     f"{len(records)} records: the store no longer holds it, or the token "
                     "is of another run's head"))
    last = GENESIS if found == 0 else str(hashes[found - 1])
    note = (f"time-stamped by {stamp.tsa} at {stamp.when} (serial {stamp.serial}): "
            f"{found} records, last {last[:12]}; the chain extends that head")
    return dataclasses.replace(check, notes=(*check.notes, note), witnessed=True)
