#!/usr/bin/env bash
# test-deps: install what the tests need from outside Go, and nothing when
# it is all there already (idempotent; .ci/run calls it, anyone may):
#   - jq and curl: docs/API.md's examples (docs TestAPIExamples)
#   - chromium: the Web UI check (starter/cli/e2e/review TestWebUIShowsRun) and the
#     review desk's browser test (starter/cli/e2e/review TestReviewDeskEndToEnd, driven
#     by chromedp, which needs no chromedriver)
#   - poppler-utils (pdftotext) and time (/usr/bin/time -v): the conversion
#     benchmark measures pdftotext the way its users would
#   - the npm modules of examples/typescript (TestTypeScriptExample)
#   - postgresql: deploy/bare/run.sh (the compose topology from binaries)
#   - Tesseract 5 with English (tesseract-ocr, tesseract-ocr-eng), which
#     reads scanned PDF pages, and img2pdf, with which the OCR tests make
#     scans of Debian manuals' pages (docconv TestOCRAccuracyOnDebianManuals,
#     TestMixedPDF, the hostile scans; starter/cli/e2e/documents TestScannedPageAnswered)
#   - groff with its PDF output (gropdf; groff-base has none): the PDF
#     tests typeset a book with running headers, footnotes and roman front
#     matter (docconv TestTypesetBook)
#   - R (r-base-core, Rscript): binom.test is the independent implementation
#     the validation's exact intervals are checked against (internal/validation
#     TestClopperPearsonTableIsR regenerates the stored table with it); lighter
#     than Debian's python3-scipy, which pulls numpy, OpenBLAS and Boost headers
#   - six Debian manuals (scripts/manuals.sh --download-only: about 18 MB
#     once, under ~/.cache/memagent/manuals): c++-annotations',
#     gnuplot's and asymptote's PDFs and PostgreSQL's HTML, which docconv
#     TestDebianManuals and TestDebianManualsLinesApart and starter/cli/e2e/documents
#     TestCitationsOnRealManual read, and asymptote's HTML from Debian 13
#     (asymptote-doc/trixie: Texinfo 7.1, which Debian 12 builds nothing
#     with; 3.4 MB, and Debian 13's package lists, about 10 MB, once), which
#     docconv TestDebianManualsTexinfo7HTML reads, and bash's reference
#     manual (bash-doc: Texinfo, words hyphenated at lines' ends), which
#     docconv TestFindTextAcrossHyphenatedLineEnds reads
#   - real email nobody here wrote (the same way, about 5 MB once): the
#     sample messages of Python's test suite (libpython3.11-testsuite:
#     MIME, encodings, charsets, digests, forwards), the 2,403 messages of
#     SpamAssassin's ham corpus that the JWZ threading library's tests ship
#     (golang-github-gatherstars-com-jwz-dev: mailing-list mail with
#     In-Reply-To and References) and enmime's MIME test messages
#     (golang-github-jhillyerd-enmime-dev), which docconv TestEmail* read
# Debian packages need root (apt-get); Node.js and npm must be on PATH.
# With MEMAGENT_CI=1 a test whose tool is still missing fails, not skips.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v jq >/dev/null || need+=(jq)
command -v curl >/dev/null || need+=(curl)
command -v pdftotext >/dev/null || need+=(poppler-utils)
[ -x /usr/bin/time ] || need+=(time)
[ -x /usr/bin/chromium ] || need+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v gropdf >/dev/null || need+=(groff)
command -v tesseract >/dev/null || need+=(tesseract-ocr)
{ command -v tesseract >/dev/null && tesseract --list-langs 2>/dev/null | grep -qx eng; } || need+=(tesseract-ocr-eng)
command -v img2pdf >/dev/null || need+=(img2pdf)
command -v Rscript >/dev/null || need+=(r-base-core)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "test-deps: missing ${need[*]}: run this script as root (it uses apt-get)" >&2
    exit 1
  fi
  echo "test-deps: installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if ! command -v npm >/dev/null; then
  echo "test-deps: npm is not on PATH: install Node.js 20.3 or later" >&2
  exit 1
fi
# npm ci only when the modules are missing or older than the lock file.
stamp=examples/typescript/node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ examples/typescript/package-lock.json -nt "$stamp" ]; then
  npm ci --prefix examples/typescript --no-audit --no-fund
fi
bash scripts/manuals.sh --download-only c++-annotations-pdf gnuplot-doc postgresql-doc-15 asymptote-doc asymptote-doc/trixie bash-doc \
  groff libpython3.11-testsuite golang-github-gatherstars-com-jwz-dev golang-github-jhillyerd-enmime-dev
echo "test-deps: jq, curl, pdftotext, chromium, PostgreSQL, groff, Tesseract, img2pdf, R, the Debian manuals and the TypeScript example's modules are in place"
