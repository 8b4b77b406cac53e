"""The repository is self-contained: no tracked file points at documents outside it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: References to a design document outside the repository; docs/ holds the design.
#: (Spelled in pieces, so that this file does not match itself once tracked.)
FORBIDDEN = ("DES" + "IGN.md", "../" + "shared", "/work/" + "shared")


@pytest.mark.slow
def test_no_reference_outside_the_repository():
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    bad = []
    for name in listed.stdout.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:  # binary
            continue
        text = data.decode("utf-8", errors="replace")
        bad += [f"{name}: {s}" for s in FORBIDDEN if s in text]
    assert not bad, bad
