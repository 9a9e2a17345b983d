"""Run every benchmark in scripts/ (bench_*.py) and print their tables; --quick passes --quick
to each. Data sets come from BSVM_DATA (default ../shared/data)."""
import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a short subset of every benchmark")
    parser.add_argument("--only", help="comma-separated benchmark names, e.g. io,dcd")
    args = parser.parse_args()
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.only:
        wanted = {f"bench_{name}.py" for name in args.only.split(",")}
        scripts = [s for s in scripts if s.name in wanted]
    failed = []
    for script in scripts:
        print(f"\n## {script.stem}\n", flush=True)
        command = [sys.executable, str(script)] + (["--quick"] if args.quick else [])
        if subprocess.run(command, cwd=HERE).returncode != 0:
            failed.append(script.name)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
