"""A throwaway PostgreSQL schema per test, on the server named by ``ROADCHECK_TEST_DATABASE_URL``.

The default is the local server at 127.0.0.1:5432 (trust auth, database ``test``).
Each test gets its own schema, reached through the URL's ``search_path``, so tests
run in parallel and leave nothing behind. An unreachable server fails the test
with a message saying how to start one; it is never skipped.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


def base_url() -> str:
    """The server the tests use."""
    return os.environ.get("ROADCHECK_TEST_DATABASE_URL") or DEFAULT_URL


def in_schema(url: str, schema: str) -> str:
    """``url`` with every connection's ``search_path`` set to ``schema``."""
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


@contextmanager
def pg_schema() -> Iterator[str]:
    """Create a fresh schema, yield a URL that uses it, drop it afterwards."""
    url = base_url()
    schema = f"roadcheck_test_{secrets.token_hex(6)}"
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL is not reachable at {url} ({' '.join(str(exc).split())}); "
                    "start it (pg_isready; service postgresql start) or set "
                    "ROADCHECK_TEST_DATABASE_URL", pytrace=False)
    try:
        conn.execute(f"CREATE SCHEMA {schema}")
        yield in_schema(url, schema)
    finally:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.close()


def sql(url: str, statement: str, *args: object) -> list[tuple[object, ...]]:
    """Run one statement as an attacker with database access would; return its rows."""
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, args)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []
