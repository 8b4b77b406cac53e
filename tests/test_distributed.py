"""ozaki.distributed under ``mpiexec -n 4``: bitwise equal to serial ozaki.dgemm.

Skipped where the ``mpi`` extra (mpi4py, mpich) is missing. Each launch has a
timeout; the ranks run one thread each, and the numba cache is warmed in this
process first (four ranks compiling the same kernels at once would take minutes).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mpi4py")

import ozaki  # noqa: E402

HERE = Path(__file__).parent
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found (the mpi extra)")


def _warm():
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((8, 8)), rng.standard_normal((8, 8))
    for scheme, engine in (("fp64", "auto"), ("int8", "auto"), ("fp8", "cpu-fp8")):
        ozaki.dgemm(A, B, mode="fast", scheme=scheme, engine=engine)
    ozaki.dgemm(A, B * 1e300, mode="fast")
    from ozaki.distributed.panel import factor_panel
    from ozaki.distributed.traffic import Traffic
    from ozaki.linalg import lu_factor
    lu_factor(A, block_size=4)

    class One:  # the distributed panel's kernels, compiled on one rank
        def Get_size(self):
            return 1

        def Allgather(self, send, recv):
            recv[0] = send

    factor_panel(A.copy(), np.arange(8), 0, One(), Traffic(), group=4, kernel=False)


def launch(script: str, n: int = 4, timeout: int = 420) -> str:
    _warm()
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([MPIEXEC, "-n", str(n), sys.executable, str(HERE / "mpi" / script)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_dgemm_bitwise_equal_to_serial_on_every_grid():
    out = launch("check_dgemm.py")
    assert "ALL OK" in out
    for grid in ("(2, 2)", "(1, 4)", "(4, 1)", "(1, 1)"):
        assert f"grid={grid}" in out
    for mode in ("accurate", "fast"):
        assert out.count(f"mode={mode}") == 19 + 9  # every case in both modes
    small = [x for x in out.splitlines() if x.startswith("ok compensated")]
    assert len(small) == 18 and sum("N=0" in x for x in small) == 16  # all but the empty
    assert any("compensated tiny" in x and "fallback=0" not in x for x in small)
    fell = [x for x in out.splitlines() if x.startswith("ok fallback")]
    assert fell and all(int(x.rsplit("fallback=", 1)[1]) > 0 for x in fell)  # exercised
    part = next(x for x in out.splitlines() if x.startswith("ok partial refinement fp64")
                and "mode=accurate" in x)
    assert "refined=(0, 0)" not in part and "refined=(40, 40)" not in part  # a sub-block


@pytest.mark.slow
def test_lu_bitwise_equal_to_serial_on_every_grid():
    out = launch("check_lu.py")
    assert "ALL OK" in out
    for grid in ("(2, 2)", "(1, 4)", "(4, 1)", "(1, 1)", "(2, 1)", "(1, 2)"):
        assert f"ok square grid={grid}" in out
    for name in ("tall", "wide", "singular", "row scaled int8", "column scaled fast",
                 "small products underflow"):
        assert f"ok {name} grid=" in out
    emulated = [x for x in out.splitlines() if "emulated=0" not in x and x.startswith("ok")]
    assert len(emulated) >= 15  # the emulated path, not only the small-product one


@pytest.mark.slow
def test_update_products_bitwise_equal_to_serial_at_each_ranks_entries():
    out = launch("check_update.py")
    assert "ALL OK" in out
    lines = [x for x in out.splitlines() if x.startswith("ok")]
    assert len(lines) == 30
    assert all("refined=(0, 0)" not in x for x in lines if x.startswith("ok refined"))
    assert all("fallback=0 " not in x for x in lines if "fallback" in x.split()[1]
               or "underflow" in x)
    widened = next(x for x in lines if "widened" in x)  # from the machine's int8 or int7
    assert "scheme=fp64" in widened and "fallback=0 " not in widened


@pytest.mark.slow
def test_cholesky_bitwise_equal_to_serial_on_every_grid():
    out = launch("check_cholesky.py")
    assert "ALL OK" in out
    for grid in ("(2, 2)", "(1, 4)", "(4, 1)"):
        for lower in (True, False):
            assert f"ok spd grid={grid} nb=16 lower={lower}" in out
    assert "ok spd fast" in out and "ok scaled" in out and "ok small products" in out


@pytest.mark.slow
def test_fft_bitwise_equal_to_serial_on_every_grid():
    import fft
    fft.fftn(np.ones((2, 3, 4)))  # warm the twiddle kernel's cache
    out = launch("check_fft.py")
    for grid in ("1x1", "1x4", "2x2", "4x1"):
        assert f"grid={grid}" in out
    assert out.count("ok errors") == 3
    assert "ok (17, 12, 30) grid=2x2" in out and "ok one line per rank" in out


@pytest.mark.slow
def test_native_summa_accurate_but_its_bits_follow_the_grid():
    out = launch("check_summa.py")
    assert "ALL OK" in out
    for grid in ("(2, 2)", "(1, 4)", "(4, 1)"):
        assert f"ok uneven grid={grid}" in out
    bits = [x for x in out.splitlines() if x.startswith("bits")]
    assert len(bits) == 6
    native = [float(x.split("native_differ=")[1].split()[0]) for x in bits]
    assert all(int(x.rsplit("emulated_differ=", 1)[1]) == 0 for x in bits)
    assert max(native) > 0.5  # most entries change bits (k = 512, random data)


@pytest.mark.slow
def test_import_ozaki_does_not_import_mpi4py():
    code = "import ozaki, sys; print('mpi4py' in sys.modules)"
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=str(HERE.parent))
    assert got.stdout.strip() == "False"


@pytest.mark.slow
def test_zgemm_bitwise_equal_to_serial():
    out = launch("check_zgemm.py")
    assert "ALL OK" in out
    for mode, gemms in (("accurate", 19), ("fast", 18)):  # 3 products per modulus (+ bound)
        assert f"ok complex grid=(2, 2) mode={mode} N=6 gemms={gemms}" in out
    fell = [x for x in out.splitlines() if x.startswith("ok fallback")]
    assert len(fell) == 2 and all(int(x.rsplit("fallback=", 1)[1]) > 0 for x in fell)
    small = [x for x in out.splitlines() if x.startswith("ok compensated")]
    assert len(small) == 10 and all("N=0 gemms=0" in x for x in small)


@pytest.mark.slow
def test_benchmark_counts_traffic_exactly_and_emulated_bits_match(tmp_path):
    from tme_model.network import summa_traffic

    _warm()
    out = tmp_path / "run.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent),
                                                       os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "benchmarks.mpi.summa",
                           "--n", "96", "--panel", "16", "--repeats", "1", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, env=env,
                          cwd=str(HERE.parent))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    doc = json.loads(out.read_text())
    runs = {r["kind"]: r for r in doc["runs"]}
    assert runs["emulated"]["differing_bits_vs_serial"] == 0
    assert runs["native"]["max_rel_error_vs_numpy"] < 1e-14
    nbytes, msgs = summa_traffic(96, 96, 96, 1, 2, 16)
    assert runs["native"]["bytes_sent"] == nbytes.ravel().tolist()
    assert runs["native"]["messages_sent"] == msgs.ravel().tolist()
    panels = [t["panels"] for t in runs["emulated"]["traffic_by_kind"]]
    assert [b for b, _ in panels] == nbytes.ravel().tolist()  # the same panel bytes
    alpha, beta = doc["meta"]["network"]["alpha_s"], doc["meta"]["network"]["beta_bps"]
    assert alpha >= 0 and beta > 0 and all(r["predicted_s"] > 0 for r in runs.values())
    for r in runs.values():  # every rank probed its own panel product: 96 x 16 x 48
        assert [x["shape"] for x in r["rank_rates"]] == [[96, 16, 48]] * 2
        assert sum(r["predicted_phases"].values()) == pytest.approx(r["predicted_s"])


@pytest.mark.slow
def test_fft3d_benchmark_sweeps_slabs_and_pencils_with_exact_traffic(tmp_path):
    import fft
    from tme_model.fft_network import Exchange, fft3d_steps

    fft.fftn(np.ones((2, 3, 4)))  # warm the twiddle kernel's cache
    out, png = tmp_path / "fft.json", tmp_path / "fft.png"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent),
                                                       os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([MPIEXEC, "-n", "4", sys.executable, "-m", "benchmarks.mpi.fft3d",
                           "--n", "10", "--sweep", "strong", "--repeats", "1", "--network",
                           "ndr", "--json", str(out), "--plot", str(png), "--table",
                           str(tmp_path / "t.rst")],
                          capture_output=True, text=True, timeout=300, env=env,
                          cwd=str(HERE.parent))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = json.loads(out.read_text())["runs"]
    grids = {(r["grid"], r["decomposition"]) for r in runs}
    assert grids == {("1x1", "serial"), ("2x1", "slab"), ("4x1", "slab"), ("2x2", "pencil")}
    for r in runs:
        if r["kind"] == "emulated":
            assert r["differing_words_vs_serial"] == 0
        assert r["rel_l2_error_vs_scipy"] < 1e-14 and r["roundtrip_max_error"] < 1e-14
        P, Q = map(int, r["grid"].split("x"))
        sent = [0] * (P * Q)
        for st in fft3d_steps((10, 10, 10), P, Q):
            if isinstance(st, Exchange):
                sent = [a + b for a, b in zip(sent, st.bytes)]
        assert r["bytes_sent"] == sent  # what the transform counted is what the model sends
        assert r["oversubscribed"] == (r["ranks"] > len(os.sched_getaffinity(0)))
        assert r["predicted_s"] > 0 and r["phases"]["transforms"] > 0
    assert png.stat().st_size > 10_000
    assert (tmp_path / "t.rst").read_text().count("   * - ") == len(runs) + 1  # and a header


@pytest.mark.slow
def test_distributed_products_reproduce_the_golden_digests():
    # the golden cases over a 2 x 2 grid: the serial digests, bit for bit
    golden = json.loads((HERE / "golden_digests.json").read_text())["emulated"]
    got = json.loads(launch("check_golden.py").strip().splitlines()[-1])
    assert len(got) == 13
    assert {k: golden[k] for k in got} == got
