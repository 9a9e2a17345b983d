"""Independent plain-Python/numpy reference implementations (test oracles), shared by the tests.

Each module is written from the published algorithm, not from our compiled code, so that a test
comparing the two fails when either departs from the publication."""
