"""``self_check(sandbox)``: the sandbox contract as a row of small checks any provider must pass.

Run it against a fresh sandbox of your provider (CI runs it against every built-in one). Each
check says what it expected and what it saw, so a new provider's author knows what to fix.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from agentgym.sandbox.base import Sandbox

Check = Callable[[Sandbox], None]


class SelfCheckError(AssertionError):
    """One or more contract checks failed; the message lists each with what went wrong."""


def _expect(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def _raises(exc: type[BaseException], fn: Callable[[], Any], what: str) -> None:
    try:
        fn()
    except exc:
        return
    except Exception as e:
        raise AssertionError(f"{what}: expected {exc.__name__}, got {type(e).__name__}: {e}") from e
    raise AssertionError(f"{what}: expected {exc.__name__}, nothing was raised")


def check_exec_basics(sb: Sandbox) -> None:
    r = sb.exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
    _expect((r.returncode, r.stdout, r.stderr) == (3, "out\n", "err\n"), f"exit/stdout/stderr: {r}")
    _expect(not r.success and not r.truncated, f"success/truncated flags: {r}")


def check_shell_string(sb: Sandbox) -> None:
    _expect(sb.exec("cd /tmp && pwd").stdout == "/tmp\n", "a string runs in bash -c")
    _expect(
        sb.exec("pwd").stdout == sb.workdir + "\n", "cd does not persist; default cwd is workdir"
    )


def check_input_cwd_env(sb: Sandbox) -> None:
    _expect(sb.exec(["cat"], input="héllo\n").stdout == "héllo\n", "input reaches stdin")
    sb.exec(["mkdir", "-p", "sub/dir"])
    _expect(sb.exec(["pwd"], cwd="sub/dir").stdout.strip().endswith("/sub/dir"), "relative cwd")
    _expect(sb.exec(["pwd"], cwd="/tmp").stdout == "/tmp\n", "absolute cwd")
    r = sb.exec(["sh", "-c", 'echo "$AGENTGYM_X"'], env={"AGENTGYM_X": "42"})
    _expect(r.stdout == "42\n", f"env reaches the command: {r.stdout!r}")


def check_exec_errors(sb: Sandbox) -> None:
    _raises(FileNotFoundError, lambda: sb.exec(["no-such-program-xyz"]), "missing program")
    _raises(FileNotFoundError, lambda: sb.exec(["true"], cwd="/no/such/dir"), "missing cwd")
    sb.write_file("notexec.sh", "echo hi\n")
    _raises(PermissionError, lambda: sb.exec(["./notexec.sh"]), "non-executable file")
    _raises(ValueError, lambda: sb.exec([]), "empty argv")


def check_timeout_kills_tree(sb: Sandbox) -> None:
    start = time.monotonic()
    _raises(
        TimeoutError,
        lambda: sb.exec(["sh", "-c", "sleep 47 & (sleep 47 &); sleep 47"], timeout=1),
        "timeout",
    )
    _expect(time.monotonic() - start < 10, "the timeout fires promptly")
    ps = sb.exec(["sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"]).stdout
    _expect("sleep 47" not in ps, f"every process of a timed-out command is killed: {ps!r}")
    _expect(sb.exec(["echo", "alive"]).stdout == "alive\n", "the sandbox works after a timeout")


def check_output_cap(sb: Sandbox) -> None:
    cap = int(getattr(sb, "max_output", 1 << 20))
    r = sb.exec(["python3", "-c", f"import sys; sys.stdout.write('x' * {2 * cap + 10})"])
    _expect(r.truncated and len(r.stdout) == cap, f"output capped at {cap}: got {len(r.stdout)}")


def check_files(sb: Sandbox) -> None:
    sb.write_file("a/b/c.txt", "ünïcode ✓\n")
    _expect(sb.read_file("a/b/c.txt") == "ünïcode ✓\n", "text round trip, parents created")
    _expect(sb.exec(["cat", "a/b/c.txt"]).stdout == "ünïcode ✓\n", "exec sees written files")
    blob = bytes(range(256)) * 64
    sb.write_file(f"{sb.workdir}/blob.bin", blob)
    _expect(sb.read_file("blob.bin", text=False) == blob, "binary round trip (absolute path)")
    sb.write_file("a/b/c.txt", "short")
    _expect(sb.read_file("a/b/c.txt") == "short", "write_file replaces")


def check_file_errors(sb: Sandbox) -> None:
    _raises(FileNotFoundError, lambda: sb.read_file("no/such/file"), "read missing file")
    sb.exec(["mkdir", "-p", "adir"])
    _raises(IsADirectoryError, lambda: sb.read_file("adir"), "read a directory")
    _raises(PermissionError, lambda: sb.write_file("/usr/agentgym-x", "x"), "write outside workdir")


def check_not_root(sb: Sandbox) -> None:
    _expect(sb.exec(["id", "-u"]).stdout.strip() != "0", "commands do not run as root")


def check_concurrent_async(sb: Sandbox) -> None:
    async def both() -> list[Any]:
        waiter = sb.aexec(
            ["sh", "-c", "while [ ! -e go ]; do sleep 0.02; done; echo done"], timeout=20
        )
        maker = sb.aexec(["sh", "-c", "sleep 0.2; touch go"], timeout=20)
        return list(await asyncio.gather(waiter, maker))

    first, _ = asyncio.run(both())
    _expect(first.stdout == "done\n", "two aexec calls run at the same time")


def check_python(sb: Sandbox) -> None:
    """Agents run ``python -m pytest`` as often as ``python3``: both must be Python 3."""
    for name in ("python", "python3"):
        r = sb.exec([name, "-c", "import sys; print(sys.version_info[0])"])
        _expect(r.returncode == 0 and r.stdout == "3\n", f"{name} is not Python 3 here: {r}")


CHECKS: list[Check] = [
    check_exec_basics,
    check_shell_string,
    check_input_cwd_env,
    check_exec_errors,
    check_timeout_kills_tree,
    check_output_cap,
    check_files,
    check_file_errors,
    check_not_root,
    check_concurrent_async,
    check_python,
]


def self_check(sandbox: Sandbox, raise_on_failure: bool = True) -> dict[str, str]:
    """Run every check; return ``{check: "ok" | what failed}``, raising if any failed."""
    results = {}
    for check in CHECKS:
        try:
            check(sandbox)
            results[check.__name__] = "ok"
        except Exception as e:
            results[check.__name__] = f"{type(e).__name__}: {e}"
    failed = {k: v for k, v in results.items() if v != "ok"}
    if failed and raise_on_failure:
        raise SelfCheckError("; ".join(f"{k}: {v}" for k, v in failed.items()))
    return results
