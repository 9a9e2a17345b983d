"""Benchmark of BSGD (issue 3) against LIBSVM (exact SVM) and Nystroem + LinearSVC.

Every run happens in its own subprocess with a 600 s cap ("> 600 s" in the tables), with BLAS
and OpenMP limited to one thread (LIBSVM and BSGD are single-threaded). Train times exclude data
loading; both wall-clock and CPU time (process_time) are reported, because on a shared machine
the wall time mostly measures the other processes. Measures into build/bench/bsgd.json (one row
per run; scripts/_common.py, run_bench), then writes from that file alone (--report-only: without
measuring) the report section build/bench/bench_bsgd.md (printed too) with the figure docs/figures/bench_bsgd-accuracy-vs-B.png
(test accuracy against the budget for merge, projection, removal and Nystroem, LIBSVM as a
horizontal line).

Data come from $BSVM_DATA (required). Settings (those of Qaadan, Schüler & Glasmachers 2019 and
Glasmachers & Qaadan 2018 where these papers give them):

  a9a            C = 32, γ = 2^-7
  ijcnn1         C = 32, γ = 2
  w8a            C = 8,  γ = 2^-5
  skin_nonskin   C = 32, γ = 2^-7 on the raw 0–255 RGB values (no scaling; the kernel width is
                 then σ² = 1/(2γ) = 64 intensity units²); no test file exists, so a seeded 80/20
                 split (seed 0) is used
  dna.scale      C = 8,  γ = 2^-5 (issue: budget 200 -c 8 -g 0.03125)
  satimage.scale C = 16, γ = 1      (Hsu & Lin 2002, "A comparison of methods for multiclass
                 SVMs", Table: satimage (2^4, 2^0))
  mnist          values / 255; C = 8, γ = 2^-5 (common literature range for [0,1] pixels:
                 C ≈ 5–10, γ ≈ 0.02–0.05); first 20,000 training rows, full test set

--quick: dna.scale at B = 50, 100, 200, 500 and ijcnn1 at B = 100, 500, all three maintenance
strategies and both peers, cap 120 s per run, plus the time-per-iteration check.

Usage:  python scripts/bench_bsgd.py [--quick] [--datasets a9a,ijcnn1] [--budgets 100,500]
        [--maintenance merge,projection,removal] [--no-peers] [--scaling] [--seed 1]
        [--report-only]
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CAP_SECONDS = 600
sys.path.insert(0, str(REPO / "scripts"))
from _common import (Section, add_report_only, data_dir, pyplot, run_bench,  # noqa: E402
                     save_figure, table)

QUICK = {"dna.scale": [50, 100, 200, 500], "ijcnn1": [100, 500]}
FIGURE_PREFERENCE = ("ijcnn1", "a9a", "dna.scale", "w8a", "satimage.scale", "mnist",
                     "skin_nonskin")
METHOD_LABEL = {"merge": "BSGD merge", "projection": "BSGD projection",
                "removal": "BSGD removal"}

DATASETS = {
    "a9a": dict(train="a9a.xz", test="a9a.t.xz", C=32.0, gamma=2 ** -7),
    "ijcnn1": dict(train="ijcnn1.xz", test="ijcnn1.t.xz", C=32.0, gamma=2.0),
    "w8a": dict(train="w8a.xz", test="w8a.t.xz", C=8.0, gamma=2 ** -5),
    "skin_nonskin": dict(train="skin_nonskin.xz", test=None, C=32.0, gamma=2 ** -7),
    "dna.scale": dict(train="dna.scale.xz", test="dna.scale.t.xz", C=8.0, gamma=2 ** -5),
    "satimage.scale": dict(train="satimage.scale.xz", test="satimage.scale.t.xz", C=16.0,
                           gamma=1.0),
    "mnist": dict(train="mnist.xz", test="mnist.t.xz", C=8.0, gamma=2 ** -5, scale=1 / 255,
                  subset=20000),
}
BINARY = ("a9a", "ijcnn1", "w8a", "skin_nonskin")


def load(name, subset=None):
    """(X, y, Xt, yt) for a data set, with its scaling / split / subset applied."""
    from budgetsvm.io import read_problem
    spec = DATASETS[name]
    folder = data_dir()
    X, y = read_problem(folder / spec["train"])
    if spec["test"] is None:
        rng = np.random.default_rng(0)
        perm = rng.permutation(X.shape[0])
        cut = int(0.8 * X.shape[0])
        Xt, yt = X[perm[cut:]], y[perm[cut:]]
        X, y = X[perm[:cut]], y[perm[:cut]]
    else:
        Xt, yt = read_problem(folder / spec["test"])
    d = max(X.shape[1], Xt.shape[1])
    X.resize((X.shape[0], d))
    Xt.resize((Xt.shape[0], d))
    if "scale" in spec:
        X = X * spec["scale"]
        Xt = Xt * spec["scale"]
    limit = subset or spec.get("subset")
    if limit and limit < X.shape[0]:
        X, y = X[:limit], y[:limit]
    return X.tocsr(), y, Xt.tocsr(), yt


# ---------------------------------------------------------------------------------------------
# One run (in a subprocess)
# ---------------------------------------------------------------------------------------------

def run_one(job):
    name = job["dataset"]
    spec = DATASETS[name]
    X, y, Xt, yt = load(name, job.get("subset"))
    C, gamma, B = spec["C"], spec["gamma"], job.get("budget")
    method = job["method"]
    if method == "bsgd":
        from budgetsvm.bsgd import train_bsgd
        from budgetsvm.labels import group_classes
        from budgetsvm.params import TrainParams
        labels, y_index = group_classes(y)
        p = TrainParams(solver="bsgd", C=C, gamma=gamma, budget=B, epochs=job.get("epochs", 5),
                        maintenance=job["maintenance"], seed=job.get("seed", 1),
                        merge_search=job.get("merge_search", "gss"),
                        polish="none")       # the paper's algorithm: no refit, no coalescing
        start, cpu = time.perf_counter(), time.process_time()
        model = train_bsgd(X, y_index, labels, p)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        acc = float((model.predict(Xt) == yt).mean())
        info = model.train_info
        return {"seconds": seconds, "cpu": cpu, "accuracy": acc, "n_sv": int(model.n_sv),
                "n_steps": info["n_steps"], "maintenance_seconds": info["maintenance_seconds"]}
    if method == "libsvm":
        from libsvm.svmutil import svm_predict, svm_problem, svm_parameter, svm_train
        prob = svm_problem(y, X)
        param = svm_parameter(f"-s 0 -t 2 -c {C} -g {gamma} -m 500 -q")
        start, cpu = time.perf_counter(), time.process_time()
        model = svm_train(prob, param)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        pred, _, _ = svm_predict(yt, Xt, model, "-q")
        acc = float((np.asarray(pred) == yt).mean())
        return {"seconds": seconds, "cpu": cpu, "accuracy": acc, "n_sv": int(model.get_nr_sv())}
    if method == "nystroem":
        from sklearn.kernel_approximation import Nystroem
        from sklearn.svm import LinearSVC
        start, cpu = time.perf_counter(), time.process_time()
        feat = Nystroem(kernel="rbf", gamma=gamma, n_components=B, random_state=job.get("seed", 1))
        Z = feat.fit_transform(X)
        clf = LinearSVC(C=C, dual="auto", random_state=0).fit(Z, y)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        acc = float((clf.predict(feat.transform(Xt)) == yt).mean())
        return {"seconds": seconds, "cpu": cpu, "accuracy": acc, "n_sv": int(B)}
    raise ValueError(method)


def run_job(job, cap=None):
    """Run one job in a subprocess; returns its result dict or {'timeout': True}/{'error':..}."""
    cap = cap or CAP_SECONDS
    cmd = [sys.executable, str(Path(__file__).resolve()), "--run-one", json.dumps(job)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=cap, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"timeout": True}
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt(res, key):
    if res.get("timeout"):
        return f"> {CAP_SECONDS} s" if key == "seconds" else "–"
    if "error" in res:
        return "error" if key == "seconds" else "–"
    if key in ("seconds", "cpu"):
        return f"{res[key]:.2f}"
    if key == "accuracy":
        return f"{100 * res['accuracy']:.2f}%"
    return str(res[key])


def ok(res):
    return "accuracy" in res


def bench_dataset(name, budgets, maintenances, peers, seed, epochs, merge_search):
    """One row per run: the job (data set, method, budget, ...) and its result."""
    for B in budgets:
        for maint in maintenances:
            job = {"dataset": name, "method": "bsgd", "budget": B, "maintenance": maint,
                   "seed": seed, "epochs": epochs, "merge_search": merge_search}
            res = run_job(job)
            print(f"  {name} B={B} {maint}: {res}", file=sys.stderr, flush=True)
            yield {"part": "main", **job, **res}
        if peers:
            job = {"dataset": name, "method": "nystroem", "budget": B, "seed": seed}
            res = run_job(job)
            print(f"  {name} B={B} nystroem: {res}", file=sys.stderr, flush=True)
            yield {"part": "main", **job, **res}
    if peers:
        job = {"dataset": name, "method": "libsvm"}
        res = run_job(job)
        print(f"  {name} libsvm: {res}", file=sys.stderr, flush=True)
        yield {"part": "main", **job, **res}


JOB_KEYS = ("part", "dataset", "method", "budget", "maintenance", "seed", "epochs",
            "merge_search", "subset")


def result_of(row):
    return {k: v for k, v in row.items() if k not in JOB_KEYS}


def dataset_results(rows, plan):
    """{data set: {'bsgd': {(maint, B): res}, 'nystroem': {B: res}, 'libsvm': res or None,
    'budgets': [B]}} from the rows of the main part, in the plan's order."""
    out = {}
    for row in rows:
        if row["part"] != "main":
            continue
        res = out.setdefault(row["dataset"], {"bsgd": {}, "nystroem": {}, "libsvm": None,
                                              "budgets": plan[row["dataset"]]})
        if row["method"] == "bsgd":
            res["bsgd"][row["maintenance"], row["budget"]] = result_of(row)
        elif row["method"] == "nystroem":
            res["nystroem"][row["budget"]] = result_of(row)
        else:
            res["libsvm"] = result_of(row)
    return out


def dataset_table(name, res, budgets, maintenances, seed, epochs):
    spec = DATASETS[name]
    lib = res["libsvm"]
    rows = []

    def ratio_cells(r):
        if not ok(r) or lib is None or not ok(lib):
            return ["–", "–"]
        return [f"{lib['cpu'] / r['cpu']:.1f}x",
                f"{100 * (r['accuracy'] - lib['accuracy']):+.2f}"]

    for B in budgets:
        for maint in maintenances:
            r = res["bsgd"][maint, B]
            rows.append([METHOD_LABEL[maint], B, fmt(r, "cpu"), fmt(r, "seconds"),
                         fmt(r, "accuracy"), *ratio_cells(r), fmt(r, "n_sv")])
        if B in res["nystroem"]:
            r = res["nystroem"][B]
            rows.append(["Nystroem + LinearSVC", B, fmt(r, "cpu"), fmt(r, "seconds"),
                         fmt(r, "accuracy"), *ratio_cells(r), fmt(r, "n_sv")])
    if lib is not None:
        rows.append(["LIBSVM (exact)", "–", fmt(lib, "cpu"), fmt(lib, "seconds"),
                     fmt(lib, "accuracy"), "1", "0", fmt(lib, "n_sv")])
    extra = spec.get("subset")
    head = (f"### {name} (C = {spec['C']:g}, γ = {spec['gamma']:g}, {epochs} epochs, "
            f"seed {seed}{f', first {extra:,} training rows' if extra else ''})")
    return head + "\n\n" + table(
        ["method", "B", "train CPU s", "train wall s", "test accuracy",
         "LIBSVM CPU / this", "acc − LIBSVM (points)", "#SV"], rows)


def figure(results, maintenances):
    """Test accuracy against B for one or two data sets."""
    names = [n for n in FIGURE_PREFERENCE if n in results][:2]
    if not names:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(names), figsize=(4.8 * len(names), 3.6), squeeze=False)
    colors = {"merge": "#d62728", "projection": "#1f77b4", "removal": "#7f7f7f",
              "nystroem": "#2ca02c"}
    for ax, name in zip(axes[0], names):
        res = results[name]
        budgets = res["budgets"]
        for maint in maintenances:
            pts = [(B, res["bsgd"][maint, B]) for B in budgets
                   if ok(res["bsgd"].get((maint, B), {}))]
            if pts:
                ax.plot([B for B, _ in pts], [100 * r["accuracy"] for _, r in pts], "o-",
                        color=colors[maint], label=METHOD_LABEL[maint])
        pts = [(B, r) for B, r in sorted(res["nystroem"].items()) if ok(r)]
        if pts:
            ax.plot([B for B, _ in pts], [100 * r["accuracy"] for _, r in pts], "s--",
                    color=colors["nystroem"], label="Nystroem + LinearSVC")
        lib = res["libsvm"]
        if lib is not None and ok(lib):
            ax.axhline(100 * lib["accuracy"], color="black", lw=1.0, ls=":",
                       label="LIBSVM (exact SVM)")
        ax.set_xscale("log")
        ax.set_xticks(budgets)
        ax.set_xticklabels([str(b) for b in budgets])
        ax.minorticks_off()
        ax.set_xlabel("budget B (support vectors / Nystroem components)")
        n_sv = f"; LIBSVM {lib['n_sv']:,} SVs" if lib is not None and ok(lib) else ""
        ax.set_title(f"{name} (C = {DATASETS[name]['C']:g}, γ = {DATASETS[name]['gamma']:g}"
                     f"{n_sv})", fontsize=10)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("test accuracy (%)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=7,
               bbox_to_anchor=(0.5, -0.04), frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return save_figure(fig, "bench_bsgd-accuracy-vs-B.png",
                       "Test accuracy against the budget: BSGD with merging, projection and "
                       "removal, Nystroem + LinearSVC with as many components, and the exact "
                       "SVM (LIBSVM)")


SCALING_RUNS = 3


def scaling_rows(seed, merge_search):
    """Rows of the time-per-iteration check: ijcnn1 subsets (B = 500, merge, 1 epoch), each the
    run of least CPU time of SCALING_RUNS (runs of 0.1–0.3 s: one slow run on a shared machine
    would otherwise decide the comparison)."""
    for n in (12500, 25000, 50000):
        job = {"dataset": "ijcnn1", "method": "bsgd", "budget": 500, "maintenance": "merge",
               "seed": seed, "epochs": 1, "subset": n, "merge_search": merge_search}
        runs = [run_job(job) for _ in range(SCALING_RUNS)]
        timed = [run for run in runs if "cpu" in run]
        best = min(timed, key=lambda run: run["cpu"]) if timed else runs[0]
        yield {"part": "scaling", **job, **best, "runs": len(runs)}


def scaling_text(scaling, seed, merge_search):
    """Seconds per 10k iterations on ijcnn1 subsets (B = 500, merge, 1 epoch)."""
    rows, per = [], []
    for res in scaling:
        n = res["subset"]
        if "seconds" in res:
            per.append(res["cpu"] / (res["n_steps"] / 1e4))
            wall = res["seconds"] / (res["n_steps"] / 1e4)
            rows.append([f"{n:,}", res["n_steps"], f"{res['cpu']:.2f}", f"{per[-1]:.3f}",
                         f"{wall:.3f}"])
        else:
            rows.append([f"{n:,}", "–", fmt(res, "seconds"), "–", "–"])
    runs = max((res.get("runs", 1) for res in scaling), default=1)
    text = ("### Time per iteration against n (ijcnn1 subsets, B = 500, merge with "
            f"{merge_search}, 1 epoch, seed {seed}"
            + (f"; the least CPU time of {runs} runs" if runs > 1 else "") + ")\n\n"
            + table(["rows", "steps", "train CPU s", "CPU s / 10k iterations",
                     "wall s / 10k iterations"], rows))
    if len(per) >= 2:
        spread_pct = 100 * (max(per) / min(per) - 1)
        if spread_pct <= 20:
            text += (f"\n\nCPU time per 10k iterations is flat within {spread_pct:.0f}% across "
                     "a 4x range of n: a BSGD step costs O(B), independent of the number of "
                     "training rows, as Wang et al. (2012) state.")
        else:
            text += (f"\n\nCPU time per 10k iterations varies by {spread_pct:.0f}% across a 4x "
                     "range of n, so it is **not flat** in this run, although a BSGD step "
                     "costs O(B) whatever n (Wang, Crammer & Vucetic 2012). The likely reason "
                     "is a fixed cost per run that weighs most on the shortest run (a one-off "
                     "set-up in the solver, or load on the shared machine while it ran).")
    return text


def discussion(results, maintenances):
    lines = ["**Against the paper.** Wang et al. (2012) find merging the best of the three "
             "budget maintenance strategies, with accuracy close to the exact SVM at a fraction "
             "of its cost, and removal the worst. Here:"]
    for name, res in results.items():
        best_other = []
        for B in res["budgets"]:
            accs = {m: res["bsgd"][m, B]["accuracy"] for m in maintenances
                    if ok(res["bsgd"][m, B])}
            if "merge" in accs and len(accs) > 1:
                top = max(accs, key=accs.get)
                if top != "merge":
                    best_other.append(f"B = {B}: {top} {100 * accs[top]:.2f}% vs merge "
                                      f"{100 * accs['merge']:.2f}%")
        text = f"- {name}: "
        if best_other:
            text += "merging is not the most accurate at " + "; ".join(best_other)
        else:
            text += "merging is the most accurate strategy at every budget"
        lib = res["libsvm"]
        merge = [res["bsgd"]["merge", B] for B in res["budgets"]
                 if ok(res["bsgd"].get(("merge", B), {}))]
        if lib is not None and ok(lib) and merge:
            top = max(merge, key=lambda r: r["accuracy"])
            diff = 100 * (lib["accuracy"] - top["accuracy"])
            text += (f"; the best merge run is {abs(diff):.2f} points "
                     + ("below" if diff >= 0 else "above")
                     + f" LIBSVM in {lib['cpu'] / top['cpu']:.1f}x less CPU time")
        elif lib is not None and lib.get("timeout"):
            text += f"; LIBSVM did not finish within {CAP_SECONDS} s"
        lines.append(text + ".")
    ij = results.get("ijcnn1")
    if ij and ij["libsvm"] is not None and ok(ij["libsvm"]) \
            and ok(ij["bsgd"].get(("merge", 500), {})):
        lib, m = ij["libsvm"], ij["bsgd"]["merge", 500]
        gap = 100 * (lib["accuracy"] - m["accuracy"])
        speed = lib["cpu"] / m["cpu"]
        lines.append(f"- issue 3's targets on ijcnn1 (merge, B = 500): within 1.0 point of "
                     f"LIBSVM — {gap:.2f} points below, "
                     + ("met" if gap <= 1.0 else "**missed**")
                     + f"; 10x faster than LIBSVM (stretch) — {speed:.1f}x in CPU time, "
                     + ("met." if speed >= 10 else
                        f"**missed**. The likely reason: the exact SVM needs only {lib['n_sv']:,} "
                        "support vectors on ijcnn1, so LIBSVM is fast there, while BSGD's "
                        f"{m['n_steps']:,} steps each cost "
                        "O(B) kernel evaluations plus the merges."))
        nys = ij["nystroem"].get(500)
        if nys and ok(nys):
            better = m["accuracy"] >= nys["accuracy"] and m["cpu"] < nys["cpu"]
            lines.append(f"- Nystroem with 500 components on ijcnn1: {100 * nys['accuracy']:.2f}% "
                         f"in {nys['cpu']:.2f} CPU s against BSGD-merge's "
                         f"{100 * m['accuracy']:.2f}% in {m['cpu']:.2f} s: BSGD "
                         + ("reaches its accuracy in less time (target met)." if better else
                            "does **not** reach its accuracy in less time (target missed)."))
    a9a = results.get("a9a")
    if a9a and a9a["libsvm"] is not None and ok(a9a["libsvm"]) \
            and ok(a9a["bsgd"].get(("merge", 500), {})):
        gap = 100 * (a9a["libsvm"]["accuracy"] - a9a["bsgd"]["merge", 500]["accuracy"])
        lines.append(f"- issue 3's stretch target on a9a (merge, B = 500, within 1.0 point of "
                     f"LIBSVM): {gap:.2f} points below, "
                     + ("met." if gap <= 1.0 else
                        "**missed**; the likely reason: a9a's classes overlap and the "
                        f"exact SVM keeps {a9a['libsvm']['n_sv']:,} support vectors, so a "
                        "budget of 500 is a much coarser approximation there."))
    lines.append(
        "\nWhere our setting differs from Wang et al.'s, and why results may differ: Wang et "
        "al. (2012) standardise the features, tune C and γ by 10-fold CV per data set and make "
        "a single pass; we use the LIBSVM-scaled files as distributed, the C and γ of Qaadan "
        "et al. (2019) and Glasmachers & Qaadan (2018) (or of the literature, see the script's "
        "header) for all methods, and 5 epochs. "
        "Single seed per cell: BSGD's accuracy varies by a few points between seeds on a9a "
        "(80.5–84.5% at B = 500 in issue 3's three-seed run), so differences of that size "
        "between strategies are within noise.")
    return "\n".join(lines)


def measure(args):
    """The rows of every data set of the plan (bench_dataset), then, when ijcnn1 was run, of
    the time-per-iteration check (scaling_rows)."""
    global CAP_SECONDS
    if args.quick:
        args.plan, CAP_SECONDS = dict(QUICK), 120
    else:
        budgets = [int(b) for b in args.budgets.split(",")]
        args.plan = {name: budgets for name in args.datasets.split(",")}
    args.cap = CAP_SECONDS
    print(f"Data: {data_dir()}; cap {CAP_SECONDS} s per run; times exclude data loading.",
          file=sys.stderr)
    ran = []
    for name, budgets in args.plan.items():
        if not (data_dir() / DATASETS[name]["train"]).exists():
            continue                              # listed as missing in the setting block
        ran.append(name)
        yield from bench_dataset(name, budgets, args.maintenance.split(","), not args.no_peers,
                                 args.seed, args.epochs, args.merge_search)
    if "ijcnn1" in ran:
        yield from scaling_rows(args.seed, args.merge_search)


def report(results):
    global CAP_SECONDS
    args = argparse.Namespace(**results["meta"]["options"])
    CAP_SECONDS = args.cap
    plan, maint = args.plan, args.maintenance.split(",")
    rows = results["rows"]
    results = dataset_results(rows, plan)
    scaling = [r for r in rows if r["part"] == "scaling"]
    sections = [dataset_table(name, res, plan[name], maint, args.seed, args.epochs)
                for name, res in results.items()]
    body = [f"Train times exclude data loading; CPU time first because the machine is shared "
            f"(wall time also counts other processes). Each run is a separate process with BLAS "
            f"on one thread, capped at {CAP_SECONDS} s; one run (seed {args.seed}) per cell. "
            "'LIBSVM CPU / this' is the speed-up over the exact SVM in the same run; "
            "'acc − LIBSVM' the accuracy difference in points."]
    body += sections
    fig = figure(results, maint)
    if fig:
        body.append(fig)
    if "ijcnn1" in results:
        body.append(scaling_text(scaling, args.seed, args.merge_search))
    body.append(discussion(results, maint))
    return Section(
        "Budgeted vs exact SVM and Nyström; removal vs projection vs merging "
        "(Wang, Crammer & Vucetic 2012)", "\n\n".join(body),
        extra=["Hyper-parameters (RBF kernel, same C and γ for every method): "
               + "; ".join(f"{n} C = {DATASETS[n]['C']:g}, γ = {DATASETS[n]['gamma']:g}"
                           for n in plan)
               + "; budgets " + "; ".join(f"{n}: {', '.join(map(str, b))}"
                                           for n, b in plan.items()),
               f"BSGD: the paper's algorithm (--polish none: no refit, no coalescing), Pegasos "
               f"variant, {args.epochs} epochs, merging with --merge-search "
               f"{args.merge_search}" + (" (golden section search, ε = 0.01, as Wang et al. 2012)"
                                         if args.merge_search == "gss" else "")
               + f", seed {args.seed}; Nystroem: sklearn Nystroem(n_components = B, random_state = "
               f"{args.seed}) + LinearSVC(C, random_state = 0); LIBSVM: -s 0 -t 2 -m 500",
               "skin_nonskin: seeded 80/20 split (seed 0); mnist: values / 255, first 20,000 "
               "training rows"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-one", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true",
                    help="dna.scale (B = 50..500) and ijcnn1 (B = 100, 500), all strategies "
                         "and peers, cap 120 s per run")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--budgets", default="100,500")
    ap.add_argument("--maintenance", default="merge,projection,removal")
    ap.add_argument("--no-peers", action="store_true", help="skip LIBSVM and Nystroem")
    ap.add_argument("--scaling", action="store_true",
                    help="only the time-per-iteration check on ijcnn1 subsets")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--merge-search", default="gss",
                    help="merging's partner search (default gss, as in Wang et al. 2012)")
    add_report_only(ap)
    args = ap.parse_args(argv)
    if args.run_one:
        print(json.dumps(run_one(json.loads(args.run_one))))
        return
    if args.scaling:
        print(scaling_text(list(scaling_rows(args.seed, args.merge_search)), args.seed,
                           args.merge_search))
        return
    plan = QUICK if args.quick else {name: None for name in args.datasets.split(",")}
    files = [f for name in plan for f in (DATASETS[name]["train"], DATASETS[name]["test"]) if f]
    run_bench("bench_bsgd", args, measure, report, datasets=[f[:-len(".xz")] for f in files],
              peers=("libsvm-official", "scikit-learn", "numpy", "scipy"))


if __name__ == "__main__":
    main()
