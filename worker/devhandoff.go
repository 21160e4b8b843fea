package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/memagent/memagent/worker/workerapp"
)

// devstackBinary is the devstack command's installed name.
const devstackBinary = "memagent-devstack"

// execDevstack replaces this process with the devstack command, given
// args as they are (it accepts --dev and reads --dev-stack as
// --no-worker). The production worker links no Temporal server, so the
// dev stack lives in a command of its own: memagent-devstack beside this
// binary or on PATH, or, in a memagent checkout with Go installed, one built
// from ./devstack into the user's cache (what `go run` would do, but the
// built process receives this one's signals directly).
func execDevstack(args []string, stderr io.Writer) error {
	bin, err := findDevstack(stderr)
	if err != nil {
		return err
	}
	argv := append([]string{bin}, args...)
	return syscall.Exec(bin, argv, os.Environ())
}

func findDevstack(stderr io.Writer) (string, error) {
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), devstackBinary); isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath(devstackBinary); err == nil {
		return p, nil
	}
	goBin, goErr := exec.LookPath("go")
	mod, modErr := os.ReadFile("go.mod")
	if goErr != nil || modErr != nil || !strings.Contains(string(mod), "module github.com/memagent/memagent\n") {
		return "", &workerapp.UsageError{Msg: "--dev and --dev-stack need the devstack command, which this worker binary does not include (it links no Temporal server): run `go run ./devstack` in a memagent checkout, or install it beside the worker (go build -o " + devstackBinary + " ./devstack)"}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	out := filepath.Join(cache, "memagent", "bin", devstackBinary)
	fmt.Fprintln(stderr, "worker: --dev runs the devstack command: building ./devstack (the first build compiles Temporal's server, a few minutes)")
	build := exec.Command(goBin, "build", "-o", out, "./devstack")
	build.Stdout, build.Stderr = stderr, stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build ./devstack: %w", err)
	}
	if !isExecutable(out) {
		return "", errors.New("build ./devstack: no binary at " + out)
	}
	return out, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
