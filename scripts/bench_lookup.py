"""Lookup merging vs golden section search (issue 4; Glasmachers & Qaadan 2018): where BSGD's
time goes and how much of it the precomputed tables save.

BSGD (Pegasos, merging) trained with each merge search — gss (ε = 0.01, Glasmachers & Qaadan's
"GSS-standard"), gss-precise (ε = 1e-10), lookup-h and lookup-wd — on the same data, budget, epochs
and seed, the methods interleaved seed by seed so that changes in machine load hit them alike.
Times are CPU seconds of the training call (process_time; BLAS and OpenMP limited to one thread)
and, for the breakdown, the solver's own wall-clock timer of the insertions that triggered budget
maintenance ("maintenance", i.e. merging). Data loading and prediction are not timed.

Table 1: per data set and budget, median (min–max) over the seeds of the total CPU time and the
time in maintenance, the fraction of steps that merged, test accuracy (mean ± sd over seeds) and
the agreement of the predicted test labels with the gss model of the same seed. Table 2
(Table 3 of Glasmachers & Qaadan): comparison mode, where every merge also rescans the candidates
with gss and gss-precise: how often each search picks the same partner as gss / gss-precise, and
the weight degradation of its pair over the precise minimum.

Settings (those of the papers, as bench_bsgd.py): a9a C = 32, γ = 2^-7; ijcnn1 C = 32, γ = 2;
w8a C = 8, γ = 2^-5; skin_nonskin C = 32, γ = 2^-7 on raw values with a seeded 80/20 split
(1 epoch: the largest set, as Glasmachers & Qaadan do for SUSY). B = 100 and 500, 20 epochs,
seeds 1–5.

--quick: a9a and ijcnn1 at B = 100, 5 epochs, seeds 1–3, comparison mode on ijcnn1.

Measures into build/bench/lookup.json (one row per training; scripts/_common.py, run_bench), then
writes the section from that file alone (--report-only: without measuring).

Usage: python scripts/bench_lookup.py [--quick] [--datasets a9a,ijcnn1] [--budgets 100,500]
       [--epochs 20] [--seeds 5] [--report-only]
"""
import argparse
import os
import statistics
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402

from _common import (REPO, Section, add_report_only, mean_sd, pyplot, run_bench,  # noqa: E402
                     save_figure, spread, table)
from bench_bsgd import DATASETS, load  # noqa: E402

sys.path.insert(0, str(REPO))

from budgetsvm.bsgd import train_bsgd  # noqa: E402
from budgetsvm.labels import group_classes  # noqa: E402
from budgetsvm.params import TrainParams  # noqa: E402

SEARCHES = ("gss", "gss-precise", "lookup-h", "lookup-wd")
LARGEST = "skin_nonskin"            # one pass, as Glasmachers & Qaadan do on their largest set
SAVING_TARGET = 0.30
MERGE_HEAVY = 0.10                  # sets where at least this fraction of steps merge
PAPER = ("Glasmachers & Qaadan (2018; docs/ALGORITHMS.md §2.6) report total-time savings of "
         "0.5–43% for Lookup-WD (up to 44% on SUSY, B = 100, one pass), merging time down by "
         "up to 65%, equal accuracy, 74–97% agreement of merge decisions with GSS-standard, "
         "and a WD excess over the precise minimum of 1.0005–1.051 for GSS-standard against "
         "1.00005–1.0073 for Lookup-WD.")


def train(data, name, budget, epochs, search, seed, compare=False):
    X, y_index, labels, Xt, yt = data
    spec = DATASETS[name]
    params = TrainParams(solver="bsgd", C=spec["C"], gamma=spec["gamma"], budget=budget,
                         epochs=epochs, maintenance="merge", merge_search=search, seed=seed,
                         polish="none")      # the papers' BSGD: merging alone decides the model
    cpu = time.process_time()
    model = train_bsgd(X, y_index, labels, params, compare_merges=compare)
    cpu = time.process_time() - cpu
    info = model.train_info
    predicted = model.predict(Xt)
    return {"cpu": cpu, "wall": info["train_seconds"], "maint": info["maintenance_seconds"],
            "merge_fraction": info["n_merges"] / max(info["n_steps"], 1),
            "accuracy": float(np.mean(predicted == yt)), "predicted": predicted, "info": info}


COMPARED = ("n_compared", "same_as_gss", "same_as_precise", "optimal_fraction",
            "wd_excess_total", "wd_ratio_mean", "wd_ratio_max")


def measure_set(name, budgets, epochs_default, seeds, compare_budgets):
    """Rows of one data set: "run" (one training: CPU and wall seconds, maintenance seconds,
    merged fraction, accuracy, label agreement with gss of the same seed) and "compare" (the
    comparison-mode counts of one search)."""
    X, y, Xt, yt = load(name)
    labels, y_index = group_classes(y)
    data = (X, y_index, labels, Xt, yt)
    epochs = 1 if name == LARGEST else epochs_default
    where = {"dataset": name, "epochs": epochs, "n": X.shape[0]}
    for budget in budgets:
        runs = {search: [] for search in SEARCHES}
        for seed in seeds:
            for search in SEARCHES:
                runs[search].append(train(data, name, budget, epochs, search, seed))
                r = runs[search][-1]
                print(f"{name} B={budget} seed {seed} {search}: cpu {r['cpu']:.2f} s, "
                      f"maintenance {r['maint']:.2f} s, accuracy {100 * r['accuracy']:.2f}%",
                      flush=True)
        for seed_index, seed in enumerate(seeds):
            for search in SEARCHES:
                r, ref = runs[search][seed_index], runs["gss"][seed_index]
                yield {"kind": "run", **where, "budget": budget, "search": search, "seed": seed,
                       **{k: r[k] for k in ("cpu", "wall", "maint", "merge_fraction",
                                            "accuracy")},
                       "agreement": float(np.mean(r["predicted"] == ref["predicted"]))}
        if budget in compare_budgets:
            for search in SEARCHES:
                info = train(data, name, budget, epochs, search, seeds[0], compare=True)["info"]
                yield {"kind": "compare", **where, "budget": budget, "search": search,
                       "seed": seeds[0], **{k: info[k] for k in COMPARED}}


def measure(args):
    if args.quick:
        args.datasets, args.budgets, args.epochs, args.seeds = "a9a,ijcnn1", "100", 5, 3
        args.compare_on = "ijcnn1"
    budgets = [int(b) for b in args.budgets.split(",")]
    seeds = list(range(1, args.seeds + 1))
    found = False
    for name in args.datasets.split(","):
        try:
            compare_budgets = budgets if args.compare_on in (None, name) else []
            for row in measure_set(name, budgets, args.epochs, seeds, compare_budgets):
                found = True
                yield row
        except FileNotFoundError as error:
            print(f"{name}: {error}; skipped", flush=True)
            yield {"kind": "missing", "dataset": name}
    if not found:
        raise SystemExit("no data set found")


def measured_sets(rows):
    """{data set: {"epochs", "n", "results": {B: {search: [runs by seed]}}, "compared":
    {B: {search: counts}}}} from the rows, in the order measured."""
    measured = {}
    for r in rows:
        if r["kind"] == "missing":
            continue
        m = measured.setdefault(r["dataset"], {"epochs": r["epochs"], "n": r["n"],
                                               "results": {}, "compared": {}})
        if r["kind"] == "run":
            m["results"].setdefault(r["budget"], {s: [] for s in SEARCHES})[r["search"]] \
                .append(r)
        else:
            m["compared"].setdefault(r["budget"], {})[r["search"]] = r
    return measured


def saving(runs, search):
    """Median over seeds of 1 − cpu(search)/cpu(gss), paired by seed."""
    return statistics.median(1 - r["cpu"] / g["cpu"] for r, g in zip(runs[search], runs["gss"]))


def accuracy_kept(runs, search):
    """(not worse, sd): the mean accuracy of `search` is at most one standard deviation (the
    larger of the two over seeds) below gss's. A gain larger than that is reported, not
    counted against the search."""
    a = [r["accuracy"] for r in runs[search]]
    g = [r["accuracy"] for r in runs["gss"]]
    sd = max(statistics.pstdev(a), statistics.pstdev(g)) if len(a) > 1 else 0.0
    return statistics.fmean(g) - statistics.fmean(a) <= sd + 1e-12, sd


def main_table(measured):
    rows = []
    for name, m in measured.items():
        for budget, runs in m["results"].items():
            for search in SEARCHES:
                rs = runs[search]
                cells = [name, str(budget), search, spread([r["cpu"] for r in rs]),
                         spread([r["maint"] for r in rs]),
                         spread([100 * r["maint"] / r["wall"] for r in rs], "{:.0f}") + "%",
                         "—" if search == "gss" else f"{100 * saving(runs, search):+.0f}%",
                         f"{100 * statistics.fmean(r['merge_fraction'] for r in rs):.1f}%",
                         mean_sd([100 * r["accuracy"] for r in rs]),
                         "—" if search == "gss" else
                         f"{100 * statistics.fmean(r['agreement'] for r in rs):.2f}%"]
                rows.append(cells)
    return table(["data set", "B", "merge search", "train CPU s", "maintenance s",
                  "maintenance share of wall", "saving vs gss", "steps merged",
                  "test accuracy %", "label agreement with gss"], rows)


def compare_table(measured):
    rows = []
    for name, m in measured.items():
        for budget, infos in m["compared"].items():
            for search in SEARCHES:
                i = infos[search]
                rows.append([name, str(budget), search, f"{i['n_compared']:,}",
                             f"{100 * i['same_as_gss']:.2f}%",
                             f"{100 * i['same_as_precise']:.2f}%",
                             f"{100 * i['optimal_fraction']:.2f}%",
                             f"{i['wd_excess_total']:.6f}", f"{i['wd_ratio_mean']:.4g}",
                             f"{i['wd_ratio_max']:.4g}"])
    return table(["data set", "B", "merge search", "merges compared", "same partner as gss",
                  "same partner as gss-precise", "partner attains the precise minimum",
                  "Σ WD / Σ precise minimum", "WD / minimum, mean per merge",
                  "WD / minimum, max"], rows)


def verdict(measured):
    lines, heavy_results = [], []
    for name, m in measured.items():
        for budget, runs in m["results"].items():
            merged = statistics.fmean(r["merge_fraction"] for r in runs["gss"])
            save = saving(runs, "lookup-wd")
            kept, sd = accuracy_kept(runs, "lookup-wd")
            a = statistics.fmean(r["accuracy"] for r in runs["lookup-wd"])
            g = statistics.fmean(r["accuracy"] for r in runs["gss"])
            heavy = merged >= MERGE_HEAVY
            met = save >= SAVING_TARGET and kept
            if heavy:
                heavy_results.append(met)
            lines.append(
                f"- {name}, B = {budget} ({100 * merged:.0f}% of steps merge"
                f"{', merge-heavy' if heavy else ''}): lookup-wd saves {100 * save:.0f}% of the "
                f"CPU time of gss; accuracy {100 * a:.2f}% vs {100 * g:.2f}% (difference "
                f"{100 * (a - g):+.2f} points, one sd = {100 * sd:.2f}"
                f"{'; better than gss by more than one sd' if a - g > sd else ''}) — "
                + (("met" if met else "**missed**") if heavy else
                   "not merge-heavy, so the target does not apply") + ".")
    if heavy_results:
        overall = ("**met**" if all(heavy_results) else
                   f"**missed** on {heavy_results.count(False)} of {len(heavy_results)}")
    else:
        overall = "not assessed (no merge-heavy setting was run)"
    head = (f"Target: lookup-wd saves at least {100 * SAVING_TARGET:.0f}% of the total training "
            f"time of gss on the merge-heavy settings (≥ {100 * MERGE_HEAVY:.0f}% of steps merge), "
            "at equal accuracy (its mean accuracy not below gss's by more than the larger of the "
            f"two standard deviations over seeds; a larger gain counts as equal): {overall}.")
    return head + "\n\n" + "\n".join(lines)


def figure(measured):
    plt = pyplot()
    budgets = sorted({b for m in measured.values() for b in m["results"]})
    fig, axes = plt.subplots(1, len(budgets), figsize=(5.2 * len(budgets), 3.8), squeeze=False)
    width = 0.8 / len(SEARCHES)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, budget in zip(axes[0], budgets):
        names = [n for n, m in measured.items() if budget in m["results"]]
        for j, search in enumerate(SEARCHES):
            maint, rest = [], []
            for name in names:
                runs = measured[name]["results"][budget]
                ref = statistics.median(r["cpu"] for r in runs["gss"])
                cpu = statistics.median(r["cpu"] for r in runs[search])
                share = statistics.median(r["maint"] / r["wall"] for r in runs[search])
                maint.append(cpu * share / ref)
                rest.append(cpu * (1 - share) / ref)
            x = np.arange(len(names)) + (j - (len(SEARCHES) - 1) / 2) * width
            ax.bar(x, maint, width, color=colours[j], label=f"{search}: merging")
            ax.bar(x, rest, width, bottom=maint, color=colours[j], alpha=0.35,
                   label=f"{search}: rest")
        ax.set_xticks(np.arange(len(names)))
        ax.set_xticklabels(names)
        ax.set_ylabel("training CPU time / gss")
        ax.set_title(f"B = {budget}")
        ax.axhline(1.0, color="grey", lw=0.7, ls=":")
    axes[0][-1].legend(fontsize=7, ncol=2, loc="upper right")
    return save_figure(fig, "bench_lookup-time-breakdown.png",
                       "BSGD training time split into merging (solid) and the rest (light), "
                       "relative to gss, per merge search")


def report(results):
    args = argparse.Namespace(**results["meta"]["options"])
    budgets = [int(b) for b in args.budgets.split(",")]
    seeds = list(range(1, args.seeds + 1))
    measured = measured_sets(results["rows"])
    missing = [r["dataset"] for r in results["rows"] if r["kind"] == "missing"]
    body = [verdict(measured), main_table(measured), figure(measured),
            "Comparison mode (Glasmachers & Qaadan 2018, Table 3): every merge of a run with "
            "the search named rescans all candidates with gss and gss-precise, in that run's own "
            f"trajectory (seed {seeds[0]}). 'Same partner' compares indices; many candidates are "
            "tied (identical rows of binary data such as a9a and w8a), so 'attains the precise "
            "minimum' — the chosen partner's precise weight degradation (WD) equals the smallest "
            "one up to 1e-9, ties included — is the measure of a correct choice. "
            "Σ WD / Σ minimum is the total WD excess of the run's choices (Glasmachers & "
            "Qaadan's WD factor); the mean and max of the per-merge ratios are dominated by merges "
            "whose smallest WD is nearly 0 (a tiny coefficient), where gss's absolute resolution "
            "of 0.01 in h is a large relative error.",
            compare_table(measured),
            PAPER + " Our numbers are for a different implementation (a Cython GSS whose "
            "cost per candidate is small next to the kernel row of the step) and for the data "
            "sets above, so the saving depends on how much of the time merging takes here: the "
            "maintenance-share column shows it."]
    if missing:
        body.append(f"Missing data sets (rows skipped): {', '.join(missing)}.")
    epochs_text = ", ".join(f"{n}: {m['epochs']} epoch{'s' if m['epochs'] > 1 else ''} "
                            f"({m['n']:,} training rows)" for n, m in measured.items())
    return Section("Lookup merging vs golden section search (Glasmachers & Qaadan 2018)",
                   "\n\n".join(body),
                   extra=["BSGD (Pegasos) in the papers' mode (--polish none), merging, "
                          + "; ".join(f"{n} C = {DATASETS[n]['C']:g}, "
                                      f"γ = {DATASETS[n]['gamma']:g}" for n in measured),
                          f"B = {', '.join(map(str, budgets))}; {epochs_text}; seeds "
                          f"{', '.join(map(str, seeds))}",
                          "times: CPU seconds of the training call, one thread; maintenance: "
                          "the solver's wall-clock timer of the insertions that merged"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--datasets", default="a9a,ijcnn1,w8a,skin_nonskin")
    ap.add_argument("--budgets", default="100,500")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=5)
    add_report_only(ap)
    args = ap.parse_args()
    args.compare_on = None
    names = ["a9a", "ijcnn1"] if args.quick else args.datasets.split(",")
    run_bench("bench_lookup", args, measure, report, datasets=names, peers=("numpy",))


if __name__ == "__main__":
    main()
