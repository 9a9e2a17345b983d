"""Reading speed: budgetsvm.io.read_problem vs scikit-learn's load_svmlight_file on the same
uncompressed files (both produce CSR float64). Prints a markdown table of medians and ratios."""
import argparse
import tempfile

from _common import decompressed, machine, table, timed, verify_checksum, versions


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--datasets", default="mnist,ijcnn1,a9a,sector.scale")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="ijcnn1 and a9a, 1 repeat")
    args = parser.parse_args()
    if args.quick:
        args.datasets, args.repeats = "ijcnn1,a9a", 1
    from sklearn.datasets import load_svmlight_file

    from budgetsvm.io import read_problem

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets.split(","):
            check = verify_checksum(name)
            path = str(decompressed(name, tmp))
            ours, ours_min, ours_max, (X, y) = timed(lambda: read_problem(path), args.repeats)
            theirs, t_min, t_max, (X2, y2) = timed(lambda: load_svmlight_file(path),
                                                  args.repeats)
            assert (X != X2).nnz == 0 and (y == y2).all(), f"{name}: readers disagree"
            rows.append([name, f"{X.shape[0]}×{X.shape[1]}", f"{X.nnz}", check,
                         f"{ours:.3f} ({ours_min:.3f}–{ours_max:.3f})",
                         f"{theirs:.3f} ({t_min:.3f}–{t_max:.3f})", f"{theirs / ours:.1f}x"])
    print(f"Machine: {machine()}; {versions('scikit-learn', 'numpy', 'scipy')}; "
          f"median of {args.repeats} runs (min–max), seconds\n")
    print(table(["data set", "rows×features", "nnz", "checksum", "budgetsvm",
                 "sklearn load_svmlight_file", "speed-up"], rows))


if __name__ == "__main__":
    main()
