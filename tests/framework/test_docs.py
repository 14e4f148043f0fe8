"""The docs run: every Python code block of the root README and of every room's README is
executed as written (all blocks of one README in order, in a process of its own, in an empty
folder); every shell command in a README is checked against the real command line (each
``iclr26 …`` line parses with the real parser and each ``make`` target exists) — those commands
take minutes, so the cheap ones (list, show, --version) are run and the rest only parsed."""

from __future__ import annotations

import multiprocessing
import os
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
READMES = [ROOT / "README.md", *sorted((ROOT / "src" / "iclr26").glob("**/README.md"))]
FENCE = re.compile(r"^```(\w*)\s*\n(.*?)^```\s*$", re.S | re.M)


def blocks(path: Path, lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(path.read_text(encoding="utf-8")) if kind == lang]


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


PY_READMES = [p for p in READMES if blocks(p, "python")]


# Each example runs in a process forked from a server that has imported only these third-party
# libraries (no iclr26 module), so it pays no import cost of its own: about 3 to 7 s of CPU for
# each of some sixty READMEs. The child otherwise starts as a fresh interpreter would: its own
# folder, its own environment, `__name__ == "__main__"`, exit handlers run at the end.
PRELOAD = [
    "numpy",
    "torch",
    "scipy.stats",
    "scipy.optimize",
    "sklearn.base",
    "sklearn.linear_model",
    "pandas",
    "matplotlib.pyplot",
    "transformers",
    "transformers.models.llama.modeling_llama",
]

# Runs in the forked child: stdout/stderr to files, the script as __main__, atexit at the end.
_BOOT = """
import atexit, os, runpy, sys, traceback
os.chdir(folder)
os.environ.clear()
os.environ.update(env)
for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
    f = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(f, fd)
    os.close(f)
sys.stdout = open(1, "w", buffering=1, closefd=False)
sys.stderr = open(2, "w", buffering=1, closefd=False)
sys.argv = [script]
sys.path.insert(0, folder)
code = 0
try:
    runpy.run_path(script, run_name="__main__")
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
except BaseException:
    traceback.print_exc()
    code = 1
try:
    atexit._run_exitfuncs()
except BaseException:
    traceback.print_exc()
    code = code or 1
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
"""

_CTX = None


def _context():
    global _CTX
    if _CTX is None:
        os.environ.setdefault("MPLBACKEND", "Agg")
        _CTX = multiprocessing.get_context("forkserver")
        _CTX.set_forkserver_preload(PRELOAD)
    return _CTX


def run_example(script: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str]:
    """Run ``script`` as ``__main__`` in its own folder and process; (exit code, stderr).
    The exit code is None when it ran past ``timeout`` seconds (it is then killed)."""
    folder = str(script.parent)
    proc = _context().Process(
        target=exec, args=(_BOOT, {"folder": folder, "env": env, "script": str(script)})
    )
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        proc.join()
        code = None
    else:
        code = proc.exitcode
    err = script.parent / "stderr.txt"
    return code, err.read_text(errors="replace") if err.exists() else ""


@pytest.mark.parametrize("readme", PY_READMES, ids=_rel)
def test_python_blocks_run_as_written(readme, tmp_path):
    code = "\n\n".join(blocks(readme, "python"))
    script = tmp_path / "readme_example.py"
    script.write_text(code, encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg")
    env.setdefault("ICLR26_CACHE", str(tmp_path / "cache"))
    rc, stderr = run_example(script, env, timeout=420)
    assert rc is not None, f"{_rel(readme)} example ran past 420 s"
    assert rc == 0, f"{_rel(readme)} example failed (exit {rc}):\n{stderr[-3000:]}"


def test_example_runner_reports_failure_exit_code_and_output(tmp_path):
    """The runner cannot pass a failing example: an exception, sys.exit(3) and a clean run."""
    env = dict(os.environ)
    cases = {
        "raise ValueError('boom-from-example')": (1, "boom-from-example"),
        "import sys\nprint('x', file=sys.stderr)\nsys.exit(3)": (3, "x"),
        "assert __name__ == '__main__'\nimport atexit\natexit.register(print, 'bye')": (0, ""),
    }
    for i, (body, (want_rc, want_err)) in enumerate(cases.items()):
        folder = tmp_path / str(i)
        folder.mkdir()
        script = folder / "readme_example.py"
        script.write_text(body, encoding="utf-8")
        rc, stderr = run_example(script, env, timeout=60)
        assert rc == want_rc, (body, rc, stderr)
        assert want_err in stderr
        assert Path.cwd() != folder
    assert (tmp_path / "2" / "stdout.txt").read_text().strip() == "bye"


def _shell_lines(readme: Path) -> list[str]:
    lines = []
    for body in blocks(readme, "bash"):
        for line in body.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                lines.append(line)
    return lines


SHELL = [(p, line) for p in READMES for line in _shell_lines(p)]


@pytest.mark.parametrize("readme, line", SHELL, ids=[f"{_rel(p)}:{ln}" for p, ln in SHELL])
def test_shell_commands_are_real(readme, line, capsys):
    from iclr26 import cli

    words = shlex.split(line)
    env_free = [w for w in words if not re.match(r"^[A-Z_]+=", w)]
    if env_free[0] == "make":
        makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
        for target in [w for w in env_free[1:] if "=" not in w]:
            assert re.search(rf"^{re.escape(target)}:", makefile, re.M), f"no make target {target}"
        return
    assert env_free[0].endswith("iclr26"), f"unexpected command in {_rel(readme)}: {line}"
    argv = env_free[1:]
    if not argv or argv[0] == "--version":
        return
    parser = cli.build_parser(argv)
    parser.parse_args(argv)  # exits 2 on an unknown flag or command
    if argv[0] in ("list", "show"):
        assert cli.main(argv) == 0
        capsys.readouterr()
