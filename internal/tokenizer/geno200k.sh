#!/usr/bin/env bash
# Regenerates testdata/o200k_golden.json, the o200k_base token ids of the
# golden inputs, from the npm package js-tiktoken (an independent
# implementation with the encoding's ranks). Needs npm, node and the npm
# registry; the package is installed in a temporary directory and nothing
# from it is kept. The vocabulary itself is not regenerated: it is the one
# github.com/pkoukk/tiktoken-go-loader embeds (see o200k.go).
#
# Usage: bash internal/tokenizer/geno200k.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
npm install --silent --no-save --no-audit --no-fund --prefix "$work" js-tiktoken@1.0.21
node "$here/testdata/o200k_golden.mjs" "$work"
