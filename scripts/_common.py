"""Helpers shared by the benchmark scripts: data location, checksums, machine description,
timing with medians, and markdown tables."""
import hashlib
import lzma
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def data_dir():
    return Path(os.environ.get("BSVM_DATA") or REPO.parent / "shared" / "data")


def data_path(name):
    """Path of a data set in BSVM_DATA (or data/ in the repo), verified against MANIFEST.md."""
    for folder in (data_dir(), REPO / "data"):
        path = folder / f"{name}.xz"
        if path.exists():
            return path
    raise FileNotFoundError(f"data set {name} not found in {data_dir()} or data/")


def manifest_checksums():
    manifest = data_dir() / "MANIFEST.md"
    if not manifest.exists():
        return {}
    sums = {}
    for line in manifest.read_text().splitlines():
        match = re.match(r"\|\s*(\S+)\.xz\s*\|.*?`([0-9a-f]{64})`", line)
        if match:
            sums[match.group(1)] = match.group(2)
    return sums


def verify_checksum(name):
    """sha256 of the uncompressed file against MANIFEST.md; returns 'ok', 'no manifest entry'."""
    expected = manifest_checksums().get(name)
    if expected is None:
        return "no manifest entry"
    digest = hashlib.sha256()
    with lzma.open(data_path(name)) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise RuntimeError(f"{name}: checksum mismatch with MANIFEST.md")
    return "ok"


def decompressed(name, folder):
    """Plain-text copy of a data set (for readers that cannot read .xz)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / name
    if not out.exists():
        with lzma.open(data_path(name)) as src, open(out, "wb") as dst:
            for block in iter(lambda: src.read(1 << 20), b""):
                dst.write(block)
    return out


def machine():
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {sys.version.split()[0]}"


def versions(*modules):
    from importlib.metadata import PackageNotFoundError, version
    out = []
    for name in modules:
        try:
            out.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            out.append(f"{name} (not installed)")
    return ", ".join(out)


def timed(function, repeats=3):
    """(median seconds, min, max, last result) over repeats."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), max(times), result


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
