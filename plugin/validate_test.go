package plugin_test

import (
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/plugin"
	"github.com/memagent/memagent/worker/config"
)

// TestValidateNamesSettings: the plugin's settings are checked once, by
// plugin.Options.Validate; memagent's worker runs that check on its
// configuration before it dials (config.Validate), naming each setting by
// its variable and flag, while another host's error names the Options
// field. A setting that cannot work is refused in both words, from the one
// check.
func TestValidateNamesSettings(t *testing.T) {
	valid := config.Default()
	if err := valid.Validate(); err != nil {
		t.Fatalf("the default configuration: %v", err)
	}
	if err := valid.Options.Validate(nil); err != nil {
		t.Fatalf("the default options: %v", err)
	}
	for _, tc := range []struct {
		name, field, worker string
		change              func(*config.Config)
	}{
		{"bucket", "Bucket", "MEMAGENT_BUCKET or --bucket", func(c *config.Config) { c.Bucket = "" }},
		{"read prefix", "ReadPrefixes", "MEMAGENT_READ_PREFIXES", func(c *config.Config) { c.ReadPrefixes = []string{"bucket/docs/"} }},
		{"write prefix", "WritePrefixes", "MEMAGENT_WRITE_PREFIXES", func(c *config.Config) { c.WritePrefixes = []string{"s3:///docs/"} }},
		{"claim root", "ClaimRoots", "MEMAGENT_CLAIM_ROOTS", func(c *config.Config) { c.ClaimRoots = []string{"http://x/"} }},
		{"claim depth", "ClaimDepth", "MEMAGENT_CLAIM_DEPTH", func(c *config.Config) { c.ClaimDepth = -1 }},
		{"notify nets", "NotifyAllowNets", "MEMAGENT_NOTIFY_ALLOW_NETS", func(c *config.Config) { c.NotifyAllowNets = []string{"not-a-net"} }},
		{"notify hosts", "NotifyHosts", "MEMAGENT_NOTIFY_HOSTS", func(c *config.Config) { c.NotifyHosts = []string{"bad host/"} }},
		{"S3 endpoint", "S3Endpoint", "AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL or --s3-endpoint", func(c *config.Config) { c.S3Endpoint = "notaurl" }},
		{"SSE", "S3SSE", "MEMAGENT_S3_SSE", func(c *config.Config) { c.S3SSE = "bogus" }},
		{"KMS key without SSE", "S3SSE", "MEMAGENT_S3_SSE", func(c *config.Config) { c.S3KMSKeyID = "key" }},
		{"model API", "ModelAPI", "MEMAGENT_MODEL_API or --model-api", func(c *config.Config) { c.ModelAPI = "bedrock" }},
		{"model context", "ModelContext", "MEMAGENT_MODEL_CONTEXT or --model-context", func(c *config.Config) { c.ModelContext = -1 }},
		{"no model URL", "ModelURLs", "OPENAI_BASE_URL or --model-url", func(c *config.Config) { c.ModelURLs = nil }},
		{"model URL", "ModelURLs", "OPENAI_BASE_URL or --model-url", func(c *config.Config) { c.ModelURLs = []string{"ftp://gpu"} }},
		{"in flight", "ModelMaxInFlight", "MEMAGENT_MAX_IN_FLIGHT or --max-in-flight", func(c *config.Config) { c.ModelMaxInFlight = -2 }},
		{"model priority", "ModelPriority", "MEMAGENT_MODEL_PRIORITY or --model-priority", func(c *config.Config) { c.ModelPriority = []string{"triton"} }},
		{"model priority per server", "ModelPriority", "MEMAGENT_MODEL_PRIORITY or --model-priority", func(c *config.Config) {
			c.ModelURLs, c.ModelPriority = []string{"http://gpu-1:8000/v1", "http://gpu-2:8000/v1"}, []string{"vllm", "sglang", "off"}
		}},
		{"model priority on Azure", "ModelPriority", "MEMAGENT_MODEL_PRIORITY or --model-priority", func(c *config.Config) {
			c.ModelAPI, c.ModelURLs, c.Model, c.ModelAPIKey, c.ModelPriority = "azure", []string{"https://r.openai.azure.com"}, "d", "k", []string{"vllm"}
		}},
		{"model priority hold", "ModelPriorityHold", "MEMAGENT_MODEL_PRIORITY_HOLD or --model-priority-hold", func(c *config.Config) { c.ModelPriorityHold = "always" }},
		{"model priority reserve", "ModelPriorityReserve", "MEMAGENT_MODEL_PRIORITY_RESERVE or --model-priority-reserve", func(c *config.Config) { c.ModelPriorityReserve = "25%" }},
		{"model priority evict", "ModelPriorityEvict", "MEMAGENT_MODEL_PRIORITY_EVICT or --model-priority-evict", func(c *config.Config) { c.ModelPriorityHold, c.ModelPriorityEvict = "on", "1h" }},
		{"model priority evict without the hold", "ModelPriorityHold", "MEMAGENT_MODEL_PRIORITY_HOLD or --model-priority-hold", func(c *config.Config) { c.ModelPriorityEvict = "on" }},
		{"model timeout", "ModelTimeout", "MEMAGENT_MODEL_TIMEOUT or --model-timeout", func(c *config.Config) { c.ModelTimeout = -time.Second }},
		{"rate limit", "RateLimit", "MEMAGENT_RATE_LIMIT or --rate-limit", func(c *config.Config) { c.RateLimit = -1 }},
		{"chunk cache", "ChunkCacheMB", "MEMAGENT_CHUNK_CACHE_MB or --chunk-cache-mb", func(c *config.Config) { c.ChunkCacheMB = -5 }},
		{"stop timeout", "StopTimeout", "MEMAGENT_STOP_TIMEOUT or --stop-timeout", func(c *config.Config) { c.StopTimeout = -time.Second }},
		{"OCR max pages", "Limits.OCRMaxPages", "MEMAGENT_OCR_MAX_PAGES", func(c *config.Config) { c.Limits.OCRMaxPages = -1 }},
		{"OCR budget", "Limits.OCRBudget", "MEMAGENT_OCR_BUDGET", func(c *config.Config) { c.Limits.OCRBudget = -time.Second }},
		{"email messages", "Limits.EmailMaxMessages", "MEMAGENT_EMAIL_MAX_MESSAGES", func(c *config.Config) { c.Limits.EmailMaxMessages = -1 }},
		{"email message bytes", "Limits.EmailMaxMessageBytes", "MEMAGENT_EMAIL_MAX_MESSAGE_MB", func(c *config.Config) { c.Limits.EmailMaxMessageBytes = -1 }},
		{"email parts", "Limits.EmailMaxParts", "MEMAGENT_EMAIL_MAX_PARTS", func(c *config.Config) { c.Limits.EmailMaxParts = -1 }},
		{"email depth", "Limits.EmailMaxDepth", "MEMAGENT_EMAIL_MAX_DEPTH", func(c *config.Config) { c.Limits.EmailMaxDepth = -1 }},
		{"email part bytes", "Limits.EmailMaxPartBytes", "MEMAGENT_EMAIL_MAX_PART_MB", func(c *config.Config) { c.Limits.EmailMaxPartBytes = -1 }},
		{"email header bytes", "Limits.EmailMaxHeaderBytes", "MEMAGENT_EMAIL_MAX_HEADER_KB", func(c *config.Config) { c.Limits.EmailMaxHeaderBytes = -1 }},
		{"build without deployment", "DeploymentName", "TEMPORAL_DEPLOYMENT_NAME or --deployment-name", func(c *config.Config) { c.BuildID = "v1" }},
		{"Azure without a deployment", "Model", "MEMAGENT_MODEL or --model", func(c *config.Config) {
			c.ModelAPI, c.ModelURLs, c.ModelAPIKey = "azure", []string{"https://r.openai.azure.com"}, "k"
		}},
		{"Azure without its endpoint", "ModelURLs", "AZURE_OPENAI_ENDPOINT or --model-url", func(c *config.Config) { c.ModelAPI, c.Model, c.ModelAPIKey = "azure", "d", "k" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid
			tc.change(&c)
			werr, perr := c.Validate(), c.Options.Validate(nil)
			if werr == nil || !strings.Contains(werr.Error(), "set "+tc.worker) {
				t.Errorf("the worker's check says %v; want it to name %q", werr, tc.worker)
			}
			if perr == nil || !strings.Contains(perr.Error(), "Options."+tc.field) {
				t.Errorf("the plugin's check says %v; want it to name Options.%s", perr, tc.field)
			}
		})
	}
}

// TestModelPriorityPerServer: MEMAGENT_MODEL_PRIORITY gives a mixed pool
// one form per server, in the order of OPENAI_BASE_URL, and validates.
func TestModelPriorityPerServer(t *testing.T) {
	env := map[string]string{
		"OPENAI_BASE_URL":         "http://vllm-1:8000/v1,http://sglang-1:30000/v1",
		"MEMAGENT_MODEL_PRIORITY": "vllm, sglang",
	}
	o, err := plugin.OptionsFromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o.ModelPriority, ","); got != "vllm,sglang" {
		t.Errorf("ModelPriority = %q, want vllm,sglang", got)
	}
	if err := o.Validate(nil); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
