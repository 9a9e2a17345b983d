"""budgetsvm: budgeted kernel SVMs and fast linear SVMs with a LIBSVM/LIBLINEAR-style CLI."""
__version__ = "0.1.0"
