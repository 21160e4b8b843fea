package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestWorkerExitCodes runs the worker command as an operator does, with
// flags and an environment that cannot work: each fails before anything
// starts (no Temporal server is running here) with exit 2 and one message
// naming the variable or flag to change; --help exits 0.
func TestWorkerExitCodes(t *testing.T) {
	cases := []struct {
		name string
		args string
		env  []string
		code int
		want string // in stderr
	}{
		{"help", "--help", nil, 0, "-chunk-cache-mb"},
		{"unknown flag", "--no-such-flag", nil, 2, "no-such-flag"},
		{"flag out of range", "--chunk-cache-mb -5", nil, 2, "--chunk-cache-mb"},
		{"negative in-flight", "--max-in-flight -2", nil, 2, "MEMAGENT_MAX_IN_FLIGHT"},
		{"negative rate", "--rate-limit -1", nil, 2, "MEMAGENT_RATE_LIMIT"},
		{"claim depth", "", []string{"MEMAGENT_CLAIM_DEPTH=-1"}, 2, "MEMAGENT_CLAIM_DEPTH"},
		{"not a bool", "", []string{"MEMAGENT_CREATE_BUCKET=maybe"}, 2, `MEMAGENT_CREATE_BUCKET "maybe": want true or false`},
		{"path style", "", []string{"MEMAGENT_S3_PATH_STYLE=no"}, 2, "MEMAGENT_S3_PATH_STYLE"},
		{"timeout", "", []string{"MEMAGENT_MODEL_TIMEOUT=-5s"}, 2, "MEMAGENT_MODEL_TIMEOUT"},
		{"stop timeout", "", []string{"MEMAGENT_STOP_TIMEOUT=abc"}, 2, "MEMAGENT_STOP_TIMEOUT"},
		{"the name set", "", []string{"AWS_ENDPOINT_URL=notaurl"}, 2, "AWS_ENDPOINT_URL"},
		{"sse", "", []string{"MEMAGENT_S3_SSE=bogus"}, 2, "MEMAGENT_S3_SSE"},
		{"OCR max pages", "", []string{"MEMAGENT_OCR_MAX_PAGES=0"}, 2, `MEMAGENT_OCR_MAX_PAGES "0": want a number of pages >= 1`},
		{"OCR budget", "", []string{"MEMAGENT_OCR_BUDGET=-1m"}, 2, `MEMAGENT_OCR_BUDGET "-1m": want a positive duration`},
		{"email parts", "", []string{"MEMAGENT_EMAIL_MAX_PARTS=0"}, 2, `MEMAGENT_EMAIL_MAX_PARTS "0": want a number of MIME parts >= 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), subprocessEnv+"=1", subprocessArgsEnv+"="+c.args,
				// Nowhere to connect: a check that came after a dial would
				// fail with exit 1, not 2.
				"TEMPORAL_ADDRESS=127.0.0.1:1", "MEMAGENT_HTTP_ADDR=")
			cmd.Env = append(cmd.Env, c.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("worker %s with %v: exit %d, stderr %q; want exit %d and %q", c.args, c.env, code, stderr.String(), c.code, c.want)
			}
		})
	}
}
