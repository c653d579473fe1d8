"""The guard key, and the seals that bind each stored file to its session and authenticate it.

Everything a guard reads back (a session's events, its engine snapshot, the
calls it asked about, the spec cache) is **sealed**: one header line, then the
payload, exact bytes::

    roadcheck-seal/1 kind=state name=sess-1 n=7 bind=- len=5120 auth=hmac-sha256 key=<id> mac=<hex>

``mac`` is the HMAC-SHA256, under the guard key, of the header up to ``mac=``, the
**scope** (the sha256 of the state directory's real path, so a file copied from
another state directory does not verify) and the payload. ``kind`` and ``name``
say what the file is and whose (a session id, or a spec digest), ``n`` is a
counter that only grows, ``bind`` ties the file to another (the decision log's
head, for the asked calls). A file of the wrong kind or session, edited,
extended, cut, sealed with another key or with none is refused: the call is
denied with one line naming the file.

Rollback (an older, genuine copy put back) cannot be told from the state
directory alone, so each keyed session has a **head** beside the key, outside
the state directory (:func:`roadcheck.guard.paths.heads_dir`): the generation of
the session's state file, its MAC, and the decision log's count and last hash.
The head is sealed too. A state older than its head, or a log shorter than it,
is refused; a state *newer* than its head (the head is written after the state,
without fsync, and a crash can lose it) is genuine, since only a key holder can
seal it.

Without a key (its directory cannot be written, or ``--no-key``), seals carry a
sha256 instead of a MAC (``auth=none``) and there is no head: a careless edit is
still refused, but whoever can write the state directory can reseal anything.

The key is created on first use: 32 random bytes, hex, in a file of mode 0600
(in a directory of mode 0700), written under a temporary name and linked into
place, so it appears whole or not at all and two guards starting at once agree.
A key file others can read is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from roadcheck.errors import EvidenceError, StoreError
from roadcheck.evidence.keys import AUTH_HMAC, AUTH_NONE, EvidenceKey
from roadcheck.guard import files
from roadcheck.guard.paths import ENV_KEY_FILE, default_key_path, heads_dir, no_key_requested

__all__ = ["MAGIC", "Forged", "GuardKey", "Heads", "Sealed", "Sealer", "guard_key", "scope_of"]

MAGIC = b"roadcheck-seal/1"
_HEADER = re.compile(
    rb"roadcheck-seal/1 kind=([a-z]+) name=([A-Za-z0-9._-]+) n=(0|[1-9][0-9]{0,18}) "
    rb"bind=([A-Za-z0-9:._-]+) len=(0|[1-9][0-9]{0,18}) auth=(none|hmac-sha256) "
    rb"key=([0-9a-f]{16}|-) mac=([0-9a-f]{64})")
#: Bytes a header can take at most (a longer first line is not a seal).
_HEADER_MAX = 512

#: What a refusal says was done to the file, as :class:`~roadcheck.evidence.ChainCheck`
#: names it: ``forged`` (resealed, another key), ``edited`` (a record changed),
#: ``unanchored`` (not a seal, another kind, session or store), ``rehashed`` (replaced by
#: another genuine copy), ``cut`` (rolled back, truncated, deleted), ``appended`` (records
#: the head does not count), ``unauthenticated`` (no MAC where one is due).
Problem = Literal["forged", "edited", "unanchored", "rehashed", "cut", "appended",
                  "unauthenticated"]


class Forged(EvidenceError):
    """A stored guard file that is not what the guard wrote for this session, now."""

    def __init__(self, message: str, *, path: str | None = None,
                 problem: Problem = "forged") -> None:
        super().__init__(message, path=path)
        self.problem: Problem = problem


def scope_of(state_dir: Path) -> str:
    """The sha256 (hex) of the state directory's real path: what every seal is bound to."""
    return hashlib.sha256(os.fsencode(os.path.realpath(state_dir))).hexdigest()


@dataclass(frozen=True, slots=True)
class Sealed:
    """An opened seal: its header fields and the payload."""

    kind: str
    name: str
    counter: int
    bind: str
    auth: str
    key_id: str | None
    mac: str
    payload: bytes


class Sealer:
    """Seals and opens guard files: HMAC-SHA256 under ``key``, or sha256 without one."""

    def __init__(self, key: EvidenceKey | None, scope: str, signer: Any = None) -> None:
        self.key = key
        #: The Ed25519 :class:`~roadcheck.evidence.signing.SigningKey` that also signs the
        #: decision log's head (see :mod:`roadcheck.guard.signed`), or None.
        self.signer = signer
        self.scope = scope.encode()
        self.auth = AUTH_HMAC if key is not None else AUTH_NONE
        self.key_id = key.key_id if key is not None else None

    def _mac(self, signed: bytes, payload: bytes) -> str:
        body = signed + b"\n" + self.scope + b"\n"
        if self.key is None:
            h = hashlib.sha256(body)
            h.update(payload)
            return h.hexdigest()
        m = hmac.new(self.key.secret, body, hashlib.sha256)
        m.update(payload)
        return m.hexdigest()

    def seal(self, kind: str, name: str, counter: int, payload: bytes, bind: str = "-",
             ) -> bytes:
        """``payload`` with its seal line before it."""
        signed = (f"roadcheck-seal/1 kind={kind} name={name} n={counter} bind={bind} "
                  f"len={len(payload)} auth={self.auth} key={self.key_id or '-'}").encode()
        return signed + b" mac=" + self._mac(signed, payload).encode() + b"\n" + payload

    def open(self, raw: bytes, path: Path, kind: str, name: str, *,
             torn_ok: bool = False) -> Sealed | None:
        """The seal of ``raw`` (the bytes of ``path``) when it is this store's ``kind`` of
        file for ``name``; otherwise :class:`Forged`.

        ``torn_ok`` (a cache): an empty file, as a crash can leave one renamed into
        place without fsync, is None rather than an error. Anything else that does
        not verify, a file cut short included, is refused: a rename never leaves
        half a file.
        """
        where = str(path)
        if not raw and torn_ok:
            return None
        line, sep, payload = raw[:_HEADER_MAX].partition(b"\n")
        if not sep:
            raise Forged("is not a sealed guard file (written by hand, or by an earlier "
                         "roadcheck)", path=where, problem="unanchored")
        found = _HEADER.fullmatch(line)
        if found is None:
            raise Forged("is not a sealed guard file (written by hand, or by an earlier "
                         "roadcheck)", path=where, problem="unanchored")
        payload = raw[len(line) + 1:]
        f_kind, f_name, n, bind, length, auth, key_id, mac = (g.decode() for g in
                                                              found.groups())
        if len(payload) != int(length):
            raise Forged(f"its seal counts {length} bytes but {len(payload)} follow: "
                         f"{'cut' if len(payload) < int(length) else 'extended'}", path=where,
                         problem="cut" if len(payload) < int(length) else "forged")
        if f_kind != kind:
            raise Forged(f"holds a guard {f_kind} file where its {kind} file belongs",
                         path=where, problem="unanchored")
        if f_name != name:
            whose = "session" if kind != "spec" else "spec"
            raise Forged(f"belongs to {whose} {f_name!r}, not {name!r}: copied from another "
                         f"{whose}", path=where, problem="unanchored")
        if auth != self.auth:
            if self.key is None:
                raise Forged(f"is authenticated (key id {key_id}) but this guard has no key: "
                             f"give it with --key-file or {ENV_KEY_FILE}", path=where,
                             problem="unauthenticated")
            raise Forged(f"carries no MAC, but the guard has a key (key id {self.key_id}): "
                         "it was written without the key", path=where,
                         problem="unauthenticated")
        if self.key is not None and key_id != self.key_id:
            raise Forged(f"was sealed with another key (key id {key_id}, the guard's is "
                         f"{self.key_id})", path=where)
        signed = line[:line.rindex(b" mac=")]
        if not hmac.compare_digest(self._mac(signed, payload), mac):
            what = "MAC" if self.key is not None else "digest"
            raise Forged(f"its {what} does not verify: edited, or moved from another state "
                         "directory", path=where)
        return Sealed(f_kind, f_name, int(n), bind, auth, key_id if key_id != "-" else None,
                      mac, payload)


# -- the key -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class GuardKey:
    """The key a guard runs with: the key (None without one), its file, and when there is
    none, why (said once on standard error)."""

    key: EvidenceKey | None
    path: Path | None
    notice: str | None = None


def _inside(path: Path, directory: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(directory))
    except ValueError:
        return False
    return True


def _create_key(path: Path) -> None:
    """Write a new random key at ``path`` whole or not at all; another guard's key that
    appeared first is kept."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    secret = os.urandom(32).hex().encode() + b"\n"
    fd, tmp = files.temporary(path.parent, path.name)
    try:
        try:
            os.write(fd, secret)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # fails when a key is there: that one is kept
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            if not path.exists():
                os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    from roadcheck._files import fsync_dir

    with contextlib.suppress(OSError):
        fsync_dir(path.parent)


def _read_key(path: Path) -> EvidenceKey:
    from roadcheck._files import FileRefused, read_regular

    try:
        raw = read_regular(path)
        mode = os.stat(path).st_mode
    except FileRefused as exc:
        raise StoreError(f"cannot use the guard key: {exc.why}", path=str(path)) from None
    except OSError as exc:
        raise StoreError(f"cannot read the guard key: {exc.strerror or exc}",
                         path=str(path)) from None
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise StoreError("the guard key is readable by others: chmod 600 it",
                         path=str(path))
    secret = raw.strip()
    if len(secret) < 16:
        raise StoreError(f"the guard key holds {len(secret)} bytes; a key is at least 16 "
                         "random bytes", path=str(path))
    return EvidenceKey(secret)


def guard_key(key_file: str | os.PathLike[str] | None = None, *, no_key: bool = False,
              state_dir: Path | None = None, create: bool = True) -> GuardKey:
    """The guard's key: ``key_file``, else ``$ROADCHECK_GUARD_KEY_FILE``, else the user's
    (:func:`~roadcheck.guard.paths.default_key_path`), created there on first use.

    A key named explicitly must be usable (else :class:`StoreError`); the user's
    default key, when its directory cannot be written, leaves the guard without a
    key, and the notice says why. ``no_key`` (or ``ROADCHECK_GUARD_NO_KEY``) asks for none.
    A key inside ``state_dir`` is refused: whoever writes the state could read it.
    """
    if no_key or no_key_requested():
        return GuardKey(None, None, "running without a key (--no-key or "
                        "ROADCHECK_GUARD_NO_KEY): its session state is not authenticated; "
                        "only careless edits of it are detected")
    named = key_file if key_file is not None else (os.environ.get(ENV_KEY_FILE) or None)
    path = Path(named) if named is not None else Path(default_key_path())
    if state_dir is not None and _inside(path, state_dir):
        raise StoreError("the guard key is inside the state directory, where whoever writes "
                         "the state could read it: keep it elsewhere", path=str(path))
    if not os.path.lexists(path) and create:
        try:
            _create_key(path)
        except (OSError, files.StateFileError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            if named is not None:
                raise StoreError(f"cannot create the guard key: {why}", path=str(path)) \
                    from None
            return GuardKey(None, None, f"no key: cannot create {path} ({why}); its session "
                            "state is not authenticated, only careless edits of it are "
                            "detected")
    if not os.path.lexists(path):
        return GuardKey(None, path, f"no key at {path}")
    return GuardKey(_read_key(path), path)


_said: set[str] = set()


def say_once(notice: str) -> None:
    """Write ``notice`` to standard error, once per process."""
    if notice in _said:
        return
    _said.add(notice)
    try:
        sys.stderr.write(f"roadcheck guard: {notice}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


# -- the heads beside the key --------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Head:
    """What a session's head records: its state file's generation and MAC, and its
    decision log's count and last hash."""

    generation: int
    state_mac: str
    decisions: int
    last_hash: str


class Heads:
    """The heads of one state directory's sessions, kept beside the key."""

    def __init__(self, key_path: Path, scope: str, sealer: Sealer) -> None:
        self.dir = heads_dir(key_path) / scope[:32]
        self.sealer = sealer

    def path(self, session: str) -> Path:
        """Where the head of ``session`` is kept."""
        return self.dir / f"{session}.head"

    def read(self, session: str) -> Head | None:
        """The session's head; None when it has none (an empty file counts as none: a
        crash can leave one so)."""
        path = self.path(session)
        raw = files.read(path)
        if not raw:
            return None
        sealed = self.sealer.open(raw, path, "head", session)
        assert sealed is not None
        count, _, last = sealed.bind.partition(":")
        if not count.isdigit():
            raise Forged("is not a session head", path=str(path), problem="unanchored")
        return Head(sealed.counter, sealed.payload.rstrip(b" ").decode("ascii", "replace"),
                    int(count), last)

    def _sealed(self, session: str, head: Head) -> bytes:
        """The head as :data:`HEAD_SLOT` bytes: its payload (the state's MAC) padded."""
        bind = f"{head.decisions}:{head.last_hash}"
        mac = head.state_mac.encode()
        pad = HEAD_SLOT - len(self.sealer.seal("head", session, head.generation, mac, bind))
        for _ in range(3):  # the length field can grow a digit with the padding
            data = self.sealer.seal("head", session, head.generation, mac + b" " * pad, bind)
            if len(data) == HEAD_SLOT or pad <= 0:
                break
            pad -= len(data) - HEAD_SLOT
        return data

    def write(self, session: str, head: Head) -> None:
        """Write the session's head, without fsync (see the module docstring): in place,
        one sector-sized write at offset 0, when a head is there; else atomically."""
        path = self.path(session)
        data = self._sealed(session, head)
        if len(data) == HEAD_SLOT and _rewrite_in_place(path, data):
            return
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        files.write(path, data, durable=False)


#: The size of a head file: small enough to be written in one sector.
HEAD_SLOT = 512


def _rewrite_in_place(path: Path, data: bytes) -> bool:
    """Overwrite the regular file of ``len(data)`` bytes at ``path``; False when there is none."""
    flags = os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
        | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
            return False
        if hasattr(os, "pwrite"):
            return os.pwrite(fd, data, 0) == len(data)
        os.lseek(fd, 0, os.SEEK_SET)
        return os.write(fd, data) == len(data)
    except OSError:
        return False
    finally:
        os.close(fd)
