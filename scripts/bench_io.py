"""Reading speed: budgetsvm.io.read_problem vs scikit-learn's load_svmlight_file on the same
uncompressed files (both produce CSR float64, checked identical). Writes the report section
build/bench/bench_io.md (median and min–max of --repeats runs, speed-up = ratio of medians) and
a bar chart docs/figures/bench_io-speedup.png."""
import argparse
import statistics
import tempfile

from _common import decompressed, pyplot, save_figure, spread, table, timed_all, write_section


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--datasets", default="mnist,ijcnn1,a9a,sector.scale")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="ijcnn1, a9a and sector.scale")
    args = parser.parse_args()
    if args.quick:
        args.datasets = "ijcnn1,a9a,sector.scale"
    from sklearn.datasets import load_svmlight_file

    from budgetsvm.io import read_problem

    names = args.datasets.split(",")
    rows, speedups = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            try:
                path = str(decompressed(name, tmp))
            except FileNotFoundError:
                continue                      # listed as missing in the setting block
            ours = timed_all(lambda: read_problem(path), args.repeats)
            theirs = timed_all(lambda: load_svmlight_file(path), args.repeats)
            (X, y), (X2, y2) = ours[1], theirs[1]
            assert (X != X2).nnz == 0 and (y == y2).all(), f"{name}: readers disagree"
            ratio = statistics.median(theirs[0]) / statistics.median(ours[0])
            speedups.append((name, ratio))
            rows.append([name, f"{X.shape[0]:,}×{X.shape[1]:,}", f"{X.nnz:,}",
                         spread(ours[0], "{:.3f}"), spread(theirs[0], "{:.3f}"),
                         f"{ratio:.1f}x"])

    body = [table(["data set", "rows×features", "nnz", "budgetsvm read_problem s",
                   "sklearn load_svmlight_file s", "speed-up"], rows)]
    body.append(f"Seconds to read the uncompressed file into CSR float64 (median (min–max) of "
                f"{args.repeats} runs, files in the page cache; speed-up = sklearn median / "
                "ours). Both readers return identical matrices and labels (checked).")
    if speedups:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(5.5, 3.0))
        ax.barh([n for n, _ in speedups][::-1], [r for _, r in speedups][::-1], color="#3b75af")
        ax.axvline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("speed-up over sklearn load_svmlight_file (×)")
        for i, (_, r) in enumerate(speedups[::-1]):
            ax.text(r, i, f" {r:.1f}x", va="center", fontsize=8)
        ax.set_xlim(0, max(r for _, r in speedups) * 1.2)
        body.append(save_figure(fig, "bench_io-speedup.png",
                                "Reading speed-up of budgetsvm over scikit-learn's reader"))
    write_section("bench_io", "Reading speed vs scikit-learn's reader", "\n\n".join(body),
                  datasets=names, peers=("scikit-learn", "numpy", "scipy"),
                  extra=[f"Repeats: {args.repeats} per reader and file; no randomness"])


if __name__ == "__main__":
    main()
