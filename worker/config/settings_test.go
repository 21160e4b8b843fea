package config

import (
	"os"
	"strings"
	"testing"
)

// TestFromEnvErrorMessages pins the message of every setting FromEnv
// parses, as the worker and the starter print them: what is wrong and
// what to write instead.
func TestFromEnvErrorMessages(t *testing.T) {
	for _, tt := range []struct {
		name, value, want string
	}{
		{"MEMAGENT_CLAIM_DEPTH", "-1", `MEMAGENT_CLAIM_DEPTH "-1": want how many folders below its claim root a claimed prefix must be, at least (e.g. 2; 0 = the default, 2)`},
		{"MEMAGENT_MODEL_API", "bedrock", `MEMAGENT_MODEL_API "bedrock": use openai (OpenAI and compatible servers such as vLLM) or azure (Azure OpenAI)`},
		{"MEMAGENT_MODEL_CONTEXT", "big", `MEMAGENT_MODEL_CONTEXT "big": want the model's context length in tokens, e.g. 128000 (0 = what the server reports)`},
		{"MEMAGENT_MODEL_TIMEOUT", "soon", `MEMAGENT_MODEL_TIMEOUT "soon": want a positive duration such as 10m`},
		{"MEMAGENT_MODEL_TIMEOUT", "-5s", `MEMAGENT_MODEL_TIMEOUT "-5s": want a positive duration such as 10m`},
		{"MEMAGENT_CREATE_BUCKET", "maybe", `MEMAGENT_CREATE_BUCKET "maybe": want true or false`},
		{"MEMAGENT_S3_PATH_STYLE", "no", `MEMAGENT_S3_PATH_STYLE "no": want true or false`},
		{"MEMAGENT_MAX_IN_FLIGHT", "-2", `MEMAGENT_MAX_IN_FLIGHT "-2": want a whole number >= 0`},
		{"MEMAGENT_CHUNK_CACHE_MB", "-2", `MEMAGENT_CHUNK_CACHE_MB "-2": want megabytes >= 0 (0 = the default, 64), or -1 to turn the cache off`},
		{"MEMAGENT_RATE_LIMIT", "-0.5", `MEMAGENT_RATE_LIMIT "-0.5": want activities per second >= 0`},
		{"MEMAGENT_MAX_CONVERTED_MB", "0", `MEMAGENT_MAX_CONVERTED_MB "0": want a positive number of MiB`},
		{"MEMAGENT_PDF_MEMORY_MB", "x", `MEMAGENT_PDF_MEMORY_MB "x": want a positive number of MiB`},
		{"MEMAGENT_OCR_MEMORY_MB", "-1", `MEMAGENT_OCR_MEMORY_MB "-1": want a positive number of MiB`},
		{"MEMAGENT_OCR_WORKERS", "1025", `MEMAGENT_OCR_WORKERS "1025": want a number of pages read at once, 0 for one per CPU`},
		{"MEMAGENT_OCR_PAGE_TIMEOUT", "0s", `MEMAGENT_OCR_PAGE_TIMEOUT "0s": want a positive duration such as 2m`},
		{"MEMAGENT_OCR_MAX_PAGES", "0", `MEMAGENT_OCR_MAX_PAGES "0": want a number of pages >= 1 that one document may have read by OCR, e.g. 500`},
		{"MEMAGENT_OCR_BUDGET", "soon", `MEMAGENT_OCR_BUDGET "soon": want a positive duration such as 30m`},
		{"MEMAGENT_EMAIL_MAX_MESSAGES", "0", `MEMAGENT_EMAIL_MAX_MESSAGES "0": want a number of messages >= 1 that one mailbox may hold, e.g. 100000`},
		{"MEMAGENT_EMAIL_MAX_MESSAGE_MB", "-1", `MEMAGENT_EMAIL_MAX_MESSAGE_MB "-1": want a positive number of MiB`},
		{"MEMAGENT_EMAIL_MAX_PARTS", "many", `MEMAGENT_EMAIL_MAX_PARTS "many": want a number of MIME parts >= 1 that one message may have, e.g. 1000`},
		{"MEMAGENT_EMAIL_MAX_DEPTH", "0", `MEMAGENT_EMAIL_MAX_DEPTH "0": want how deep >= 1 one message may nest its multiparts and forwarded messages, e.g. 16`},
		{"MEMAGENT_EMAIL_MAX_PART_MB", "1.5", `MEMAGENT_EMAIL_MAX_PART_MB "1.5": want a positive number of MiB`},
		{"MEMAGENT_EMAIL_MAX_HEADER_KB", "0", `MEMAGENT_EMAIL_MAX_HEADER_KB "0": want a positive number of KiB, e.g. 256`},
		{"MEMAGENT_CONVERT_TIMEOUT", "-1m", `MEMAGENT_CONVERT_TIMEOUT "-1m": want a positive duration such as 10m`},
		{"MEMAGENT_STOP_TIMEOUT", "later", `MEMAGENT_STOP_TIMEOUT "later": want a positive duration such as 30s or 5m`},
		{"MEMAGENT_LOG_LEVEL", "loud", `MEMAGENT_LOG_LEVEL "loud": use debug, info, warn or error`},
		{"MEMAGENT_CODEC_ENCODE", "maybe", `MEMAGENT_CODEC_ENCODE "maybe": want true or false`},
		{"MEMAGENT_CODEC_KEYS", "k1:short", ""},
		{"TEMPORAL_TLS", "yes", `TEMPORAL_TLS "yes": use true or false`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromEnv(env(map[string]string{tt.name: tt.value}))
			if err == nil {
				t.Fatalf("FromEnv(%s=%s): no error", tt.name, tt.value)
			}
			if tt.want == "" {
				return
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("FromEnv(%s=%s) = %q,\nwant %q", tt.name, tt.value, got, tt.want)
			}
		})
	}
}

// TestSettingsDocumented requires every variable FromEnv reads to be in
// the README, where operators look for it.
func TestSettingsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range EnvNames() {
		n++
		if !strings.Contains(string(readme), "`"+name+"`") && !strings.Contains(string(readme), "`"+name+"=") {
			t.Errorf("%s is read by FromEnv but not in README.md", name)
		}
	}
	if n < 40 {
		t.Errorf("settings name %d variables, want every one FromEnv reads", n)
	}
}

// TestValidateKeepsUserInfoOut: a malformed endpoint is named in the
// error without the credentials it carries.
func TestValidateKeepsUserInfoOut(t *testing.T) {
	c := Default()
	c.S3Endpoint = "ftp://ak:pw-SECRET1@minio:9000"
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "minio:9000") || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("Validate = %v, want the endpoint named without its user info", err)
	}
}
