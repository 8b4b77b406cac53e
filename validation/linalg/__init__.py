"""Validation of ``ozaki.linalg``: ``python -m validation.linalg [--quick]`` (also
``python -m validation --family linalg``).

Every case solves ``A x = b`` with ``ozaki.linalg`` (``lu_factor``/``lu_solve``,
``solve``, ``cho_factor``/``cho_solve``, and ``solve_refined`` where it exists) beside
``scipy.linalg`` on the same matrix and right-hand side, and compares HPL's scaled
residual, the normwise and componentwise backward errors (residuals computed exactly)
and the forward error against a double-double reference solution. The matrices are in
:mod:`validation.linalg.cases`, the reference and the measures in
:mod:`validation.linalg.reference`, the checks in :mod:`validation.linalg.campaign`.
"""
