"""Peak memory of a child process (benchmarks and the memory tests of issue 8).

Linux's ru_maxrss (wait4, getrusage) cannot measure a child of a large process: the kernel
carries the high-water mark over fork and exec, so a child of pytest reports at least pytest's
size. The per-address-space high-water mark VmHWM in /proc/PID/status starts afresh at exec;
it never decreases, so polling it until the child exits gives its peak.
"""
import subprocess
import time
from pathlib import Path

POLL_SECONDS = 0.01


def available():
    return Path("/proc/self/status").exists()


def run_measuring_peak(command, cwd=None):
    """Run command; returns (exit status, peak resident memory in MB, stderr text)."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    status_file = Path(f"/proc/{process.pid}/status")
    peak_kb = 0
    while process.poll() is None:
        try:
            for line in status_file.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak_kb = max(peak_kb, int(line.split()[1]))
        except (OSError, ValueError):
            pass                        # exited between poll() and the read
        time.sleep(POLL_SECONDS)
    err = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    return process.returncode, peak_kb / 1024.0, err
