#!/usr/bin/env bash
# Runs the MemAgent paper's RULER-HQA evaluation against a model behind an
# OpenAI-compatible endpoint (vLLM, SGLang, OpenAI) or Azure OpenAI, and
# prints the measured row beside the paper's published RL-MemAgent rows,
# scored as the paper's evaluation scripts score (devstack eval run
# --protocol paper; docs/EVAL.md, "The paper's protocol").
#
# It builds devstack (the stack, its worker and the eval commands), writes RULER-HQA from your copy of
# HotpotQA at the paper's lengths (nothing is downloaded), starts the
# embedded dev stack with a worker pointed at the endpoint (its state under
# $OUT, so a rerun reuses every answer already paid for), runs the set, and
# stops the worker.
#
# Environment (only the first two are required):
#   HOTPOTQA            HotpotQA's dev set, hotpot_dev_distractor_v1.json, or a file in its format
#   OPENAI_BASE_URL     the endpoint, e.g. http://gpu-1:8000/v1 (comma-separate replicas)
#   OPENAI_API_KEY      the endpoint's key, if it wants one
#   MEMAGENT_MODEL      the served model (default: the endpoint's first), e.g. BytedTsinghua-SIA/RL-MemoryAgent-14B
#   MEMAGENT_MODEL_CONTEXT  the model's context length in tokens, if the endpoint does not report it
#   Azure OpenAI instead of OPENAI_BASE_URL: MEMAGENT_MODEL_API=azure, AZURE_OPENAI_ENDPOINT,
#                       AZURE_OPENAI_API_KEY, OPENAI_API_VERSION, MEMAGENT_MODEL (the deployment)
#                       and MEMAGENT_MODEL_CONTEXT (docs/DEPLOY.md, "Hosted models")
#   UPDATE_TEMPLATE     file with the memory-update prompt the model was trained on ({question} {memory} {chunk})
#   FINAL_TEMPLATE      file with the final-answer prompt ({question} {memory})
#                       Without both, the project's own wording is used and the output says the run
#                       is not the paper's protocol: the published models were trained on the paper's.
#   LENGTHS             default 7K,14K,28K,56K,112K,224K,448K,896K,1.75M,3.5M (K = 1024 tokens)
#   SAMPLES             questions per length, default 128 (the paper's)
#   SEED                default 42
#   TOKENIZER           counts lengths and chunks: qwen2.5 (default, the published models'),
#                       o200k_base (gpt-4o and newer), cl100k_base
#   CHUNK_TOKENS        default 5000 (the paper's)
#   CONCURRENCY         DocumentQA runs at once, default 16
#   OUT                 working directory, default ./paper-repro: the binaries, the set, the stack's
#                       data, worker.log, and the results paper.txt and paper.json
#
# Example:
#   HOTPOTQA=~/data/hotpot_dev_distractor_v1.json OPENAI_BASE_URL=http://gpu-1:8000/v1 \
#   UPDATE_TEMPLATE=update.txt FINAL_TEMPLATE=final.txt bash scripts/reproduce-paper.sh
set -euo pipefail
cd "$(dirname "$0")/.."

: "${HOTPOTQA:?set HOTPOTQA to your copy of HotpotQA (hotpot_dev_distractor_v1.json)}"
if [ "${MEMAGENT_MODEL_API:-}" != azure ] && [ -z "${OPENAI_BASE_URL:-}" ]; then
  echo "reproduce-paper: set OPENAI_BASE_URL to the model's endpoint (or MEMAGENT_MODEL_API=azure and the AZURE_OPENAI_* variables)" >&2
  exit 2
fi
if [ -n "${UPDATE_TEMPLATE:-}${FINAL_TEMPLATE:-}" ] && { [ -z "${UPDATE_TEMPLATE:-}" ] || [ -z "${FINAL_TEMPLATE:-}" ]; }; then
  echo "reproduce-paper: set both UPDATE_TEMPLATE and FINAL_TEMPLATE, or neither" >&2
  exit 2
fi
LENGTHS=${LENGTHS:-7K,14K,28K,56K,112K,224K,448K,896K,1.75M,3.5M}
SAMPLES=${SAMPLES:-128}
SEED=${SEED:-42}
TOKENIZER=${TOKENIZER:-qwen2.5}
CHUNK_TOKENS=${CHUNK_TOKENS:-5000}
CONCURRENCY=${CONCURRENCY:-16}
OUT=${OUT:-paper-repro}
mkdir -p "$OUT/bin"

echo "--- build"
go build -o "$OUT/bin/devstack" ./devstack

set_file="$OUT/ruler-hqa-$SAMPLES-seed$SEED-$TOKENIZER.json"
if [ -s "$set_file" ]; then
  echo "--- set: $set_file (already written)"
else
  echo "--- set: RULER-HQA, $SAMPLES questions at $LENGTHS"
  "$OUT/bin/devstack" eval gen --task hqa --hotpotqa "$HOTPOTQA" --lengths "$LENGTHS" --samples "$SAMPLES" \
    --seed "$SEED" --tokenizer "$TOKENIZER" --out "$set_file"
fi

templates=()
if [ -n "${UPDATE_TEMPLATE:-}" ]; then
  templates=(--update-template "$UPDATE_TEMPLATE" --final-template "$FINAL_TEMPLATE")
  template_note="update $(sha256sum <"$UPDATE_TEMPLATE" | cut -c1-64) ($UPDATE_TEMPLATE), final $(sha256sum <"$FINAL_TEMPLATE" | cut -c1-64) ($FINAL_TEMPLATE)"
else
  template_note="the project's built-in wording (UPDATE_TEMPLATE and FINAL_TEMPLATE unset): NOT the paper's protocol, whose models were trained on the paper's templates"
fi

echo "--- worker on the dev stack (log: $OUT/worker.log)"
"$OUT/bin/devstack" --free-ports --data-dir "$OUT/stack" --http-addr "" ${templates[@]+"${templates[@]}"} >"$OUT/worker.log" 2>&1 &
worker_pid=$!
trap 'kill "$worker_pid" 2>/dev/null || true; wait "$worker_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  grep -q "worker polling task queue" "$OUT/worker.log" && break
  if ! kill -0 "$worker_pid" 2>/dev/null; then
    echo "reproduce-paper: the worker stopped:" >&2
    cat "$OUT/worker.log" >&2
    exit 1
  fi
  sleep 1
done
grep -q "worker polling task queue" "$OUT/worker.log" || { echo "reproduce-paper: the worker did not start within 5 minutes (see $OUT/worker.log)" >&2; exit 1; }
# The banner's export lines point eval run at this stack.
eval "$(sed -n 's/^  export /export /p' "$OUT/worker.log")"
grep '^  Model:' "$OUT/worker.log" || true

echo "--- run (templates: $template_note)"
name="paper-ruler-hqa-$SAMPLES-seed$SEED"
# --reuse auto: the stack under $OUT is this script's own, so a rerun goes on
# where an interrupted one stopped (delete $OUT/stack to measure afresh).
"$OUT/bin/devstack" eval run --protocol paper --set "$set_file" --name "$name" --tokenizer "$TOKENIZER" \
  --chunk-tokens "$CHUNK_TOKENS" --concurrency "$CONCURRENCY" --reuse auto | tee "$OUT/paper.txt"
# The same batch again reuses every answer: this only writes the JSON.
"$OUT/bin/devstack" eval run --protocol paper --set "$set_file" --name "$name" --tokenizer "$TOKENIZER" \
  --chunk-tokens "$CHUNK_TOKENS" --concurrency "$CONCURRENCY" --reuse auto --json >"$OUT/paper.json"
echo "templates: $template_note" | tee -a "$OUT/paper.txt"
echo "--- done: $OUT/paper.txt, $OUT/paper.json"
