package clientconf_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/internal/settings"
	"github.com/memagent/memagent/worker/config"
)

// TestNamesAreTheWorkers: every variable a client reads is one the worker
// reads for the same setting, so that one environment serves both.
func TestNamesAreTheWorkers(t *testing.T) {
	worker := config.EnvNames()
	for _, name := range settings.Names(clientconf.Rows) {
		if !slices.Contains(worker, name) {
			t.Errorf("the client reads %s, which the worker does not", name)
		}
	}
}

// TestSameAsTheWorkersClientPart: a client reads from an environment what
// the worker's configuration holds for its client part.
func TestSameAsTheWorkersClientPart(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
	}{
		{"empty: the dev stack", nil},
		{"set", map[string]string{
			"TEMPORAL_ADDRESS": "temporal.example:7233", "TEMPORAL_NAMESPACE": "prod", "TEMPORAL_API_KEY": "k",
			"MEMAGENT_TASK_QUEUE": "q", "AWS_ENDPOINT_URL": "https://s3.example", "AWS_DEFAULT_REGION": "eu-west-1",
			"MEMAGENT_BUCKET": "b", "MEMAGENT_CREATE_BUCKET": "true", "MEMAGENT_S3_PATH_STYLE": "false",
			"MEMAGENT_MODEL": "m", "MEMAGENT_S3_SSE": "aws:kms", "MEMAGENT_S3_KMS_KEY_ID": "key",
			"MEMAGENT_CODEC_KEYS": "k1:a2V5LWtleS1rZXkta2V5LWtleS1rZXkta2V5LWtleS0=", "MEMAGENT_LOG_LEVEL": "debug",
			"AWS_ACCESS_KEY_ID": "id",
		}},
		{"aws", map[string]string{"AWS_ENDPOINT_URL_S3": "aws"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			got, err := clientconf.FromEnv(lookup)
			if err != nil {
				t.Fatal(err)
			}
			w, err := config.FromEnv(lookup)
			if err != nil {
				t.Fatal(err)
			}
			if want := w.Client(); !reflect.DeepEqual(got, want) {
				t.Errorf("client config\n got %#v\nwant %#v", got, want)
			}
		})
	}
}

// TestFormerTLSNamesRefused: memagent's former TLS variables are refused
// by a client as by the worker.
func TestFormerTLSNamesRefused(t *testing.T) {
	_, err := clientconf.FromEnv(func(k string) (string, bool) { return "x", k == "TEMPORAL_TLS_CERT" })
	if err == nil {
		t.Fatal("TEMPORAL_TLS_CERT accepted")
	}
}
