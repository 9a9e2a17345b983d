"""Streaming BSGD on data larger than memory (issue 8): peak memory and accuracy on the
checkerboard problem of Wang et al. (2012) written to disk.

x uniform on [0, 1]², label (−1)^(⌊4x₁⌋+⌊4x₂⌋), standardised (budgetsvm.datasets); a training
file of n rows (seed 1) and a test file of 10⁶ rows (seed 2) — of n rows when n = 10⁷, so that
prediction is measured on a file of that size too. `bsvm-train --stream -c C` with C = 1/(λn),
λ = 1e-4 (Wang et al. 2012, Table 6), B = 100, merging, 1 epoch; then `bsvm-predict`. Peak
resident memory of each command is its VmHWM (budgetsvm/memory.py). In-memory training (no
--stream) is measured alongside up to 10⁶ rows to show what streaming saves.

γ: the issue gives γ = 0.0625 (Wang et al. 2012, Table 6). In LIBSVM's convention exp(−γ‖x−x'‖²)
that kernel is far wider than a board cell (σ² = 8 against cells of width 0.87 after
standardisation), and the result is near chance; the table therefore also runs γ = 8, i.e.
exp(−‖x−x'‖²/(2·0.0625)), the reading in which 0.0625 is the kernel width σ².

Usage: python scripts/bench_stream.py [--quick] [--sizes 100000,1000000,10000000] [--report-only]
Generated files are cached in build/bench-data/ (about 26 bytes per row). Measures into
build/bench/stream.json (scripts/_common.py, run_bench); the section and its figure are made from
that file alone (--report-only: without measuring).
"""
import argparse
import sys
import time
from pathlib import Path

from _common import REPO, Section, add_report_only, pyplot, run_bench, save_figure, table

sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from budgetsvm.datasets import write_checkerboard  # noqa: E402
from budgetsvm.io import iter_problem_chunks  # noqa: E402
from budgetsvm.memory import run_measuring_peak  # noqa: E402

BIN = Path(sys.executable).parent
WORK = REPO / "build" / "bench-data"
LAMBDA = 1e-4
BUDGET = 100
TARGET_MB = 300


def board(n, seed):
    path = WORK / f"checkerboard-{n}-{seed}.txt"
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        write_checkerboard(path, n, seed)
    return path


def timed_peak(command):
    start = time.perf_counter()
    status, peak, err = run_measuring_peak([str(c) for c in command], cwd=WORK)
    if status != 0:
        raise RuntimeError(f"{command[0]} failed: {err.strip()}")
    return peak, time.perf_counter() - start, err


def run(n, gamma, stream=True):
    train = board(n, 1)
    test = board(n if n >= 10 ** 7 else 10 ** 6, 2)
    C = 1.0 / (LAMBDA * n)
    model = WORK / f"m-{n}-{gamma:g}-{'s' if stream else 'm'}.model"
    out = WORK / "predictions.txt"
    command = [BIN / "bsvm-train", "-q", "-c", repr(C), "-g", repr(gamma), "--budget",
               str(BUDGET), "--epochs", "1", "--merge-search", "lookup-wd"]
    if stream:
        command.append("--stream")
    train_mb, train_s, _ = timed_peak(command + [train, model])
    predict_mb, predict_s, _ = timed_peak([BIN / "bsvm-predict", "-q", test, model, out])
    predicted = np.loadtxt(out)
    truth = np.concatenate([y for _, y in iter_problem_chunks(str(test))])
    acc = 100.0 * float(np.mean(predicted == truth))
    return dict(n=n, gamma=gamma, stream=stream, train_mb=train_mb, train_s=train_s,
                predict_mb=predict_mb, predict_s=predict_s, accuracy=acc,
                test_rows=len(truth), file_mb=train.stat().st_size / 2 ** 20)


def measure(args):
    """One row per command pair (training, then prediction): run()'s dict."""
    sizes = [10 ** 5, 10 ** 6] if args.quick else [int(v) for v in args.sizes.split(",")]
    for n in sizes:
        for gamma in (8.0, 0.0625):
            if gamma == 0.0625 and n != sizes[-1]:
                continue                      # the literal γ only at the largest size
            row = run(n, gamma, stream=True)
            print(row, flush=True)
            yield row
        if n <= 10 ** 6:
            row = run(n, 8.0, stream=False)
            print(row, flush=True)
            yield row


def report(results):
    results = results["rows"]
    rows = [[f"{r['n']:,}", f"{r['file_mb']:.0f}", "--stream" if r["stream"] else "in memory",
             f"{r['gamma']:g}", f"{r['train_mb']:.0f}", f"{r['train_s']:.1f}",
             f"{r['predict_mb']:.0f}", f"{r['predict_s']:.1f}", f"{r['test_rows']:,}",
             f"{r['accuracy']:.2f}"] for r in results]
    body = [table(["training rows", "file MB", "training", "γ", "train peak MB", "train s",
                   "predict peak MB", "predict s", "test rows", "test accuracy %"], rows)]
    streamed = [r for r in results if r["stream"] and r["gamma"] == 8.0]
    largest = streamed[-1]
    verdict = "met" if max(largest["train_mb"], largest["predict_mb"]) < TARGET_MB else "missed"
    body.append(
        f"Target: peak memory under {TARGET_MB} MB for training and prediction at the largest "
        f"size ({largest['n']:,} rows): train {largest['train_mb']:.0f} MB, predict "
        f"{largest['predict_mb']:.0f} MB — **{verdict}**. Wang et al. (2012) report about 99.5% at "
        f"B = 100 with merging; here {largest['accuracy']:.2f}% with γ = 8 after one pass. "
        "The likely reasons for the gap: γ = 8 is our reading of the paper's kernel width, "
        "not tuned, whereas Wang et al. (2012) chose their settings by cross-validation; and a "
        "4 × 4 board has 24 cell edges for 100 support vectors to trace.")
    literal = [r for r in results if r["gamma"] == 0.0625]
    if literal:
        body.append(
            f"With γ = 0.0625 in LIBSVM's convention the accuracy is {literal[0]['accuracy']:.2f}%: "
            "the kernel is too wide for the board's cells (see the settings above), so the "
            "paper's γ must be in another convention.")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for key, label, style in (("train_mb", "bsvm-train --stream", "o-"),
                              ("predict_mb", "bsvm-predict", "s-")):
        ax.plot([r["n"] for r in streamed], [r[key] for r in streamed], style, label=label)
    memory = [r for r in results if not r["stream"]]
    ax.plot([r["n"] for r in memory], [r["train_mb"] for r in memory], "x--",
            label="bsvm-train (in memory)")
    ax.axhline(TARGET_MB, color="grey", lw=0.8, ls=":", label=f"{TARGET_MB} MB target")
    ax.set_xscale("log")
    ax.set_xlabel("rows in the file")
    ax.set_ylabel("peak resident memory (MB)")
    ax.legend(fontsize=8)
    ax.set_title("Checkerboard, B = 100, merging")
    body.append(save_figure(fig, "bench_stream-memory.png",
                            "Peak memory of streaming training and prediction against rows"))
    return Section("Streaming: memory on data larger than memory (issue 8)", "\n\n".join(body),
                   extra=[f"checkerboard (Wang, Crammer & Vucetic 2012), λ = {LAMBDA:g} "
                          f"(C = 1/(λn)), B = {BUDGET}, merging (lookup-wd), 1 epoch, "
                          "--stream-buffer 16 MB, seeds 1 (train) and 2 (test); single runs"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10^5 and 10^6 rows only")
    ap.add_argument("--sizes", default="100000,1000000,10000000")
    add_report_only(ap)
    run_bench("bench_stream", ap.parse_args(), measure, report, datasets=(), peers=("numpy",))


if __name__ == "__main__":
    main()
