"""Ed25519 signatures over RFC 8785 canonical JSON, checked with the public key alone.

An HMAC (:mod:`roadcheck.evidence.keys`) can only be checked by someone who holds
the secret that forges it. A signature is made with a private key and checked
with its public key, so an auditor, a CI job or a reviewer can verify evidence
without being able to write it. What is signed is a JSON document in its RFC 8785
canonical form (keys sorted by UTF-16 code units, numbers in their shortest
form, no whitespace), so two implementations that agree on the document agree
on the bytes. A key is named by its id, ``ed25519:`` and the first 16 hex
digits of the sha256 of its 32 raw public bytes.

Keys are PEM files: the private key in PKCS #8 (written with mode 0600, never
over an existing file), the public key beside it as ``NAME.pub`` in
SubjectPublicKeyInfo. ``roadcheck keys new NAME`` makes a pair. Needs the
``sign`` extra (``cryptography`` and ``rfc8785``), imported on first use.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any

from roadcheck.errors import InputError

__all__ = ["ALG", "SigningKey", "VerifyKey", "canonical", "key_from_pem", "load_signing_key",
           "load_verify_key", "new_key_pair"]

#: The algorithm name evidence records carry beside a signature (a head's ``auth``).
ALG = "ed25519"


def _crypto() -> Any:
    from roadcheck.integrations import require

    require("cryptography", "sign")
    from cryptography.hazmat.primitives.asymmetric import ed25519

    return ed25519


def canonical(doc: Any) -> bytes:
    """``doc`` as RFC 8785 canonical JSON: the bytes a signature covers."""
    from roadcheck.integrations import require

    jcs = require("rfc8785", "sign")
    try:
        return bytes(jcs.dumps(doc))
    except (jcs.CanonicalizationError, TypeError, ValueError) as exc:
        raise InputError(f"cannot sign this document: {exc}") from None


def _key_id(raw_public: bytes) -> str:
    return f"{ALG}:{hashlib.sha256(raw_public).hexdigest()[:16]}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes | None:
    """The bytes of a base64url text as :func:`_b64` writes it, or None: any other
    spelling of them (padding, other trailing bits) is refused, so that a signature
    has one text."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        return None
    return raw if _b64(raw) == text else None


class VerifyKey:
    """A public key: checks signatures, cannot make them."""

    __slots__ = ("_key", "key_id", "raw")
    #: How a head this key checks is authenticated.
    auth = ALG

    def __init__(self, key: Any) -> None:
        from cryptography.hazmat.primitives import serialization

        self._key = key
        self.raw: bytes = key.public_bytes(serialization.Encoding.Raw,
                                           serialization.PublicFormat.Raw)
        self.key_id: str = _key_id(self.raw)

    def __repr__(self) -> str:
        return f"VerifyKey(key_id={self.key_id!r})"

    @classmethod
    def from_raw(cls, text: object) -> VerifyKey | None:
        """The public key whose 32 raw bytes ``text`` spells in base64url (as
        :attr:`raw_text` writes them), or None when it spells no such key."""
        raw = _unb64(text) if isinstance(text, str) else None
        if raw is None or len(raw) != 32:
            return None
        return cls(_crypto().Ed25519PublicKey.from_public_bytes(raw))

    @property
    def raw_text(self) -> str:
        """The 32 raw bytes of the key in base64url without padding."""
        return _b64(self.raw)

    def verify(self, doc: Any, signature: object) -> bool:
        """True when ``signature`` (base64url) is this key's signature of ``doc``."""
        return self.verify_bytes(canonical(doc), signature)

    def verify_bytes(self, data: bytes, signature: object) -> bool:
        """True when ``signature`` (base64url) is this key's signature of ``data``."""
        from cryptography.exceptions import InvalidSignature

        raw = _unb64(signature) if isinstance(signature, str) else None
        if raw is None or len(raw) != 64:
            return False
        try:
            self._key.verify(raw, data)
        except InvalidSignature:
            return False
        return True

    def sealing_error(self) -> InputError:
        """Why this key cannot seal a head: a public key only verifies."""
        return InputError(f"the key given is a public key (key id {self.key_id}): it verifies "
                          "a signed run but cannot sign its head; give the private key to "
                          "append")

    def mac(self, data: bytes) -> str:
        """A public key cannot sign: appending to a signed run needs its private key."""
        raise self.sealing_error()

    def check(self, data: bytes, signature: object) -> bool:
        """:meth:`verify_bytes`: the head check every evidence key offers."""
        return self.verify_bytes(data, signature)

    def pem(self) -> bytes:
        """The public key as a PEM SubjectPublicKeyInfo."""
        from cryptography.hazmat.primitives import serialization

        return bytes(self._key.public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo))


class SigningKey:
    """A private key: signs documents; its :attr:`public` key checks them."""

    __slots__ = ("_key", "public")
    #: How a head this key seals is authenticated.
    auth = ALG

    def __init__(self, key: Any) -> None:
        self._key = key
        self.public = VerifyKey(key.public_key())

    def __repr__(self) -> str:
        return f"SigningKey(key_id={self.key_id!r})"

    @property
    def key_id(self) -> str:
        """The id of the key pair (derived from the public key)."""
        return self.public.key_id

    @classmethod
    def generate(cls) -> SigningKey:
        """A new random key."""
        return cls(_crypto().Ed25519PrivateKey.generate())

    def sign(self, doc: Any) -> str:
        """The base64url signature of ``doc``'s canonical JSON."""
        return self.sign_bytes(canonical(doc))

    def sign_bytes(self, data: bytes) -> str:
        """The base64url signature of ``data``."""
        return _b64(self._key.sign(data))

    def verify(self, doc: Any, signature: object) -> bool:
        """:meth:`VerifyKey.verify` with this key's public half."""
        return self.public.verify(doc, signature)

    def mac(self, data: bytes) -> str:
        """:meth:`sign_bytes`: the head seal every evidence key offers."""
        return self.sign_bytes(data)

    def check(self, data: bytes, signature: object) -> bool:
        """:meth:`VerifyKey.verify_bytes` with this key's public half."""
        return self.public.verify_bytes(data, signature)

    def pem(self) -> bytes:
        """The private key as an unencrypted PEM PKCS #8 document."""
        from cryptography.hazmat.primitives import serialization

        return bytes(self._key.private_bytes(serialization.Encoding.PEM,
                                             serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()))


def _read_pem(path: str | os.PathLike[str], what: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}",
                         path=str(path)) from None
    if b"-----BEGIN " not in data:
        raise InputError(f"the {what} is not a PEM file", path=str(path))
    return data


def load_signing_key(path: str | os.PathLike[str]) -> SigningKey:
    """The Ed25519 private key in the PEM file ``path``."""
    key = key_from_pem(_read_pem(path, "signing key"), path, private=True)
    assert isinstance(key, SigningKey)
    return key


def load_verify_key(path: str | os.PathLike[str]) -> VerifyKey:
    """The Ed25519 public key in the PEM file ``path`` (a private key's public half too)."""
    key = key_from_pem(_read_pem(path, "public key"), path)
    return key.public if isinstance(key, SigningKey) else key


def key_from_pem(data: bytes, path: str | os.PathLike[str], *,
                 private: bool | None = None) -> SigningKey | VerifyKey:
    """The Ed25519 key the PEM ``data`` (read from ``path``) holds: a private key as a
    :class:`SigningKey`, a public one as a :class:`VerifyKey`. ``private`` asks for one
    of the two (None: either)."""
    ed25519 = _crypto()
    from cryptography.hazmat.primitives import serialization

    holds_private = b"PRIVATE KEY-----" in data
    if private is None:
        private = holds_private
    what = "signing key" if private else "public key"
    try:
        key: Any = (serialization.load_pem_private_key(data, password=None) if private
                    else serialization.load_pem_public_key(data))
    except (ValueError, TypeError) as exc:
        raise InputError(f"the {what} cannot be read: {exc}", path=str(path)) from None
    kind = ed25519.Ed25519PrivateKey if private else ed25519.Ed25519PublicKey
    if not isinstance(key, kind):
        raise InputError(f"the {what} is not an Ed25519 key", path=str(path))
    return SigningKey(key) if private else VerifyKey(key)


def new_key_pair(path: str | os.PathLike[str]) -> SigningKey:
    """Make a key pair: the private key at ``path`` (mode 0600), the public key at
    ``path.pub``. Neither may exist already: a key is never overwritten."""
    key = SigningKey.generate()
    private = Path(path)
    public = private.with_name(private.name + ".pub")
    for target in (private, public):
        if os.path.lexists(target):
            raise InputError("already exists; a key is never overwritten", path=str(target))
    _write_new(private, key.pem(), 0o600)
    try:
        _write_new(public, key.public.pem(), 0o644)
    except InputError:
        private.unlink()
        raise
    return key


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Write a new file with ``mode`` (never through an existing one or a link)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        raise InputError(f"cannot write the key: {exc.strerror or exc}", path=str(path)) from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
