"""`make demo` runs the main job: the default bsvm-train (budgeted kernel SVM) on data/a9a with the
papers' C and γ, its accuracy line and time, and the linear model's accuracy on the same split;
its outputs go under build/ (README, "Quick start")."""
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def test_make_demo_runs_the_budgeted_kernel_svm_script():
    dry = subprocess.run(["make", "-n", "-W", "setup.py", "demo"], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    demo_lines = [line for line in dry.splitlines() if "demo.py" in line]
    assert demo_lines and "build/demo" in demo_lines[-1]
    assert "-s dcd" not in dry.split("demo.py")[-1]


def test_demo_prints_the_kernel_accuracy_its_time_and_the_linear_comparison(tmp_path):
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "demo.py"), "--bin",
                             str(BIN), "--out", str(tmp_path)], capture_output=True, text=True,
                            timeout=600, check=True)
    out = result.stdout
    commands = [line for line in out.splitlines() if line.startswith("$ ")]
    # the main job: bsvm-train with the defaults (no -s: bsgd, RBF) and the papers' C and γ
    assert "-s" not in commands[0].split() and "-c 32 -g 0.0078125" in commands[0]
    accuracies = [float(a) for a in re.findall(r"Accuracy = ([\d.]+)%", out)]
    assert len(accuracies) == 2
    kernel, linear = accuracies
    # the kernel SVM's accuracy on a9a.t, recomputed from the predictions it wrote
    truth = subprocess.run(["xz", "-dc", str(REPO / "data" / "a9a.t.xz")], capture_output=True,
                           text=True, check=True).stdout.split("\n")
    labels = [float(line.split()[0]) for line in truth if line.strip()]
    predicted = [float(v) for v in (tmp_path / "a9a.predictions").read_text().split()]
    assert abs(100.0 * sum(a == b for a, b in zip(labels, predicted)) / len(labels) - kernel) < 1e-3
    assert re.search(r"time: [\d.]+ s to train, [\d.]+ s to predict", out)
    assert f"kernel SVM {kernel:.2f}% vs linear SVM {linear:.2f}%" in out
    assert kernel > linear
