"""Reading speed: budgetsvm.io.read_problem vs scikit-learn's load_svmlight_file on the same
uncompressed files (both produce CSR float64, checked identical), and model loading: the whole
bsvm-predict command with a large linear model (sector.scale, trained by `bsvm-train -s dcd -c 1`,
in the native and the LIBLINEAR format) vs liblinear-official's load_model + predict of the same
file, and model writing: that model written in the LIBLINEAR format by our save_model (one and two
threads) vs liblinear-official's save_model, in the same run. Measures into build/bench/io.json
(scripts/_common.py, run_bench), then
writes from that file alone (--report-only: without measuring) the report section
build/bench/bench_io.md (median and min–max of --repeats runs, speed-up = ratio of medians) and a
bar chart docs/figures/bench_io-speedup.png."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

from _common import (Section, add_report_only, decompressed, pyplot, run_bench,  # noqa: E402
                     save_figure, spread, table, timed_all)

BIN = Path(sys.executable).parent
LOAD_TIME_TARGET = 1.5      # issue 18: bsvm-predict <= 1.5x liblinear's load_model + predict
LOAD_RSS_TARGET = 3.0       # issue 18: peak RSS <= 3x the weights' size in memory

# The peer, as a child process: load_model, read the test file, predict, write the labels;
# prints the CPU seconds of each step (time.process_time) as JSON.
LIBLINEAR_PREDICT = """
import json, sys, time
t0 = time.process_time()
from liblinear.liblinearutil import load_model, predict, svm_read_problem
t1 = time.process_time()
model = load_model(sys.argv[2])
t2 = time.process_time()
y, x = svm_read_problem(sys.argv[1])
t3 = time.process_time()
labels, _, _ = predict(y, x, model, "-q")
t4 = time.process_time()
with open(sys.argv[3], "w") as out:
    out.write("".join("%g\\n" % v for v in labels))
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "read": t3 - t2, "predict": t4 - t3}))
"""


# Model writing, as child processes that load the model and then time writing it in the
# LIBLINEAR format (CPU and wall seconds of the write alone, as JSON); their peak RSS holds the
# loaded model plus what the writing needs.
OURS_WRITE = """
import json, sys, time
from budgetsvm import threads
from budgetsvm.model_io import load_model, save_model
model = load_model(sys.argv[1])
with threads.pool(int(sys.argv[3])):
    t0, w0 = time.process_time(), time.perf_counter()
    save_model(model, sys.argv[2], format="liblinear")
    t1, w1 = time.process_time(), time.perf_counter()
print(json.dumps({"cpu": t1 - t0, "wall": w1 - w0}))
"""
LIBLINEAR_WRITE = """
import json, sys, time
from liblinear.liblinearutil import load_model, save_model
model = load_model(sys.argv[1])
t0, w0 = time.process_time(), time.perf_counter()
save_model(sys.argv[2], model)
t1, w1 = time.process_time(), time.perf_counter()
print(json.dumps({"cpu": t1 - t0, "wall": w1 - w0}))
"""


def run_child(command, cwd=None):
    """Run command to completion; returns (CPU seconds user+sys, wall seconds, peak RSS in MB,
    stdout). The peak is the child's VmHWM, polled (budgetsvm.memory explains why not
    ru_maxrss); CPU time comes from wait4's rusage of that child alone."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    status_file = Path(f"/proc/{process.pid}/status")
    peak_kb = 0
    while True:
        try:
            for line in status_file.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak_kb = max(peak_kb, int(line.split()[1]))
        except (OSError, ValueError):
            pass
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.01)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    out, err = process.stdout.read().decode(), process.stderr.read().decode()
    process.stdout.close()
    process.stderr.close()
    if process.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {err}")
    return usage.ru_utime + usage.ru_stime, wall, peak_kb / 1024.0, out


def model_loading(tmp, repeats):
    """Rows of the model-loading measurement: one "model" row (the weights' size and shape,
    the test rows, how many labels agree with liblinear's), then one "load" row per run of
    bsvm-predict with the native or the LIBLINEAR-format file, or of the peer (with the CPU
    seconds of its steps)."""
    from budgetsvm.model_io import load_model, save_model

    train, test = str(decompressed("sector.scale", tmp)), str(decompressed("sector.t.scale", tmp))
    native, ll = str(Path(tmp) / "sector.model"), str(Path(tmp) / "sector.liblinear.model")
    subprocess.run([str(BIN / "bsvm-train"), "-q", "-s", "dcd", "-c", "1", train, native],
                   check=True)
    model = load_model(native)
    save_model(model, ll, format="liblinear")
    setup = {"kind": "model", "weights_mb": (model.coef.nbytes + model.bias_coef.nbytes) / 2**20,
             "n_features": int(model.n_features), "nr_w": int(model.nr_w)}
    del model
    peer = [sys.executable, "-c", LIBLINEAR_PREDICT, test, ll, str(Path(tmp) / "ll.out")]
    rows = []
    for repeat in range(repeats):     # interleaved: the three see the same machine load
        for name, path in (("native", native), ("liblinear", ll)):
            cpu, wall, peak, _ = run_child([str(BIN / "bsvm-predict"), "-q", test, path,
                                            str(Path(tmp) / f"{name}.out")])
            rows.append({"kind": "load", "model": name, "repeat": repeat, "cpu": cpu,
                         "wall": wall, "peak_mb": peak})
        cpu, wall, peak, out = run_child(peer)
        rows.append({"kind": "load", "model": "peer", "repeat": repeat, "cpu": cpu,
                     "wall": wall, "peak_mb": peak, "parts": json.loads(out)})
    # writer: (child script, model file read, arguments after the output file)
    writers = {"ours -n 1": (OURS_WRITE, native, ["1"]), "ours -n 2": (OURS_WRITE, native, ["2"]),
               "liblinear": (LIBLINEAR_WRITE, ll, [])}
    outputs = {name: Path(tmp) / f"written{i}" for i, name in enumerate(writers)}
    for repeat in range(repeats):
        for name, (script, path, rest) in writers.items():
            _, _, peak, text = run_child([sys.executable, "-c", script, path,
                                          str(outputs[name]), *rest])
            rows.append({"kind": "write", "writer": name, "repeat": repeat, "peak_mb": peak,
                         **json.loads(text)})
    written = {name: path.read_bytes() for name, path in outputs.items()}
    setup["written_identical"] = len(set(written.values())) == 1
    setup["written_mb"] = len(written["liblinear"]) / 2**20
    theirs = [float(v) for v in Path(tmp, "ll.out").read_text().split()]
    setup["n_test"] = len(theirs)
    setup["agree"] = {}
    for name in ("native", "liblinear"):
        ours = [float(v) for v in Path(tmp, f"{name}.out").read_text().split()]
        setup["agree"][name] = 100.0 * sum(a == b for a, b in zip(ours, theirs)) / \
            max(len(theirs), 1)
    return [setup] + rows


def loading_summary(rows):
    """(table rows, target checks, weights MB, shape, test rows, the peer's step medians) of
    the model-loading rows, or None when there are none."""
    setup = next((r for r in rows if r["kind"] == "model"), None)
    if setup is None:
        return None
    runs = {name: [r for r in rows if r["kind"] == "load" and r["model"] == name]
            for name in ("native", "liblinear", "peer")}
    weights_mb = setup["weights_mb"]
    shape = f"{setup['n_features']:,}×{setup['nr_w']}"
    peer_parts = [r["parts"] for r in runs["peer"]]
    peer_load_predict = [p["load"] + p["predict"] for p in peer_parts]
    peer_cpu = [r["cpu"] for r in runs["peer"]]
    table_rows, checks = [], []
    for name, label in (("native", "native"), ("liblinear", "`--format liblinear`")):
        cpu = [r["cpu"] for r in runs[name]]
        peak = max(r["peak_mb"] for r in runs[name])
        ratio = statistics.median(cpu) / statistics.median(peer_load_predict)
        ratio_whole = statistics.median(cpu) / statistics.median(peer_cpu)
        checks.append((label, ratio, peak / weights_mb))
        table_rows.append([label, spread(cpu, "{:.2f}"), spread(peer_load_predict, "{:.2f}"),
                           f"{ratio:.2f}", spread(peer_cpu, "{:.2f}"), f"{ratio_whole:.2f}",
                           f"{peak:.0f}", f"{peak / weights_mb:.2f}",
                           f"{max(r['peak_mb'] for r in runs['peer']):.0f}",
                           f"{setup['agree'][name]:.2f}%"])
    parts = {k: statistics.median(p[k] for p in peer_parts) for k in peer_parts[0]}
    return table_rows, checks, weights_mb, shape, setup["n_test"], parts


def measure(args):
    """One "read" row per data set (its size and every repeat's seconds of both readers),
    then the model-loading rows (model_loading)."""
    if args.quick:
        args.datasets = "ijcnn1,a9a,sector.scale"
    from sklearn.datasets import load_svmlight_file

    from budgetsvm.io import read_problem

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets.split(","):
            try:
                path = str(decompressed(name, tmp))
            except FileNotFoundError:
                continue                      # listed as missing in the setting block
            ours = timed_all(lambda: read_problem(path), args.repeats)
            theirs = timed_all(lambda: load_svmlight_file(path), args.repeats)
            (X, y), (X2, y2) = ours[1], theirs[1]
            assert (X != X2).nnz == 0 and (y == y2).all(), f"{name}: readers disagree"
            rows.append({"kind": "read", "dataset": name, "rows": X.shape[0],
                         "features": X.shape[1], "nnz": int(X.nnz), "ours": ours[0],
                         "sklearn": theirs[0]})
            del ours, theirs, X, y, X2, y2
        try:
            rows += model_loading(tmp, args.repeats)
        except FileNotFoundError:
            pass                              # sector missing: listed in the setting block
    return rows


def report(results):
    repeats = results["meta"]["options"]["repeats"]
    rows, speedups = [], []
    for r in results["rows"]:
        if r["kind"] != "read":
            continue
        ratio = statistics.median(r["sklearn"]) / statistics.median(r["ours"])
        speedups.append((r["dataset"], ratio))
        rows.append([r["dataset"], f"{r['rows']:,}×{r['features']:,}", f"{r['nnz']:,}",
                     spread(r["ours"], "{:.3f}"), spread(r["sklearn"], "{:.3f}"),
                     f"{ratio:.1f}x"])
    body = [table(["data set", "rows×features", "nnz", "budgetsvm read_problem s",
                   "sklearn load_svmlight_file s", "speed-up"], rows)]
    body.append(f"Seconds to read the uncompressed file into CSR float64 (median (min–max) of "
                f"{repeats} runs, files in the page cache; speed-up = sklearn median / "
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
    body += loading_text(loading_summary(results["rows"]), repeats)
    body += writing_text(results["rows"], repeats)
    return Section("Reading speed vs scikit-learn's reader; model loading and writing vs "
                   "LIBLINEAR",
                   "\n\n".join(body),
                   extra=[f"Repeats: {repeats} per reader and file; no randomness",
                          "Model loading: the model trained by `bsvm-train -s dcd -c 1 "
                          "sector.scale` (seed 1), also written with `--format liblinear`; BLAS "
                          "limited to one thread"])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--datasets", default="mnist,ijcnn1,a9a,sector.scale")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="ijcnn1, a9a and sector.scale")
    add_report_only(parser)
    args = parser.parse_args()
    names = ("ijcnn1,a9a,sector.scale" if args.quick else args.datasets).split(",")
    run_bench("bench_io", args, measure, report, datasets=names + ["sector.t.scale"],
              peers=("scikit-learn", "liblinear-official", "numpy", "scipy"))


def loading_text(loading, repeats):
    if loading is None:
        return ["### Model loading\n\nNot run: sector.scale or sector.t.scale is missing."]
    rows, checks, weights_mb, shape, n_test, parts = loading
    header = ["model file read by bsvm-predict", "ours CPU s (whole command)",
              "liblinear load_model + predict CPU s", "ratio", "liblinear whole process CPU s",
              "ratio", "ours peak RSS MB", "peak RSS / weights", "liblinear peak RSS MB",
              "same labels"]
    text = [f"### Model loading: bsvm-predict vs LIBLINEAR\n\n"
            f"The linear DCD model of sector.scale ({shape} weights, {weights_mb:.1f} MB in "
            f"memory) predicting sector.t.scale ({n_test:,} rows).\n\n" + table(header, rows),
            f"CPU seconds (user + sys of the child process, median (min–max) of {repeats} "
            "interleaved runs; the machine is shared, so CPU rather than wall time). Ours is the "
            "whole `bsvm-predict -q sector.t.scale MODEL OUT` command: interpreter start, "
            "imports, reading the model and the test file, predicting, writing the labels. "
            "liblinear-official runs in its own Python process doing the same steps "
            "(load_model, svm_read_problem, predict, writing the labels); the first ratio "
            "compares our whole command with its load_model + predict alone (excluding its "
            "interpreter start, imports (median {imp:.2f} s), test-file reading ({read:.2f} s) "
            "and output), the second with its whole process. Peak RSS is the child's VmHWM; "
            "the weights' size is the model's weight arrays (float64).".format(
                imp=parts["import"], read=parts["read"]),
            ]
    def verdict(ok):
        return "met" if ok else "**missed**"

    verdicts = [f"{label}: time ratio {ratio:.2f} ({verdict(ratio <= LOAD_TIME_TARGET)}), peak "
                f"RSS {rss:.2f}× the weights ({verdict(rss <= LOAD_RSS_TARGET)})"
                for label, ratio, rss in checks]
    text.append(f"Targets (issue 18): bsvm-predict ≤ {LOAD_TIME_TARGET:g}× liblinear-official's "
                f"load_model + predict time, peak RSS ≤ {LOAD_RSS_TARGET:g}× the weights' size. "
                + "; ".join(verdicts) + ".")
    return text


def writing_text(rows, repeats):
    """The model-writing table (LIBLINEAR format): ours on one and two threads against
    liblinear-official's save_model."""
    runs = [r for r in rows if r["kind"] == "write"]
    setup = next((r for r in rows if r["kind"] == "model"), None)
    if not runs or setup is None:
        return []
    names = list(dict.fromkeys(r["writer"] for r in runs))
    by = {n: [r for r in runs if r["writer"] == n] for n in names}
    peer_cpu = statistics.median(r["cpu"] for r in by["liblinear"])
    peer_wall = statistics.median(r["wall"] for r in by["liblinear"])
    table_rows = []
    for n in names:
        cpu, wall = [r["cpu"] for r in by[n]], [r["wall"] for r in by[n]]
        table_rows.append([n, spread(cpu, "{:.2f}"), spread(wall, "{:.2f}"),
                           f"{statistics.median(cpu) / peer_cpu:.2f}",
                           f"{statistics.median(wall) / peer_wall:.2f}",
                           f"{max(r['peak_mb'] for r in by[n]):.0f}"])
    same = "byte-identical" if setup.get("written_identical") else "**not identical**"
    return [f"### Model writing: the LIBLINEAR format vs LIBLINEAR's save_model\n\n"
            f"The same model written as a LIBLINEAR file ({setup['written_mb']:.1f} MB; the "
            f"files of all three writers are {same}).\n\n"
            + table(["writer", "CPU s", "wall s", "CPU ÷ LIBLINEAR", "wall ÷ LIBLINEAR",
                     "peak RSS MB"], table_rows),
            f"Seconds of the write alone (median (min–max) of {repeats} interleaved runs, each "
            "in its own process after loading the model; the loading is excluded, its memory "
            "is not: peak RSS is the child's VmHWM). LIBLINEAR's save_model is C (fprintf "
            "'%.17g ' per weight); ours formats blocks of 1,024 weight rows in compiled code "
            "(snprintf '%.17g') in the worker threads while the main thread writes the blocks "
            "before."]


if __name__ == "__main__":
    main()
