"""bsvm-scale (issue 9): svm-scale's rules checked against an independent numpy computation, the
scaler bundled with libsvm-official's Python package (commonutil.csr_find_scale_param /
csr_scale; the pip package ships no svm-scale binary), a hand-computed case, -s/-r round trips,
standardisation, errors, and the must-show a9a pipeline."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm import io

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
HEART = REPO / "data" / "heart_scale.xz"


def scale(*args, cwd=None, stdin=None):
    return subprocess.run([sys.executable, "-m", "budgetsvm.cli.scale", *map(str, args)],
                          cwd=cwd, input=stdin, capture_output=True, text=True, timeout=120)


def parse(text, tmp_path, n_features=None):
    path = tmp_path / "parsed"
    path.write_text(text)
    return io.read_problem(path, n_features=n_features)


def numpy_minmax(X, lower, upper, fmin=None, fmax=None):
    D = X.toarray()
    fmin = D.min(axis=0) if fmin is None else fmin
    fmax = D.max(axis=0) if fmax is None else fmax
    keep = fmin != fmax
    out = np.zeros_like(D)
    with np.errstate(invalid="ignore", divide="ignore"):
        mid = lower + (upper - lower) * (D - fmin) / (fmax - fmin)
    out = np.where(D == fmin, lower, np.where(D == fmax, upper, mid))
    out[:, ~keep] = 0.0
    return out, fmin, fmax


HAND = "1 1:2 3:4\n-1 2:1 3:2\n1 1:4 2:3\n"


def test_hand_computed_case(tmp_path):
    # feature 1: values 2, 0, 4 -> [0, 4]; feature 2: 0, 1, 3 -> [0, 3]; feature 3: 4, 2, 0.
    (tmp_path / "d").write_text(HAND)
    r = scale("-s", "p", "d", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # values as svm-scale prints them (%g, every item followed by a space); --precise: the
    # exact doubles
    assert r.stdout == ("1 2:-1 3:1 \n"
                        "-1 1:-1 2:-0.333333 \n"
                        "1 1:1 2:1 3:-1 \n")
    assert scale("--precise", "d", cwd=tmp_path).stdout == ("1 2:-1 3:1 \n"
                                                            "-1 1:-1 2:-0.33333333333333337 \n"
                                                            "1 1:1 2:1 3:-1 \n")
    assert (tmp_path / "p").read_text() == "x\n-1 1\n1 0 4\n2 0 3\n3 0 4\n"
    r = scale("-l", "0", "d", cwd=tmp_path)
    assert r.stdout == "1 1:0.5 3:1 \n-1 2:0.333333 3:0.5 \n1 1:1 2:1 \n"
    r = scale("--precise", "-l", "0", "d", cwd=tmp_path)
    assert r.stdout == "1 1:0.5 3:1 \n-1 2:0.3333333333333333 3:0.5 \n1 1:1 2:1 \n"
    r = scale("-l", "0", "-y", "0", "1", "d", cwd=tmp_path)
    assert [line.split()[0] for line in r.stdout.splitlines()] == ["1", "0", "1"]


@pytest.mark.parametrize("bounds", [(-1.0, 1.0), (0.0, 1.0), (-2.0, 5.0)])
def test_matches_numpy_and_libsvm_commonutil(tmp_path, bounds):
    lower, upper = bounds
    X, y = io.read_problem(HEART)
    r = scale("--precise", "-l", lower, "-u", upper, HEART, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    Xs, ys = parse(r.stdout, tmp_path, n_features=X.shape[1])
    np.testing.assert_array_equal(ys, y)
    expected, _, _ = numpy_minmax(X, lower, upper)
    np.testing.assert_allclose(Xs.toarray(), expected, rtol=0, atol=1e-15)
    commonutil = pytest.importorskip("libsvm.commonutil")
    param = commonutil.csr_find_scale_param(sp.csr_matrix(X), lower=lower, upper=upper)
    theirs = commonutil.csr_scale(sp.csr_matrix(X), param).toarray()
    np.testing.assert_allclose(Xs.toarray(), theirs, rtol=0, atol=1e-12)


def test_restore_reproduces_training_transform(tmp_path):
    X, y = io.read_problem(HEART)
    train = scale("-s", "p", HEART, cwd=tmp_path)
    again = scale("-r", "p", HEART, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == train.stdout                      # byte-identical
    assert scale("--precise", "-r", "p", HEART, cwd=tmp_path).stdout == \
        scale("--precise", HEART, cwd=tmp_path).stdout
    # A test set: other rows, values outside the training range are extrapolated.
    D = X.toarray()[:50] * 1.5
    (tmp_path / "t").write_text("".join(
        f"{int(label)} " + " ".join(f"{j + 1}:{v!r}" for j, v in enumerate(row) if v) + "\n"
        for label, row in zip(y[:50].tolist(), D.tolist())))
    test = scale("--precise", "-r", "p", "t", cwd=tmp_path)
    Ts, _ = parse(test.stdout, tmp_path, n_features=X.shape[1])
    _, fmin, fmax = numpy_minmax(X, -1.0, 1.0)
    expected, _, _ = numpy_minmax(sp.csr_matrix(D), -1.0, 1.0, fmin, fmax)
    np.testing.assert_allclose(Ts.toarray(), expected, rtol=0, atol=1e-15)


def test_restore_keeps_training_width_and_drops_unknown_features(tmp_path):
    (tmp_path / "d").write_text(HAND)
    assert scale("-l", "0", "-s", "p", "d", cwd=tmp_path).returncode == 0
    # Feature 3 absent and feature 9 unknown: 9 is dropped; an absent feature counts as 0.
    (tmp_path / "t").write_text("1 1:1 9:5\n")
    r = scale("-r", "p", "t", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "1 1:0.25 \n"
    assert scale("-r", "p", "t", cwd=tmp_path).stdout == \
        scale("-r", "p", "-", cwd=tmp_path, stdin="1 1:1 9:5\n").stdout


def test_stdin_is_buffered_for_two_passes(tmp_path):
    (tmp_path / "d").write_text(HAND)
    from_file = scale("d", cwd=tmp_path)
    from_stdin = scale("-", cwd=tmp_path, stdin=HAND)
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == from_file.stdout


def test_y_section_round_trip(tmp_path):
    (tmp_path / "d").write_text("3 1:1\n5 1:2\n9 1:3\n")
    r = scale("-y", "-1", "1", "-s", "p", "d", cwd=tmp_path)
    assert (tmp_path / "p").read_text() == "y\n-1 1\n3 9\nx\n-1 1\n1 1 3\n"
    assert [float(line.split()[0]) for line in r.stdout.splitlines()] == [-1, -1 + 2 * 2 / 6, 1]
    assert scale("-r", "p", "d", cwd=tmp_path).stdout == r.stdout


def test_standardize(tmp_path):
    X, y = io.read_problem(HEART)
    r = scale("--precise", "--standardize", "-s", "p", HEART, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    Xs, _ = parse(r.stdout, tmp_path, n_features=X.shape[1])
    D = X.toarray()
    sd = D.std(axis=0)
    expected = np.where(sd > 0, (D - D.mean(axis=0)) / np.where(sd > 0, sd, 1), 0.0)
    np.testing.assert_allclose(Xs.toarray(), expected, rtol=0, atol=1e-12)
    assert (tmp_path / "p").read_text().startswith("standardize\n")
    assert scale("--precise", "-r", "p", HEART, cwd=tmp_path).stdout == r.stdout


@pytest.mark.parametrize("args,status,text", [
    (["-s", "p", "-r", "p", "d"], 2, "simultaneously"),
    (["-l", "1", "-u", "0", "d"], 2, "lower/upper"),
    (["-r", "missing", "d"], 1, "missing"),
    (["-r", "bad", "d"], 1, "bad:1"),
    (["nosuchfile"], 1, "nosuchfile"),
])
def test_errors(tmp_path, args, status, text):
    (tmp_path / "d").write_text(HAND)
    (tmp_path / "p").write_text("x\n-1 1\n1 0 4\n")
    (tmp_path / "bad").write_text("1 2 3\n")
    r = scale(*args, cwd=tmp_path)
    assert r.returncode == status
    assert text in r.stderr
    if status == 1:
        assert len(r.stderr.strip().splitlines()) == 1
        assert r.stdout == ""


def test_must_show_a9a_scale_train_predict(tmp_path):
    a9a, a9a_t = REPO / "data" / "a9a.xz", REPO / "data" / "a9a.t.xz"
    train = scale("-s", "p", a9a, cwd=tmp_path)
    assert train.returncode == 0, train.stderr
    (tmp_path / "a9a.s").write_text(train.stdout)
    test = scale("-r", "p", a9a_t, cwd=tmp_path)
    assert test.returncode == 0, test.stderr
    (tmp_path / "a9a.t.s").write_text(test.stdout)
    r = subprocess.run([str(BIN / "bsvm-train"), "-q", "-s", "dcd", "a9a.s", "m"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(BIN / "bsvm-predict"), "a9a.t.s", "m", "out"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    accuracy = float(r.stdout.split("=")[1].split("%")[0])
    assert accuracy > 84.0


def svm_scale_text(X, y, lower, upper):
    """svm-scale's output (svm-scale.c: printf("%.17g ") of the label, then printf("%d:%g ")
    of every non-zero scaled value, then a newline) of the numpy computation."""
    expected, _, _ = numpy_minmax(X, lower, upper)
    return "".join("%.17g " % label + "".join("%d:%g " % (j + 1, v) for j, v in enumerate(row)
                                              if v != 0) + "\n"
                   for label, row in zip(y.tolist(), expected.tolist()))


@pytest.mark.parametrize("bounds", [(-1.0, 1.0), (0.0, 1.0), (-2.0, 5.0)])
def test_default_output_is_svm_scale_precision(tmp_path, bounds):
    X, y = io.read_problem(HEART)
    r = scale("-l", bounds[0], "-u", bounds[1], "-s", "p", HEART, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == svm_scale_text(X, y, *bounds)
    # the parameter file stays exact: a restore of the training data gives the same text
    assert scale("-r", "p", HEART, cwd=tmp_path).stdout == r.stdout
    precise = scale("--precise", "-l", bounds[0], "-u", bounds[1], HEART, cwd=tmp_path).stdout
    Xs, _ = parse(r.stdout, tmp_path, n_features=X.shape[1])
    Xp, _ = parse(precise, tmp_path, n_features=X.shape[1])
    np.testing.assert_allclose(Xs.toarray(), Xp.toarray(), rtol=5e-6, atol=0)
    if bounds == (-1.0, 1.0):
        assert len(r.stdout) < 0.9 * len(precise)


@pytest.mark.parametrize("args", [("-u", "inf"), ("-l", "-inf", "-u", "inf"),
                                  ("-l", "-1e308", "-u", "1e308"), ("-y", "-inf", "inf"),
                                  ("-y", "0", "nan")])
def test_limits_beyond_a_double_are_usage_errors(tmp_path, args):
    r = scale(*args, HEART, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and "finite" in r.stderr


def test_an_overflowing_scaling_is_an_error_naming_the_data_file(tmp_path):
    # a restored minimum near the largest double: (upper - lower) * (v - min) overflows
    (tmp_path / "p").write_text("x\n-1 1\n1 1e308 0.875\n")
    (tmp_path / "d").write_text("+1 1:0.5\n-1 1:0.25\n")
    r = scale("-r", "p", "d", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.splitlines() == ["d: scaling feature 1 gives inf: beyond the range of a "
                                     "double (the scaling limits or parameters are too large)"]
    # standardizing values whose variance overflows: an error, and no parameter file
    (tmp_path / "s").write_text("+1 1:1e200\n-1 1:-1e200\n")
    r = scale("--standardize", "-s", "params", "s", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == "" and not (tmp_path / "params").exists()
    assert r.stderr.splitlines() == ["s: feature 1: its values are too large to standardize "
                                     "(their variance is beyond the range of a double)"]


@pytest.mark.parametrize("name, text, message", [
    ("p", "x\n-1 1\n99999999999999999999 -1 1\n",
     "p:3: index 99999999999999999999 is beyond the largest of the LIBSVM format"),
    ("p", "x\n-1 1\n2147483647 -1 1\n", "p:3: feature index 2147483647 would need 32.0 GB"),
    ("d", None, "d: feature index 2147483647 would need 112.0 GB")])
def test_feature_indices_whose_arrays_would_not_fit_are_refused(tmp_path, name, text, message):
    # per-feature arrays reach the largest index (as svm-scale's): refused before allocating
    (tmp_path / "d").write_text("+1 2147483647:1\n-1 1:1\n")
    if text is not None:
        (tmp_path / name).write_text(text)
    r = scale(*(["-r", name] if name == "p" else []), "d", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == "" and "Traceback" not in r.stderr
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith(message), r.stderr


def test_standardize_leaves_out_constant_features_whatever_the_rounding(tmp_path):
    # 0.1 in every row: its running variance rounds to about 1e-33, not 0, and the feature was
    # kept as a column of made-up values (and a test value of 0.2 became 7.2e15). The oracle:
    # a constant feature has sd 0 and is left out; feature 2 is numpy's z-score.
    rows = [f"{i % 2} 1:0.1 2:{i % 3}" for i in range(3000)]
    (tmp_path / "d").write_text("\n".join(rows) + "\n")
    r = scale("--precise", "--standardize", "-s", "p", "d", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    Xs, _ = parse(r.stdout, tmp_path, n_features=2)
    assert Xs[:, 0].nnz == 0
    column = np.array([i % 3 for i in range(3000)], dtype=float)
    np.testing.assert_allclose(Xs[:, 1].toarray().ravel(),
                               (column - column.mean()) / column.std(), rtol=0, atol=1e-12)
    assert [line.split()[0] for line in (tmp_path / "p").read_text().splitlines()[1:]] == ["2"]
    (tmp_path / "t").write_text("1 1:0.2 2:2\n")
    assert scale("--precise", "-r", "p", "t", cwd=tmp_path).stdout == \
        f"1 2:{float((2 - column.mean()) / column.std())!r} \n"


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
@pytest.mark.parametrize("suffix", [".gz", ".xz", ".bz2"])
def test_a_damaged_compressed_restore_file_is_one_line(tmp_path, damage, suffix):
    import bz2
    import gzip
    import lzma
    compress = {".gz": gzip.compress, ".xz": lzma.compress, ".bz2": bz2.compress}[suffix]
    data = bytearray(compress(b"x\n-1 1\n" + b"".join(b"%d 0 %d\n" % (i, i) for i in
                                                      range(1, 3000))))
    if damage == "truncated":
        data = data[:len(data) // 2]
    else:
        data[len(data) // 2: len(data) // 2 + 16] = b"\xff" * 16
    (tmp_path / ("p" + suffix)).write_bytes(bytes(data))
    (tmp_path / "d").write_text(HAND)
    r = scale("-r", "p" + suffix, "d", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == "" and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.splitlines() == [f"p{suffix}: cannot read (corrupt or truncated "
                                     "compressed stream?)"]


def test_restore_checks_the_whole_file_before_writing(tmp_path):
    # svm-scale writes the lines before a bad one; without -r bsvm-scale wrote nothing, with
    # -r it wrote them too
    (tmp_path / "d").write_text(HAND)
    assert scale("-s", "p", "d", cwd=tmp_path).returncode == 0
    (tmp_path / "bad").write_text(HAND * 2000 + "1 3:x\n")
    r = scale("-r", "p", "bad", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == "", r.stderr[:200]
    assert r.stderr.startswith(f"bad:{HAND.count(chr(10)) * 2000 + 1}: ")


def test_restoring_a_single_label_y_range_names_that_cause(tmp_path):
    # -s of data with one label saves y_min = y_max; svm-scale -r then divides by 0 and writes
    # inf for any other label: one line naming the label and the cause, no output
    (tmp_path / "train").write_text("3 1:1\n3 1:2\n")
    (tmp_path / "test").write_text("3 1:1\n4 1:2\n")
    assert scale("-y", "0", "1", "-s", "p", "train", cwd=tmp_path).returncode == 0
    same = scale("-r", "p", "train", cwd=tmp_path)
    assert same.returncode == 0 and same.stdout == "0 1:-1 \n0 1:1 \n", same.stderr
    r = scale("-r", "p", "test", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == "", r.stderr
    assert r.stderr.splitlines() == ["test: label 4 cannot be scaled: the y range is the single "
                                     "value 3 (the labels it was taken from were all equal)"]


def test_restore_warns_of_the_features_the_file_does_not_list(tmp_path):
    # svm-scale's rule, computed here by brute force: an index absent from the restore file
    # whose values vary over the rows (implicit zeros counted) is scaled to 0, with a warning
    rng = np.random.default_rng(3)
    (tmp_path / "d").write_text("1 1:1 2:5\n-1 1:3 2:9\n")
    assert scale("-s", "p", "d", cwd=tmp_path).returncode == 0
    lines, values = [], {}
    for row in range(50):
        feats = {1: 1 + row % 3, 3: 7.0, 4: float(rng.integers(0, 3)), 6: 2.0}
        if row % 2:
            feats[5] = 1.0                  # 1 and an implicit 0: varies
        lines.append("1 " + " ".join(f"{j}:{v:g}" for j, v in sorted(feats.items()) if v))
        for j in range(3, 7):
            values.setdefault(j, []).append(feats.get(j, 0.0))
    (tmp_path / "t").write_text("\n".join(lines) + "\n")
    expected = [j for j, v in values.items() if min(v) != max(v)]
    assert expected == [4, 5]
    r = scale("-r", "p", "t", cwd=tmp_path)
    assert r.returncode == 0
    assert r.stderr.splitlines()[0] == (
        f"WARNING: {len(expected)} feature index(es) of t (the first: {expected[0]}) are not "
        "in the scaling file p: they are scaled to 0 (left out), as svm-scale does")
    assert all(int(item.split(":")[0]) <= 2 for line in r.stdout.splitlines()
               for item in line.split()[1:])


def test_a_listed_feature_with_min_equal_to_max_is_left_out_without_a_warning(tmp_path):
    # svm-scale warns only of indices its restore file does not list; a listed one with
    # min = max is dropped from the output silently (output(): feature_max == feature_min)
    (tmp_path / "p").write_text("x\n-1 1\n1 2 2\n2 0 1\n")
    (tmp_path / "t").write_text("1 1:2 2:0.5\n-1 1:7 2:1\n1 1:3 3:4\n-1 3:5\n")
    r = scale("-r", "p", "t", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # feature 1 (listed, constant): left out, no line about it; feature 3 (unlisted, varies):
    # the warning, and left out as well
    assert r.stderr.splitlines() == [
        "WARNING: 1 feature index(es) of t (the first: 3) are not in the scaling file p: they "
        "are scaled to 0 (left out), as svm-scale does"]
    # svm-scale 3.37's bytes for these files (feature 2 at 0.5 scales to 0 and is omitted; its
    # implicit zeros scale to -1)
    assert r.stdout == "1 \n-1 2:1 \n1 2:-1 \n-1 2:-1 \n"


def test_an_unwritable_save_file_fails_before_reading_the_data(tmp_path):
    # the data come from a pipe that is never closed: an error only after the pass would hang
    process = subprocess.Popen([sys.executable, "-m", "budgetsvm.cli.scale", "-s", "nodir/p",
                                "-"], cwd=tmp_path, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 1
    assert err == "nodir/p: cannot write: no such directory 'nodir'\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_failed_output_leaves_an_existing_save_file_unchanged(tmp_path):
    # the scaled data cannot be written (a full disk): exit 1 naming standard output, and the
    # -s file keeps its old content (it had been replaced before the output pass); written
    # where the output succeeds, with the parameters a run to a file writes
    (tmp_path / "d").write_text(HAND)
    (tmp_path / "p").write_text("old\n")
    with open("/dev/full", "w") as full:
        failed = subprocess.run([sys.executable, "-m", "budgetsvm.cli.scale", "-s", "p", "d"],
                                cwd=tmp_path, stdout=full, stderr=subprocess.PIPE, text=True,
                                timeout=120)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert failed.stderr.splitlines() == ["<stdout>: cannot write: No space left on device"]
    assert (tmp_path / "p").read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["d", "p"]             # no temporary file left
    assert scale("-s", "p", "d", cwd=tmp_path).returncode == 0
    assert scale("-s", "q", "d", cwd=tmp_path).returncode == 0
    assert (tmp_path / "p").read_text() == (tmp_path / "q").read_text() != "old\n"


def test_a_full_temporary_folder_is_named_not_standard_output(tmp_path):
    # stdin is copied to a temporary file to be read twice; a write error there named <stdout>
    import resource
    import signal

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))
    data = HAND * 5000                           # 100 KB
    process = subprocess.run([sys.executable, "-m", "budgetsvm.cli.scale", "-"], cwd=tmp_path,
                             input=data, capture_output=True, text=True, timeout=120,
                             preexec_fn=limit_file_size, env={**os.environ,
                                                              "TMPDIR": str(tmp_path)})
    assert process.returncode == 1 and process.stdout == ""
    assert process.stderr.startswith(f"<stdin>: cannot copy it to a temporary file in {tmp_path}"), \
        process.stderr
    assert len(process.stderr.splitlines()) == 1


@pytest.mark.parametrize("options", [[], ["-l", "0"], ["--standardize", "--precise"]])
def test_zero_based_files_scale_as_their_one_based_twins(tmp_path, options):
    # bsvm-train and bsvm-predict read 0-based files with --zero-based; bsvm-scale refused them.
    # The oracle: the same file with every index one higher, scaled 1-based; the output and the
    # -s file are that one's with every index one lower.
    rng = np.random.default_rng(5)
    zero, one = [], []
    for row in range(40):
        columns = sorted(rng.choice(6, size=3, replace=False).tolist())
        values = rng.integers(1, 9, size=3).tolist()
        zero.append(f"{row % 2} " + " ".join(f"{c}:{v}" for c, v in zip(columns, values)))
        one.append(f"{row % 2} " + " ".join(f"{c + 1}:{v}" for c, v in zip(columns, values)))
    (tmp_path / "zero").write_text("\n".join(zero) + "\n")
    (tmp_path / "one").write_text("\n".join(one) + "\n")
    shifted = scale(*options, "--zero-based", "-s", "pz", "zero", cwd=tmp_path)
    expected = scale(*options, "-s", "po", "one", cwd=tmp_path)
    assert shifted.returncode == 0 and expected.returncode == 0, shifted.stderr

    def lower(text, header_lines):
        lines = text.splitlines()
        body = [" ".join([line.split()[0]] + [f"{int(i) - 1}:{v}" for i, v in
                                              (item.split(":") for item in line.split()[1:])])
                for line in lines[header_lines:]]
        return lines[:header_lines] + body

    assert [line.rstrip() for line in shifted.stdout.splitlines()] == lower(expected.stdout, 0)
    header = 1 if "--standardize" in options else 2
    pz = (tmp_path / "pz").read_text().splitlines()
    po = (tmp_path / "po").read_text().splitlines()
    assert pz[:header] == po[:header]
    assert [line.split() for line in pz[header:]] == \
        [[str(int(line.split()[0]) - 1)] + line.split()[1:] for line in po[header:]]
    restored = scale(*[o for o in options if o == "--precise"], "--zero-based", "-r", "pz",
                     "zero", cwd=tmp_path)
    assert restored.stdout == shifted.stdout
