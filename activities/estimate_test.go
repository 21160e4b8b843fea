package activities

import (
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// TestEstimateCost checks the arithmetic: per question and sample, one
// update per chunk and one answer; prompts carry the template, question,
// memory and chunk; completions the memory and the answer at their limits.
func TestEstimateCost(t *testing.T) {
	f := newFixture(t, nil)
	q := "What is the vault combination?"
	var got api.Estimate
	if err := f.exec(t, EstimateCostName, actwire.EstimateCostInput{Questions: []string{q, q}, Samples: 3, Chunks: 10, Tokens: 9_500,
		Options: api.ModelOptions{MemoryMaxTokens: 100, AnswerMaxTokens: 40}, PriceIn: 2, PriceOut: 8}, &got); err != nil {
		t.Fatal(err)
	}
	tok, err := f.acts.Tokenizers(api.DefaultTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	update := int64(tok.Count(f.acts.Templates.RenderUpdate(q, "", "")))
	final := int64(tok.Count(f.acts.Templates.RenderFinal(q, "")))
	wantPrompt := 6 * (10*(update+100) + 9_500 + final + 100)
	wantCompletion := int64(6 * (10*100 + 40))
	if got.Calls != 66 || got.PromptTokensMax != wantPrompt || got.CompletionTokensMax != wantCompletion {
		t.Errorf("calls %d, prompt max %d, completion max %d; want 66, %d, %d", got.Calls, got.PromptTokensMax, got.CompletionTokensMax, wantPrompt, wantCompletion)
	}
	if got.PromptTokensTypical >= got.PromptTokensMax || got.CompletionTokensTypical >= got.CompletionTokensMax {
		t.Errorf("typical figures %d, %d not under the bounds", got.PromptTokensTypical, got.CompletionTokensTypical)
	}
	if want := (float64(wantPrompt)*2 + float64(wantCompletion)*8) / 1e6; got.PriceMax != want {
		t.Errorf("price max %g, want %g", got.PriceMax, want)
	}
}
