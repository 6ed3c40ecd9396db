"""Packaging for tb-ad-layer: converter CLI plus TensorBoard plugin."""
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent


def _version() -> str:
    for line in (HERE / "tb_ad_layer" / "version.py").read_text().splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip('"')
    raise RuntimeError("tb_ad_layer/version.py has no __version__")


setup(
    name="tb-ad-layer",
    version=_version(),
    description=(
        "AutoDeploy FX graph dumps + Nsight Systems traces -> interactive per-layer "
        "graph and kernel timeline in TensorBoard"
    ),
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    packages=find_packages(include=["tb_ad_layer", "tb_ad_layer.*"]),
    package_data={
        "tb_ad_layer": ["trace/kernel_map.json", "plugin/static/*", "plugin/static/**/*"],
    },
    include_package_data=True,
    install_requires=["tensorboard>=2.16", "protobuf>=3.20", "werkzeug>=2.2", "msgspec>=0.18"],
    extras_require={
        "test": ["pytest>=8", "playwright>=1.45"],
    },
    entry_points={
        "console_scripts": ["tb-ad-layer = tb_ad_layer.cli:main"],
        "tensorboard_plugins": ["ad_layer = tb_ad_layer.plugin.plugin:AdLayerPlugin"],
    },
)
