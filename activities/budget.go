package activities

import (
	"fmt"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/memagent"
)

// CheckBudget reports, before any model call, whether the largest memory
// update prompt fits the model's context: the template with the question,
// a full chunk, a full memory in the prompt and a full memory as output.
// maxModelLen 0 means unknown and passes.
func CheckBudget(tok memagent.Tokenizer, t memagent.Templates, question string, opts api.ModelOptions, maxModelLen int) error {
	if maxModelLen <= 0 {
		return nil
	}
	opts = opts.WithDefaults()
	overhead := tok.Count(t.RenderUpdate(question, "", ""))
	need := overhead + opts.ChunkTokens + 2*opts.MemoryMaxTokens
	if need <= maxModelLen {
		finalNeed := tok.Count(t.RenderFinal(question, "")) + opts.MemoryMaxTokens + opts.AnswerMaxTokens
		if finalNeed <= maxModelLen {
			return nil
		}
		return fmt.Errorf("final prompt (%d) + memory_max_tokens (%d) + answer_max_tokens (%d) = %d exceed the model's context (%d): lower options.answer_max_tokens or options.memory_max_tokens",
			finalNeed-opts.MemoryMaxTokens-opts.AnswerMaxTokens, opts.MemoryMaxTokens, opts.AnswerMaxTokens, finalNeed, maxModelLen)
	}
	fit := maxModelLen - overhead - 2*opts.MemoryMaxTokens
	hint := fmt.Sprintf("lower options.chunk_tokens to at most %d", fit)
	if fit < 64 {
		hint = "shorten the question or lower options.memory_max_tokens"
	}
	return fmt.Errorf("chunk_tokens (%d) + memory_max_tokens (%d) in and out + template and question (%d) = %d exceed the model's context (%d): %s",
		opts.ChunkTokens, opts.MemoryMaxTokens, overhead, need, maxModelLen, hint)
}
