"""ozaki.distributed under ``mpiexec -n 4``: bitwise equal to serial ozaki.dgemm.

Skipped where the ``mpi`` extra (mpi4py, mpich) is missing. Each launch has a
timeout; the ranks run one thread each, and the numba cache is warmed in this
process first (four ranks compiling the same kernels at once would take minutes).
"""

from __future__ import annotations

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


def launch(script: str, n: int = 4, timeout: int = 420) -> str:
    _warm()
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([MPIEXEC, "-n", str(n), sys.executable, str(HERE / "mpi" / script)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_dgemm_bitwise_equal_to_serial_on_every_grid():
    out = launch("check_dgemm.py")
    assert "ALL OK" in out
    for grid in ("(2, 2)", "(1, 4)", "(4, 1)", "(1, 1)"):
        assert f"grid={grid}" in out
    for mode in ("accurate", "fast"):
        assert out.count(f"mode={mode}") == 19  # every case in both modes
    fell = [x for x in out.splitlines() if x.startswith("ok fallback")]
    assert fell and all(int(x.rsplit("fallback=", 1)[1]) > 0 for x in fell)  # exercised
    part = next(x for x in out.splitlines() if x.startswith("ok partial refinement fp64")
                and "mode=accurate" in x)
    assert "refined=(0, 0)" not in part and "refined=(40, 40)" not in part  # a sub-block


def test_import_ozaki_does_not_import_mpi4py():
    code = "import ozaki, sys; print('mpi4py' in sys.modules)"
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=str(HERE.parent))
    assert got.stdout.strip() == "False"


def test_zgemm_bitwise_equal_to_serial():
    out = launch("check_zgemm.py")
    assert "ALL OK" in out
    for mode, gemms in (("accurate", 19), ("fast", 18)):  # 3 products per modulus (+ bound)
        assert f"ok complex grid=(2, 2) mode={mode} N=6 gemms={gemms}" in out
    fell = [x for x in out.splitlines() if x.startswith("ok fallback")]
    assert len(fell) == 2 and all(int(x.rsplit("fallback=", 1)[1]) > 0 for x in fell)
