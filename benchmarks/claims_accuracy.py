"""How well the coding-agent contract tells a backed claim from one the session does not back.

Run: ``python benchmarks/claims_accuracy.py [--labels tests/data/claims/labels.jsonl]``.

Each line of the labels file is one claim a turn end of a real session makes
(``session``, the ``seq`` of the turn-end message, the ``claim`` id of the
contract, the quoted ``words``), labelled ``backed``, ``not_backed`` or
``no_claim`` (the contract's pattern fires on words that make no such claim) by
reading the session, with a one-line ``reason``; ``uncertain: true`` keeps a
label out of the figures. The script judges every turn end of every labelled
session with ``builtin:coding-agent`` (no model, no network) and counts, for
"not backed" as the positive class:

- a true positive: labelled not_backed, and the contract rejects it;
- a false positive: labelled backed or no_claim, and the contract rejects it;
- a false negative: labelled not_backed, and the contract does not reject it
  (its pattern does not find the claim, or it finds it backed).

Prints the confusion table, precision and recall, the claims the patterns do not
find, and exits 1 when precision or recall is under its floor, when fewer claims
than ``--min-claims`` are counted, or when the contract rejects a claim no label
covers (every finding must be labelled). Only a label ``backed`` or
``not_backed`` (and not uncertain) counts as a claim toward ``--min-claims``: a
``no_claim`` label is a misfire of a pattern, counted apart (it still counts
as a false positive when the contract rejects it).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "tests" / "data" / "claims" / "labels.jsonl"
#: Every session whose turn ends were read for the labels, one path a line.
SESSIONS = ROOT / "tests" / "data" / "claims" / "sessions.txt"
LABEL_VALUES = ("backed", "not_backed", "no_claim")


@dataclass(frozen=True, slots=True)
class Label:
    session: str
    seq: int
    claim: str
    words: str
    label: str
    reason: str
    uncertain: bool


@dataclass(slots=True)
class Tally:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def read_labels(path: Path) -> list[Label]:
    """The labels file, one claim a line; a bad line is a ValueError naming it."""
    out: list[Label] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            label = Label(str(d["session"]), int(d["seq"]), str(d["claim"]), str(d["words"]),
                          str(d["label"]), str(d["reason"]), bool(d.get("uncertain", False)))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: not a label ({exc})") from None
        if label.label not in LABEL_VALUES:
            raise ValueError(f"{path}:{n}: label {label.label!r} is none of {LABEL_VALUES}")
        out.append(label)
    return out


def judge(sessions: list[str]) -> dict[tuple[str, int, str], bool]:
    """(session, seq, claim id) -> whether the contract finds that claim backed."""
    from roadcheck.acceptance import load_contract, load_session, said_at_turn_ends
    from roadcheck.acceptance.files import contract_file

    contract = load_contract(contract_file("builtin:coding-agent"))
    found: dict[tuple[str, int, str], bool] = {}
    for session in sessions:
        for end in said_at_turn_ends(contract, load_session(ROOT / session)):
            for shown in end.shown:
                found[(session, end.seq, shown.claim)] = shown.ok
    return found


def measure(labels: list[Label], read: list[str]
            ) -> tuple[Tally, list[Label], list[Label], list[str]]:
    """The tally; the labelled claims the patterns miss; the errors (false verdicts of
    either sign); the findings no label covers, over the sessions ``read`` and those
    the labels name."""
    found = judge(sorted({lab.session for lab in labels} | set(read)))
    tally = Tally()
    missed: list[Label] = []
    wrong: list[Label] = []
    for lab in labels:
        key = (lab.session, lab.seq, lab.claim)
        if key not in found and lab.label != "no_claim":
            missed.append(lab)
        if lab.uncertain:
            continue
        rejected = found.get(key) is False
        positive = lab.label == "not_backed"
        if positive and rejected:
            tally.tp += 1
        elif positive:
            tally.fn += 1
            wrong.append(lab)
        elif rejected:
            tally.fp += 1
            wrong.append(lab)
        else:
            tally.tn += 1
    covered = {(lab.session, lab.seq, lab.claim) for lab in labels}
    unlabelled = [f"{s} seq {q} {c} ({'backed' if ok else 'rejected'})"
                  for (s, q, c), ok in sorted(found.items()) if (s, q, c) not in covered]
    return tally, missed, wrong, unlabelled


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--sessions", type=Path, default=SESSIONS,
                        help="the sessions read, one path a line (default: sessions.txt)")
    parser.add_argument("--precision", type=float, default=0.99,
                        help="floor for the precision of 'not backed' (default 0.99)")
    parser.add_argument("--recall", type=float, default=0.9,
                        help="floor for the recall of 'not backed' (default 0.9)")
    parser.add_argument("--min-claims", type=int, default=300,
                        help="fewest labelled claims the figures may rest on (default 300)")
    args = parser.parse_args(argv)
    labels = read_labels(args.labels)
    read = [line.strip() for line in args.sessions.read_text(encoding="utf-8").splitlines()
            if line.strip()] if args.sessions.exists() else []
    tally, missed, wrong, unlabelled = measure(labels, read)
    sessions = len({lab.session for lab in labels} | set(read))
    uncertain = sum(1 for lab in labels if lab.uncertain)
    misfires = sum(1 for lab in labels if not lab.uncertain and lab.label == "no_claim")
    counted = len(labels) - uncertain - misfires
    print(f"labels: {len(labels)} from {sessions} sessions read ({uncertain} uncertain, "
          f"left out)")
    print(f"claims counted (backed or not_backed): {counted}")
    print(f"misfires counted (no_claim): {misfires}")
    print("                      contract rejects   contract does not")
    print(f"labelled not_backed   {tally.tp:16d}   {tally.fn:17d}")
    print(f"labelled backed/none  {tally.fp:16d}   {tally.tn:17d}")
    print(f"precision (not backed): {tally.precision:.3f} (floor {args.precision})")
    print(f"recall (not backed):    {tally.recall:.3f} (floor {args.recall})")
    print(f"claims the patterns do not find: {len(missed)}")
    for lab in missed:
        print(f"  {lab.label:10s} {lab.claim:12s} {lab.words[:70]!r} ({lab.session} seq {lab.seq})")
    for lab in wrong:
        print(f"wrong verdict: labelled {lab.label}: {lab.claim} {lab.words[:60]!r} "
              f"({lab.session} seq {lab.seq})")
    for line in unlabelled:
        print(f"finding with no label: {line}")
    ok = (tally.precision >= args.precision and tally.recall >= args.recall
          and counted >= args.min_claims and not unlabelled)
    if counted < args.min_claims:
        print(f"MISS: {counted} counted claims, fewer than {args.min_claims}")
    print("OK" if ok else "MISS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
