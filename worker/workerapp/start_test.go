package workerapp

import (
	"testing"
	"time"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/worker/config"
)

// TestPluginOptionsKeepLimits: the document limits the configuration sets
// (MEMAGENT_MAX_CONVERTED_MB, the OCR engine's) reach the plugin, and a
// limit the host sets in Options wins over the configuration's.
func TestPluginOptionsKeepLimits(t *testing.T) {
	cfg := config.Default()
	cfg.Limits.MaxConvertedBytes, cfg.Limits.PDFMemoryBytes, cfg.Limits.ConvertTimeout = 100<<20, 128<<20, 4*time.Minute
	cfg.Limits.OCRWorkers, cfg.Limits.OCRPageTimeout, cfg.Limits.OCRMemoryBytes = 3, 45*time.Second, 768<<20
	cfg.Limits.OCRMaxPages, cfg.Limits.OCRBudget = 40, 7*time.Minute
	cfg.Limits.EmailMaxMessages, cfg.Limits.EmailMaxMessageBytes, cfg.Limits.EmailMaxParts = 5000, 32<<20, 200
	cfg.Limits.EmailMaxDepth, cfg.Limits.EmailMaxPartBytes, cfg.Limits.EmailMaxHeaderBytes = 8, 16<<20, 64<<10
	got := PluginOptions(cfg, Options{Limits: activities.Limits{MaxChunks: 10, PDFMemoryBytes: 1 << 20, EmailMaxParts: 300}}).Limits
	want := activities.Limits{MaxChunks: 10, MaxConvertedBytes: 100 << 20, PDFMemoryBytes: 1 << 20, ConvertTimeout: 4 * time.Minute,
		OCRWorkers: 3, OCRPageTimeout: 45 * time.Second, OCRMemoryBytes: 768 << 20, OCRMaxPages: 40, OCRBudget: 7 * time.Minute,
		EmailMaxMessages: 5000, EmailMaxMessageBytes: 32 << 20, EmailMaxParts: 300, EmailMaxDepth: 8, EmailMaxPartBytes: 16 << 20, EmailMaxHeaderBytes: 64 << 10}
	if got != want {
		t.Errorf("Limits = %+v, want %+v", got, want)
	}
}
