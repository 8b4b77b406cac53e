"""The distributed HPL benchmark (benchmarks/mpi/hpl.py): its helpers without MPI, and
short runs under ``mpiexec`` (skipped where mpi4py or mpiexec is missing, as
tests/test_distributed.py) whose JSON and HPL lines are checked, the traffic of rank 0
against counts derived here from the schedule of ozaki.distributed.lu."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import hpl as serial_hpl
from benchmarks.mpi import hpl, hpl_probe

HERE = Path(__file__).parent
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
needs_mpi = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or MPIEXEC is None,
                               reason="mpi4py or mpiexec not found (the mpi extra)")
TV = re.compile(r"^(emulated|native) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+\.\d{4}) +"
                r"(\d\.\d{4}e[+-]\d\d)$", re.M)


# --- the helpers, no MPI ---------------------------------------------------------------

def test_weak_size_by_hand():
    assert hpl.weak_size(100, 16, 1) == 96  # 100 / 16 = 6.25 -> 6 blocks
    assert hpl.weak_size(64, 16, 8) == 128  # 64 * 8^(1/3) = 127.99999999999997 -> 8 blocks
    assert hpl.weak_size(64, 16, 2) == 80  # 80.63 -> 5 blocks
    assert hpl.weak_size(5, 16, 4) == 16  # never below one block


@given(st.integers(1, 5000), st.integers(1, 512), st.integers(1, 64))
def test_weak_size_is_the_nearest_multiple_of_nb(n, nb, r):
    got = hpl.weak_size(n, nb, r)
    target = n * r ** (1 / 3)
    assert got % nb == 0 and got >= nb
    assert abs(got - target) <= nb / 2 + 1e-9 or got == nb


def test_scaled_residual_by_hand():
    # r = A x - b = (0, -1/2): ||r|| = 1/2, ||A|| = 7, ||x|| = 1, ||b|| = 15/2, n = 2:
    # 1/2 / (2^-53 (7 + 15/2) 2) = 2^52 / 29
    A, x, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.ones(2), np.array([3.0, 7.5])
    got = serial_hpl.scaled_residual(A, x, b)
    assert got["residual"] == 2.0 ** 52 / 29 and not got["passed"]
    assert (got["norm_r"], got["norm_a"], got["norm_x"], got["norm_b"]) == (0.5, 7.0, 1.0, 7.5)
    assert serial_hpl.scaled_residual(A, x, A @ x)["residual"] == 0.0


def test_traffic_merged_over_calls_and_maximised_per_kind():
    f = SimpleNamespace(by_kind={"panels": (100, 2), "pivots": (8, 1)})
    s = SimpleNamespace(by_kind={"panels": (50, 1), "rhs": (16, 1)})
    assert hpl.merge_traffic(f, s, SimpleNamespace(by_kind=None)) == {
        "panels": [150, 3], "pivots": [8, 1], "rhs": [16, 1]}
    ranks = [{"panels": [150, 3]}, {"panels": [90, 5], "decisions": [4, 1]}]
    assert hpl.traffic_max(ranks) == {"decisions": [4, 1], "panels": [150, 5]}


def _record(kind, ranks, seconds, n=64):
    return {"kind": kind, "ranks": ranks, "n": n,
            "gflops": serial_hpl.hpl_flops(n) / seconds / 1e9}


def test_efficiency_against_the_one_rank_run_of_the_same_kind():
    runs = [_record("emulated", 1, 8.0), _record("native", 1, 2.0),
            _record("emulated", 2, 5.0), _record("native", 4, 1.0)]
    hpl.set_efficiency(runs)
    assert [r["efficiency"] for r in runs] == pytest.approx([1.0, 1.0, 8 / (2 * 5), 2 / 4])
    weak = [_record("native", 1, 1.0, n=64), _record("native", 8, 2.0, n=128)]
    hpl.set_efficiency(weak)  # about 8 times the flops on 8 ranks in twice the time
    f = serial_hpl.hpl_flops
    assert weak[1]["efficiency"] == pytest.approx(f(128) / 2 / (8 * f(64))) != 0.5
    alone = [_record("native", 4, 1.0)]
    hpl.set_efficiency(alone)
    assert alone[0]["efficiency"] is None


def test_hpl_lines_align_with_the_header_and_label_oversubscription():
    rec = {"kind": "emulated", "n": 2048, "nb": 256, "P": 1, "Q": 2, "seconds": 12.34567,
           "gflops": 0.4567, "residual": 20.5, "passed": False, "ranks": 4, "cores": 2,
           "oversubscribed": True, "efficiency": None, "factor_seconds": 12.0,
           "solve_seconds": 0.34567, "products": {"total": 3, "emulated": 2, "compensated": 1},
           "bitwise_vs_serial": True, "phases": dict.fromkeys(hpl.PHASES, 0.5),
           "communication_share": 0.04, "traffic_rank0": {"panels": [10, 1]},
           "traffic_max": {"panels": [12, 2]}}
    lines = hpl.run_lines(rec)
    tv = lines[2]

    def ends(s):
        return [m.end() for m in re.finditer(r"\S+", s)]
    assert TV.match(tv) and ends(tv)[1:] == ends(serial_hpl.HEADER)[1:]  # right-aligned
    assert lines[4].endswith("...... FAILED") and "20.5" in lines[4]
    text = "\n".join(lines)
    assert "OVERSUBSCRIBED (4 ranks > 2 cores)" in text and "efficiency -" in text
    assert "serial bits: identical" in text and "panels=10B/1|12B/2" in text


@given(st.integers(1, 300), st.integers(1, 64), st.integers(0, 2 ** 32))
def test_uniform_pivots_are_lu_pivots(n, w, seed):
    w = min(w, n)
    piv = hpl_probe.uniform_pivots(n, w, np.random.default_rng(seed))
    assert piv.shape == (w,) and piv.dtype == np.int64
    assert np.all(piv >= np.arange(w)) and np.all(piv < n)
    again = hpl_probe.uniform_pivots(n, w, np.random.default_rng(seed))
    assert np.array_equal(piv, again)  # the same draw on every rank


def test_moved_bytes_by_hand():
    # nb = 2, P = 2: rows 0, 1, 4, 5 on process row 0, rows 2, 3, 6, 7 on 1
    moves = {0: 6, 6: 0, 1: 4, 4: 3, 3: 1}  # row: the row whose values end there
    # process row 0 writes rows 0, 1, 4 and reads the sources 0, 4, 1 (of 6, 4, 3);
    # process row 1 writes 6, 3 and reads 6, 3 (of 0 and 1)
    assert hpl_probe.moved_bytes(moves, 2, 2, 0, 10) == 8 * 10 * (3 + 3)
    assert hpl_probe.moved_bytes(moves, 2, 2, 1, 10) == 8 * 10 * (2 + 2)
    assert hpl_probe.moved_bytes({}, 2, 2, 0, 10) == 0
    assert hpl_probe.moved_bytes(moves, 2, 1, 0, 5) == 8 * 5 * 2 * len(moves)  # one row: all


# --- under mpiexec ---------------------------------------------------------------------

def _warm():
    """Compile (or load from numba's cache) the serial kernels here first: ranks compiling
    them at once take a minute (the distributed panel's few kernels are left to them)."""
    import ozaki
    from ozaki import linalg
    A, b = serial_hpl.hpl_problem(40, 1)
    for small in (True, False):  # the compensated and the emulated products
        with ozaki.set_small_products(small):
            linalg.lu_solve(linalg.lu_factor(A, block_size=16), b[:, None], block_size=16)


def _run(n_ranks: int, *args: str, timeout: int = 240) -> str:
    _warm()
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([MPIEXEC, "-n", str(n_ranks), sys.executable, "-m",
                           "benchmarks.mpi.hpl", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=str(HERE.parent))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def rank0_traffic(n: int, nb: int, P: int, Q: int) -> dict:
    """What rank (0, 0) sends in lu_factor then lu_solve (one right-hand side), by the
    schedule of ozaki.distributed.lu (flat collectives: a root sends s - 1 messages)."""
    mine_r = [i for i in range(n) if (i // nb) % P == 0]  # its global rows
    mine_c = [j for j in range(n) if (j // nb) % Q == 0]  # and columns
    out = {"panels": [0, 0], "pivots": [0, 0], "rhs": [8 * len(mine_r) * (Q - 1), Q - 1]}

    def add(kind, nbytes, copies):
        out[kind][0] += nbytes * copies
        out[kind][1] += copies

    for k in range(0, n, nb):
        K, w, e = k // nb, min(nb, n - k), min(k + nb, n)
        if K % Q == 0:  # its process column holds the panel
            for _ in range(w):  # one all-gather of 3 + 2w int64 per column
                add("pivots", 8 * (3 + 2 * w), P - 1)
            add("pivots", 8 * (w + 1), Q - 1)  # the pivots along the process row
            add("panels", 8 * w * sum(i >= k for i in mine_r), Q - 1)
            for _ in range(2):  # the solve: the block column of L, then of U
                add("panels", 8 * w * len(mine_r), Q - 1)
        if K % P == 0:  # its process row holds the diagonal block
            if e < n:
                add("panels", 8 * w * sum(j >= e for j in mine_c), P - 1)  # U12
            for _ in range(2):  # the solve: the solved block of x, down, then up
                add("panels", 8 * w, P - 1)
    return out


def test_rank0_traffic_by_hand():
    # n = 100, nb = 16, 2 x 2: rank 0 holds blocks 0, 2, 4, 6 (widths 16, 16, 16, 4) of
    # both the rows and the columns. Pivots: 16 (3 + 32) 8 bytes x 3 panels + 4 (3 + 8) 8,
    # and (17 x 3 + 5) 8 bytes along the row
    got = rank0_traffic(100, 16, 2, 2)
    assert got["pivots"] == [3 * 16 * 35 * 8 + 4 * 11 * 8 + (3 * 17 + 5) * 8, 3 * 17 + 5]
    assert got["rhs"] == [52 * 8, 1]
    assert rank0_traffic(64, 16, 1, 1) == {"panels": [0, 0], "pivots": [0, 0], "rhs": [0, 0]}


def _check_probes(r: dict, n: int, nb: int, P: int, Q: int) -> None:
    """The measured inputs of a record (benchmarks/mpi/hpl_probe.py), their sizes by hand."""
    from ozaki.distributed.rows import composed

    from tme_model.network import RankRates

    def held(size, parts, part, start):  # the indices >= start of a cyclic share
        return sum(1 for i in range(start, size) if (i // nb) % parts == part)
    assert [x["shape"] for x in r["rank_rates"]] == [
        [held(n, P, p, nb), nb, held(n, Q, q, nb)] for p in range(P) for q in range(Q)]
    for x in r["rank_rates"]:
        assert RankRates(**{k: v for k, v in x.items() if k != "shape"})  # positive, finite
    last = nb * (n // nb - 1)
    assert r["panel_probe"]["width"] == nb and r["panel_probe"]["rows"] == [
        max(held(n, P, p, 0) for p in range(P)), max(held(n, P, p, last) for p in range(P))]
    assert all(t > 0 for t in r["panel_probe"]["seconds"])
    moves = composed(hpl_probe.uniform_pivots(n, nb, np.random.default_rng(r["seed"])), 0)
    cols = [held(n, Q, q, 0) - (nb if q == 0 else 0) for q in range(Q)]  # not the panel's
    assert r["interchange_probe"]["bytes"] == max(
        hpl_probe.moved_bytes(moves, nb, P, p, cols[q]) for p in range(P) for q in range(Q))
    assert r["interchange_probe"]["seconds"] > 0


@needs_mpi
@pytest.mark.slow
def test_hpl_on_a_2x2_grid(tmp_path):
    out = tmp_path / "hpl.json"
    text = _run(4, "--n", "100", "--nb", "16", "--grid", "2x2", "--no-small-products",
                "--json", str(out))
    doc = json.loads(out.read_text())
    runs = {r["kind"]: r for r in doc["runs"]}
    assert sorted(runs) == ["emulated", "native"] and len(doc["runs"]) == 2
    want = rank0_traffic(100, 16, 2, 2)
    for kind, r in runs.items():
        assert (r["n"], r["nb"], r["grid"], r["ranks"]) == (100, 16, "2x2", 4)
        assert r["passed"] and 0 <= r["residual"] < 16
        assert r["seconds"] > 0 and r["gflops"] > 0
        assert r["gflops"] == pytest.approx(serial_hpl.hpl_flops(100) / r["seconds"] / 1e9)
        assert r["seconds"] == pytest.approx(r["factor_seconds"] + r["solve_seconds"])
        assert set(r["phases"]) == set(hpl.PHASES) and r["efficiency"] is None
        assert r["oversubscribed"] == (4 > len(os.sched_getaffinity(0)))
        assert {"panels", "pivots", "interchanges", "rhs"} <= set(r["traffic_rank0"])
        for k, v in want.items():
            assert r["traffic_rank0"][k] == v, (kind, k)
        for k, (b, m) in r["traffic_rank0"].items():  # rank 0's within the most
            assert b <= r["traffic_max"][k][0] and m <= r["traffic_max"][k][1]
        assert r["bytes_sent"][0] == sum(b for b, _ in r["traffic_rank0"].values())
        assert len(r["bytes_sent"]) == 4
    emu, nat = runs["emulated"], runs["native"]
    _check_probes(emu, 100, 16, 2, 2)
    for k in ("rank_rates", "panel_probe", "interchange_probe"):  # one probe per grid
        assert nat[k] == emu[k]
    assert doc["meta"]["profile"] == str(HERE.parent / "docs" / "_generated" / "tme_profile.json")
    assert emu["bitwise_vs_serial"] is True and emu["differing_fraction_vs_serial"] == 0
    assert nat["bitwise_vs_serial"] is None
    assert emu["products"]["emulated"] == emu["products"]["total"] > 0  # every product
    assert nat["products"]["emulated"] == 0 and "decisions" in emu["traffic_max"]
    # the same layout, panels and messages: the traffic differs by the decisions only
    for k in set(emu["traffic_max"]) - {"decisions"}:
        assert emu["traffic_max"][k] == nat["traffic_max"][k]
        assert emu["traffic_rank0"][k] == nat["traffic_rank0"][k]
    assert "decisions" not in nat["traffic_max"]
    lines = TV.findall(text)
    assert [(m[0], m[1:5]) for m in lines] == [(k, ("100", "16", "2", "2")) for k in
                                               ("emulated", "native")]
    assert text.count("...... PASSED") == 2 and serial_hpl.HEADER in text
    assert ("OVERSUBSCRIBED" in text) == emu["oversubscribed"]


@needs_mpi
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["strong", "weak"])
def test_hpl_sweep_on_one_and_two_ranks(tmp_path, kind):
    out, png = tmp_path / "sweep.json", tmp_path / "sweep.png"
    text = _run(2, "--sweep", kind, "--n", "64", "--nb", "16", "--json", str(out),
                "--plot", str(png), *(["--no-probe"] if kind == "strong" else []))
    runs = json.loads(out.read_text())["runs"]
    assert sorted((r["kind"], r["ranks"], r["grid"]) for r in runs) == [
        ("emulated", 1, "1x1"), ("emulated", 2, "1x2"), ("native", 1, "1x1"),
        ("native", 2, "1x2")]
    for r in runs:
        assert r["n"] == (64 if kind == "strong" else hpl.weak_size(64, 16, r["ranks"]))
        assert r["passed"] and (r["kind"] == "native" or r["bitwise_vs_serial"])
        one = next(o for o in runs if o["kind"] == r["kind"] and o["ranks"] == 1)
        assert r["efficiency"] == pytest.approx(r["gflops"] / (r["ranks"] * one["gflops"]))
        if r["ranks"] == 1:
            assert r["efficiency"] == 1.0 and r["traffic_max"].get("panels", [0, 0]) == [0, 0]
        if kind == "strong":
            assert "rank_rates" not in r and "panel_probe" not in r
        else:  # each sub-communicator probed on its own grid
            P, Q = r["P"], r["Q"]
            _check_probes(r, r["n"], 16, P, Q)
    assert text.count("...... PASSED") == 4 and "efficiency 1.00" in text
    assert png.stat().st_size > 10_000
