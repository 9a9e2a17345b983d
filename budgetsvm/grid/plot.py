"""The contour plot of a finished search (-png FILE, matplotlib)."""
import sys

import numpy as np

from budgetsvm.errors import BsvmError
from budgetsvm.fileio import atomic_output
from budgetsvm.grid.results import format_rate, format_value


def plot_contour(path, results, best_point, best_rate, title="", warn=None):
    """A contour plot of CV accuracy over log2 C × log2 gamma (at the best point's budget),
    grid.py style: levels every 0.5% from 3% below the best. Warns and skips if matplotlib is
    missing or the grid has fewer than 2 values in a dimension."""
    warn = warn or (lambda line: print(line, file=sys.stderr))
    if best_point is None or best_point.log2c is None or best_point.log2g is None:
        warn("warning: -png needs a search over both C and gamma; no plot written")
        return False
    try:
        import matplotlib
        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        warn("warning: -png needs matplotlib (pip install 'budgetsvm[plot]'); no plot written")
        return False
    pts = {(p.log2c, p.log2g): r for p, r in results.items()
           if p.log2c is not None and p.log2g is not None and p.budget == best_point.budget}
    cs = sorted({c for c, _ in pts})
    gs = sorted({g for _, g in pts})
    if len(cs) < 2 or len(gs) < 2:
        warn("warning: -png needs at least 2 values of log2c and of log2g; no plot written")
        return False
    Z = np.full((len(gs), len(cs)), np.nan)
    for (c, g), r in pts.items():
        Z[gs.index(g), cs.index(c)] = r
    Z = np.ma.masked_invalid(Z)
    begin = round(float(Z.max())) - 3
    levels = np.arange(begin, float(Z.max()) + 0.5, 0.5)
    fig, ax = plt.subplots(figsize=(7, 5.5), dpi=100)
    try:
        if len(levels) >= 2:
            filled = ax.contourf(cs, gs, Z, levels=levels, cmap="viridis", extend="min")
            lines = ax.contour(cs, gs, Z, levels=levels, colors="k", linewidths=0.6)
            ax.clabel(lines, fontsize=7, fmt="%g")
            fig.colorbar(filled, ax=ax, label="CV accuracy (%)")
        else:
            mesh = ax.pcolormesh(cs, gs, Z, shading="nearest", cmap="viridis")
            fig.colorbar(mesh, ax=ax, label="CV accuracy (%)")
        ax.plot([best_point.log2c], [best_point.log2g], "r*", markersize=12)
        ax.set_xlabel("log2(C)")
        ax.set_ylabel("log2(gamma)")
        budget = f"  budget = {best_point.budget}" if best_point.budget is not None else ""
        ax.set_title(f"{title}\nBest log2(C) = {format_value(best_point.log2c)}  "
                     f"log2(gamma) = {format_value(best_point.log2g)}  "
                     f"accuracy = {format_rate(best_rate)}%\n"
                     f"C = {2.0 ** best_point.log2c!r}  gamma = {2.0 ** best_point.log2g!r}"
                     f"{budget}", fontsize=9)
        fig.tight_layout()
        try:
            # atomically and with open()'s permissions, as every output (budgetsvm/fileio.py)
            with atomic_output(path, binary=True) as stream:
                fig.savefig(stream, format="png")
        except OSError as exc:
            raise BsvmError(f"{path}: cannot write the plot: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return True
