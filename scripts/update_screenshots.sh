#!/usr/bin/env bash
# Copy the screenshots the end-to-end tests took (run command 2 first) into docs/screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/screenshots
shots=test-artifacts/e2e
cp "$shots/legible_default_view.png" docs/screenshots/layer.png
cp "$shots/test_node_click_highlights_kernels_node_selected.png" docs/screenshots/node_selected.png
cp "$shots/compare_decode_vs_unfused.png" docs/screenshots/compare.png
cp "$shots/compare_no_trace_side.png" docs/screenshots/compare_no_trace.png
cp "$shots/stages_before_removed.png" docs/screenshots/stages.png
cp "$shots/overview.png" docs/screenshots/overview.png
cp "$shots/legible_summary_cards.png" docs/screenshots/summary_cards.png
cp "$shots/legible_large_layer_fold.png" docs/screenshots/large_layer.png
cp "$shots/tensorboard_dark_mode.png" docs/screenshots/tensorboard.png
echo "copied $(ls docs/screenshots | wc -l) screenshots into docs/screenshots/"
