package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/dev/embedstack"
)

// TestPrintDevStack checks the dev stack's banner: every address, including
// Temporal's HTTP API, and export lines that a shell accepts as they are and
// that set the stack's full S3 credentials.
func TestPrintDevStack(t *testing.T) {
	stack := func(secret string) *embedstack.Stack {
		return &embedstack.Stack{
			TemporalAddress: "127.0.0.1:7233", TemporalHTTPAddress: "127.0.0.1:7243", Namespace: "default",
			UIURL: "http://127.0.0.1:8233", S3Endpoint: "http://127.0.0.1:9000", Bucket: "memagent",
			Region: embedstack.DevRegion, S3AccessKey: embedstack.DevAccessKey, S3SecretKey: secret,
		}
	}
	s := stack(embedstack.DevSecretKey)
	for _, tc := range []struct {
		name, sim, model, dir string
		want                  []string
	}{
		{"simulator", "http://127.0.0.1:8000/v1", "", "/home/u/.cache/memagent/dev", []string{
			"  Temporal:  127.0.0.1:7233 (namespace default)\n",
			"  HTTP API:  http://127.0.0.1:7243 ",
			"  Web UI:    http://127.0.0.1:8233\n",
			"  S3:        http://127.0.0.1:9000 (bucket memagent, key memagent)\n",
			"  Model:     http://127.0.0.1:8000/v1 (inference simulator, not a model)\n",
			"  Data:      /home/u/.cache/memagent/dev\n",
			"  export TEMPORAL_ADDRESS=127.0.0.1:7233 TEMPORAL_NAMESPACE=default TEMPORAL_HTTP=http://127.0.0.1:7243\n",
			"  export AWS_ACCESS_KEY_ID=memagent AWS_SECRET_ACCESS_KEY=memagent-dev-secret AWS_ENDPOINT_URL_S3=http://127.0.0.1:9000 AWS_REGION=us-east-1 MEMAGENT_BUCKET=memagent\n",
			"  export OPENAI_BASE_URL=http://127.0.0.1:8000/v1\n",
		}},
		{"model server", "", "http://vllm:8000/v1", "", []string{
			"  Model:     http://vllm:8000/v1\n",
			"  export AWS_ACCESS_KEY_ID=memagent AWS_SECRET_ACCESS_KEY=memagent-dev-secret ",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			printDevStack(&out, s, tc.sim, tc.model, tc.dir)
			got := out.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q; got:\n%s", w, got)
				}
			}
			if tc.dir == "" && strings.Contains(got, "Data:") {
				t.Errorf("in-memory stack prints a data dir:\n%s", got)
			}
		})
	}

	t.Run("exports paste into a shell", func(t *testing.T) {
		var out bytes.Buffer
		printDevStack(&out, stack(`it's $HOME "x"`), "", "http://m/v1", "")
		var exports []string
		for _, line := range strings.Split(out.String(), "\n") {
			if l := strings.TrimSpace(line); strings.HasPrefix(l, "export ") {
				exports = append(exports, l)
			}
		}
		if len(exports) != 2 {
			t.Fatalf("got %d export lines, want 2:\n%s", len(exports), out.String())
		}
		script := strings.Join(exports, "\n") + "\n" + `printf '%s\n' "$TEMPORAL_ADDRESS" "$TEMPORAL_NAMESPACE" "$TEMPORAL_HTTP" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "$AWS_ENDPOINT_URL_S3" "$AWS_REGION" "$MEMAGENT_BUCKET"`
		got, err := exec.Command("sh", "-c", script).Output()
		if err != nil {
			t.Fatalf("sh: %v", err)
		}
		want := strings.Join([]string{"127.0.0.1:7233", "default", "http://127.0.0.1:7243", "memagent", `it's $HOME "x"`,
			"http://127.0.0.1:9000", "us-east-1", "memagent"}, "\n") + "\n"
		if string(got) != want {
			t.Errorf("the shell set:\n%s\nwant:\n%s", got, want)
		}
	})
}
