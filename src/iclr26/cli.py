"""The ``iclr26`` command: list, show, reproduce, report, warmup, and the rooms' own tools.

Every user error (an unknown paper, a bad scale, an unwritable folder) ends in one line on
stderr that names what is valid, with exit code 2 and no traceback.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from pathlib import Path
from typing import NoReturn

from iclr26 import __version__, catalog
from iclr26.claims import Scale

# Commands that a paper's room provides: name -> (module, one-line help). The module exposes
# ``configure(parser)`` and ``run(args) -> int``; it is imported only when its command runs.
PLUGINS: dict[str, tuple[str, str]] = {
    "detect": ("iclr26.timeseries.paano.cli", "score a time series (CSV) for anomalies"),
    "curate": ("iclr26.llm.gneissweb.cli", "curate a text corpus with the GneissWeb recipe"),
    "compress": (
        "iclr26.llm.lrs_compression.cli",
        "compress a causal LM with CAP (low-rank + sparse)",
    ),
    "quantize": (
        "iclr26.llm.qat_reasoning.cli",
        "quantize a causal LM to 2/3/4/8-bit weights (RTN, GPTQ, AWQ, QAT stage 1)",
    ),
    "kvcache": (
        "iclr26.llm.mixkv.cli",
        "KV-cache compression: NLL gap per method and budget (MixKV)",
    ),
    "play": (
        "iclr26.rl.obscuro.cli",
        "play one Fog-of-War chess game between two agents (Obscuro, PIMC, greedy, random)",
    ),
    "chronoplay": (
        "iclr26.knowledge.chronoplay.cli",
        "build and maintain a dual-dynamic game RAG benchmark (ChronoPlay)",
    ),
}

WARMUPS: dict[str, tuple[str, str]] = {
    "lm": ("iclr26.models.tinylm", "warmup"),
    "vision": ("iclr26.models.vision", "warmup"),
    # the QAT room's reasoning teacher: the tiny LM fine-tuned on arithmetic CoT (minutes)
    "qat-teacher": ("iclr26.llm.qat_reasoning.claims", "warm_teacher"),
}


class UsageError(Exception):
    """A user error: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _module_file_exists(module: str) -> bool:
    root = Path(__file__).resolve().parent.parent
    rel = Path(*module.split("."))
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _Parser(prog="iclr26", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"iclr26 {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("list", help="every paper with its area, status and last verdicts")
    p.add_argument("--out", default="results", help="results folder to read verdicts from")
    p.add_argument(
        "--area",
        action="append",
        choices=list(catalog.AREAS),
        metavar="AREA",
        help=f"only this area (repeatable): {', '.join(catalog.AREAS)}",
    )
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("show", help="the claims and the API of one paper")
    p.add_argument("slug")
    p.add_argument("--cite", action="store_true", help="print the paper's BibTeX entry only")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("reproduce", help="run claim checks and write the report")
    p.add_argument(
        "names",
        nargs="*",
        metavar="SLUG|AREA|SLUG:CLAIM",
        help="papers, areas or single claims (default: all)",
    )
    p.add_argument("--scale", default="quick", choices=[s.value for s in Scale])
    p.add_argument("--jobs", type=int, default=1, help="claims run at once (default 1)")
    p.add_argument("--executor", default="local", choices=["local", "ray"])
    p.add_argument("--out", default="results", help="output folder (default results/)")
    p.add_argument("--force", action="store_true", help="rerun claims that already have results")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run each claim N times with seeds SEED..SEED+N-1; the report counts "
        "the verdicts and marks a claim fragile when they differ",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="per-claim limit in seconds of CPU time per thread (local executor; a claim that "
        "waits without computing is stopped at 4x the limit in wall time)",
    )
    p.add_argument(
        "--device",
        default=None,
        help="torch device of full-scale claims: auto (default: cuda where torch sees a GPU), "
        "cpu, cuda, cuda:N or mps; sets ICLR26_DEVICE for the run",
    )

    p = sub.add_parser("report", help="rebuild report.md and report.html from results.json")
    p.add_argument("--out", default="results")

    p = sub.add_parser("warmup", help="train and cache the shared small models")
    p.add_argument("what", nargs="?", default="all", choices=[*WARMUPS, "all"])
    p.add_argument("--size", default="quick", help="model size (e.g. test, quick, full)")

    for name, (module, help_text) in PLUGINS.items():
        if not _module_file_exists(module):
            continue
        p = sub.add_parser(name, help=help_text)
        if argv and argv[0] == name:
            plugin = importlib.import_module(module)
            plugin.configure(p)
            p.set_defaults(_plugin=plugin)
    return parser


# ---------------------------------------------------------------- commands


def _last_verdicts(out: str) -> dict[str, list[str]]:
    from iclr26.runner import load_results

    try:
        data = load_results(out)
    except (OSError, ValueError):
        return {}
    verdicts: dict[str, list[str]] = {}
    for r in data["results"]:
        verdicts.setdefault(r["paper"], []).append(f"{r['claim']}: {r['verdict']}")
    return verdicts


def cmd_list(args: argparse.Namespace) -> int:
    verdicts = _last_verdicts(args.out)
    papers = [p for p in catalog.PAPERS if not args.area or p.area in args.area]
    if args.json:
        import json

        rows = [
            {
                "slug": p.slug,
                "title": p.title,
                "area": p.area,
                "module": p.module,
                "implemented": p.implemented,
                "paper": p.url,
                "code": p.code_url,
                "last_verdicts": verdicts.get(p.slug, []),
            }
            for p in papers
        ]
        print(json.dumps(rows, indent=1))
        return 0
    if args.markdown:
        print("| paper | area | status | verdicts (last run) |")
        print("|---|---|---|---|")
        for paper in papers:
            status = "implemented" if paper.implemented else "not implemented yet"
            cell = "<br>".join(verdicts.get(paper.slug, [])) or "-"
            print(
                f"| [`{paper.slug}`](src/iclr26/{paper.area}/{paper.slug}) {paper.title} | "
                f"{paper.area} | {status} | {cell} |"
            )
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"iclr26 — {len(papers)} papers")
    for col in ("slug", "area", "status", "last verdicts", "title"):
        table.add_column(col, overflow="fold")
    n_impl = 0
    for paper in papers:
        implemented = paper.implemented
        n_impl += implemented
        table.add_row(
            paper.slug,
            paper.area,
            "implemented" if implemented else "not implemented yet",
            "\n".join(verdicts.get(paper.slug, [])) or "-",
            paper.title,
        )
    console = Console(width=max(Console().width, 140))
    console.print(table)
    console.print(f"{n_impl} of {len(papers)} papers implemented.")
    return 0


def _readme_section(readme: Path, heading: str) -> str:
    if not readme.is_file():
        return ""
    lines = readme.read_text(encoding="utf-8").splitlines()
    out: list[str] = []
    inside = False
    for line in lines:
        if line.startswith("## "):
            if inside:
                break
            inside = line[3:].strip().lower() == heading.lower()
            continue
        if inside:
            out.append(line)
    return "\n".join(out).strip()


def _summary_line(obj: object) -> str:
    """The first sentence-line of an object's own docstring, without reST markup; "" for
    constants and for objects that only inherit a builtin's docstring."""
    import inspect
    import re

    if not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj)):
        return f"a constant ({type(obj).__name__})"
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    if not doc:
        return ""
    first = inspect.cleandoc(doc).split("\n\n")[0].replace("\n", " ").strip()
    first = re.sub(r":(?:func|class|meth|attr|mod|data|obj):`~?([^`]+)`", r"\1", first)
    first = re.sub(r"``([^`]+)``", r"\1", first)
    return first


def cmd_show(args: argparse.Namespace) -> int:
    paper = _paper_or_error(args.slug)
    if args.cite:
        print(paper.bibtex)
        return 0
    from iclr26.claims import claims_for

    entries = claims_for(paper.slug) if paper.implemented else []
    api: list[tuple[str, str]] = []
    if paper.implemented:
        module = importlib.import_module(paper.module)
        names = getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")])
        api = [(name, _summary_line(getattr(module, name, None))) for name in names]
    if args.json:
        import json

        print(
            json.dumps(
                {
                    "slug": paper.slug,
                    "title": paper.title,
                    "area": paper.area,
                    "module": paper.module,
                    "implemented": paper.implemented,
                    "paper": paper.url,
                    "code": paper.code_url,
                    "bibtex": paper.bibtex,
                    "claims": [
                        {
                            "name": e.name,
                            "statement": e.statement,
                            "paper_value": e.paper_value,
                            "criterion": e.criterion,
                            "headline": list(e.headline),
                        }
                        for e in entries
                    ],
                    "api": [{"name": n, "summary": d} for n, d in api],
                },
                indent=1,
            )
        )
        return 0
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{paper.title}[/bold]")
    console.print(f"slug {paper.slug} · area {paper.area} · module {paper.module}")
    console.print(
        f"paper {paper.url or 'unknown'} · official code {paper.code_url or 'none found'}"
    )
    if not paper.implemented:
        console.print("Not implemented yet.")
        return 0
    table = Table(title="claims")
    for col in ("claim", "statement", "paper's value", "criterion"):
        table.add_column(col, overflow="fold")
    for entry in entries:
        table.add_row(entry.name, entry.statement, entry.paper_value, entry.criterion)
    console.print(table)
    api_table = Table(title=f"API: {paper.module}")
    api_table.add_column("name")
    api_table.add_column("what it is", overflow="fold")
    for name, doc in api:
        api_table.add_row(name, doc)
    console.print(api_table)
    use = _readme_section(Path(module.__file__).parent / "README.md", "Use")
    if use:
        console.print(Markdown("## Use\n" + use))
    console.print("Cite: iclr26 show " + paper.slug + " --cite")
    return 0


def _paper_or_error(slug: str) -> catalog.Paper:
    try:
        return catalog.get(slug)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None


def _check_names(names: list[str]) -> None:
    valid = set(catalog.BY_SLUG) | set(catalog.AREAS)
    for name in names:
        if ":" in name:  # SLUG:CLAIM, one claim of a paper
            from iclr26.runner import split_claim_selectors

            slug = name.partition(":")[0]
            if slug not in catalog.BY_SLUG:
                _check_names([slug])
            if not catalog.get(slug).implemented:
                continue  # reported as not implemented by the caller
            try:
                split_claim_selectors([name])
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            continue
        if name not in valid:
            close = difflib.get_close_matches(name, sorted(valid), n=3)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise UsageError(
                f"unknown paper or area {name!r}; {hint}valid: a paper slug (see `iclr26 list`) "
                f"or an area ({', '.join(catalog.AREAS)})"
            )


def _check_out_dir(out: str) -> Path:
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"output folder {out!r} is not writable ({exc.strerror})") from None
    return path


def cmd_reproduce(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.table import Table

    from iclr26.report import build_report
    from iclr26.runner import (
        ScaleMismatch,
        check_scale,
        load_results,
        plan,
        prefer_passive_wait,
        record_key,
        run_tasks,
    )

    prefer_passive_wait()  # before anything loads torch
    _check_names(args.names)
    if args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {args.repeat}")
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    if args.device is not None:
        from iclr26.claims import resolve_device

        try:
            resolve_device(args.device, name="--device")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        os.environ["ICLR26_DEVICE"] = args.device  # the workers inherit it
    slugs = [n.partition(":")[0] for n in args.names]
    unbuilt = [n for n in slugs if n in catalog.BY_SLUG and not catalog.get(n).implemented]
    if unbuilt:
        raise UsageError(
            f"not implemented yet: {', '.join(unbuilt)} (see `iclr26 list` for the papers that are)"
        )
    out = _check_out_dir(args.out)
    try:
        check_scale(out, args.scale)
        stored = load_results(out)
    except ScaleMismatch as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    console = Console(stderr=True)
    stdout = Console()
    plain = not sys.stdout.isatty()
    running: dict[tuple, str] = {}

    tasks, missing = plan(args.names, args.scale, args.seed, args.timeout, args.repeat)
    done = (
        set()
        if args.force
        else {record_key(r) for r in stored["results"] if r.get("verdict") != "error"}
    )
    todo = sum(t.key not in done for t in tasks)
    repeat_note = f", {args.repeat} seeds each" if args.repeat > 1 else ""
    print(
        f"iclr26 reproduce: {todo} claim runs at {args.scale} scale{repeat_note} with "
        f"{args.jobs} job(s) -> {out}/ ({len(tasks) - todo} already done)",
        flush=True,
    )
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[now]}"),
        console=console,
        transient=False,
        disable=not console.is_terminal,
    ) as progress:
        bar = progress.add_task("claims", total=todo, now="")

        def on_event(kind, task, fraction, message):
            label = f"{task.paper}:{task.claim}" + (f" seed {task.seed}" if args.repeat > 1 else "")
            if kind == "start":
                running[task.key] = label
            elif kind == "progress":
                running[task.key] = f"{label} {fraction:.0%} {message}".strip()
            elif kind == "done":
                running.pop(task.key, None)
                progress.advance(bar)
                line = f"{label} -> {message}"
                if plain or not console.is_terminal:
                    print(line, flush=True)
                else:
                    progress.console.print(line)
            progress.update(bar, now=" | ".join(running.values())[:80])

        summary = run_tasks(
            tasks,
            scale=args.scale,
            jobs=args.jobs,
            executor=args.executor,
            out_dir=out,
            force=args.force,
            on_event=on_event,
        )
        summary.missing = missing
    md, html = build_report(out)
    if summary.ran:
        table = Table(title="claims run")
        for col in ("paper", "claim", "seed", "verdict", "time (s)", "reason"):
            table.add_column(col, overflow="fold")
        for r in summary.ran:
            table.add_row(
                r["paper"],
                r["claim"],
                str(r.get("seed", 0)),
                r["verdict"],
                f"{r['wall_s']:.1f}",
                r.get("reason", ""),
            )
        stdout.print(table)
    if summary.skipped_existing:
        stdout.print(
            f"{len(summary.skipped_existing)} claims already had results "
            "(use --force to rerun them)."
        )
    if summary.missing:
        stdout.print("Not implemented yet: " + ", ".join(p.slug for p in summary.missing))
    stdout.print(f"Report: {md} and {html}")
    if summary.interrupted:
        stdout.print("Interrupted: finished claims are kept; rerun to continue.")
        return 130
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from iclr26.report import build_report

    try:
        md, html = build_report(args.out)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(f"Report: {md} and {html}")
    return 0


def _warmup_progress(name: str):
    """A progress bar on the terminal, a line every 10 % elsewhere; ``(update, close)``."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    progress = Progress(
        TextColumn(f"[bold]warmup {name}"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} {task.fields[note]}"),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
    )
    progress.start()
    bar = progress.add_task(name, total=None, note="")
    last = {"decile": -1}

    def update(done: float, total: float | None = None, note: str = "") -> None:
        progress.update(bar, completed=done, total=total, note=note)
        if not console.is_terminal and total:
            decile = int(10 * done / total)
            if decile > last["decile"]:
                last["decile"] = decile
                print(f"warmup {name}: {done:.0f}/{total:.0f} {note}".rstrip(), flush=True)

    return update, progress.stop


def cmd_warmup(args: argparse.Namespace) -> int:
    names = list(WARMUPS) if args.what == "all" else [args.what]
    done = 0
    for name in names:
        module, func = WARMUPS[name]
        if not _module_file_exists(module):
            if args.what != "all":
                raise UsageError(f"no shared {name} models in this version of iclr26")
            continue
        warm = getattr(importlib.import_module(module), func)
        update, close = _warmup_progress(name)
        try:
            if name == "vision":  # recipes: "test" (tiny, for tests) or the default ones
                recipe = "test" if args.size == "test" else "default"
                if args.size not in ("test", "quick", "full"):
                    raise ValueError(f"unknown size {args.size!r}; valid: test, quick, full")
                cached = warm(
                    progress=lambda recipe_name, i, total, tell=update: tell(i, total, recipe_name),
                    recipe=recipe,
                )
                path = ", ".join(str(p) for p in cached.values())
            else:
                path = warm(size=args.size, progress=update)
        except ValueError as exc:
            raise UsageError(f"warmup {name}: {exc}") from None
        finally:
            close()
        print(f"{name}: cached at {path}")
        done += 1
    if not done:
        raise UsageError("no shared models to warm up in this version of iclr26")
    return 0


COMMANDS = {
    "list": cmd_list,
    "show": cmd_show,
    "reproduce": cmd_reproduce,
    "report": cmd_report,
    "warmup": cmd_warmup,
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if hasattr(args, "_plugin"):
            return int(args._plugin.run(args))
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"iclr26: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("iclr26: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into a program that stopped reading (head, less)
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
