"""Cross-validated grid search over C, gamma and budget lists (LIBSVM tools/grid.py conventions),
split by job: order.py (ranges and job order), results.py (the results file and the best
point), runners.py (evaluation of a fold; in-process, process-pool and Dask runners),
search.py (``run_grid``, the library API) and plot.py (the contour plot).

The pieces, usable on their own:

* ranges and job order: :func:`parse_range`, :func:`range_f`, :func:`permute_sequence` and
  :func:`calculate_jobs` reproduce grid.py exactly (coarse to fine: every range midpoint-first,
  rows and columns of the grid interleaved), :func:`job_points` flattens them into
  :class:`Point` objects (a budget list, if any, is the innermost loop);
* the result file: :func:`format_result` writes grid.py's ``log2c=<x> log2g=<y> rate=<r>``
  lines (keys of a dimension not searched omitted, ``budget=<B>`` added for budget lists) and
  :func:`read_results` parses them back for ``-resume``;
* the best point: :func:`select_best` applies grid.py's rule (highest rate; on a tie a point with
  the same gamma (and budget) and a smaller C replaces it) over the points in job order, so the
  answer does not depend on which worker finished first;
* evaluation: the cross-validation accuracy of a point is computed fold by fold (a task is one
  fold of one point), with the stratified, seeded split of :func:`budgetsvm.train.stratified_folds`
  and :func:`budgetsvm.train.train`, i.e. exactly what ``bsvm-train -v`` computes;
* runners: in this process (``-j 1``), a pool of local worker processes that each read the data
  file once (``-j N``), or a Dask distributed cluster (``scheduler=tcp://HOST:PORT``) that gets the
  data by scatter or reads a shared path, with retries;
* :func:`run_grid` ties them together (the library API); grid.py's ``find_parameters``, which
  takes bsvm-grid's arguments, is in :mod:`budgetsvm.cli.grid` (the library never imports the
  command line).
"""
from budgetsvm.grid.order import (DEFAULT_LOG2C, DEFAULT_LOG2G, Point, calculate_jobs, job_points,
                                  parse_range, permute_sequence, range_f)
from budgetsvm.grid.results import (ResultFile, best_values, better, format_rate, format_result,
                                    format_value, parse_result_line, read_results, select_best)
from budgetsvm.grid.runners import (DEFAULT_CONNECT_TIMEOUT, DEFAULT_RETRIES, DaskRunner,
                                    InlineRunner, PoolRunner, connect_dask, cv_rate, dask_task,
                                    fold_correct, fold_outcome, load_source, point_params,
                                    rate_from_correct)
from budgetsvm.grid.search import (DEFAULT_FOLDS, GridOptions, GridResult, best_lines,
                                   default_jobs, failed_line, point_line, run_grid,
                                   searched_dimensions, training_threads)
from budgetsvm.grid.plot import plot_contour

__all__ = ["DEFAULT_LOG2C", "DEFAULT_LOG2G", "Point", "calculate_jobs", "job_points",
           "parse_range", "permute_sequence", "range_f", "ResultFile", "best_values", "better",
           "format_rate", "format_result", "format_value", "parse_result_line", "read_results",
           "select_best", "DEFAULT_CONNECT_TIMEOUT", "DEFAULT_RETRIES", "DaskRunner",
           "InlineRunner", "PoolRunner", "connect_dask", "cv_rate", "dask_task", "fold_correct",
           "fold_outcome", "load_source", "point_params", "rate_from_correct", "DEFAULT_FOLDS",
           "GridOptions", "GridResult", "best_lines", "default_jobs", "failed_line", "point_line",
           "run_grid", "searched_dimensions", "training_threads", "plot_contour"]
