package plugin_test

import (
	"testing"
	"time"

	"github.com/memagent/memagent/worker/config"
)

// TestValidationsAgree: memagent's worker checks its configuration before
// it dials (config.Validate, whose messages name variables and flags) and
// the plugin checks the same settings again at worker start (its messages
// name Options fields, for other hosts). Each setting of the plugin that
// cannot work must fail both: one that only the plugin refused would let
// the worker dial Temporal, set up telemetry and serve HTTP before failing,
// with a message naming no flag (as --chunk-cache-mb -5 did).
func TestValidationsAgree(t *testing.T) {
	valid := config.Default()
	if err := valid.Validate(); err != nil {
		t.Fatalf("the default configuration: %v", err)
	}
	if err := valid.Options.Validate(); err != nil {
		t.Fatalf("the default options: %v", err)
	}
	for name, change := range map[string]func(*config.Config){
		"bucket":                   func(c *config.Config) { c.Bucket = "" },
		"read prefix":              func(c *config.Config) { c.ReadPrefixes = []string{"bucket/docs/"} },
		"write prefix":             func(c *config.Config) { c.WritePrefixes = []string{"s3:///docs/"} },
		"claim root":               func(c *config.Config) { c.ClaimRoots = []string{"http://x/"} },
		"claim depth":              func(c *config.Config) { c.ClaimDepth = -1 },
		"notify nets":              func(c *config.Config) { c.NotifyAllowNets = []string{"not-a-net"} },
		"notify hosts":             func(c *config.Config) { c.NotifyHosts = []string{"bad host/"} },
		"S3 endpoint":              func(c *config.Config) { c.S3Endpoint = "notaurl" },
		"SSE":                      func(c *config.Config) { c.S3SSE = "bogus" },
		"KMS key without SSE":      func(c *config.Config) { c.S3KMSKeyID = "key" },
		"model API":                func(c *config.Config) { c.ModelAPI = "bedrock" },
		"model context":            func(c *config.Config) { c.ModelContext = -1 },
		"no model URL":             func(c *config.Config) { c.ModelURLs = nil },
		"model URL":                func(c *config.Config) { c.ModelURLs = []string{"ftp://gpu"} },
		"in flight":                func(c *config.Config) { c.ModelMaxInFlight = -2 },
		"rate limit":               func(c *config.Config) { c.RateLimit = -1 },
		"chunk cache":              func(c *config.Config) { c.ChunkCacheMB = -5 },
		"OCR max pages":            func(c *config.Config) { c.Limits.OCRMaxPages = -1 },
		"OCR budget":               func(c *config.Config) { c.Limits.OCRBudget = -time.Second },
		"build without deployment": func(c *config.Config) { c.BuildID = "v1" },
	} {
		c := valid
		change(&c)
		werr, perr := c.Validate(), c.Options.Validate()
		if werr == nil || perr == nil {
			t.Errorf("%s: the worker's check says %v, the plugin's %v; want both to refuse it", name, werr, perr)
		}
	}
}
