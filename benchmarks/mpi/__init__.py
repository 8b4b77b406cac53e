"""Benchmarks of :mod:`ozaki.distributed` under MPI (``mpiexec -n 4 python -m
benchmarks.mpi.summa``) and the calibration of the local MPI for the network term of
the TME model (``mpiexec -n 2 python -m benchmarks.mpi.network``)."""
