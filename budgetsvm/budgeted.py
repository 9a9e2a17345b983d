"""What the budgeted kernel solvers (budgetsvm/bsgd.py, budgetsvm/bsca.py) and --stream share:
the store-size check, the model's training metadata and the progress texts."""
from budgetsvm.errors import BsvmError

# The dense SV store needs 8·(max(d, 1) + 10)·(B+1) bytes (budgetsvm/_budget.pyx: a dense row
# and ten numbers per slot); refuse beyond this.
MAX_STORE_BYTES = 8 * 1024 ** 3
# numbers per slot of the store besides its dense row (norms, coefficient, origin, work rows)
SLOT_NUMBERS = 10

def store_budget(params, max_insertions=None):
    """The number of SV slots a run needs: --budget, or max_insertions (the run's steps, each
    inserting at most one SV) when that is smaller. Below it maintenance never runs, so the
    run is the same; a --budget far beyond the data (a user's "unbudgeted" run) no longer
    allocates, or is refused for, slots that it can never fill."""
    budget = int(params.budget)
    return budget if max_insertions is None else max(1, min(budget, int(max_insertions)))


def check_budgeted(params, d, max_insertions=None):
    """Raise when the SV store of a run on d features would be too large (the options
    themselves are checked by params.check_params, which train() calls first)."""
    budget = store_budget(params, max_insertions)
    store_bytes = 8 * (max(d, 1) + SLOT_NUMBERS) * (budget + 1)
    if params.effective_maintenance() == "projection":
        store_bytes += 16 * (budget + 1) ** 2
    if store_bytes > MAX_STORE_BYTES:
        # with one support vector too large, the budget is not what to change
        one_sv = 8 * (max(d, 1) + SLOT_NUMBERS) * 2
        hint = (f"are the feature indices right (the largest is {d})?"
                if one_sv > MAX_STORE_BYTES else "use a smaller --budget")
        raise BsvmError(f"the support-vector store would need {store_bytes / 1024 ** 3:.1f} GB "
                        f"({d} features x budget {params.budget}, stored densely); {hint}")


def new_store(params, d, nr_coef, gamma, compare_merges=False, track_q=False,
              max_insertions=None):
    """The empty SV store (budgetsvm/_budget.pyx) of a run on d features with nr_coef
    coefficients per SV; compare_merges: its comparison mode, track_q: the margin perceptron's
    Q (bsgd --variant mp); max_insertions: see store_budget (None: unknown, as in --stream)."""
    from budgetsvm import _budget
    maintenance = params.effective_maintenance()
    return _budget.SVStore(
        d, store_budget(params, max_insertions), nr_coef, params.kernel, gamma,
        float(params.coef0), int(params.degree), maintenance,
        params.merge_search if maintenance == "merge" else "gss", track_q=track_q,
        compare=compare_merges, coalesce=params.effective_coalesce(),
        fast_rows=params.polish != "none", patterns_from=_budget.PATTERNS_FROM,
        partners=params.effective_merge_partners())


def model_params(params, n, d, gamma, extra):
    """The training metadata of a budgeted model (KernelModel.params) on n rows of d features,
    with the solver's own entries ``extra``."""
    meta = {
        "C": float(params.C), "kernel": params.kernel, "gamma": float(gamma),
        "degree": int(params.degree), "coef0": float(params.coef0),
        "budget": int(params.budget), "epochs": int(params.epochs),
        "maintenance": params.effective_maintenance(), "variant": params.variant,
        "seed": int(params.seed), "n_train": int(n), "n_features": int(d),
    }
    if params.effective_maintenance() == "merge":
        meta["merge_search"] = params.merge_search
        if params.effective_merge_partners() != "sign":   # absent: by sign (and older models)
            meta["merge_partners"] = params.effective_merge_partners()
    if params.effective_coalesce():         # absent: the papers' appending (and older models)
        meta["coalesce"] = True
    meta.update(extra)
    return meta


def epoch_text(step, total, epochs, n_sv):
    """'epoch 3/5  #SV 500' for the progress display: the core reports its step of total =
    epochs × rows."""
    rows = max(total // max(int(epochs), 1), 1)
    return f"epoch {min(step // rows + 1, int(epochs))}/{int(epochs)}  #SV {n_sv}"


def refit_progress(callback, steps, label=None):
    """The refit's on_iteration(count) as a progress callback (the bar stays at ``steps``, the
    solver's last step; a function: its value at each call), or None without a callback.
    label: the one-vs-rest class whose refit it is, named after the text."""
    if callback is None:
        return None
    suffix = "" if label is None else f"  (class {label:g})"
    return lambda count: callback(steps() if callable(steps) else steps,
                                  (f"refit  iteration {count}" if count else
                                   "refit  kernel rows") + suffix)


SELF_KERNEL_OVERFLOW = ("training diverged: the kernel value k(x, x) of every training row "
                        "overflows, so no step can be taken; scaled features (bsvm-scale) or a "
                        "smaller -g, -r or -d may help")


def check_self_kernels(params, gamma, xsq):
    """TrainingDiverged when k(x_i, x_i) is not finite (a polynomial or linear kernel's
    overflow) on every row with features. Such a row takes no step (BSCA divides by k(x_i, x_i)
    (Qaadan et al. 2019, the coordinate step); BSGD's margin on it is NaN, which never
    violates), which is how the rows that overflow are left out; when no row is left, the model
    would be silently constant, or predict NaN decision values. RBF and sigmoid kernels are
    bounded."""
    from budgetsvm.errors import TrainingDiverged
    finite = finite_self_kernels(params, gamma, xsq)
    if not finite.all() and not (finite & (xsq > 0)).any():
        raise TrainingDiverged(SELF_KERNEL_OVERFLOW)


def finite_self_kernels(params, gamma, xsq):
    """Whether k(x_i, x_i) is finite, for every row (bounded kernels: all True)."""
    import numpy as np
    with np.errstate(over="ignore", invalid="ignore"):
        if params.kernel == "poly":
            return np.isfinite((gamma * xsq + float(params.coef0)) ** int(params.degree))
        if params.kernel == "linear":
            return np.isfinite(xsq)
    return np.ones(len(xsq), dtype=bool)
