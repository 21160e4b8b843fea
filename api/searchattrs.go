package api

import (
	"crypto/sha256"
	"encoding/hex"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/internal/contract"
)

// Names of the custom search attributes DocumentQA sets. They are part of
// the wire format: visibility queries, dashboards and the Web UI's saved
// views name them, so they never change. Every one must be registered in the
// namespace (`starter setup`; the dev stack registers them itself) before a
// worker runs DocumentQA: a workflow that upserts an unregistered attribute
// blocks on its first workflow task until someone registers it.
const (
	// AttrDocument is the document's s3:// URI (Keyword).
	AttrDocument = "MemagentDocument"
	// AttrModel is the served model name (Keyword), set once known.
	AttrModel = "MemagentModel"
	// AttrQuestionDigest is QuestionDigest of the question (Keyword).
	AttrQuestionDigest = "MemagentQuestionDigest"
	// AttrBatch is DocumentQAInput.BatchID (Keyword), unset without one.
	AttrBatch = "MemagentBatch"
	// AttrChunksDone is how many chunks the memory has read (Int).
	AttrChunksDone = "MemagentChunksDone"
	// AttrChunksTotal is the document's number of chunks (Int), set once
	// the document is prepared.
	AttrChunksTotal = "MemagentChunksTotal"
	// AttrStatus is the run's stage (Keyword): while it runs, DocumentQA's
	// StagePreparing, StageReading or StageAnswering, a review's also
	// StageWriting, a batch's BatchStageExpanding, BatchStageRunning or
	// BatchStageReporting; once closed, StageDone, StageFailed,
	// StageCanceled, or StageContinued for a run that continued as new.
	AttrStatus = "MemagentStatus"
	// AttrChangedItems is, on a BatchQA run that compared its report with
	// the previous one, how many items are new, changed or removed
	// (ChangeSummary.Differences; Int), set when the report is written.
	AttrChangedItems = "MemagentChangedItems"
	// AttrSignoff is, on a SignOff, what it waits for (Keyword):
	// SignOffWaitingLevel1, SignOffWaitingLevel2, or SignOffSignedOff once
	// every level is signed off. `MemagentSignoff IN ("waiting-level-1", "waiting-level-2")`
	// finds the reviews and batches waiting for people.
	AttrSignoff = "MemagentSignoff"
)

// Typed keys of the search attributes, for workflow.UpsertTypedSearchAttributes,
// client.StartWorkflowOptions.TypedSearchAttributes and reading them back.
var (
	DocumentKey       = temporal.NewSearchAttributeKeyKeyword(AttrDocument)
	ModelKey          = temporal.NewSearchAttributeKeyKeyword(AttrModel)
	QuestionDigestKey = temporal.NewSearchAttributeKeyKeyword(AttrQuestionDigest)
	BatchKey          = temporal.NewSearchAttributeKeyKeyword(AttrBatch)
	ChunksDoneKey     = temporal.NewSearchAttributeKeyInt64(AttrChunksDone)
	ChunksTotalKey    = temporal.NewSearchAttributeKeyInt64(AttrChunksTotal)
	StatusKey         = temporal.NewSearchAttributeKeyKeyword(AttrStatus)
	SignOffKey        = temporal.NewSearchAttributeKeyKeyword(AttrSignoff)
)

// MaxKeywordBytes bounds every Keyword value DocumentQA sets. MySQL and
// PostgreSQL visibility store custom keywords in VARCHAR(255) columns, and a
// longer value fails the visibility write over and over; KeywordValue clips
// to this length, and a query for a long document URI must clip it the same
// way to match.
const MaxKeywordBytes = 255

// KeywordValue clips s to MaxKeywordBytes without splitting a UTF-8
// character.
func KeywordValue(s string) string { return contract.ClipUTF8(s, MaxKeywordBytes) }

// QuestionDigest is the first 16 hex digits of the question's SHA-256: the
// value of AttrQuestionDigest, so runs of one question can be found without
// putting the question itself in the index.
func QuestionDigest(question string) string {
	h := sha256.Sum256([]byte(question))
	return hex.EncodeToString(h[:8])
}

// StartSearchAttributes are the search attributes a run has from its
// start: what a client passes in StartWorkflowOptions.TypedSearchAttributes
// so that the run is findable before its first workflow task, and what the
// workflow itself upserts at the start of every run.
func StartSearchAttributes(in DocumentQAInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(StatusUpdates(in, StagePreparing)...)
}

// StatusUpdates are the search attributes a DocumentQA run upserts at the
// start of every run, with status as its MemagentStatus.
func StatusUpdates(in DocumentQAInput, status string) []temporal.SearchAttributeUpdate {
	u := []temporal.SearchAttributeUpdate{
		DocumentKey.ValueSet(KeywordValue(LeadDocument(in.Document, in.Documents))),
		QuestionDigestKey.ValueSet(QuestionDigest(in.Question)),
		StatusKey.ValueSet(status),
	}
	if in.Options.Model != "" {
		u = append(u, ModelKey.ValueSet(KeywordValue(in.Options.Model)))
	}
	if in.BatchID != "" {
		u = append(u, BatchKey.ValueSet(KeywordValue(in.BatchID)))
	}
	return u
}
