"""Compressed trajectory files (.gz, .zst) are read as if they were plain."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.conformance import load_spec, replay
from roadcheck.errors import TraceError
from roadcheck.ingest import detect_format, load
from roadcheck.ingest.native import read_bytes

from ..conftest import DATA, EXAMPLES

FIXTURE = EXAMPLES / "fixture_skipped.jsonl"
TRANSCRIPT = DATA / "transcripts" / "confirmed_call.json"
SPEC = EXAMPLES / "spec.json"
AIRLINE = EXAMPLES / "tau" / "airline.yaml"


def _gz(src: Path, dest: Path) -> Path:
    dest.write_bytes(gzip.compress(src.read_bytes(), mtime=0))
    return dest


def _zst(src: Path, dest: Path) -> Path:
    dest.write_bytes(zstandard.ZstdCompressor().compress(src.read_bytes()))
    return dest


class TestReadBytes:
    """read_bytes hands every reader the decompressed document."""

    @pytest.mark.parametrize("pack", [_gz, _zst])
    def test_decompressed(self, tmp_path: Path, pack) -> None:  # type: ignore[no-untyped-def]
        """A gzip or zstd file reads back as its original bytes."""
        path = pack(FIXTURE, tmp_path / "t.jsonl.z")
        assert read_bytes(str(path)) == FIXTURE.read_bytes()

    def test_plain_file_unchanged(self) -> None:
        """An uncompressed file is returned as it is."""
        assert read_bytes(str(FIXTURE)) == FIXTURE.read_bytes()

    def test_zstd_frames_are_concatenated(self, tmp_path: Path) -> None:
        """A file of several zstd frames (as `cat a.zst b.zst` makes) reads whole."""
        data = FIXTURE.read_bytes()
        c = zstandard.ZstdCompressor()
        path = tmp_path / "t.jsonl.zst"
        path.write_bytes(c.compress(data[:100]) + c.compress(data[100:]))
        assert read_bytes(str(path)) == data

    @pytest.mark.parametrize(("pack", "name"), [(_gz, "t.jsonl.gz"), (_zst, "t.jsonl.zst")])
    def test_truncated_is_one_line_trace_error(self, tmp_path: Path, pack,  # type: ignore[no-untyped-def]
                                               name: str) -> None:
        """A cut-off archive is bad input naming the file, never a partial read."""
        path = pack(FIXTURE, tmp_path / name)
        path.write_bytes(path.read_bytes()[:-8])
        with pytest.raises(TraceError, match="cannot decompress") as info:
            read_bytes(str(path))
        assert info.value.path == str(path)
        assert "\n" not in str(info.value)

    def test_corrupt_gzip(self, tmp_path: Path) -> None:
        """A gzip header followed by garbage is bad input."""
        path = tmp_path / "t.jsonl.gz"
        path.write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 40)
        with pytest.raises(TraceError, match="cannot decompress gzip"):
            read_bytes(str(path))

    def test_missing_zstandard_names_the_extra(self, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
        """Without the zstandard module, the error says which extra to install."""
        path = _zst(FIXTURE, tmp_path / "t.jsonl.zst")
        monkeypatch.setitem(sys.modules, "zstandard", None)
        with pytest.raises(TraceError) as info:
            read_bytes(str(path))
        message = str(info.value)
        assert "pip install 'roadcheck[zstd]'" in message
        assert "\n" not in message


class TestDetection:
    """Format detection looks at the decompressed bytes."""

    @pytest.mark.parametrize(("src", "fmt"), [(FIXTURE, "native"), (TRANSCRIPT, "openai-chat")])
    @pytest.mark.parametrize("pack", [_gz, _zst])
    def test_load_detects_inside(self, tmp_path: Path, pack, src: Path,  # type: ignore[no-untyped-def]
                                 fmt: str) -> None:
        """load() names the format of the compressed document's content."""
        path = pack(src, tmp_path / (src.name + ".packed"))
        got, entries = load(str(path))
        assert got == fmt
        assert detect_format(read_bytes(str(path))) == fmt
        assert len(list(entries)) == 1


class TestReplay:
    """replay judges a compressed file exactly like the plain one."""

    @pytest.mark.parametrize("pack", [_gz, _zst])
    def test_same_verdict(self, tmp_path: Path, pack) -> None:  # type: ignore[no-untyped-def]
        """The compressed native fixture gives the same verdict and reasons."""
        path = pack(FIXTURE, tmp_path / "skipped.jsonl.gz")
        plain = replay(load_spec(SPEC), [str(FIXTURE)]).results[0]
        packed = replay(load_spec(SPEC), [str(path)]).results[0]
        assert (packed.verdict, packed.headline) == (plain.verdict, plain.headline) \
            == ("BLOCK", "checkpoint-skipped")
        assert [f.message for f in packed.reasons] == [f.message for f in plain.reasons]

    def test_transcript(self, tmp_path: Path) -> None:
        """A gzipped chat transcript is detected and judged."""
        path = _gz(TRANSCRIPT, tmp_path / "confirmed_call.json.gz")
        (result,) = replay(load_spec(AIRLINE), [str(path)]).results
        assert (result.verdict, result.source) == ("PASS", "openai-chat")

    def test_cli_missing_zstandard(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """On the command line the missing extra is an ERROR with exit 2, one line."""
        path = _zst(FIXTURE, tmp_path / "t.jsonl.zst")
        monkeypatch.setitem(sys.modules, "zstandard", None)
        out = CliRunner().invoke(cli, ["replay", str(SPEC), str(path)])
        assert out.exit_code == 2
        assert "pip install 'roadcheck[zstd]'" in out.output
        assert "Traceback" not in out.output

    def test_accept_trace_gz(self, tmp_path: Path) -> None:
        """accept reads a gzipped trace too (it shares the reader)."""
        accept = DATA / "accept"
        trace = _gz(accept / "trace_sent.jsonl", tmp_path / "trace_sent.jsonl.gz")
        out = CliRunner().invoke(cli, ["accept", "-c", str(accept / "contract.json"),
                                       "-r", str(accept / "result_sent.json"), "-t", str(trace)])
        plain = CliRunner().invoke(cli, ["accept", "-c", str(accept / "contract.json"),
                                         "-r", str(accept / "result_sent.json"),
                                         "-t", str(accept / "trace_sent.jsonl")])
        assert out.exit_code == plain.exit_code
        assert out.output.replace(str(trace), "T") == plain.output.replace(
            str(accept / "trace_sent.jsonl"), "T")
