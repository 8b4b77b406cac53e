"""Closed forms of the TME model, derived with sympy.

:func:`derive` starts from the two time equations (:doc:`tme_model`, "The model") and derives
throughputs, ridges, the speedup in each regime, the crossover intensity and the
break-even beta.  :mod:`tme_model.model` implements the same forms numerically; the
tests compare the two, and :func:`latex` renders them for the docs.

sympy is imported inside the functions, so that ``import tme_model`` stays light; it is
the ``[symbolic]`` extra (:mod:`tme_model.extras`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

from .extras import require

__all__ = ["ARGUMENTS", "derive", "lambdified", "latex"]

#: Symbol names, in the argument order of :func:`lambdified`'s functions.
ARGUMENTS: tuple[str, ...] = ("W", "Q", "I", "P64", "Plow", "B", "alpha", "beta", "gamma", "n_out")
_LATEX = {"W": "W", "Q": "Q", "I": "I", "P64": r"P_{64}", "Plow": r"P_{\mathrm{low}}",
          "B": r"B_{\mathrm{mem}}", "alpha": r"\alpha", "beta": r"\beta", "gamma": r"\gamma",
          "n_out": r"n_{\mathrm{out}}"}


@lru_cache(maxsize=1)
def _symbols() -> dict[str, Any]:
    sp = require("sympy")

    return {name: sp.Symbol(name, positive=True) for name in ARGUMENTS}


def _inverse_max(numerator, mx):
    """numerator / Max(a, b) = Min(numerator / a, numerator / b) for positive a, b."""
    sp = require("sympy")

    return sp.Min(*(sp.simplify(numerator / arg) for arg in mx.args))


def _branch(expr, s, depends_on_i: bool):
    """The argument of a two-branch Min that does (or does not) depend on I."""
    (arg,) = [a for a in expr.args if a.has(s["I"]) == depends_on_i]
    return arg


@lru_cache(maxsize=1)
def derive() -> dict[str, Any]:
    """Derive the TME model's closed forms.

    Returns
    -------
    dict of str to sympy.Expr
        ``t_native``, ``t_emul`` (times); ``p_native``, ``p_emul`` (throughputs at
        gamma = 0 as functions of I); ``ridge_native``, ``ridge_emul``; ``speedup_<n>_<e>``
        for the four regimes (n, e in {compute, memory}); ``ceiling_emul`` (Plow/alpha);
        ``crossover`` (with gamma) and ``crossover_gamma0``; ``wins_if`` (the condition
        for a crossover to exist, as a positive margin); ``break_even_beta`` and
        ``break_even_beta_gamma0`` (the latter in terms of I).
    """
    sp = require("sympy")

    s = _symbols()
    W, Q, I, P64, Plow, B = (s[k] for k in ("W", "Q", "I", "P64", "Plow", "B"))
    alpha, beta, gamma, n_out = (s[k] for k in ("alpha", "beta", "gamma", "n_out"))

    t_native = sp.Max(W / P64, Q / B)
    t_emul = sp.Max(alpha * W / Plow, beta * Q / B) + gamma * n_out
    # Throughput W / T with W = I Q, gamma = 0.
    p_native = _inverse_max(I * Q, t_native.subs(W, I * Q))
    p_emul = _inverse_max(I * Q, t_emul.subs({W: I * Q, gamma: 0}))

    nat_c, nat_m = _branch(p_native, s, False), _branch(p_native, s, True)
    emu_c, emu_m = _branch(p_emul, s, False), _branch(p_emul, s, True)
    ridge_native = sp.solve(sp.Eq(nat_c, nat_m), I)[0]
    ridge_emul = sp.solve(sp.Eq(emu_c, emu_m), I)[0]
    speedups = {
        f"speedup_{n}_{e}": sp.simplify(eb / nb)
        for n, nb in (("compute", nat_c), ("memory", nat_m))
        for e, eb in (("compute", emu_c), ("memory", emu_m))
    }

    # Crossover for a fixed kernel shape: W, n_out fixed, Q = W / I varies.  Above the
    # native ridge T_native / W = 1/P64; the emulated memory term must also fall below it.
    g = sp.Symbol("g", positive=True)  # overhead per flop, gamma n_out / W
    solved = sp.solve(sp.Eq(beta / (I * B) + g, 1 / P64), I)[0]
    crossover_g = beta * P64 / (B * (1 - g * P64))  # the same, in readable form:
    if sp.simplify(solved - crossover_g) != 0:
        raise AssertionError(f"crossover derivation mismatch: {solved}")
    crossover = crossover_g.subs(g, gamma * n_out / W)
    wins_if = 1 / P64 - alpha / Plow - gamma * n_out / W  # > 0: a crossover exists

    # Break-even beta: the beta at which T_emul (memory-bound) equals T_native.
    t_nat = sp.Symbol("T_native", positive=True)
    beta_star = sp.solve(sp.Eq(beta * Q / B + gamma * n_out, t_nat), beta)[0]
    break_even = beta_star.subs(t_nat, t_native)
    # At gamma = 0: B Max(Q/B, W/P64) / Q = Max(1, I B / P64), distributing the factor.
    scaled = sp.Max(*(sp.simplify(B * arg / Q) for arg in t_native.subs(W, I * Q).args))
    break_even_i = scaled

    return {
        "t_native": t_native, "t_emul": t_emul, "p_native": p_native, "p_emul": p_emul,
        "ridge_native": ridge_native, "ridge_emul": ridge_emul, **speedups,
        "ceiling_emul": emu_c, "crossover_g": crossover_g, "crossover": crossover,
        "crossover_gamma0": sp.simplify(crossover.subs(gamma, 0)), "wins_if": wins_if,
        "break_even_beta": break_even, "break_even_beta_gamma0": break_even_i,
    }


def lambdified(name: str) -> Callable[..., float]:
    """Return a closed form as a numeric function.

    Parameters
    ----------
    name : str
        A key of :func:`derive`.

    Returns
    -------
    callable
        ``f(W, Q, I, P64, Plow, B, alpha, beta, gamma, n_out)`` (all arguments, unused
        ones ignored), in consistent units.
    """
    sp = require("sympy")

    s = _symbols()
    return sp.lambdify([s[a] for a in ARGUMENTS], derive()[name], modules="math")


def latex() -> dict[str, str]:
    """Return every closed form of :func:`derive` as LaTeX.

    Returns
    -------
    dict of str to str
        Same keys as :func:`derive`.
    """
    sp = require("sympy")

    s = _symbols()
    names = {s[k]: v for k, v in _LATEX.items()}
    return {k: sp.latex(v, symbol_names=names) for k, v in derive().items()}
