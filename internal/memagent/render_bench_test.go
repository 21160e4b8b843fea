package memagent_test

import (
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/procstat"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/tokenizer"
)

// BenchmarkRenderUpdate renders a chunk update's prompt as UpdateMemory
// does for every chunk: a chunk of 5,000 Qwen tokens of generated English,
// a memory of about 1 KB, the default template. "accented" is the same
// text with every "e" written "é", so that the scan for tag openers meets
// non-ASCII characters throughout.
func BenchmarkRenderUpdate(b *testing.B) {
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		b.Fatal(err)
	}
	chunk := docgen.Needle(tok, 5000, 0.5, 11)
	memory := strings.Repeat("The report names the harbour master and the date of the survey. ", 16)
	t := memagent.DefaultTemplates()
	for _, c := range []struct{ name, chunk string }{
		{"english", chunk},
		{"accented", strings.ReplaceAll(chunk, "e", "é")},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.chunk)))
			b.ReportAllocs()
			cpu := procstat.CPUTime(false)
			for b.Loop() {
				_ = t.RenderUpdate(docgen.Question, memory, c.chunk)
			}
			procstat.ReportCPU(b, cpu)
		})
	}
}
