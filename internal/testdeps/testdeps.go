// Package testdeps is how a test says it needs a tool from outside Go
// (jq, Chromium, Node.js and its modules, pdftotext), or a Debian manual
// that scripts/manuals.sh downloads. Without the tool the
// test skips, with a hint that says how to install it; under MEMAGENT_CI=1
// (as .ci/run sets it, after scripts/test-deps.sh installed everything) it
// fails instead, so that a test CI was meant to run cannot quietly not
// run. It is imported by tests only and must never be by production code.
package testdeps

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// CIVar names the environment variable that turns a missing tool from a
// skip into a failure.
const CIVar = "MEMAGENT_CI"

// InCI reports whether missing tools fail tests (MEMAGENT_CI=1).
func InCI() bool { return os.Getenv(CIVar) == "1" }

// Missing skips t, or fails it under MEMAGENT_CI=1, saying what is missing
// and how to install it.
func Missing(t testing.TB, what, hint string) {
	t.Helper()
	msg := what + " is missing: " + hint + " (scripts/test-deps.sh installs every tool the tests need)"
	if InCI() {
		t.Fatalf("%s; %s=1, so this fails instead of skipping", msg, CIVar)
	}
	t.Skip(msg)
}

// Command returns the path of a command on PATH, or skips (fails in CI)
// with hint.
func Command(t testing.TB, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name, hint)
	}
	return p
}

// File returns path when it exists, or skips (fails in CI) with hint.
func File(t testing.TB, path, hint string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		Missing(t, path, hint)
	}
	return path
}

// ManualsDir is where scripts/manuals.sh keeps the Debian manuals it
// downloads: $MEMAGENT_MANUALS, else ~/.cache/memagent/manuals.
func ManualsDir() string {
	if d := os.Getenv("MEMAGENT_MANUALS"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "memagent-manuals")
	}
	return filepath.Join(home, ".cache", "memagent", "manuals")
}

// Manual returns the path of a file of Debian package pkg as
// scripts/manuals.sh extracts it (rel under the package's root, such as
// usr/share/doc/gnuplot/gnuplot.pdf), or skips (fails in CI) saying how
// to download it.
func Manual(t testing.TB, pkg, rel string) string {
	t.Helper()
	return File(t, filepath.Join(ManualsDir(), "x", rel), "scripts/manuals.sh --download-only "+pkg+" downloads it")
}
