"""The docs run: every Python code block of the root README and of every room's README is
executed as written (all blocks of one README in order, in a fresh interpreter, in an empty
folder); every shell command in a README is checked against the real command line (each
``iclr26 …`` line parses with the real parser and each ``make`` target exists) — those commands
take minutes, so the cheap ones (list, show, --version) are run and the rest only parsed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
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


@pytest.mark.parametrize("readme", PY_READMES, ids=_rel)
def test_python_blocks_run_as_written(readme, tmp_path):
    code = "\n\n".join(blocks(readme, "python"))
    script = tmp_path / "readme_example.py"
    script.write_text(code, encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg")
    env.setdefault("ICLR26_CACHE", str(tmp_path / "cache"))
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert proc.returncode == 0, f"{_rel(readme)} example failed:\n{proc.stderr[-3000:]}"


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
