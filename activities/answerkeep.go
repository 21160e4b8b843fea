package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/s3store"
)

// keptAnswerVersion is keptAnswer.Version; a kept answer of another
// version is not used.
const keptAnswerVersion = 1

// keptAnswer is the completion a final answer came from, kept beside the
// memory checkpoints of the question (checkpoints/<key>/answer-<hash>.json)
// so that a later reading that reaches the same memory, having reused
// every chunk, takes the answer without a call. The hash covers the final
// prompt (question, final template, memory) and the answer's token
// budget; the key the rest of what shapes a completion (model, sampling,
// sample). An operator's lifecycle rule on checkpoints/ expires both.
type keptAnswer struct {
	Version    int       `json:"version"`
	Prompt     string    `json:"prompt_sha256"`
	Completion string    `json:"completion"`
	WorkflowID string    `json:"workflow_id"`
	RunID      string    `json:"run_id"`
	WrittenAt  time.Time `json:"written_at"`
}

// keptAnswerLoc is where the answer to prompt is kept.
func (a *Activities) keptAnswerLoc(question string, opts api.ModelOptions, prompt string) (s3store.Location, string) {
	digest := PromptDigest(prompt)
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d", digest, opts.AnswerMaxTokens)))
	key := a.checkpointKey(question, opts, a.modelName(opts), 0)
	return s3store.Location{Bucket: a.Bucket, Key: checkpointArea + key + "/answer-" + hex.EncodeToString(h[:16]) + ".json"}, digest
}

// readKeptAnswer returns the completion kept for prompt, or false when
// there is none this worker could have written for it.
func (a *Activities) readKeptAnswer(ctx context.Context, question string, opts api.ModelOptions, prompt string) (string, bool, error) {
	loc, digest := a.keptAnswerLoc(question, opts, prompt)
	sctx, cancel := a.s3ctx(ctx)
	defer cancel()
	data, err := a.Store.ReadAll(sctx, loc)
	if errors.Is(err, s3store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read kept answer: %w", err)
	}
	var k keptAnswer
	if json.Unmarshal(data, &k) != nil || k.Version != keptAnswerVersion || k.Prompt != digest {
		return "", false, nil // not one this worker wrote for this prompt: ask again
	}
	return k.Completion, true, nil
}

// keepAnswer keeps completion as the answer to prompt for later readings.
// Only memagent's own runs keep one: a later run takes it as its answer.
func (a *Activities) keepAnswer(ctx context.Context, question string, opts api.ModelOptions, prompt, completion, wf, run string) error {
	if err := a.callerIs(ctx, api.DocumentQAName, api.ReviewDocumentName); err != nil {
		return err
	}
	loc, digest := a.keptAnswerLoc(question, opts, prompt)
	k := keptAnswer{Version: keptAnswerVersion, Prompt: digest, Completion: completion, WorkflowID: wf, RunID: run, WrittenAt: time.Now().UTC()}
	sctx, cancel := a.s3ctx(ctx)
	defer cancel()
	if err := a.putJSON(sctx, loc, k); err != nil {
		return fmt.Errorf("keep answer: %w", err)
	}
	return nil
}
