"""read_file time against file size, docker and local, plus ``/dev/zero``.

Linear reads take about the same seconds per MB at every size; the quadratic AttachChannel took
0.0 s at 1 MB, 0.7 s at 4 MB, 15.1 s at 16 MB and gave no answer for 100 MB within 120 s. The
baseline, measured in the same run, is the local provider (pipes, ``readline``: linear), so the
docker/local column should stay flat as files grow.
Run: ``python benchmarks/sandbox_read.py [--sizes 1 4 16 64]``. Noisy on a shared machine.
"""

from __future__ import annotations

import argparse
import contextlib
import time

from rich.console import Console
from rich.table import Table

from agentgym.sandbox import OutputLimitExceeded, SandboxConfig, SandboxPool, get_provider


def read_times(provider: str, sizes: list[int]) -> tuple[list[float], float]:
    """Seconds to read a file of each size in MB, and to be refused ``/dev/zero``."""
    out = []
    pool = SandboxPool(get_provider(provider, SandboxConfig()), size=1)
    with pool.start(), pool.acquire() as box:
        for mb in sizes:
            box.exec(["sh", "-c", f"head -c {mb << 20} /dev/zero | tr '\\0' x > f"])
            t0 = time.perf_counter()
            assert len(box.read_file("f", text=False)) == mb << 20
            out.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with contextlib.suppress(OutputLimitExceeded):
            box.read_file("/dev/zero", text=False)
        zero = time.perf_counter() - t0
    return out, zero


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16, 64])
    args = parser.parse_args()
    docker, docker_zero = read_times("docker", args.sizes)
    local, local_zero = read_times("local", args.sizes)
    table = Table(title="read_file (seconds)")
    for col in ("size", "docker", "local", "docker s/MB", "docker/local"):
        table.add_column(col, justify="right")
    for mb, d, lo in zip(args.sizes, docker, local, strict=True):
        table.add_row(f"{mb} MB", f"{d:.2f}", f"{lo:.2f}", f"{d / mb:.3f}", f"{d / lo:.1f}")
    table.add_row("/dev/zero (refused)", f"{docker_zero:.2f}", f"{local_zero:.2f}", "", "")
    Console().print(table)


if __name__ == "__main__":
    main()
