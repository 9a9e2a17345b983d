"""budgetsvm: budgeted kernel SVMs and fast linear SVMs with a LIBSVM/LIBLINEAR-style CLI."""
__version__ = "0.1.0"

# The scikit-learn-compatible estimators are loaded on first use, so that `import budgetsvm`
# stays cheap and never imports scikit-learn.
_ESTIMATORS = ("BudgetSVC", "LinearSVC", "WWLinearSVC", "load")
__all__ = list(_ESTIMATORS)


def __getattr__(name):
    if name in _ESTIMATORS:
        from budgetsvm import estimators
        return getattr(estimators, name)
    raise AttributeError(f"module 'budgetsvm' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_ESTIMATORS))
