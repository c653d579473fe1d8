"""The role guard, run-time half: one role and one identity per invocation.

The spec half lives in :mod:`roadcheck.harness.model` (a review phase cannot share
the reviewed phase's role). Here the acting identity is compared with the
identity persisted in the reviewed phase's passing record. The check is only as
strong as the boundary between identities: run producer and reviewer in
separate jobs, containers or accounts.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Iterable, Mapping
from typing import Any

from roadcheck.errors import InputError

__all__ = ["check_role", "default_identity", "review_refusal"]


def check_role(role: str, roles: Iterable[str], workflow: str) -> None:
    """Refuse a role no phase of the workflow has: such an invocation could only wait."""
    known = sorted(set(roles))
    if role not in known:
        raise InputError(f"no phase of workflow {workflow!r} has role {role!r}; its roles: "
                         f"{', '.join(known)}")


def default_identity() -> str:
    """``ROADCHECK_IDENTITY``, else the operating-system user."""
    found = os.environ.get("ROADCHECK_IDENTITY")
    if found:
        return found
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        raise InputError("no identity: pass --identity or set ROADCHECK_IDENTITY") from None


def review_refusal(phase: str, reviewed: str, record: Mapping[str, Any] | None,
                   identity: str) -> str | None:
    """Why ``identity`` may not run review ``phase``, or ``None`` when it may."""
    if record is None:
        return (f"phase {phase!r} reviews {reviewed!r}, which has no passing record; "
                "nothing to review")
    if record.get("identity") == identity:
        ref = str(record.get("hash"))[:12]
        return (f"identity {identity!r} produced {reviewed!r} (record {ref}) "
                f"and may not review it in {phase!r}")
    return None
