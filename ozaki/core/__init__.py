"""The phases of Ozaki Scheme II, written against the backend protocol.

decisions -> residues -> exact modular products -> reconstruction, with the
certificate, the fallback and the special values. Nothing here imports numba or
calls a compiled kernel: every pass over the operands or the products goes
through a :class:`ozaki.core.backend.Backend`.
"""
