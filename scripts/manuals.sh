#!/usr/bin/env bash
# manuals: the Debian manuals that measure the converter's running headers,
# footers and navigation (docs/DOCUMENTS.md's table) and that the
# real-manual tests read. Downloads each package once (apt-get download,
# dpkg -x) under $MEMAGENT_MANUALS (default ~/.cache/memagent/manuals),
# then prints the table: every manual converted by internal/docconv (in a
# process of its own) and checked against pdftotext's layout
# (poppler-utils) or, for HTML, by repetition across its pages and by
# Texinfo's panels (go run ./bench/manuals; its doc says how).
#
#   scripts/manuals.sh                      # download all, print the table
#   scripts/manuals.sh -v                   # and each leak, on stderr
#   scripts/manuals.sh -fidelity            # BENCHMARKS.md's fidelity table (issue 49):
#                                           # words pdftotext never prints, headings run on,
#                                           # leaks, speed and memory beside pdftotext
#                                           # (about 2 min on 2 idle cores, 5 on a busy machine;
#                                           # -rounds 3 for medians of three, three times as long)
#   scripts/manuals.sh --download-only [PKG ...]   # what scripts/test-deps.sh does for the tests
#
# apt-get download needs the package lists (apt-get update, as root, once).
# PKG/SUITE (asymptote-doc/trixie) takes the package from another Debian
# release, for a manual this one's toolchains did not make (Texinfo 7's
# HTML): apt keeps that suite's lists apart, under $dir/apt/SUITE, and the
# package is extracted under $dir/x/SUITE, beside this release's.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${MEMAGENT_MANUALS:-$HOME/.cache/memagent/manuals}"
all=(c++-annotations-pdf gnuplot-doc debian-reference-en r-doc-pdf groff postgresql-doc-15 sphinx-doc asymptote-doc bash-doc gnu-standards octave-doc r-cran-officer asymptote-doc/trixie)

download_only=0
if [ "${1:-}" = "--download-only" ]; then
  download_only=1
  shift
fi
pkgs=("${all[@]}")
if [ "$download_only" = 1 ] && [ $# -gt 0 ]; then
  pkgs=("$@")
  set --
fi

mkdir -p "$dir/debs" "$dir/x"

# download_suite PKG SUITE: apt-get download from another Debian release,
# with that release's package lists kept under $dir/apt/SUITE (fetched
# once, as apt-get update does) and the system's apt configuration
# otherwise as it is.
download_suite() {
  local p="$1" suite="$2" apt="$dir/apt/$2"
  local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/sources.list.d"
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "APT::Sandbox::User=root"
    -o "Acquire::Languages=none" -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false"
    -o "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false"
    -o "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false")
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/sources.list.d"
  echo "deb http://deb.debian.org/debian $suite main" >"$apt/sources.list"
  if ! ls "$apt/lists/"*_dists_"${suite}"_* >/dev/null 2>&1; then
    apt-get "${opts[@]}" update -qq
  fi
  (cd "$dir/debs/$suite" && apt-get "${opts[@]}" download -q "$p" >/dev/null)
}

for spec in "${pkgs[@]}"; do
  p="${spec%%/*}" suite="" sub=""
  if [ "$spec" != "$p" ]; then
    suite="${spec#*/}" sub="/$suite"
    mkdir -p "$dir/debs$sub" "$dir/x$sub"
  fi
  if ls "$dir/debs$sub/${p}_"*.deb >/dev/null 2>&1; then
    continue
  fi
  echo "manuals: downloading $spec" >&2
  if [ -n "$suite" ]; then
    download_suite "$p" "$suite"
  elif ! (cd "$dir/debs" && apt-get download -q "$p" >/dev/null 2>&1); then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq
      (cd "$dir/debs" && apt-get download -q "$p" >/dev/null)
    else
      echo "manuals: apt-get download $p failed: run apt-get update as root, then this again" >&2
      exit 1
    fi
  fi
  dpkg -x "$dir/debs$sub/${p}_"*.deb "$dir/x$sub"
done
if [ "$download_only" = 1 ]; then
  exit 0
fi
command -v pdftotext >/dev/null || { echo "manuals: pdftotext is missing: apt-get install poppler-utils" >&2; exit 1; }
go run ./bench/manuals -dir "$dir/x" "$@"
