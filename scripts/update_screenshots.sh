#!/usr/bin/env bash
# Copy the screenshots the end-to-end tests took (run command 2 first) into docs/screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/screenshots
cp test-artifacts/e2e/test_layer_renders_every_node_dsv3_decode-3.png docs/screenshots/layer.png
cp test-artifacts/e2e/test_node_click_highlights_kernels_node_selected.png docs/screenshots/node_selected.png
cp test-artifacts/e2e_panel2/compare_decode_vs_unfused.png docs/screenshots/compare.png
cp test-artifacts/e2e_panel2/stages_before_removed.png docs/screenshots/stages.png
cp test-artifacts/e2e_panel2/overview.png docs/screenshots/overview.png
cp test-artifacts/e2e/test_tab_appears_in_tensorboard_and_panel_draws.png docs/screenshots/tensorboard.png
echo "copied $(ls docs/screenshots | wc -l) screenshots into docs/screenshots/"
