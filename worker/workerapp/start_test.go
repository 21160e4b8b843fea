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
	cfg.MaxConvertedMB, cfg.PDFMemoryMB, cfg.ConvertTimeout = 100, 128, 4*time.Minute
	cfg.OCRWorkers, cfg.OCRPageTimeout, cfg.OCRMemoryMB = 3, 45*time.Second, 768
	got := PluginOptions(cfg, Options{Limits: activities.Limits{MaxChunks: 10, PDFMemoryBytes: 1 << 20}}).Limits
	want := activities.Limits{MaxChunks: 10, MaxConvertedBytes: 100 << 20, PDFMemoryBytes: 1 << 20, ConvertTimeout: 4 * time.Minute,
		OCRWorkers: 3, OCRPageTimeout: 45 * time.Second, OCRMemoryBytes: 768 << 20}
	if got != want {
		t.Errorf("Limits = %+v, want %+v", got, want)
	}
}
