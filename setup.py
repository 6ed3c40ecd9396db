"""Packaging for tb-ad-layer: converter CLI plus TensorBoard plugin.

Beyond the plain package, a build
- builds the panel from ``frontend/`` with npm (``build_support/panel.py``): wheels and sdists
  always carry it, so installing them needs no Node.js;
- compiles the converter's hot modules with mypyc when a C compiler is there
  (``build_support/compiled.py``; ``TB_AD_LAYER_COMPILE=0`` switches it off).
"""
import sys
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # build_support/ (PEP 517 backends do not put the tree on the path)

from build_support.compiled import BuildCompiled, compiled_extensions  # noqa: E402
from build_support.panel import ensure_panel  # noqa: E402


def _constant(module: str, name: str) -> str:
    """A string constant of ``tb_ad_layer/<module>.py``, read as text: building imports nothing
    of the package (its dependencies are not installed yet)."""
    for line in (HERE / "tb_ad_layer" / f"{module}.py").read_text().splitlines():
        if line.startswith(f"{name} ="):
            return line.split("=", 1)[1].strip().strip('"')
    raise RuntimeError(f"tb_ad_layer/{module}.py has no {name}")


#: The built panel: a package of data (no Python in it), listed once it is built. setuptools warns
#: of any folder of package data that is not a listed package, and fails on a listed package
#: that does not exist (a clean checkout before the panel is built).
PANEL_PACKAGE = "tb_ad_layer.plugin.static"
PANEL_DIR = HERE / "tb_ad_layer" / "plugin" / "static"


def _panel_packages() -> list[str]:
    return [PANEL_PACKAGE] if PANEL_DIR.is_dir() else []


def _list_panel(cmd: build_py | sdist) -> None:
    """The panel built just now goes in as the package it is."""
    packages = cmd.distribution.packages
    if packages is not None and PANEL_DIR.is_dir() and PANEL_PACKAGE not in packages:
        packages.append(PANEL_PACKAGE)
        if isinstance(cmd, build_py) and cmd.packages is not None and PANEL_PACKAGE not in cmd.packages:
            cmd.packages.append(PANEL_PACKAGE)


class BuildPyWithPanel(build_py):
    def run(self) -> None:
        # An editable install serves the panel from the checkout, built by scripts/setup.sh.
        ensure_panel(required=not getattr(self, "editable_mode", False))
        _list_panel(self)
        super().run()


class SdistWithPanel(sdist):
    def run(self) -> None:
        ensure_panel(required=True)
        _list_panel(self)
        super().run()


setup(
    name="tb-ad-layer",
    version=_constant("version", "__version__"),
    description=(
        "AutoDeploy FX graph dumps + Nsight Systems traces -> interactive per-layer "
        "graph and kernel timeline in TensorBoard"
    ),
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    packages=[*find_packages(include=["tb_ad_layer", "tb_ad_layer.*"]), *_panel_packages()],
    package_data={
        "tb_ad_layer": ["trace/kernel_map.json", "analysis/categories.json", "analysis/gpus.json"],
        PANEL_PACKAGE: ["*"],
    },
    # Build outputs of a checkout (compiled modules, their stamp) never go into a release; this
    # rather than MANIFEST.in's global-exclude, which warns when there is nothing to leave out.
    exclude_package_data={"": ["*.so", "*.pyd", "*.pyc", "*.c", "_compiled_stamp.json"]},
    include_package_data=True,
    install_requires=["tensorboard>=2.16", "protobuf>=3.20", "werkzeug>=2.2", "msgspec>=0.18"],
    extras_require={
        # The checks are pinned so that every checkout checks by the same rules; mypy is the
        # version the build compiles with (pyproject.toml [build-system]), and types-setuptools
        # types build_support/.
        "test": ["pytest>=8", "playwright>=1.45", "build>=1.2", "ruff==0.17.6", "mypy==2.4.1",
                 "types-setuptools==84.2.0.20261104"],
        # tb_ad_layer.export_model: export a live nn.Module as AutoDeploy does.
        "torch": ["torch>=2.6"],
    },
    entry_points={
        "console_scripts": ["tb-ad-layer = tb_ad_layer.cli:main"],
        "tensorboard_plugins": [
            f"{_constant('metadata', 'PLUGIN_NAME')} = tb_ad_layer.plugin.plugin:AdLayerPlugin"],
    },
    ext_modules=compiled_extensions(sys.argv[1:]),
    cmdclass={"build_ext": BuildCompiled, "build_py": BuildPyWithPanel, "sdist": SdistWithPanel},
)
