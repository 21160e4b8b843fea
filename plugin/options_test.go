package plugin

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/assemble"
	"github.com/memagent/memagent/internal/codec"
	"github.com/memagent/memagent/internal/secret"
	"github.com/memagent/memagent/worker/config"
)

// hostOnly are the worker settings that belong to the host of the plugin,
// not to the plugin: its Temporal client, its logging, its HTTP endpoint.
var hostOnly = []string{
	"TemporalAddress", "TemporalNamespace", "TemporalTLS", "TemporalTLSCert", "TemporalTLSKey", "TemporalTLSCA",
	"TemporalTLSServerName", "TemporalAPIKey", "TemporalProfile", "ClientIdentity", "Deprecations", "LogLevel", "HTTPAddr", "ModelConfigured",
}

// workerEnv is a value for every variable config.FromEnv reads, each unlike
// its default, with the Azure dialect on (so that the Azure variables are
// the ones read).
var workerEnv = map[string]string{
	"TEMPORAL_ADDRESS": "temporal.example:7233", "TEMPORAL_NAMESPACE": "ns", "MEMAGENT_TASK_QUEUE": "tq",
	"TEMPORAL_TLS": "true", "TEMPORAL_TLS_CERT": "/c.pem", "TEMPORAL_TLS_KEY": "/k.pem", "TEMPORAL_TLS_CA": "/ca.pem",
	"TEMPORAL_TLS_SERVER_NAME": "tls.example", "TEMPORAL_API_KEY": "tk",
	"AWS_ENDPOINT_URL_S3": "http://s3.example:9000", "AWS_ENDPOINT_URL": "http://ignored.example", "AWS_REGION": "eu-west-3",
	"AWS_DEFAULT_REGION": "ignored", "AWS_ACCESS_KEY_ID": "ak", "AWS_PROFILE": "p",
	"MEMAGENT_BUCKET": "b", "MEMAGENT_CREATE_BUCKET": "true", "MEMAGENT_READ_PREFIXES": "s3://docs/,s3://b/",
	"MEMAGENT_WRITE_PREFIXES": "s3://out/", "MEMAGENT_S3_PATH_STYLE": "false",
	"MEMAGENT_CLAIM_ROOTS": "s3://out/teams/", "MEMAGENT_CLAIM_DEPTH": "1",
	"MEMAGENT_NOTIFY_HOSTS": "hooks.example,*.corp.example", "MEMAGENT_NOTIFY_ALLOW_NETS": "10.1.0.0/16",
	"OPENAI_BASE_URL": "http://ignored-with-azure/v1", "OPENAI_API_KEY": "ignored-with-azure",
	"MEMAGENT_MODEL_API": "azure", "AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com", "AZURE_OPENAI_API_KEY": "azk",
	"OPENAI_API_VERSION": "2025-04-01-preview", "MEMAGENT_MODEL": "prod", "MEMAGENT_MODEL_FAMILY": "gpt-4o",
	"MEMAGENT_MODEL_CONTEXT": "128000", "MEMAGENT_MODEL_TIMEOUT": "3m", "MEMAGENT_MAX_IN_FLIGHT": "7",
	"MEMAGENT_CHUNK_CACHE_MB": "32", "MEMAGENT_RATE_LIMIT": "2.5", "MEMAGENT_MAX_CONVERTED_MB": "100",
	"MEMAGENT_PDF_MEMORY_MB": "128", "MEMAGENT_CONVERT_TIMEOUT": "4m", "MEMAGENT_STOP_TIMEOUT": "90s",
	"MEMAGENT_LOG_LEVEL": "warn", "MEMAGENT_HTTP_ADDR": "127.0.0.1:9999", "MEMAGENT_S3_SSE": "aws:kms",
	"MEMAGENT_S3_KMS_KEY_ID": "kms-1", "MEMAGENT_CODEC_KEYS": "k1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
	"MEMAGENT_CODEC_KEYS_FILE": "", "MEMAGENT_CODEC_TOKEN": "ct", "MEMAGENT_CODEC_HOSTS": "codec.example",
	"MEMAGENT_CODEC_ENCODE": "true", "MEMAGENT_CODEC_CORS_ORIGINS": "https://ui.example",
	"MEMAGENT_TESSERACT": "/opt/tesseract/bin/tesseract", "MEMAGENT_OCR_WORKERS": "3", "MEMAGENT_OCR_PAGE_TIMEOUT": "45s",
	"MEMAGENT_OCR_MEMORY_MB":   "768",
	"TEMPORAL_DEPLOYMENT_NAME": "memagent", "TEMPORAL_WORKER_BUILD_ID": "1.4.0",
}

// TestOptionsFromEnvCarriesEveryWorkerSetting sets every variable the
// worker reads and checks that each setting that is not the host's reaches
// the plugin: what the activities are built from equals what the worker's
// configuration builds them from, and the other settings (codec, worker
// options, deployment) are the worker's.
func TestOptionsFromEnvCarriesEveryWorkerSetting(t *testing.T) {
	src, err := os.ReadFile("../worker/config/config.go")
	if err != nil {
		t.Fatal(err)
	}
	var read []string
	for _, m := range regexp.MustCompile(`(?:get|lookup)\(("[A-Z0-9_]+"(?:, "[A-Z0-9_]+")*)\)`).FindAllStringSubmatch(string(src), -1) {
		for _, name := range strings.Split(m[1], ", ") {
			read = append(read, strings.Trim(name, `"`))
		}
	}
	for _, k := range []string{"MEMAGENT_CODEC_KEYS", "MEMAGENT_CODEC_KEYS_FILE"} { // read by codec.LoadKeys
		read = append(read, k)
	}
	for _, name := range read {
		if _, ok := workerEnv[name]; !ok {
			t.Errorf("the worker reads %s, which this test does not set: add it to workerEnv and check it reaches Options", name)
		}
	}
	cfg, err := config.FromEnv(func(k string) (string, bool) { v, ok := workerEnv[k]; return v, ok && v != "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Normalize()
	o := OptionsFromConfig(cfg)
	// What the activities are built from is the same by the plugin's way
	// and by the worker configuration's own.
	if got, want := o.activities(), assemble.ConfigFrom(cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("the plugin builds the activities from\n%+v\nthe worker's configuration from\n%+v", got, want)
	}
	// The fields Activities maps, and the others, each compared here.
	reached := []string{"S3Endpoint", "S3Region", "S3AccessKey", "S3SecretKey", "S3PathStyle", "S3SSE", "S3KMSKeyID",
		"ModelAPI", "ModelBaseURL", "ModelAPIKey", "ModelAPIVersion", "Model", "ModelFamily", "ModelContext", "ModelTimeout", "ModelMaxInFlight",
		"Bucket", "CreateBucket", "ReadPrefixes", "WritePrefixes", "ClaimRoots", "ClaimDepth", "NotifyHosts", "NotifyAllowNets",
		"MaxConvertedMB", "PDFMemoryMB", "ConvertTimeout", "OCRCommand", "OCRWorkers", "OCRPageTimeout", "OCRMemoryMB", "ChunkCacheMB"}
	var keys config.CodecKeys
	for _, k := range o.CodecKeys {
		keys = append(keys, codec.Key{ID: k.ID, Raw: secret.Value(k.Key)})
	}
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"TaskQueue", o.TaskQueue, cfg.TaskQueue},
		{"RateLimit", o.RateLimit, cfg.RateLimit},
		{"StopTimeout", o.StopTimeout, cfg.StopTimeout},
		{"DeploymentName", o.DeploymentName, cfg.DeploymentName},
		{"BuildID", o.BuildID, cfg.BuildID},
		{"CodecKeys", keys, cfg.CodecKeys},
		{"CodecToken", secret.Value(o.CodecServer.Token), cfg.CodecToken},
		{"CodecOrigins", o.CodecServer.AllowOrigins, cfg.CodecOrigins},
		{"CodecHosts", o.CodecServer.AllowHosts, cfg.CodecHosts},
		{"CodecEncode", o.CodecServer.AllowEncode, cfg.CodecEncode},
	} {
		reached = append(reached, f.name)
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("%s: the worker has %#v, the plugin %#v", f.name, f.want, f.got)
		}
	}

	want := reflect.ValueOf(cfg)
	for i := range want.NumField() {
		name := want.Type().Field(i).Name
		if slices.Contains(hostOnly, name) {
			continue
		}
		if !slices.Contains(reached, name) {
			t.Errorf("%s is a worker setting this test does not follow to the plugin: compare it with the Options field it becomes", name)
		}
		// S3PathStyle's default is true, and static S3 keys come from the
		// environment only for the dev stack's endpoint (else the SDK's
		// chain reads AWS_ACCESS_KEY_ID itself).
		zeroOK := name == "S3PathStyle" || name == "S3AccessKey" || name == "S3SecretKey"
		if !zeroOK && reflect.DeepEqual(want.Field(i).Interface(), reflect.Zero(want.Field(i).Type()).Interface()) {
			t.Errorf("%s is zero: the test's environment does not exercise it", name)
		}
	}
	if o.ModelAPI != "azure" || o.ModelURLs[0] != "https://r.openai.azure.com" || o.ModelAPIKey != "azk" {
		t.Errorf("Azure: ModelAPI %q, ModelURLs %v, key set %v; want the Azure endpoint and key", o.ModelAPI, o.ModelURLs, o.ModelAPIKey == "azk")
	}
	if o.ModelTimeout != 3*time.Minute {
		t.Errorf("ModelTimeout = %v", o.ModelTimeout)
	}
}

// TestValidateKeepsUserInfoOut: a malformed S3 endpoint is named without
// the credentials it carries.
func TestValidateKeepsUserInfoOut(t *testing.T) {
	o := Options{Bucket: "b", ModelURLs: []string{"http://gpu-1:8000/v1"}, S3Endpoint: "ftp://ak:pw-SECRET1@minio:9000"}
	err := o.validate()
	if err == nil || !strings.Contains(err.Error(), "minio:9000") || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("validate = %v, want the endpoint named without its user info", err)
	}
}
