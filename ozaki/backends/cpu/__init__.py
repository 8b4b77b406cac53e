"""The CPU backend: compiled (numba) passes on ozaki's own threads, the host engines."""
