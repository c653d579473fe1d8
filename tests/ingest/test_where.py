"""The line of each record of a JSON document, found without decoding it again."""

from __future__ import annotations

import json

from roadcheck.ingest._where import ANY, object_lines


def test_lines_of_list_elements_and_nested_records() -> None:
    doc = {"data": [{"spans": [{"a": "x,]}{[", "b": [1, 2]}, {"c": "\\\"q\""}]},
                    {"spans": [{"d": None}]}], "other": [{"e": 1}]}
    text = json.dumps(doc, indent=2).encode()
    lines = text.decode().splitlines()
    found = object_lines(text, ("data", ANY), ("data", ANY, "spans", ANY))
    assert sorted(found) == [("data", 0), ("data", 0, "spans", 0), ("data", 0, "spans", 1),
                             ("data", 1), ("data", 1, "spans", 0)]
    for place, line in found.items():
        assert lines[line - 1].strip() == "{", (place, line)
    assert lines[found[("data", 0, "spans", 1)]].strip() == '"c": "\\\\\\"q\\""'
    # compact, one line: every object is on line 1; a top-level list by index
    compact = json.dumps([{"k": "v"}, [{"n": 1}], {"k": "}"}]).encode()
    assert object_lines(compact, (ANY,)) == {(0,): 1, (2,): 1}
    assert object_lines(compact, (1, ANY)) == {(1, 0): 1}


def test_a_key_holding_escapes_and_brackets_is_one_key() -> None:
    text = b'{"a\\"[{": [{"x": 1}],\n "trajectory": [\n {"y": 2},\n {"z": [3, {"w": 4}]}]}'
    assert object_lines(text, ("trajectory", ANY)) == {("trajectory", 0): 3,
                                                        ("trajectory", 1): 4}


def test_a_key_written_with_escapes_is_the_key_it_means():
    """``"\\u0074rajectory"`` is the key ``trajectory``, as orjson decoded the document."""
    data = b'{\n"\\u0074rajectory": [\n {"a": 1},\n {"b": 2}\n]}'
    assert object_lines(data, ("trajectory", ANY)) == {("trajectory", 0): 3,
                                                       ("trajectory", 1): 4}
