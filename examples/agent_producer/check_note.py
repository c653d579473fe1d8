"""The gate: a release note must be JSON that tells the truth about the change it announces."""

import json
import sys

change_path, note_path = sys.argv[1], sys.argv[2]
with open(change_path, encoding="utf-8") as fh:
    change = fh.read()
try:
    with open(note_path, encoding="utf-8") as fh:
        note = json.load(fh)
except ValueError as exc:
    sys.exit(f"the note is not JSON: {exc}")
if not isinstance(note, dict) or set(note) != {"version", "title", "summary", "breaking"}:
    sys.exit("the note must be an object with exactly version, title, summary and breaking")
problems = []
if note["version"] != change.split()[1]:
    problems.append(f"version is {note['version']!r}, the change announces {change.split()[1]!r}")
if not isinstance(note["title"], str) or not 0 < len(note["title"]) <= 60:
    problems.append("title must be text of 1 to 60 characters")
if note["breaking"] is not ("BREAKING" in change):
    problems.append(f"breaking is {note['breaking']!r}, but the change "
                    f"{'is' if 'BREAKING' in change else 'is not'} marked BREAKING")
if problems:
    print("; ".join(problems))
    sys.exit(1)
