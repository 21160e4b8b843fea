package api

import (
	"errors"
	"fmt"

	"github.com/memagent/memagent/internal/contract"
)

// EstimateName is the registered name of the Estimate workflow: what a
// question, a review or a batch item over one document will cost, worked
// out without calling the model.
const EstimateName = "memagent.Estimate"

// MaxEstimateQuestions bounds the questions of one estimate, as a review's.
const MaxEstimateQuestions = MaxReviewQuestions

// EstimateInput starts an Estimate run. It is JSON on the wire.
type EstimateInput struct {
	// Document is an s3:// URI of UTF-8 text, or of a PDF, DOCX or HTML
	// document; it is converted and indexed as a run would, and the index
	// is the one a later run with the same options reuses. A PDF's
	// scanned pages are counted, not read (Estimate.OCRPages): until a run
	// has read them, its text is that of its other pages, indexed apart.
	Document string `json:"document,omitempty" contract:"maxlen=1024"`
	// Documents is a corpus read as one stream, as DocumentQAInput's;
	// exactly one of Document and Documents is set.
	Documents []string `json:"documents,omitempty" contract:"maxitems=1000"`
	// Questions are the questions to be asked: one for DocumentQA, a
	// review's questions, or a batch item's.
	Questions []string     `json:"questions" contract:"required,maxitems=100"`
	Options   ModelOptions `json:"options"`
	// Samples is how many times each question is answered (a batch's
	// samples); 0 means 1.
	Samples int `json:"samples,omitempty" contract:"min=0,max=64"`
	// Reuse is ReuseAuto (the default: count what the runs will make once
	// they start from the memory checkpoints an earlier reading left, as
	// DocumentQAInput.Reuse) or ReuseNone (count a reading from the first
	// chunk).
	Reuse string `json:"reuse,omitempty" contract:"enum=auto|none"`
	// PriceInPerMillion and PriceOutPerMillion, when set, price the
	// prompt and completion tokens (any currency, per million tokens).
	PriceInPerMillion  float64 `json:"price_in_per_million,omitempty" contract:"min=0,max=1000000"`
	PriceOutPerMillion float64 `json:"price_out_per_million,omitempty" contract:"min=0,max=1000000"`
}

// Validate reports input that can never succeed.
func (in EstimateInput) Validate() error {
	// workflowcheck flags the reflection contract.Check walks the
	// input with; the check is a pure function of the input.
	//workflowcheck:ignore
	if err := contract.Check(in); err != nil {
		return err
	}
	if err := CheckDocuments(in.Document, in.Documents); err != nil {
		return err
	}
	if len(in.Questions) == 0 {
		return errors.New("questions is empty: give the question (or the questions) to estimate")
	}
	for i, q := range in.Questions {
		if err := CheckQuestion(q); err != nil {
			return fmt.Errorf("questions[%d]: %w", i, err)
		}
	}
	return in.Options.Validate()
}

// Estimate is what the questions over the document will cost, worked out
// from its chunk index and the prompts without calling the model. Each
// question makes one memory update per chunk and one final answer. Upper
// bounds assume every memory and answer at its token limit; typical
// figures assume memories half full and answers at a quarter of their
// limit, as a guide only.
type Estimate struct {
	Document string `json:"document"`
	// Documents is the corpus priced, when the input named one.
	Documents []string `json:"documents,omitempty"`
	// Source is the PDF, DOCX or HTML document when Document is its text.
	Source    string `json:"source,omitempty"`
	Chunks    int    `json:"chunks"`
	Tokens    int64  `json:"tokens"`
	Questions int    `json:"questions"`
	Samples   int    `json:"samples"`
	// Calls is (Chunks + 1) × Questions × Samples: the calls of readings
	// from the first chunk, the fresh figure. The token and price figures
	// below are for these readings too.
	Calls                   int64 `json:"calls"`
	PromptTokensMax         int64 `json:"prompt_tokens_max"`
	PromptTokensTypical     int64 `json:"prompt_tokens_typical"`
	CompletionTokensMax     int64 `json:"completion_tokens_max"`
	CompletionTokensTypical int64 `json:"completion_tokens_typical"`
	// PriceMax and PriceTypical are set when the input priced tokens.
	PriceMax     float64 `json:"price_max,omitempty"`
	PriceTypical float64 `json:"price_typical,omitempty"`
	// Reuse is the input's reuse mode. Under ReuseAuto the estimate looks
	// for each question's (and sample's) memory checkpoint as its run
	// would (FindCheckpoint, no model call): ChunksReused is how many
	// chunk readings, over all questions and samples, the checkpoints
	// found spare; CallsExpected the calls the runs will then make (Calls
	// less ChunksReused), and PromptTokensExpected and
	// CompletionTokensExpected their typical tokens, PriceExpected their
	// typical price when tokens are priced. Under ReuseNone the expected
	// figures are the fresh ones.
	Reuse                    string  `json:"reuse"`
	ChunksReused             int64   `json:"chunks_reused"`
	CallsExpected            int64   `json:"calls_expected"`
	PromptTokensExpected     int64   `json:"prompt_tokens_expected"`
	CompletionTokensExpected int64   `json:"completion_tokens_expected"`
	PriceExpected            float64 `json:"price_expected,omitempty"`
	// Model is the model the worker would call, Tokenizer the one chunks
	// were counted with.
	Model     string `json:"model,omitempty"`
	Tokenizer string `json:"tokenizer"`
	IndexURI  string `json:"index_uri"`
	// GPUSeconds is the time the calls would hold the pool's slots, at
	// the mean time per memory update and per final answer that the
	// estimating worker measured of its own calls; WallSeconds is the
	// least wall time on an idle pool: the longer of GPUSeconds over the
	// pool's slots and one question's chain of calls, which run one after
	// another. Both are absent before the worker has made a call.
	GPUSeconds  float64 `json:"gpu_seconds,omitempty"`
	WallSeconds float64 `json:"wall_seconds,omitempty"`
	// PoolSlots is the calls the worker's pool runs at once (the sum of
	// its endpoints' max in flight); MeasuredCalls how many calls the
	// mean times come from.
	PoolSlots     int   `json:"pool_slots,omitempty"`
	MeasuredCalls int64 `json:"measured_calls,omitempty"`
	// OCRPages counts the document's pages read by OCR (its scanned
	// pages, as options.ocr decides), OCRPagesPending those not read yet,
	// and OCRSecondsExpected the time the estimating worker expects them
	// to take: pending pages at the mean time it took on the pages it has
	// read (3 s before it has read one), over the pages it reads at once.
	// An estimate reads no page: while pages are pending, Tokens, Chunks
	// and the figures from them count OCRTokensPerPage tokens for each,
	// and TokensApproximate says so.
	OCRPages           int     `json:"ocr_pages,omitempty"`
	OCRPagesPending    int     `json:"ocr_pages_pending,omitempty"`
	OCRSecondsExpected float64 `json:"ocr_seconds_expected,omitempty"`
	TokensApproximate  bool    `json:"tokens_approximate,omitempty"`
}

// OCRTokensPerPage is what an estimate counts for a scanned page not read
// yet: about a page of prose (450 words).
const OCRTokensPerPage = 600
