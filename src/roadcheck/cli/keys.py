"""``roadcheck keys``: Ed25519 key pairs that sign evidence and approvals."""

from __future__ import annotations

import click

from roadcheck.cli._base import FILE, cli

__all__ = ["keys"]


@cli.group(short_help="Make and name the Ed25519 keys that sign evidence.")
def keys() -> None:
    """Ed25519 key pairs: the private key signs, its public key verifies.

    Give the public key to whoever must check the evidence: it cannot sign.
    Needs roadcheck[sign].
    """


@keys.command("new", short_help="Make a key pair: NAME (private) and NAME.pub.")
@click.argument("name", type=FILE)
def new(name: str) -> None:
    """Make a new key pair: the private key at NAME (mode 0600) and the public key at
    NAME.pub, both PEM. Neither file may exist: a key is never overwritten. Prints the
    key id (ed25519: and 16 hex digits of the public key's sha256)."""
    from roadcheck.evidence.signing import new_key_pair

    key = new_key_pair(name)
    click.echo(f"{key.key_id}  {name} (private, keep it secret)  {name}.pub (public)")


@keys.command("id", short_help="Print the key id of a public or private key file.")
@click.argument("path", type=FILE)
def key_id(path: str) -> None:
    """Print the key id of the Ed25519 key in PATH (a public key, or a private key's
    public half)."""
    from roadcheck.evidence.signing import load_verify_key

    click.echo(load_verify_key(path).key_id)
