"""Run every benchmark in scripts/ in the report's order, each as its own process (with --quick
when quick), then assemble docs/BENCHMARKS.md with scripts/make_report.py. A failing benchmark
is reported and the others still run; the exit status is then 1. Data sets come from the folder
named by BSVM_DATA (required by the benchmarks that use data beyond data/).

    python scripts/run_benchmarks.py [--quick] [--only io,dcd] [--report-only]

--report-only measures nothing: every script rebuilds its section from its results file
(build/bench/<name>.json, scripts/_common.py) with its own --report-only; a script without one
is skipped (its old section, if any, stays), then docs/BENCHMARKS.md is assembled.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import REPO, SECTION_DIR, results_path  # noqa: E402
from make_report import RUNS, STEMS, load_runs  # noqa: E402


def record(stem, entry):
    """Merge one script's outcome into build/bench/runs.json (read by make_report.py)."""
    SECTION_DIR.mkdir(parents=True, exist_ok=True)
    try:
        runs = json.loads(RUNS.read_text())
    except (OSError, ValueError):
        runs = {}
    runs[stem] = entry
    tmp = RUNS.with_name(f".{RUNS.name}.tmp")
    tmp.write_text(json.dumps(runs, indent=1, sort_keys=True))
    os.replace(tmp, RUNS)


def report_only(stems):
    """Rebuild the section of every script that has a results file, and record in runs.json
    the mode and end of the run that measured it; returns (the scripts that failed, whether
    every rebuilt section is from a quick run)."""
    failed, modes = [], []
    for stem in stems:
        path = results_path(stem)
        if not path.exists():
            print(f"=== {stem}: no {path.relative_to(REPO)}, skipped (its section, if any, "
                  "is left as it was)", flush=True)
            continue
        print(f"\n=== {stem} --report-only\n", flush=True)
        code = subprocess.run([sys.executable, str(HERE / f"{stem}.py"), "--report-only"],
                              cwd=HERE, stdout=subprocess.DEVNULL).returncode
        print(f"=== {stem}: {'ok' if code == 0 else f'failed (exit status {code})'}",
              flush=True)
        if code != 0:
            failed.append(stem)
            continue
        meta = json.loads(path.read_text()).get("meta", {})
        modes.append(bool(meta.get("quick")))
        finished = (meta.get("finished") or "")[:16] + " UTC" if meta.get("finished") else "?"
        entry = load_runs().get(stem, {})
        if entry.get("quick") != meta.get("quick") or entry.get("finished") != finished:
            # runs.json describes another run than the one in the results file
            record(stem, {"status": "ok", "quick": bool(meta.get("quick")),
                          "finished": finished})
    return failed, bool(modes) and all(modes)


def measure_all(stems, quick):
    """Run every script (measure and report) in its own process; returns those that failed."""
    failed = []
    start_all = time.perf_counter()
    for stem in stems:
        script = HERE / f"{stem}.py"
        now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        # An old section must not survive a failed or skipped run of its script.
        (SECTION_DIR / f"{stem}.md").unlink(missing_ok=True)
        if not script.exists():
            print(f"\n=== {stem}: scripts/{stem}.py does not exist, skipped\n", flush=True)
            record(stem, {"status": "missing", "quick": quick, "finished": now})
            continue
        print(f"\n=== {stem}{' --quick' if quick else ''}\n", flush=True)
        command = [sys.executable, str(script)] + (["--quick"] if quick else [])
        start = time.perf_counter()
        code = subprocess.run(command, cwd=HERE).returncode
        seconds = time.perf_counter() - start
        status = "ok" if code == 0 else f"failed (exit status {code})"
        if code != 0:
            failed.append(stem)
            # A script that wrote its section before failing still failed.
            (SECTION_DIR / f"{stem}.md").unlink(missing_ok=True)
        print(f"\n=== {stem}: {status}, {seconds:.0f} s\n", flush=True)
        record(stem, {"status": status, "quick": quick, "seconds": seconds,
                      "finished": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")})
    print(f"=== all benchmarks: {time.perf_counter() - start_all:.0f} s", flush=True)
    return failed


def command_text(args):
    """How the report names this run: the make target when make started us, else argv."""
    if os.environ.get("MAKELEVEL") and not args.only:
        return "make bench-quick" if args.quick else "make bench"
    return "python scripts/run_benchmarks.py " + " ".join(sys.argv[1:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short subset of every benchmark")
    parser.add_argument("--only", help="comma-separated benchmark names, e.g. io,dcd")
    parser.add_argument("--no-report", action="store_true",
                        help="do not regenerate docs/BENCHMARKS.md")
    parser.add_argument("--report-only", action="store_true",
                        help="measure nothing: rebuild the sections from build/bench/*.json")
    args = parser.parse_args()
    stems = STEMS
    if args.only:
        wanted = [name if name.startswith("bench_") else f"bench_{name}"
                  for name in args.only.split(",")]
        unknown = sorted(set(wanted) - set(STEMS))
        if unknown:
            parser.error(f"unknown benchmark(s): {', '.join(unknown)}; known: "
                         + ", ".join(s[len('bench_'):] for s in STEMS))
        stems = [s for s in STEMS if s in wanted]
    quick = args.quick
    if args.report_only:
        failed, all_quick = report_only(stems)
        quick = quick or (all_quick and not args.only)
    else:
        failed = measure_all(stems, args.quick)
    if not args.no_report:
        report = [sys.executable, str(HERE / "make_report.py"), "--command", command_text(args)]
        if quick:
            report.append("--quick")
        if subprocess.run(report, cwd=HERE).returncode != 0:
            failed.append("make_report")
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
