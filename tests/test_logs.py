"""The one log reader: whole lines only, bounded reads, every replica followed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfc_jupyter.logs import LogTail, OffsetPastEnd, read_chunk, replicas


def test_whole_lines_only_until_the_job_ends(tmp_path: Path) -> None:
    log = tmp_path / "chief.log"
    log.write_bytes(b"epoch 1\nepoch 2\nhalf a li")
    assert read_chunk(log, 0, final=False) == (b"epoch 1\nepoch 2\n", 25)
    assert read_chunk(log, 16, final=False) == (b"", 25)  # the half line waits
    assert read_chunk(log, 16, final=True) == (b"half a li", 25)
    assert read_chunk(tmp_path / "none.log", 0, final=False) == (b"", 0)
    with pytest.raises(OffsetPastEnd):
        read_chunk(log, 26, final=False)


def test_a_long_line_is_cut_at_a_character_boundary(tmp_path: Path) -> None:
    log = tmp_path / "chief.log"
    log.write_bytes(("é" * 10 + "\n").encode())
    data, _ = read_chunk(log, 0, 5, final=False)
    assert data == "éé".encode()  # 4 bytes: the third é's first byte is not cut off alone


def test_the_tail_follows_every_replica(tmp_path: Path) -> None:
    (tmp_path / "worker-0.log").write_text("w a\n")
    (tmp_path / "chief.log").write_text("c a\nc b")
    (tmp_path / "supervisor.log").write_text("not a replica\n")
    assert replicas(tmp_path) == ["chief", "worker-0"]
    tail = LogTail(tmp_path)
    assert tail.read() == [("chief", "c a"), ("worker-0", "w a")]
    with open(tmp_path / "chief.log", "a") as fh:
        fh.write("\r\nc c")
    assert tail.read() == [("chief", "c b")]
    assert tail.read(final=True) == [("chief", "c c")]
    assert tail.read(final=True) == []


def test_more_than_one_chunk_is_read_in_one_go(tmp_path: Path) -> None:
    lines = [f"line {i:07d}" for i in range(200_000)]  # about 2.6 MB: three chunks
    (tmp_path / "chief.log").write_text("\n".join(lines) + "\n")
    assert [line for _, line in LogTail(tmp_path).read()] == lines
