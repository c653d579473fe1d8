"""The guard: the replay spec enforced live, before each guarded call runs.

>>> import roadcheck
>>> guard = roadcheck.Guard({"mandatory_checkpoints": [
...     {"checkpoint_id": "confirm", "must_precede": "send_report",
...      "binds": {"tool": True, "args": True}}]})
>>> guard.check({"event": "action", "action_type": "send_report", "args": {"to": "cfo"}}).verdict
'ask'
>>> from roadcheck.events import args_digest
>>> _ = guard.observe({"event": "checkpoint", "checkpoint_id": "confirm", "confirmed_by": "cfo",
...                    "tool": "send_report", "args_sha256": args_digest({"to": "cfo"})})
>>> guard.check({"event": "action", "action_type": "send_report", "args": {"to": "cfo"}}).verdict
'allow'
>>> guard.check({"event": "action", "action_type": "send_report",
...              "args": {"to": "everyone"}}).verdict
'ask'
"""

from __future__ import annotations

from roadcheck.events import args_digest
from roadcheck.guard.core import Decision, Guard, GuardDenied, Verdict
from roadcheck.guard.store import GuardSession, GuardStore

__all__ = ["Decision", "Guard", "GuardDenied", "GuardSession", "GuardStore", "Verdict",
           "args_digest"]
