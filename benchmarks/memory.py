"""Resident memory of ``agentgym serve`` under a load of distinct long prompts, and after it.

    python benchmarks/memory.py                       # 500 requests, 100 at a time, SmolLM2
    python benchmarks/memory.py --requests 200 --household 4

Each arm starts ``agentgym serve MODEL`` in a subprocess, waits for it, and sends ``--requests``
chat requests, ``--concurrency`` at a time; every prompt is distinct (seeded random words, about
``--prompt-tokens`` tokens), so no prefix is shared beyond the chat template. The server's RSS
(``/proc/PID/status``, Linux) is sampled every 0.2 s: idle before the load, its peak during it,
and ``--after-s`` seconds after the last answer. Arms: ``budget`` (the engine's default memory
budget) and ``unbounded`` (``--kv-cache-gb 64``: on a machine with less, the budget never binds,
which is how the engine behaved before it had one), in the same run. ``--household N`` also
plays N Household episodes with ``agentgym eval ... -c 16`` per arm (``hf:MODEL`` with
``kv_cache_gb`` set the same way) and reports that process's peak and final RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

console = Console()
ARMS = {"budget": None, "unbounded": 64.0}
"""Arm name -> ``--kv-cache-gb`` (None: the engine's default budget)."""
WORDS = [
    "apple",
    "river",
    "stone",
    "cloud",
    "window",
    "garden",
    "paper",
    "silver",
    "orange",
    "table",
    "bridge",
    "music",
    "forest",
    "candle",
    "mirror",
    "pocket",
    "ladder",
    "basket",
    "rocket",
    "yellow",
    "winter",
    "summer",
    "button",
    "marble",
    "engine",
    "castle",
    "planet",
    "shadow",
    "island",
    "valley",
    "kettle",
    "harbor",
    "violin",
    "pepper",
]


def rss_mb(pid: int) -> float:
    """Resident set size of process ``pid`` in MiB (0 once it has gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Sampler:
    """RSS of one process every ``period`` seconds, in a background thread."""

    def __init__(self, pid: int, period: float = 0.2) -> None:
        self.pid, self.period = pid, period
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), rss_mb(self.pid)))
            time.sleep(self.period)

    def peak(self, since: float = 0.0) -> float:
        return max((mb for t, mb in self.samples if t >= since), default=0.0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def prompts(model: str, n: int, tokens: int, seed: int = 0) -> list[str]:
    """``n`` distinct user messages of about ``tokens`` tokens each under the model's tokenizer."""
    from transformers import AutoTokenizer

    from agentgym.llm.models import resolve_model_path

    tok = AutoTokenizer.from_pretrained(resolve_model_path(model))
    rng = random.Random(seed)
    sample = " ".join(rng.choice(WORDS) for _ in range(400))
    per_word = len(tok(sample)["input_ids"]) / 400
    words = int(tokens / per_word)
    return [f"{i}: " + " ".join(rng.choice(WORDS) for _ in range(words)) for i in range(n)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ask(url: str, text: str, max_tokens: int) -> None:
    body = json.dumps(
        {
            "model": "m",
            "messages": [{"role": "user", "content": text}],
            "max_tokens": max_tokens,
            "temperature": 0,
        }
    ).encode()
    request = urllib.request.Request(
        f"{url}/chat/completions", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=3600) as response:
        response.read()


def serve_arm(args: argparse.Namespace, kv_cache_gb: float | None, texts: list[str]) -> dict:
    """Start a server, load it, and return its RSS figures (MiB) and the load's seconds."""
    port = free_port()
    cmd = [args.agentgym, "serve", args.model, "--port", str(port), "--name", "m"]
    cmd += ["--request-timeout", "86400"]  # a queued request may wait long on a small machine
    if kv_cache_gb is not None:
        cmd += ["--kv-cache-gb", str(kv_cache_gb)]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    server = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"serve did not start: {server.stderr.read().decode()}"
                    ) from None
                time.sleep(0.5)
        sampler = Sampler(server.pid)
        time.sleep(1.0)
        idle = rss_mb(server.pid)
        start = time.monotonic()
        with ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(lambda t: ask(url, t, args.max_tokens), texts))
        done = time.monotonic()
        time.sleep(args.after_s)
        after = rss_mb(server.pid)
        sampler.stop()
        return {
            "idle": idle,
            "peak": sampler.peak(start),
            "after": after,
            "seconds": done - start,
        }
    finally:
        server.terminate()
        server.wait(timeout=60)


def household_arm(args: argparse.Namespace, kv_cache_gb: float | None) -> dict:
    """``agentgym eval household/valid_unseen -c 16`` on ``--household`` episodes: RSS (MiB)."""
    spec = f"hf:{args.model}" + ("" if kv_cache_gb is None else f"?kv_cache_gb={kv_cache_gb}")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            args.agentgym, "eval", "household/valid_unseen", "-a", spec, "-c", "16",
            "--limit", str(args.household), "--db", str(Path(tmp) / "m.db"),
        ]  # fmt: skip
        env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
        start = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        sampler = Sampler(proc.pid)
        last = 0.0
        while proc.poll() is None:
            last = rss_mb(proc.pid) or last
            time.sleep(0.2)
        sampler.stop()
        if proc.returncode:
            raise RuntimeError(f"eval failed: {proc.stderr.read().decode()[-2000:]}")
        return {"peak": sampler.peak(), "last": last, "seconds": time.monotonic() - start}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2")
    p.add_argument("--requests", type=int, default=500)
    p.add_argument("--concurrency", type=int, default=100)
    p.add_argument("--prompt-tokens", type=int, default=800)
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--after-s", type=float, default=15.0, help="seconds after the load")
    p.add_argument("--threads", type=int, default=1, help="OMP threads of the server")
    p.add_argument("--arms", default=",".join(ARMS), help=f"of: {', '.join(ARMS)}")
    p.add_argument("--household", type=int, default=0, help="Household episodes at -c 16")
    p.add_argument("--agentgym", default=str(Path(sys.executable).parent / "agentgym"))
    args = p.parse_args()
    arms = [a for a in args.arms.split(",") if a]
    texts = prompts(args.model, args.requests, args.prompt_tokens)
    table = Table(
        title=f"agentgym serve {args.model}: {args.requests} requests of ~{args.prompt_tokens} "
        f"tokens, {args.concurrency} at a time, max_tokens {args.max_tokens}; RSS in MiB"
    )
    for col in ("arm", "idle", "peak", f"{args.after_s:g} s after", "load s"):
        table.add_column(col, justify="right")
    results = {}
    for arm in arms:
        r = serve_arm(args, ARMS[arm], texts)
        results[arm] = r
        console.print(f"{arm}: {r}")
        table.add_row(
            arm, f"{r['idle']:.0f}", f"{r['peak']:.0f}", f"{r['after']:.0f}", f"{r['seconds']:.0f}"
        )
    console.print(table)
    if args.household:
        table = Table(
            title=f"agentgym eval household/valid_unseen -c 16, {args.household} episodes"
        )
        for col in ("arm", "peak RSS MiB", "final RSS MiB", "s"):
            table.add_column(col, justify="right")
        for arm in arms:
            r = household_arm(args, ARMS[arm])
            console.print(f"household {arm}: {r}")
            table.add_row(arm, f"{r['peak']:.0f}", f"{r['last']:.0f}", f"{r['seconds']:.0f}")
        console.print(table)


if __name__ == "__main__":
    main()
