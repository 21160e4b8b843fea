package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/contract"
)

// Manifest formats.
const (
	// FormatJSONL is JSON Lines, one item a line: {"id", "document" (or
	// "documents", a corpus), "question", "gold_answers", "labels"} ("answers" is accepted for
	// "gold_answers"; the fields of a results.jsonl line are ignored, so a
	// batch's results read back as a manifest).
	FormatJSONL = "jsonl"
	// FormatMemAgent is MemAgent's evaluation JSON: an array of objects
	// with the document text in "context", the question in "input", the
	// gold answers in "answers" and other scalar fields taken as labels.
	FormatMemAgent = "memagent"
)

// Bounds of a manifest item.
const (
	// MaxLineBytes bounds one JSON Lines line.
	MaxLineBytes = 1 << 20
	// MaxQuestionBytes bounds a question (as a DocumentQA run does).
	MaxQuestionBytes = 16 << 10
	// MaxIDBytes bounds an item id.
	MaxIDBytes = 256
)

// ManifestItem is one checked item of a manifest, as it is written to the
// batch's pages.
type ManifestItem struct {
	// Seq is the item's position among the manifest's items, from 0.
	Seq int `json:"seq"`
	// Line is the item's line (JSON Lines) or number (MemAgent JSON), from
	// 1, as error messages name it.
	Line     int    `json:"line"`
	ID       string `json:"id"`
	Document string `json:"document,omitempty"`
	// Documents is a corpus read as one stream (DocumentQAInput.Documents),
	// set instead of Document.
	Documents []string          `json:"documents,omitempty"`
	Question  string            `json:"question"`
	Answers   []string          `json:"answers,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	// FairnessKey, when set, replaces the batch's fairness key for this
	// item's run (a client or a matter sharing the GPU pool).
	FairnessKey string `json:"fairness_key,omitempty"`
	// Context is a MemAgent item's document text, which the caller stores
	// and replaces with a Document URI. It is never written to a page.
	Context string `json:"-"`
}

// MaxFairnessKeyBytes is Temporal's limit on a fairness key.
const MaxFairnessKeyBytes = 64

// ManifestError is a manifest item that cannot be run. Reading may go on after
// one, to report more.
type ManifestError struct {
	Format string
	// Line is the line (JSON Lines) or item number (MemAgent JSON), from 1.
	Line int
	Msg  string
}

func (e *ManifestError) Error() string {
	if e.Format == FormatMemAgent {
		return fmt.Sprintf("item %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

// ManifestReader reads a manifest item by item, in bounded memory (one
// item, and the ids seen so far to catch duplicates), whatever the
// manifest's size.
type ManifestReader struct {
	format string
	br     *bufio.Reader
	dec    *json.Decoder
	line   int // last line or item number read
	seq    int
	ids    map[string]int // id → line
	opened bool
	done   bool
}

// NewManifestReader reads a manifest of the given format, or of the format
// its first byte says ('[' MemAgent JSON, '{' JSON Lines) when format is
// empty.
func NewManifestReader(r io.Reader, format string) (*ManifestReader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	first, err := manifestFirstByte(br)
	if err != nil {
		return nil, err
	}
	switch format {
	case "":
		switch first {
		case '[':
			format = FormatMemAgent
		case '{':
			format = FormatJSONL
		default:
			return nil, fmt.Errorf("manifest starts with %q: want JSON Lines (one {...} object a line) or MemAgent JSON (an array [...]); pass the format if it is one of them", first)
		}
	case FormatJSONL:
		if first == '[' {
			return nil, errors.New(`manifest is a JSON array, not JSON Lines: pass format "memagent" for MemAgent's evaluation JSON`)
		}
	case FormatMemAgent:
		if first != '[' {
			return nil, errors.New(`manifest is not a JSON array: MemAgent's evaluation JSON is [{"context": ..., "input": ..., "answers": [...]}, ...]; pass format "jsonl" for JSON Lines`)
		}
	default:
		return nil, fmt.Errorf("manifest format %q is not %q or %q", format, FormatJSONL, FormatMemAgent)
	}
	m := &ManifestReader{format: format, br: br, ids: make(map[string]int)}
	if format == FormatMemAgent {
		m.dec = json.NewDecoder(br)
		m.dec.UseNumber()
	}
	return m, nil
}

// manifestFirstByte peeks at the first byte that is not white space or a BOM.
func manifestFirstByte(br *bufio.Reader) (byte, error) {
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) {
		_, _ = br.Discard(3)
	}
	for {
		b, err := br.Peek(1)
		if err == io.EOF {
			return 0, errors.New("manifest is empty: it has no items")
		}
		if err != nil {
			return 0, fmt.Errorf("read manifest: %w", err)
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = br.Discard(1)
			continue
		}
		return b[0], nil
	}
}

// Format is the manifest's format.
func (m *ManifestReader) Format() string { return m.format }

// Items is how many items have been returned so far.
func (m *ManifestReader) Items() int { return m.seq }

// Next returns the next item, io.EOF after the last one, an *ManifestError for
// an item that cannot be run (the next call goes on with the item after
// it), or another error when the manifest cannot be read further.
func (m *ManifestReader) Next() (ManifestItem, error) {
	if m.done {
		return ManifestItem{}, io.EOF
	}
	var it ManifestItem
	var err error
	if m.format == FormatJSONL {
		it, err = m.nextLine()
	} else {
		it, err = m.nextObject()
	}
	if err != nil {
		return it, err
	}
	if it.ID == "" {
		it.ID = strconv.Itoa(it.Line)
	}
	if err := m.check(&it); err != nil {
		return ManifestItem{}, err
	}
	it.Seq = m.seq
	m.seq++
	return it, nil
}

func (m *ManifestReader) itemError(format string, args ...any) *ManifestError {
	return &ManifestError{Format: m.format, Line: m.line, Msg: fmt.Sprintf(format, args...)}
}

// check validates an item and records its id.
func (m *ManifestReader) check(it *ManifestItem) error {
	switch {
	case len(it.ID) > MaxIDBytes:
		return m.itemError("id is %d bytes, over %d", len(it.ID), MaxIDBytes)
	case strings.TrimSpace(it.Question) == "":
		if m.format == FormatMemAgent {
			return m.itemError(`missing question: set "input"`)
		}
		return m.itemError(`missing question: set "question"`)
	case len(it.Question) > MaxQuestionBytes:
		return m.itemError("question is %d bytes, over the limit of %d: shorten it", len(it.Question), MaxQuestionBytes)
	case len(it.FairnessKey) > MaxFairnessKeyBytes:
		return m.itemError("fairness_key is %d bytes, over Temporal's limit of %d", len(it.FairnessKey), MaxFairnessKeyBytes)
	}
	if m.format == FormatJSONL {
		switch {
		case it.Document == "" && len(it.Documents) == 0:
			return m.itemError(`missing document: set "document" to an s3://bucket/key URI, or "documents" to an array of them for a corpus`)
		case it.Document != "" && len(it.Documents) > 0:
			return m.itemError(`document and documents are both set: set exactly one ("documents" for a corpus read as one stream)`)
		case len(it.Documents) > api.MaxCorpusDocuments:
			return m.itemError("documents has %d entries, over %d: split the corpus", len(it.Documents), api.MaxCorpusDocuments)
		case it.Document != "":
			if err := manifestS3URI(it.Document); err != nil {
				return m.itemError("document %q %s", manifestClip(it.Document, 200), err)
			}
		}
		for i, d := range it.Documents {
			if err := manifestS3URI(d); err != nil {
				return m.itemError("documents[%d] %q %s", i, manifestClip(d, 200), err)
			}
		}
	} else if strings.TrimSpace(it.Context) == "" {
		return m.itemError(`missing context: set "context" to the document text`)
	}
	if first, dup := m.ids[it.ID]; dup {
		what := "line"
		if m.format == FormatMemAgent {
			what = "item"
		}
		return m.itemError("duplicate id %q (first at %s %d): ids must be unique", manifestClip(it.ID, 80), what, first)
	}
	m.ids[it.ID] = m.line
	return nil
}

func manifestS3URI(uri string) error {
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok {
		return errors.New("is not an s3:// URI: give its s3://bucket/key (a local manifest given to starter batch may name local files: starter uploads them)")
	}
	b, k, ok := strings.Cut(rest, "/")
	if !ok || b == "" || k == "" {
		return errors.New("names no object: want s3://bucket/key")
	}
	return nil
}

// jsonlItem is one JSON Lines line as written. Gold answers are
// "gold_answers", as in every workflow input; "answers" is accepted as its
// alias.
type jsonlItem struct {
	ID          json.RawMessage            `json:"id"`
	Document    string                     `json:"document"`
	Documents   json.RawMessage            `json:"documents"`
	Question    string                     `json:"question"`
	GoldAnswers json.RawMessage            `json:"gold_answers"`
	Answers     json.RawMessage            `json:"answers"`
	Labels      map[string]json.RawMessage `json:"labels"`
	FairnessKey string                     `json:"fairness_key"`
}

// jsonlItemKeys are the members a JSON Lines manifest line may have.
var jsonlItemKeys = []string{"id", "document", "documents", "question", "gold_answers", "answers", "labels", "fairness_key"}

// ResultLineKeys are the other members of a line of a batch's
// results.jsonl (activities.BatchItemResult). A manifest line may carry
// them, and they are ignored, so that results.jsonl reads back as the
// manifest of a new batch; any other member is an error.
var ResultLineKeys = []string{"seq", "sample", "status", "answer", "answer_found", "scores", "chunks", "tokens",
	"usage", "workflow_id", "result_uri", "error", "error_type", "answer_pages", "grounding",
	"answer_sources"}

// checkJSONLKeys reports a member of a manifest line that is neither a
// manifest field nor a results.jsonl field.
func checkJSONLKeys(line []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(line, &members); err != nil {
		return nil // reported by the caller's decoding
	}
	for _, k := range slices.Sorted(maps.Keys(members)) {
		if slices.Contains(jsonlItemKeys, k) || slices.Contains(ResultLineKeys, k) {
			continue
		}
		for _, known := range jsonlItemKeys {
			if strings.EqualFold(strings.ReplaceAll(k, "_", ""), strings.ReplaceAll(known, "_", "")) ||
				(len(k) > 3 && (strings.HasPrefix(known, k) || strings.HasPrefix(k, known))) {
				return fmt.Errorf("%s: unknown field; did you mean %s?", k, known)
			}
		}
		return fmt.Errorf("%s: unknown field; a line has {%q, %q, %q, %q, %q, %q, %q}", k,
			"id", "document", "documents", "question", "gold_answers", "labels", "fairness_key")
	}
	return nil
}

func (m *ManifestReader) nextLine() (ManifestItem, error) {
	for {
		line, err := m.readLine()
		if err != nil {
			return ManifestItem{}, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var raw jsonlItem
		if err := json.Unmarshal(line, &raw); err != nil {
			return ManifestItem{}, m.itemError("not a JSON object: %s", manifestJSONError(err))
		}
		it := ManifestItem{Line: m.line, Document: strings.TrimSpace(raw.Document), Question: raw.Question, FairnessKey: raw.FairnessKey}
		if it.ID, err = manifestScalar(raw.ID); err != nil {
			return ManifestItem{}, m.itemError("id: %v", err)
		}
		if err := checkJSONLKeys(line); err != nil {
			return ManifestItem{}, m.itemError("%v", err)
		}
		if it.Documents, err = manifestDocuments(raw.Documents); err != nil {
			return ManifestItem{}, m.itemError("documents: %v", err)
		}
		answers, key := raw.GoldAnswers, "gold_answers"
		if len(raw.Answers) > 0 {
			if len(raw.GoldAnswers) > 0 {
				return ManifestItem{}, m.itemError("answers is an alias of gold_answers, and both are given: keep one")
			}
			answers, key = raw.Answers, "answers"
		}
		if it.Answers, err = manifestAnswers(answers); err != nil {
			return ManifestItem{}, m.itemError("%s: %v", key, err)
		}
		for k, v := range raw.Labels {
			s, err := manifestScalar(v)
			if err != nil {
				return ManifestItem{}, m.itemError("label %q: %v", manifestClip(k, 80), err)
			}
			if it.Labels == nil {
				it.Labels = make(map[string]string)
			}
			it.Labels[k] = s
		}
		return it, nil
	}
}

// readLine returns the next line without its newline, or io.EOF.
func (m *ManifestReader) readLine() ([]byte, error) {
	var buf []byte
	for {
		part, err := m.br.ReadSlice('\n')
		if len(buf)+len(part) > MaxLineBytes {
			m.line++
			m.done = true
			return nil, fmt.Errorf("line %d is longer than %d bytes: a JSON Lines manifest names documents by URI, it does not hold them", m.line, MaxLineBytes)
		}
		buf = append(buf, part...)
		switch {
		case err == nil:
			m.line++
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			if len(buf) == 0 {
				m.done = true
				return nil, io.EOF
			}
			m.line++
			return buf, nil
		default:
			m.done = true
			return nil, fmt.Errorf("read manifest: %w", err)
		}
	}
}

// nextObject reads the next object of a MemAgent array field by field, so
// that only the one context is held in memory.
func (m *ManifestReader) nextObject() (ManifestItem, error) {
	fatal := func(err error) (ManifestItem, error) {
		m.done = true
		return ManifestItem{}, err
	}
	end, err := m.arrayEnd()
	if err != nil {
		return fatal(err)
	}
	if end {
		m.done = true
		return ManifestItem{}, io.EOF
	}
	m.line++
	t, err := m.dec.Token()
	if err != nil {
		return fatal(m.itemFatal(err))
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		// Skip whatever it was, so the next item can still be read.
		if ok && d == '[' {
			if err := manifestSkip(m.dec); err != nil {
				return fatal(m.itemFatal(err))
			}
		}
		return ManifestItem{}, m.itemError("not a JSON object")
	}
	it, bad, err := m.objectFields()
	if err != nil {
		return fatal(err)
	}
	if bad != nil {
		return ManifestItem{}, bad
	}
	return it, nil
}

// arrayEnd reads the array's '[' the first time and reports whether its ']'
// comes next, with nothing after it.
func (m *ManifestReader) arrayEnd() (bool, error) {
	if !m.opened {
		if _, err := m.dec.Token(); err != nil { // '['
			return false, fmt.Errorf("manifest: %s", manifestJSONError(err))
		}
		m.opened = true
	}
	if m.dec.More() {
		return false, nil
	}
	if _, err := m.dec.Token(); err != nil { // ']'
		return false, fmt.Errorf("manifest: after item %d: %s", m.line, manifestJSONError(err))
	}
	if _, err := m.dec.Token(); err != io.EOF {
		return false, fmt.Errorf("manifest: unexpected data after the array's end (item %d)", m.line)
	}
	return true, nil
}

// itemFatal is an error that stops the reading inside the current item.
func (m *ManifestReader) itemFatal(err error) error {
	return fmt.Errorf("manifest: item %d: %s", m.line, manifestJSONError(err))
}

// objectFields reads the fields of an object whose '{' was just read, and
// its '}'. A field of the wrong shape is the item's problem (the last one
// found); a JSON error is fatal.
func (m *ManifestReader) objectFields() (ManifestItem, *ManifestError, error) {
	it := ManifestItem{Line: m.line}
	var idKey string
	var bad *ManifestError
	for m.dec.More() {
		kt, err := m.dec.Token()
		if err != nil {
			return it, nil, m.itemFatal(err)
		}
		key, _ := kt.(string)
		var problem *ManifestError
		if key == "context" {
			problem, err = m.readContext(&it)
		} else {
			var raw json.RawMessage
			if err = m.dec.Decode(&raw); err == nil {
				problem = m.takeField(&it, &idKey, key, raw)
			}
		}
		if err != nil {
			return it, nil, m.itemFatal(err)
		}
		if problem != nil {
			bad = problem
		}
	}
	if _, err := m.dec.Token(); err != nil { // '}'
		return it, nil, m.itemFatal(err)
	}
	return it, bad, nil
}

// readContext decodes the context straight into the item, without a copy
// of its raw JSON.
func (m *ManifestReader) readContext(it *ManifestItem) (*ManifestError, error) {
	var s *string
	if err := m.dec.Decode(&s); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return m.itemError("context is not a string"), nil
		}
		return nil, err
	}
	if s != nil {
		it.Context = *s
	}
	return nil, nil
}

// takeField sets the item's question, answers, id or a label from one field;
// idKey is the key the id was taken from so far.
func (m *ManifestReader) takeField(it *ManifestItem, idKey *string, key string, raw json.RawMessage) *ManifestError {
	var err error
	switch key {
	case "input":
		if err := json.Unmarshal(raw, &it.Question); err != nil {
			return m.itemError("input is not a string")
		}
	case "answers":
		if it.Answers, err = manifestAnswers(raw); err != nil {
			return m.itemError("answers: %v", err)
		}
	case "_id", "id", "index":
		// _id wins over id, id over index.
		if *idKey == "_id" || (*idKey == "id" && key == "index") {
			return nil
		}
		*idKey = key
		if it.ID, err = manifestScalar(raw); err != nil {
			return m.itemError("%s: %v", key, err)
		}
	default:
		if s, err := manifestScalar(raw); err == nil && s != "" {
			if it.Labels == nil {
				it.Labels = make(map[string]string)
			}
			it.Labels[key] = s
		}
	}
	return nil
}

// manifestSkip skips the rest of an array or object whose opening delimiter was
// just read.
func manifestSkip(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok {
			if d == '[' || d == '{' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// manifestScalar renders a JSON string, number or boolean as text; null and
// absent are empty; arrays and objects are an error.
func manifestScalar(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", errors.New("not a valid string")
		}
		return s, nil
	case '{', '[':
		return "", errors.New("want a string, number or boolean")
	}
	// A number or a boolean: its JSON text.
	return string(raw), nil
}

// manifestDocuments reads a corpus: an array of s3:// URIs, in reading
// order. null and absent are none; an empty array is none too, which the
// caller reports as a missing document.
func manifestDocuments(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var docs []string
	if err := json.Unmarshal(raw, &docs); err != nil {
		return nil, errors.New(`want an array of s3:// URIs, ["s3://bucket/a.pdf", "s3://bucket/b.pdf"]`)
	}
	for i, d := range docs {
		docs[i] = strings.TrimSpace(d)
	}
	if len(docs) == 0 {
		return nil, nil
	}
	return docs, nil
}

// answers reads gold answers: an array of strings (numbers are taken as
// their text), or one string.
func manifestAnswers(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		s, err := manifestScalar(raw)
		return []string{s}, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("want an array of strings")
	}
	out := make([]string, 0, len(items))
	for _, r := range items {
		s, err := manifestScalar(r)
		if err != nil {
			return nil, errors.New("want an array of strings")
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// manifestJSONError is a JSON error without Go's type names.
func manifestJSONError(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("invalid JSON at byte %d: %s", syn.Offset, syn.Error())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		return "the manifest ends in the middle of an item"
	}
	return err.Error()
}

// manifestClip shortens s to at most n bytes, and an ellipsis, for an error
// message.
func manifestClip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return contract.ClipUTF8(s, n) + "…"
}

// ErrNoItems is CheckManifest's error for a manifest without items.
var ErrNoItems = errors.New("manifest has no items")

// maxReportedItemErrors bounds the item errors CheckManifest lists.
const maxReportedItemErrors = 10

// CheckManifest reads a whole manifest in format and returns its item
// count, or every bad item's error: the first ten (with the item's line)
// joined in one, and how many more there were. A manifest without items
// is ErrNoItems.
func CheckManifest(r io.Reader, format string) (int, error) {
	mr, err := NewManifestReader(r, format)
	if err != nil {
		return 0, err
	}
	var errs []string
	bad := 0
	for {
		_, err := mr.Next()
		var item *ManifestError
		switch {
		case err == io.EOF:
			if bad > 0 {
				return 0, itemErrors(errs, bad)
			}
			if mr.Items() == 0 {
				return 0, ErrNoItems
			}
			return mr.Items(), nil
		case errors.As(err, &item):
			bad++
			if len(errs) < maxReportedItemErrors {
				errs = append(errs, item.Error())
			}
		case err != nil:
			return 0, itemErrors(append(errs, err.Error()), bad+1)
		}
	}
}

func itemErrors(errs []string, bad int) error {
	msg := strings.Join(errs, "; ")
	if bad > len(errs) {
		msg += fmt.Sprintf("; and %d more", bad-len(errs))
	}
	return fmt.Errorf("%d bad item(s): %s", bad, msg)
}
