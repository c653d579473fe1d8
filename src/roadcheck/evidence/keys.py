"""The evidence key: an HMAC-SHA256 secret, or an Ed25519 key pair, held outside the run
directory.

Without a key the hash chain and its head prove internal consistency only: a
writer of the run directory can re-hash every record after an edit, append a
record with a correct hash, or cut the tail, and rewrite the head to match.
With a key, the head carries an HMAC over the record count, the last hash and
the run's manifest digest, so each of those is detected by anyone holding the
key. The key comes from ``--key-file``, ``ROADCHECK_EVIDENCE_KEY_FILE`` or
``ROADCHECK_EVIDENCE_KEY``, in that order.

A key file holding a PEM Ed25519 key (``roadcheck keys new``) signs instead: the
head carries an Ed25519 signature over its RFC 8785 canonical JSON, made with the
private key, and anyone with the public key alone can check it (and cannot forge
one). Appending needs the private key; verifying and auditing take either.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Union

from roadcheck.errors import InputError

if TYPE_CHECKING:
    from roadcheck.evidence.signing import SigningKey, VerifyKey

__all__ = ["AUTH_ED25519", "AUTH_HMAC", "AUTH_NONE", "ENV_KEY", "ENV_KEY_FILE", "AnyKey",
           "EvidenceKey", "load_key"]

AUTH_NONE = "none"
AUTH_HMAC = "hmac-sha256"
AUTH_ED25519 = "ed25519"
ENV_KEY = "ROADCHECK_EVIDENCE_KEY"
ENV_KEY_FILE = "ROADCHECK_EVIDENCE_KEY_FILE"
#: Fewer bytes than this is a password, not a key.
MIN_KEY_BYTES = 16


@dataclass(frozen=True, slots=True, repr=False)
class EvidenceKey:
    """A secret that authenticates a run's head; its ``key_id`` names it without revealing it."""

    secret: bytes
    #: How a head this key seals is authenticated.
    auth = AUTH_HMAC

    def __post_init__(self) -> None:
        if len(self.secret) < MIN_KEY_BYTES:
            raise InputError(f"the evidence key has {len(self.secret)} bytes; use at least "
                             f"{MIN_KEY_BYTES} random bytes")

    def __repr__(self) -> str:
        return f"EvidenceKey(key_id={self.key_id!r})"

    @property
    def key_id(self) -> str:
        """A short public name of the key, derived from it one way."""
        return hmac.new(self.secret, b"roadcheck evidence key id", hashlib.sha256).hexdigest()[:16]

    def mac(self, data: bytes) -> str:
        """The hex HMAC-SHA256 of ``data``."""
        return hmac.new(self.secret, data, hashlib.sha256).hexdigest()

    def check(self, data: bytes, mac: object) -> bool:
        """True when ``mac`` is this key's HMAC of ``data`` (constant-time compare)."""
        return isinstance(mac, str) and hmac.compare_digest(self.mac(data), mac)


#: A key that seals or checks a head: an HMAC secret, an Ed25519 private key (signs and
#: verifies) or an Ed25519 public key (verifies only).
AnyKey = Union[EvidenceKey, "SigningKey", "VerifyKey"]


def load_key(key_file: str | os.PathLike[str] | None = None,
             env: Mapping[str, str] | None = None) -> AnyKey | None:
    """The evidence key from ``key_file``, else the environment; ``None`` when none is set.

    A file holding a PEM Ed25519 private key gives a :class:`~roadcheck.evidence.signing.
    SigningKey`, a PEM public key a :class:`~roadcheck.evidence.signing.VerifyKey`; any
    other file is an HMAC secret.
    """
    env = os.environ if env is None else env
    path = key_file if key_file is not None else (env.get(ENV_KEY_FILE) or None)
    if path is not None:
        try:
            secret = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read the evidence key: {exc.strerror or exc}",
                             path=str(path)) from None
        if secret.lstrip().startswith(b"-----BEGIN "):
            from roadcheck.evidence.signing import key_from_pem

            return key_from_pem(secret, path)
        secret = secret.rstrip(b"\r\n")
        if not secret:
            raise InputError("the evidence key file is empty", path=str(path))
        return EvidenceKey(secret)
    raw = env.get(ENV_KEY)
    if raw:
        return EvidenceKey(raw.encode("utf-8"))
    return None


def require_sealing(key: AnyKey | None) -> None:
    """Refuse, before anything is written, to append with a key that cannot seal the head
    (an Ed25519 public key)."""
    from roadcheck.evidence.signing import VerifyKey

    if isinstance(key, VerifyKey):
        raise key.sealing_error()


def key_inside(key_file: str | os.PathLike[str] | None, run_dir: Path) -> bool:
    """True when ``key_file`` lies inside ``run_dir``, where any writer of the run could read it."""
    if key_file is None:
        return False
    try:
        Path(key_file).resolve().relative_to(run_dir.resolve())
    except ValueError:
        return False
    return True
