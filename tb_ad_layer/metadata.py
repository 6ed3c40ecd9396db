"""The names the converter, the plugin, the panel and the package share, spelled once.

TensorBoard knows the plugin by :data:`PLUGIN_NAME`: it is the entry point's name (setup.py reads
this file as text, so building the package imports nothing), the route prefix, the folder of the
run store under a run, and the tab id in TensorBoard's URL (the panel's copy is generated into
``frontend/src/api/contract.ts``). Renaming the plugin is a change of this file alone.
"""
from __future__ import annotations

#: TensorBoard's id of the plugin: entry point, ``/data/plugin/<name>`` and the URL's tab.
PLUGIN_NAME = "ad_layer"
#: The tab's title in TensorBoard.
DISPLAY_NAME = "AD Layers"
#: Every URL the plugin serves starts with this, under TensorBoard's own path prefix.
ROUTE_PREFIX = f"/data/plugin/{PLUGIN_NAME}"
#: The run store sits at ``<logdir>/<run>/<STORE_DIR...>/<STORE_FILE>``: the folder TensorBoard
#: reserves for a plugin's own files (``plugins/<name>``).
STORE_DIR = ("plugins", PLUGIN_NAME)
STORE_FILE = "run.sqlite"
