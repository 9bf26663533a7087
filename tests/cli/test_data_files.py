"""A device, a FIFO or a folder given as a data file ends a command at once with exit code 2 and one line that
names the fix (issue 19: ``audit-log /dev/zero`` read 10 GB in 30 s, a FIFO blocked forever)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "expeval" / "run_a.txt"
FIX = "not a regular file; give the path of a data file (.jsonl, .csv, .txt, .gz)"


def _cli(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "fairrag_core", *argv], capture_output=True, text=True, timeout=60,
                          env=env, cwd=ROOT)


@pytest.mark.parametrize("argv, bad", [
    (["audit-log", "/dev/zero", "--no-store"], "/dev/zero: is a character device"),
    (["evaluate-run", "running-shoes", "/dev/zero"], "/dev/zero: is a character device"),
    (["evaluate-run", "/dev/zero", str(RUN)], "/dev/zero: is a character device"),
])
def test_a_device_ends_the_command_at_once(argv, bad):
    done = _cli(*argv)  # the timeout is the "at once": /dev/zero never ends
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == f"error: {bad}, {FIX}"


def test_a_fifo_or_a_link_to_a_device_or_a_folder_as_well(tmp_path):
    fifo = tmp_path / "log.jsonl"
    os.mkfifo(fifo)  # nobody writes: opening it to read would block for ever
    link = tmp_path / "run.txt"
    link.symlink_to("/dev/zero")
    for argv, words in ((["audit-log", str(fifo), "--no-store"], f"{fifo}: is a FIFO (named pipe)"),
                        (["evaluate-run", str(link), str(RUN)], f"{link}: is a character device"),
                        (["evaluate-run", "running-shoes", str(tmp_path)], f"{tmp_path}: is a folder")):
        done = _cli(*argv)
        assert done.returncode == 2 and done.stderr.strip() == f"error: {words}, {FIX}", done.stderr
