package plugin

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/inference"
)

// workerEnv is a value for every variable memagent's worker reads (its
// host's settings too, which OptionsFromEnv leaves alone), each unlike
// its default, with the Azure dialect on (so that the Azure variables are
// the ones read).
var workerEnv = map[string]string{
	"TEMPORAL_ADDRESS": "temporal.example:7233", "TEMPORAL_NAMESPACE": "ns", "MEMAGENT_TASK_QUEUE": "tq",
	"TEMPORAL_TLS": "true", "TEMPORAL_TLS_CLIENT_CERT_PATH": "/c.pem", "TEMPORAL_TLS_CLIENT_KEY_PATH": "/k.pem", "TEMPORAL_TLS_SERVER_CA_CERT_PATH": "/ca.pem",
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
	"MEMAGENT_MODEL_CONTEXT": "128000", "MEMAGENT_MODEL_TIMEOUT": "3m", "MEMAGENT_MAX_IN_FLIGHT": "7", "MEMAGENT_MODEL_PRIORITY": "vllm", "MEMAGENT_MODEL_PRIORITY_HOLD": "3",
	"MEMAGENT_MODEL_PRIORITY_RESERVE": "2",
	"MEMAGENT_MODEL_PRIORITY_EVICT":   "5s",
	"MEMAGENT_CHUNK_CACHE_MB":         "32", "MEMAGENT_RATE_LIMIT": "2.5", "MEMAGENT_MAX_CONVERTED_MB": "100",
	"MEMAGENT_PDF_MEMORY_MB": "128", "MEMAGENT_CONVERT_TIMEOUT": "4m", "MEMAGENT_STOP_TIMEOUT": "90s",
	"MEMAGENT_LOG_LEVEL": "warn", "MEMAGENT_HTTP_ADDR": "127.0.0.1:9999", "MEMAGENT_S3_SSE": "aws:kms",
	"MEMAGENT_S3_KMS_KEY_ID": "kms-1", "MEMAGENT_CODEC_KEYS": "k1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
	"MEMAGENT_CODEC_KEYS_FILE": "", "MEMAGENT_CODEC_TOKEN": "ct", "MEMAGENT_CODEC_HOSTS": "codec.example",
	"MEMAGENT_CODEC_ENCODE": "true", "MEMAGENT_CODEC_CORS_ORIGINS": "https://ui.example",
	"MEMAGENT_TESSERACT": "/opt/tesseract/bin/tesseract", "MEMAGENT_OCR_WORKERS": "3", "MEMAGENT_OCR_PAGE_TIMEOUT": "45s",
	"MEMAGENT_OCR_MEMORY_MB": "768", "MEMAGENT_OCR_MAX_PAGES": "40", "MEMAGENT_OCR_BUDGET": "7m",
	"MEMAGENT_EMAIL_MAX_MESSAGES": "5000", "MEMAGENT_EMAIL_MAX_MESSAGE_MB": "32", "MEMAGENT_EMAIL_MAX_PARTS": "200",
	"MEMAGENT_EMAIL_MAX_DEPTH": "8", "MEMAGENT_EMAIL_MAX_PART_MB": "16", "MEMAGENT_EMAIL_MAX_HEADER_KB": "64",
	"TEMPORAL_DEPLOYMENT_NAME": "memagent", "TEMPORAL_WORKER_BUILD_ID": "1.4.0",
}

// notFromEnv are the Options fields no environment variable sets: what a
// program sets in code, and the static S3 keys, which OptionsFromEnv sets
// only for the dev stack's endpoint (elsewhere the SDK's chain reads
// AWS_ACCESS_KEY_ID itself).
var notFromEnv = []string{"S3Client", "AWSConfig", "Tokenizers", "UpdateTemplate", "FinalTemplate", "Concurrency",
	"InstallConverter", "StartTimeout", "Logger", "S3AccessKeyID", "S3SecretAccessKey"}

// TestOptionsFromEnvSetsEveryField sets every variable the plugin's table
// reads, each unlike its default, and checks that every field of Options
// (and of its Limits and CodecServer) that a variable configures is set:
// a variable the table reads without a field, or a field no variable
// reaches, fails here.
func TestOptionsFromEnvSetsEveryField(t *testing.T) {
	src, err := os.ReadFile("env.go")
	if err != nil {
		t.Fatal(err)
	}
	var read []string
	for _, m := range regexp.MustCompile(`(?:get|Names: \[\]string\{)\(?("[A-Z0-9_]+"(?:, "[A-Z0-9_]+")*)`).FindAllStringSubmatch(string(src), -1) {
		for _, name := range strings.Split(m[1], ", ") {
			read = append(read, strings.Trim(name, `"`))
		}
	}
	read = append(read, "MEMAGENT_CODEC_KEYS", "MEMAGENT_CODEC_KEYS_FILE") // read by codec.LoadKeys
	if len(read) < len(EnvNames())+5 {
		t.Fatalf("found %d variables in env.go, want EnvNames' %d and those read besides", len(read), len(EnvNames()))
	}
	for _, name := range read {
		if _, ok := workerEnv[name]; !ok {
			t.Errorf("OptionsFromEnv reads %s, which this test does not set: add it to workerEnv and check it reaches Options", name)
		}
	}
	o, err := OptionsFromLookup(func(k string) (string, bool) { v, ok := workerEnv[k]; return v, ok && v != "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		what string
		val  reflect.Value
		skip []string
	}{
		{"Options", reflect.ValueOf(o), notFromEnv},
		// The document size and chunk count limits are code's only.
		{"Limits", reflect.ValueOf(o.Limits), []string{"MaxDocumentBytes", "MaxChunks"}},
		{"CodecServer", reflect.ValueOf(o.CodecServer), nil},
	} {
		for i := range v.val.NumField() {
			name := v.val.Type().Field(i).Name
			if slices.Contains(v.skip, name) {
				continue
			}
			if v.val.Field(i).IsZero() {
				t.Errorf("%s.%s is zero: no variable of the test's environment reaches it", v.what, name)
			}
		}
	}
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"ModelAPI", o.ModelAPI, "azure"},
		{"ModelURLs", o.ModelURLs, []string{"https://r.openai.azure.com"}},
		{"ModelAPIKey", o.ModelAPIKey, "azk"},
		{"ModelTimeout", o.ModelTimeout, 3 * time.Minute},
		{"S3Endpoint", o.S3Endpoint, "http://s3.example:9000"},
		{"S3VirtualHostStyle", o.S3VirtualHostStyle, true},
		{"ReadPrefixes", o.ReadPrefixes, []string{"s3://docs/", "s3://b/"}},
		{"Limits.MaxConvertedBytes", o.Limits.MaxConvertedBytes, int64(100 << 20)},
		{"Limits.OCRMemoryBytes", o.Limits.OCRMemoryBytes, int64(768 << 20)},
		{"Limits.OCRPageTimeout", o.Limits.OCRPageTimeout, 45 * time.Second},
		{"Limits.OCRMaxPages", o.Limits.OCRMaxPages, 40},
		{"Limits.OCRBudget", o.Limits.OCRBudget, 7 * time.Minute},
		{"Limits.EmailMaxMessages", o.Limits.EmailMaxMessages, 5000},
		{"Limits.EmailMaxMessageBytes", o.Limits.EmailMaxMessageBytes, int64(32 << 20)},
		{"Limits.EmailMaxParts", o.Limits.EmailMaxParts, 200},
		{"Limits.EmailMaxDepth", o.Limits.EmailMaxDepth, 8},
		{"Limits.EmailMaxPartBytes", o.Limits.EmailMaxPartBytes, int64(16 << 20)},
		{"Limits.EmailMaxHeaderBytes", o.Limits.EmailMaxHeaderBytes, int64(64 << 10)},
		{"CodecKeys", o.CodecKeys, []CodecKey{{ID: "k1", Key: make([]byte, 32)}}},
		{"CodecServer", o.CodecServer, CodecHandlerOptions{Token: "ct", AllowOrigins: []string{"https://ui.example"}, AllowHosts: []string{"codec.example"}, AllowEncode: true}},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("%s = %#v, want %#v", f.name, f.got, f.want)
		}
	}
}

// TestOptionsFromEnvDefaults: without environment the options reach the
// dev stack, with its S3 keys; AWS_ENDPOINT_URL_S3=aws means AWS itself
// and its default chain.
func TestOptionsFromEnvDefaults(t *testing.T) {
	o, err := OptionsFromLookup(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	d := DevOptions()
	d.S3AccessKeyID, d.S3SecretAccessKey = "memagent", "memagent-dev-secret"
	if !reflect.DeepEqual(o, d) {
		t.Errorf("OptionsFromLookup(no environment) = %+v, want %+v", o, d)
	}
	o, err = OptionsFromLookup(func(k string) (string, bool) { return "aws", k == "AWS_ENDPOINT_URL_S3" })
	if err != nil || o.S3Endpoint != "" || o.S3AccessKeyID != "" {
		t.Errorf("AWS_ENDPOINT_URL_S3=aws: S3Endpoint %q, key %q, %v; want AWS itself and its chain", o.S3Endpoint, o.S3AccessKeyID, err)
	}
	if _, err := OptionsFromLookup(func(k string) (string, bool) { return "soon", k == "MEMAGENT_MODEL_TIMEOUT" }); err == nil ||
		!strings.HasPrefix(err.Error(), `MEMAGENT_MODEL_TIMEOUT "soon"`) {
		t.Errorf("a bad variable: %v, want an error naming it", err)
	}
}

// TestValidateKeepsUserInfoOut: a malformed S3 endpoint is named without
// the credentials it carries.
func TestValidateKeepsUserInfoOut(t *testing.T) {
	o := Options{Bucket: "b", ModelURLs: []string{"http://gpu-1:8000/v1"}, S3Endpoint: "ftp://ak:pw-SECRET1@minio:9000"}
	err := o.Validate(nil)
	if err == nil || !strings.Contains(err.Error(), "minio:9000") || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("validate = %v, want the endpoint named without its user info", err)
	}
}

// TestDefaultModelTimeoutIsTheClients holds the documented default equal to
// the inference client's own, which the public constant no longer names.
func TestDefaultModelTimeoutIsTheClients(t *testing.T) {
	if DefaultModelTimeout != inference.DefaultRequestTimeout {
		t.Fatalf("DefaultModelTimeout %v, the inference client's default %v", DefaultModelTimeout, inference.DefaultRequestTimeout)
	}
}

// TestEmailKnobsAreRead: the variables docconv's email errors tell an
// operator to raise are the ones OptionsFromEnv reads.
func TestEmailKnobsAreRead(t *testing.T) {
	names := EnvNames()
	for _, knob := range []string{docconv.KnobMaxMessages, docconv.KnobMaxMessageBytes, docconv.KnobMaxParts,
		docconv.KnobMaxMIMEDepth, docconv.KnobMaxPartBytes, docconv.KnobMaxHeaderBytes} {
		if !slices.Contains(names, knob) {
			t.Errorf("docconv names %s, which OptionsFromEnv does not read", knob)
		}
	}
}
