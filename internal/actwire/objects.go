package actwire

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/memagent/memagent/api"
)

// The objects the activities write to S3 that other programs read back
// (the rollout export, the review desk): wire formats, changed additively.

// ChunkTrace is the per-chunk record written to S3. A retry overwrites it.
type ChunkTrace struct {
	Chunk            int       `json:"chunk"`
	Chunks           int       `json:"chunks"`
	Start            int64     `json:"start"`
	End              int64     `json:"end"`
	ChunkTokens      int       `json:"chunk_tokens"`
	Model            string    `json:"model"`
	PromptTokens     int       `json:"prompt_tokens"`
	CompletionTokens int       `json:"completion_tokens"`
	CachedTokens     int       `json:"cached_tokens,omitempty"`
	LatencyMS        int64     `json:"latency_ms"`
	FinishReason     string    `json:"finish_reason"`
	Attempt          int32     `json:"attempt"`
	MemoryKept       bool      `json:"memory_kept,omitempty"`
	MemoryAfter      string    `json:"memory_after"`
	WrittenAt        time.Time `json:"written_at"`
	// Pages are the pages (or sections) of a converted document the chunk
	// came from.
	Pages *api.PageRef `json:"pages,omitempty"`
	// Sources are the corpus documents the chunk spans, each with its
	// pages, when the run reads a corpus.
	Sources []api.SourceRef `json:"sources,omitempty"`
	// Calls is how many model calls this chunk's update took (more than 1
	// when a completion was lost and paid for again).
	Calls int `json:"calls,omitempty"`
	// Kept is the completion and the input it answered: a retry of the
	// same update reuses it instead of calling the model again.
	Kept *KeptCompletion `json:"kept,omitempty"`
	// PromptSHA256 is the hex SHA-256 of the prompt as sent (the one user
	// message's content), so that a prompt rebuilt from the template, the
	// question, the memory before this chunk and the chunk's bytes can be
	// proved equal to it (the rollout export does).
	PromptSHA256 string `json:"prompt_sha256,omitempty"`
}

// StoredResult is result.json: the result, the raw final completion, and
// the completion as kept for a retry of the same run, which reuses it
// instead of calling the model again.
type StoredResult struct {
	api.DocumentQAResult
	Completion string          `json:"completion"`
	Kept       *KeptCompletion `json:"kept,omitempty"`
	// PromptSHA256 is the hex SHA-256 of the final prompt as sent, as in
	// ChunkTrace.
	PromptSHA256 string `json:"prompt_sha256,omitempty"`
}

// KeptCompletion is one paid-for completion and the input it answered, as
// a chunk's trace and an attempt's heartbeat details keep it.
type KeptCompletion struct {
	// InputSHA256 is inputDigest of the prompt's variable parts.
	InputSHA256      string `json:"input_sha256"`
	Text             string `json:"text"`
	Model            string `json:"model"`
	FinishReason     string `json:"finish_reason"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	CachedTokens     int    `json:"cached_tokens,omitempty"`
	LatencyMS        int64  `json:"latency_ms"`
}

// PromptDigest is the hex SHA-256 of a prompt, as traces and results keep
// it (ChunkTrace.PromptSHA256).
func PromptDigest(prompt string) string {
	h := sha256.Sum256([]byte(prompt))
	return hex.EncodeToString(h[:])
}
