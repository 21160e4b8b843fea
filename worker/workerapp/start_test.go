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
	got := PluginOptions(cfg, Options{Limits: activities.Limits{MaxChunks: 10, PDFMemoryBytes: 1 << 20}}).Limits
	want := activities.Limits{MaxChunks: 10, MaxConvertedBytes: 100 << 20, PDFMemoryBytes: 1 << 20, ConvertTimeout: 4 * time.Minute,
		OCRWorkers: 3, OCRPageTimeout: 45 * time.Second, OCRMemoryBytes: 768 << 20, OCRMaxPages: 40, OCRBudget: 7 * time.Minute}
	if got != want {
		t.Errorf("Limits = %+v, want %+v", got, want)
	}
}
