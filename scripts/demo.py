"""`make demo`: the main job on the shipped data, as a user would type it.

Trains the default bsvm-train (a budgeted kernel SVM: bsgd, RBF kernel, 500 support vectors,
refit) on data/a9a.xz with the C and gamma of the budgeted-SVM papers (C = 32, γ = 2⁻⁷), predicts
data/a9a.t.xz, prints the accuracy line and the time of both commands, then trains the linear
model (-s dcd, same C) on the same split and says in one line how the two compare.

    python scripts/demo.py [--bin DIR] [--out DIR]

--bin: the folder of the bsvm-* commands (default: beside this Python); --out: where the model
and predictions go (default build/demo).
"""
import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TRAIN, TEST = REPO / "data" / "a9a.xz", REPO / "data" / "a9a.t.xz"


def run(command):
    """Run a command as the user would, echoing it; returns (stdout + stderr, seconds)."""
    print("$ " + " ".join(str(part) for part in command), flush=True)
    start = time.perf_counter()
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    output = result.stdout + result.stderr
    if result.returncode != 0:
        sys.exit(f"demo: {Path(command[0]).name} failed (exit {result.returncode}):\n{output}")
    return output, seconds


def accuracy(output):
    match = re.search(r"Accuracy = ([\d.]+)%", output)
    return float(match.group(1)) if match else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=str(Path(sys.executable).parent))
    parser.add_argument("--out", default=str(REPO / "build" / "demo"))
    args = parser.parse_args()
    bin_dir, out = Path(args.bin), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model, predictions = out / "a9a.model", out / "a9a.predictions"
    print("Budgeted kernel SVM (the default: bsgd, RBF kernel, budget 500, refit) on a9a:")
    _, t_train = run([bin_dir / "bsvm-train", "-c", "32", "-g", "0.0078125", TRAIN, model])
    predicted, t_predict = run([bin_dir / "bsvm-predict", TEST, model, predictions])
    kernel_acc = accuracy(predicted)
    print(predicted.strip())
    print(f"time: {t_train:.1f} s to train, {t_predict:.1f} s to predict "
          f"({TRAIN.name}: 32,561 rows; {TEST.name}: 16,281 rows)")
    print("\nFor comparison, the linear SVM (-s dcd) on the same split:")
    linear_model = out / "a9a-linear.model"
    run([bin_dir / "bsvm-train", "-q", "-s", "dcd", "-c", "32", TRAIN, linear_model])
    linear_out, _ = run([bin_dir / "bsvm-predict", TEST, linear_model,
                         out / "a9a-linear.predictions"])
    linear_acc = accuracy(linear_out)
    print(linear_out.strip())
    print(f"\nkernel SVM {kernel_acc:.2f}% vs linear SVM {linear_acc:.2f}% on a9a.t: "
          f"{kernel_acc - linear_acc:+.2f} points, with 500 support vectors")


if __name__ == "__main__":
    main()
