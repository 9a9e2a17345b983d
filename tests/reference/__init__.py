"""Independent references (test oracles), written once and shared by the tests and the benchmarks
(scripts/_common.py puts tests/ on sys.path; both import them as `reference.…`).

Each module is written from the published algorithm or the textbook definition, not from our
compiled code, so that a test comparing the two fails when either departs from the publication:
rng (the generator), kernels, data (synthetic data, the data sets' paths), solvers (the solvers'
algorithms replayed in numpy), objectives (objectives recomputed from a solution), qp (the
problems solved by scipy's generic optimisers), merging (the merge objective) and peers
(LIBLINEAR, an independent implementation)."""
