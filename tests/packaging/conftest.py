"""A release built the way users get one: ``python -m build`` on a clean copy of this checkout
(sdist with Node.js, then the wheel from that sdist without it), installed into a fresh virtual
environment on a PATH without Node.js. Built once per test session (about a minute)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

NODE_TOOLS = frozenset({"node", "nodejs", "npm", "npx", "corepack"})
C_COMPILERS = re.compile(r"(?:.*-)?(?:cc|gcc|clang|c89|c99|tcc)(?:-[\d.]+)?")


def path_without(bin_dir: Path, excluded: Callable[[str], bool]) -> str:
    """A PATH with every program of this one except the ``excluded`` names: links in
    ``bin_dir``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            exe = os.path.join(d, name)
            link = bin_dir / name
            if excluded(name) or link.exists() or link.is_symlink() \
                    or not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
                continue
            link.symlink_to(exe)
    return str(bin_dir)


def path_without_node(bin_dir: Path) -> str:
    path = path_without(bin_dir, NODE_TOOLS.__contains__)
    assert shutil.which("node", path=path) is None and shutil.which("npm", path=path) is None
    return path


def path_without_node_or_compiler(bin_dir: Path) -> str:
    path = path_without(bin_dir, lambda name: name in NODE_TOOLS
                        or C_COMPILERS.fullmatch(name) is not None)
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    assert shutil.which(cc, path=path) is None and shutil.which("node", path=path) is None
    return path


def clean_env(path: str) -> dict[str, str]:
    """This environment without the project's switches, virtual environment, Python path and
    compiler choice, nor a switch that turns byte-compiling off (as users build: with it,
    setuptools warns of every byte-compile step it skips)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TB_AD_LAYER_")
           and k not in ("PYTHONPATH", "VIRTUAL_ENV", "CC", "PYTHONDONTWRITEBYTECODE")}
    env["PATH"] = path
    return env


def clean_checkout(dest: Path) -> Path:
    """Copy what a fresh clone of this checkout holds (tracked files, and new files git does not
    ignore): no built panel, no node_modules, no compiled modules."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, check=True, capture_output=True).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = REPO / rel
        if not src.is_file():
            continue  # deleted in the working tree
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)
    return dest


def run(args: list[str], env: dict[str, str], cwd: Path) -> str:
    proc = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout + proc.stderr


@dataclass(frozen=True)
class Release:
    sdist: Path
    wheel: Path
    build_log: str
    venv_python: Path
    site_packages: Path
    env: dict[str, str]  # for running the installed package: PATH without Node.js
    tmp: Path

    def sdist_names(self) -> list[str]:
        with tarfile.open(self.sdist) as tar:
            return [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]

    def wheel_names(self) -> list[str]:
        with zipfile.ZipFile(self.wheel) as z:
            return z.namelist()


@pytest.fixture(scope="session")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    tmp = tmp_path_factory.mktemp("release")
    assert shutil.which("npm"), "building the sdist needs Node.js with npm on PATH"
    src = clean_checkout(tmp / "checkout")
    assert not (src / "tb_ad_layer" / "plugin" / "static").exists()
    dist = tmp / "dist"
    with_node = clean_env(os.environ["PATH"])
    log = run([sys.executable, "-m", "build", "--sdist", "--outdir", str(dist), str(src)],
              with_node, tmp)
    (sdist,) = dist.glob("*.tar.gz")
    no_node = clean_env(path_without_node(tmp / "bin-without-node"))
    log += run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(sdist)],
               no_node, tmp)
    (wheel,) = dist.glob("*.whl")
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", str(venv)], no_node, tmp)
    python = venv / "bin" / "python"
    run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        no_node, tmp)
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    no_node, tmp).strip())
    run_env = dict(no_node, PATH=f"{venv / 'bin'}{os.pathsep}{no_node['PATH']}")
    return Release(sdist, wheel, log, python, site, run_env, tmp)
