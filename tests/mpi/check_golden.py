"""Run under ``mpiexec -n 4``: distributed products of the golden cases, as digests.

Rank 0 prints one JSON object: the SHA-256 digests (``tests/test_golden.py``'s) of
``ozaki.distributed.dgemm`` / ``zgemm`` on the golden operands over a 2 x 2 grid,
keyed as the serial cases in ``golden_digests.json``; the test compares them there.
"""

import json
import sys
from pathlib import Path

from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the golden helpers

import ozaki  # noqa: E402
from ozaki import distributed  # noqa: E402
from test_golden import _complex, _digest, _operands  # noqa: E402

world = MPI.COMM_WORLD


def main():
    grid = distributed.make_grid((2, 2), world)
    A, B = _operands(1, 70, 90, 50)
    out = {}
    for scheme in ("int8", "fp8", "fp64"):
        for mode in ("accurate", "fast"):
            for count in ("auto", 7):
                dA = distributed.scatter(A if world.Get_rank() == 0 else None, grid)
                dB = distributed.scatter(B if world.Get_rank() == 0 else None, grid)
                C = distributed.dgemm(dA, dB, scheme=scheme, mode=mode, num_moduli=count,
                                      panel=32)
                got = distributed.gather(C, root=0)
                if got is not None:
                    out[f"dgemm/{scheme}/{mode}/cpu-blas/{count}"] = _digest(got)
    dA = distributed.scatter(_complex(A) if world.Get_rank() == 0 else None, grid)
    dB = distributed.scatter(B - 2j * B if world.Get_rank() == 0 else None, grid)
    got = distributed.gather(distributed.zgemm(dA, dB, panel=32), root=0)
    if got is not None:
        out["zgemm"] = _digest(got)
        print(json.dumps(out))


# the golden "emulated" set runs the emulation on these small products too, and pins
# the scheme of its default calls as tests/test_golden.py does
with ozaki.set_small_products(False), ozaki.set_scheme("fp64"):
    main()
