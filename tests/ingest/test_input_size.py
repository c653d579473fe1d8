"""An input past the size limit is refused with one line, and reading stops there.

An endless input (``/dev/zero``, a FIFO fed forever) given as a trajectory grew memory
without bound; the tests feed a temporary FIFO instead of naming a system path.
Every input roadcheck reads (trajectory files, FIFOs and devices,
standard input, what a gzip or zstd file decompresses to, accept's trace and
result, specs and contracts) holds at most ``ROADCHECK_MAX_INPUT_SIZE`` bytes
(1 GiB by default); reading stops at the limit and one byte.
"""

from __future__ import annotations

import errno
import gzip
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.conformance import load_spec, replay
from roadcheck.errors import InputError, TraceError
from roadcheck.ingest.native import read_bytes

ROOT = Path(__file__).resolve().parent.parent.parent
SPEC = ROOT / "examples" / "spec.json"
FIXTURE = ROOT / "examples" / "fixture_conforms.jsonl"
ACCEPT = ROOT / "examples" / "accept"
ENV = "ROADCHECK_MAX_INPUT_SIZE"


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> int:
    """A limit of 64 KiB (the fixture is far smaller)."""
    monkeypatch.setenv(ENV, "64K")
    return 64 * 1024


def _verdict(path: Path | str) -> tuple[str, str, str]:
    [r] = replay(load_spec(SPEC), [str(path)]).results
    return r.verdict, str(r.headline), r.reasons[0].message


class TestLimit:
    def test_default(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """1 GiB unless the variable says otherwise; sizes take K, M, G and T (binary)."""
        from roadcheck._limits import max_input_size

        monkeypatch.delenv(ENV, raising=False)
        assert max_input_size() == 1 << 30
        for raw, size in [("1000", 1000), ("64K", 65536), ("64k", 65536), ("2M", 2 << 20),
                          ("2MiB", 2 << 20), ("3G", 3 << 30), (" 1T ", 1 << 40),
                          ("5KB", 5120)]:
            monkeypatch.setenv(ENV, raw)
            assert max_input_size() == size, raw

    @pytest.mark.parametrize("raw", ["", "0", "-5", "lots", "1.5G", "12Q", "G"])
    def test_a_bad_value_is_one_line(self, monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
        from roadcheck._limits import max_input_size

        monkeypatch.setenv(ENV, raw)
        with pytest.raises(InputError, match=ENV):
            max_input_size()
        res = CliRunner().invoke(cli, ["replay", str(SPEC), str(FIXTURE)])
        assert res.exit_code == 2
        assert res.stderr.count("\n") == 1 and ENV in res.stderr, res.stderr


def _zeros(fifo: Path) -> threading.Thread:
    """A FIFO at ``fifo`` fed zero bytes by a writer that never stops on its own (the shape
    of ``/dev/zero``, without pointing roadcheck at a system path); it ends when the
    reader closes its end."""
    os.mkfifo(fifo)

    def feed() -> None:
        fd = os.open(fifo, os.O_WRONLY)
        block = bytes(65536)
        try:
            while True:
                os.write(fd, block)
        except OSError:  # the reader closed its end: EPIPE
            pass
        finally:
            os.close(fd)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    return writer


class TestTrajectories:
    def test_endless_zeros(self, small: int, tmp_path: Path) -> None:
        """The reproduction (``/dev/zero`` as a trajectory): refused once 64 KiB and a byte
        are read, and the writer is let go."""
        writer = _zeros(tmp_path / "zero.jsonl")
        verdict, code, message = _verdict(tmp_path / "zero.jsonl")
        assert (verdict, code) == ("ERROR", "bad-input")
        assert message == (f"the input is larger than 64 KiB ({small} bytes), the most "
                           f"roadcheck reads; set {ENV} (bytes, or with K, M, G) to read more")
        writer.join(10)
        assert not writer.is_alive()

    def test_endless_zeros_through_the_cli(self, small: int, tmp_path: Path) -> None:
        """One ERROR line in the report, exit 2."""
        writer = _zeros(tmp_path / "zero.jsonl")
        res = CliRunner().invoke(cli, ["replay", str(SPEC), str(tmp_path / "zero.jsonl")])
        assert res.exit_code == 2
        assert "detail : the input is larger than 64 KiB" in res.stdout
        writer.join(10)
        assert not writer.is_alive()

    def test_endless_fifo(self, small: int, tmp_path: Path) -> None:
        """A FIFO whose writer never stops: reading stops at the limit and one byte."""
        fifo = tmp_path / "run.jsonl"
        os.mkfifo(fifo)
        written = [0]
        ended: list[int] = []

        def feed() -> None:
            fd = os.open(fifo, os.O_WRONLY)
            block = b"x" * 4096
            try:
                while written[0] < 64 * small:  # far past the limit, unless refused
                    written[0] += os.write(fd, block)
            except OSError as exc:  # the reader closed its end: EPIPE
                ended.append(exc.errno or 0)
            finally:
                os.close(fd)

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        with pytest.raises(TraceError, match="larger than 64 KiB") as info:
            read_bytes(str(fifo))
        writer.join(10)
        assert not writer.is_alive() and ended == [errno.EPIPE]
        assert info.value.path == str(fifo)
        assert written[0] < 4 * small  # the pipe's buffer at most beyond what was read

    def test_regular_file(self, small: int, tmp_path: Path) -> None:
        """A file larger than the limit is refused (its size says so: nothing is read);
        one of exactly the limit is read."""
        path = tmp_path / "big.jsonl"
        path.write_bytes(b" " * (small + 1))
        with pytest.raises(TraceError, match="larger than 64 KiB"):
            read_bytes(str(path))
        path.write_bytes(FIXTURE.read_bytes().ljust(small))
        assert len(read_bytes(str(path))) == small

    def test_decompressed(self, small: int, tmp_path: Path) -> None:
        """A small gzip or zstd file that decompresses past the limit is refused."""
        import zstandard

        data = FIXTURE.read_bytes() + b" " * small
        gz = tmp_path / "run.jsonl.gz"
        gz.write_bytes(gzip.compress(data[:small // 2]) + gzip.compress(data[small // 2:]))
        zst = tmp_path / "run.jsonl.zst"
        zst.write_bytes(zstandard.ZstdCompressor().compress(data))
        for path in (gz, zst):
            assert path.stat().st_size < small // 8
            with pytest.raises(TraceError, match="decompressed, the input is larger than "
                                                 "64 KiB") as info:
                read_bytes(str(path))
            assert info.value.path == str(path)
        # at the limit, both read whole
        gz.write_bytes(gzip.compress(data[:small]))
        zst.write_bytes(zstandard.ZstdCompressor().compress(data[:small]))
        assert read_bytes(str(gz)) == read_bytes(str(zst)) == data[:small]

    def test_standard_input(self, small: int) -> None:
        res = CliRunner().invoke(cli, ["replay", str(SPEC), "-"], input=b" " * (small + 1))
        assert res.exit_code == 2
        assert "detail : the input is larger than 64 KiB" in res.stdout

    def test_two_processes(self, small: int, tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch) -> None:
        """--jobs workers keep the limit."""
        from roadcheck.conformance import batch

        monkeypatch.setattr(batch, "_FILES_PER_WORKER", 1)
        runs = tmp_path / "runs"
        runs.mkdir()
        (runs / "a.jsonl").write_bytes(FIXTURE.read_bytes())
        (runs / "b.jsonl").write_bytes(b" " * (small + 1))
        one = CliRunner().invoke(cli, ["replay", str(SPEC), str(runs), "--jobs", "1"])
        two = CliRunner().invoke(cli, ["replay", str(SPEC), str(runs), "--jobs", "2"])
        assert one.exit_code == two.exit_code == 2
        assert one.stdout == two.stdout
        assert one.stdout.count("larger than 64 KiB") == 1


class TestOtherInputs:
    @pytest.mark.parametrize("option", ["-t", "-r", "-c"])
    def test_accept(self, small: int, option: str, tmp_path: Path) -> None:
        """accept's trace, result and contract: exit 2, one line naming the file."""
        endless = tmp_path / "endless"
        writer = _zeros(endless)
        args = {"-c": str(ACCEPT / "contract.yaml"), "-r": str(ACCEPT / "result.json"),
                "-t": str(ACCEPT / "trace.jsonl")}
        args[option] = str(endless)
        res = CliRunner().invoke(cli, ["accept", *[x for kv in args.items() for x in kv]])
        assert res.exit_code == 2, res.output
        assert res.stdout == ""
        [line] = res.stderr.splitlines()
        assert line.startswith(f"error[bad-input]: {endless}: ") and "larger than 64 KiB" in line
        writer.join(10)
        assert not writer.is_alive()

    def test_spec(self, small: int, tmp_path: Path) -> None:
        endless = tmp_path / "endless"
        writer = _zeros(endless)
        res = CliRunner().invoke(cli, ["replay", str(endless), str(FIXTURE)])
        assert res.exit_code == 2
        [line] = res.stderr.splitlines()
        assert line.startswith(f"error[bad-input]: {endless}: ") and "larger than 64 KiB" in line
        writer.join(10)
        assert not writer.is_alive()
