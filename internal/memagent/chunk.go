package memagent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"unicode/utf8"
)

// Tokenizer splits ordinary text into tokens. Implementations must be safe
// for concurrent use.
type Tokenizer interface {
	// Name identifies the vocabulary, e.g. "cl100k_base"; it is recorded in
	// every [ChunkIndex].
	Name() string
	// TokenLens returns the byte length of each token of text, in order.
	// The lengths sum to len(text). Text is ordinary text: strings that look
	// like special tokens are encoded as plain text.
	TokenLens(text string) []int
	// Count returns the number of tokens in text.
	Count(text string) int
}

// Chunk is one consecutive slice of a document, [Start, End) in bytes.
type Chunk struct {
	// Index is the chunk's position, counting from 0.
	Index int `json:"index"`
	// Start is the offset of the chunk's first byte.
	Start int64 `json:"start"`
	// End is the offset just past the chunk's last byte.
	End int64 `json:"end"`
	// Tokens is the number of tokens in the chunk as counted while planning.
	Tokens int `json:"tokens"`
	// Chain is the lowercase hex hash chain over the bytes of chunks
	// 0..Index (ChainNext): two texts whose chunks agree up to and
	// including this one have the same Chain here, and only those. A
	// memory checkpoint after this chunk is keyed by it.
	Chain string `json:"chain,omitempty"`
}

// ChainNext is the hash chain's next link: SHA-256 over the previous
// link's bytes (none for the first chunk) and the SHA-256 of the chunk's
// bytes.
func ChainNext(prev []byte, chunkSum [sha256.Size]byte) []byte {
	h := sha256.New()
	h.Write(prev)
	h.Write(chunkSum[:])
	return h.Sum(nil)
}

// ChunkIndexVersion is the current [ChunkIndex.Version]. Version 2 adds
// each chunk's Chain.
const ChunkIndexVersion = 2

// ChunkIndex describes how a document is cut into chunks. Chunks are in
// order, contiguous, and cover [0, Bytes) exactly; no chunk boundary falls
// inside a UTF-8 character.
type ChunkIndex struct {
	// Version is the format version, [ChunkIndexVersion].
	Version int `json:"version"`
	// Tokenizer is the Name of the tokenizer that counted the tokens.
	Tokenizer string `json:"tokenizer"`
	// ChunkTokens is the requested maximum number of tokens per chunk.
	ChunkTokens int `json:"chunk_tokens"`
	// SHA256 is the lowercase hex SHA-256 of the whole document.
	SHA256 string `json:"sha256"`
	// Bytes is the document's length in bytes.
	Bytes int64 `json:"bytes"`
	// Tokens is the total number of tokens in the document.
	Tokens int64 `json:"tokens"`
	// Chunks are the chunks in document order.
	Chunks []Chunk `json:"chunks"`
	// Source, SourceETag and Replaced are set when the indexed text is a
	// copy of the document with its invalid UTF-8 bytes replaced: the
	// chunks are byte ranges of Source, and Replaced bytes were replaced.
	Source     string `json:"source,omitempty"`
	SourceETag string `json:"source_etag,omitempty"`
	Replaced   int64  `json:"replaced,omitempty"`
	// PageMap is set when the text was converted from a PDF, DOCX or HTML
	// document: it maps byte ranges of the text to the source's pages or
	// sections.
	PageMap *PageMap `json:"page_map,omitempty"`
	// Corpus is set when the text is several documents read as one
	// stream: which byte ranges came from which document, and their pages.
	Corpus *CorpusMap `json:"corpus,omitempty"`
}

// ErrEmptyDocument is returned by [PlanChunks] for a document that is empty
// or contains only whitespace.
var ErrEmptyDocument = errors.New("document is empty or contains only whitespace")

// InvalidUTF8Error reports that a document is not valid UTF-8.
type InvalidUTF8Error struct {
	// Offset is the byte offset of the first invalid byte.
	Offset int64
}

// Error implements error.
func (e *InvalidUTF8Error) Error() string {
	return fmt.Sprintf("document is not valid UTF-8: invalid byte at offset %d", e.Offset)
}

const (
	// planBlockSize is how much of the document is read at a time.
	planBlockSize = 1 << 20
	// planMaxPiece caps the text handed to the tokenizer in one call:
	// tokenizing a string costs far more memory than its length, so a
	// document is never tokenized as one string.
	planMaxPiece = 64 << 10
)

// PlanChunks reads a document from r and cuts it into consecutive chunks of
// at most chunkTokens tokens as counted by tok.
//
// The document is streamed: it is read in blocks and tokenized piece by
// piece, each piece ending at a paragraph break, else a line break, else
// before whitespace, else at a character boundary, and no longer than about
// 64 KiB. Token counts near piece ends may differ slightly from those of
// tokenizing the whole document at once.
//
// A chunk holds whole tokens and never ends inside a UTF-8 character; when
// a tokenizer splits one character across several tokens those tokens stay
// together. A group of tokens that alone exceeds chunkTokens (possible only
// for tiny limits) gets a chunk of its own.
//
// It returns an *[InvalidUTF8Error] at the first invalid byte,
// [ErrEmptyDocument] for an empty or whitespace-only document, and the read
// error, wrapped, if r fails.
func PlanChunks(r io.Reader, tok Tokenizer, chunkTokens int) (*ChunkIndex, error) {
	return planChunks(r, tok, chunkTokens, planBlockSize, planMaxPiece)
}

// planChunks is PlanChunks with the read block size and piece cap as
// parameters, so tests can exercise block and piece boundaries on small
// inputs. maxPiece must be at least utf8.UTFMax.
func planChunks(r io.Reader, tok Tokenizer, chunkTokens, blockSize, maxPiece int) (*ChunkIndex, error) {
	if tok == nil {
		return nil, errors.New("plan chunks: tokenizer is nil")
	}
	if chunkTokens <= 0 {
		return nil, fmt.Errorf("plan chunks: chunk_tokens must be positive, got %d", chunkTokens)
	}
	p := &planner{
		tok:       tok,
		limit:     chunkTokens,
		chunkHash: sha256.New(),
		index: &ChunkIndex{
			Version:     ChunkIndexVersion,
			Tokenizer:   tok.Name(),
			ChunkTokens: chunkTokens,
			Chunks:      []Chunk{},
		},
	}
	hash := sha256.New()

	// buf[:valid] is validated UTF-8 not yet tokenized; buf[valid:] is read
	// but not yet validated (at most the start of one split character).
	// base is the document offset of buf[0].
	buf := make([]byte, 0, blockSize+maxPiece+utf8.UTFMax)
	valid := 0
	var base int64
	eof := false
	for !eof {
		if len(buf) == cap(buf) {
			// Cannot happen: the loop below always leaves less than
			// maxPiece+UTFMax bytes behind. Guard against an endless loop.
			return nil, errors.New("plan chunks: internal error: read buffer full")
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), len(buf)+blockSize)])
		if n > 0 {
			hash.Write(buf[len(buf) : len(buf)+n])
			buf = buf[:len(buf)+n]
		}
		switch {
		case err == io.EOF:
			eof = true
		case err != nil:
			return nil, fmt.Errorf("plan chunks: read document at offset %d: %w", base+int64(len(buf)), err)
		}

		v, bad := validUTF8Prefix(buf[valid:], eof)
		if bad {
			return nil, &InvalidUTF8Error{Offset: base + int64(valid+v)}
		}
		valid += v

		// Tokenize full-size pieces now; the tail waits for more text so
		// that it can end at a natural boundary, unless this is the end.
		consumed := 0
		for valid-consumed >= maxPiece || (eof && valid > consumed) {
			n := pieceEnd(buf[consumed:valid], maxPiece, eof)
			if err := p.add(string(buf[consumed : consumed+n])); err != nil {
				return nil, err
			}
			consumed += n
		}
		if consumed > 0 {
			buf = buf[:copy(buf, buf[consumed:])]
			valid -= consumed
			base += int64(consumed)
		}
	}
	if !p.nonSpace {
		return nil, ErrEmptyDocument
	}
	p.closeChunk(p.offset)
	p.index.SHA256 = hex.EncodeToString(hash.Sum(nil))
	p.index.Bytes = p.offset
	return p.index, nil
}

// validUTF8Prefix returns how many leading bytes of b are valid UTF-8. If
// atEOF is false, an incomplete character at the very end is not an error:
// it is left for the next read. bad reports an invalid byte at b[n].
func validUTF8Prefix(b []byte, atEOF bool) (n int, bad bool) {
	if utf8.Valid(b) { // fast path for the usual case
		return len(b), false
	}
	for n < len(b) {
		if b[n] < utf8.RuneSelf {
			n++
			continue
		}
		if !atEOF && !utf8.FullRune(b[n:]) {
			return n, false
		}
		r, size := utf8.DecodeRune(b[n:])
		if r == utf8.RuneError && size == 1 {
			return n, true
		}
		n += size
	}
	return n, false
}

// pieceEnd chooses where the next piece of valid UTF-8 text b ends: after
// the last paragraph break ("\n\n" and any newlines right after it) within
// the first maxPiece bytes, else after the last newline, else before the
// last space or tab, else at the last character boundary. If final is set
// and b fits, all of b is one piece. The result is always > 0.
func pieceEnd(b []byte, maxPiece int, final bool) int {
	if len(b) <= maxPiece && final {
		return len(b)
	}
	w := b[:min(len(b), maxPiece)]
	if i := bytes.LastIndex(w, []byte("\n\n")); i >= 0 {
		end := i + 2
		for end < len(b) && (b[end] == '\n' || b[end] == '\r') {
			end++
		}
		return end
	}
	if i := bytes.LastIndexByte(w, '\n'); i >= 0 {
		return i + 1
	}
	// A space belongs to the word after it in most BPE vocabularies.
	if i := bytes.LastIndexAny(w, " \t"); i > 0 {
		return i
	}
	end := len(w)
	for end > 0 && end < len(b) && !utf8.RuneStart(b[end]) {
		end--
	}
	if end == 0 { // cannot happen for maxPiece >= UTFMax and valid text
		_, end = utf8.DecodeRune(b)
	}
	return end
}

// planner cuts a stream of text pieces into chunks.
type planner struct {
	tok      Tokenizer
	limit    int
	index    *ChunkIndex
	offset   int64 // document offset of the end of the text seen so far
	start    int64 // start of the open chunk
	tokens   int   // tokens in the open chunk
	nonSpace bool  // seen a character that is not whitespace
	// chunkHash hashes the open chunk's bytes as they are tokenized,
	// chain is the last closed chunk's Chain link.
	chunkHash hash.Hash
	chain     []byte
}

// add tokenizes one piece, which starts and ends on character boundaries.
func (p *planner) add(piece string) error {
	if !p.nonSpace && strings.TrimSpace(piece) != "" {
		p.nonSpace = true
	}
	lens := p.tok.TokenLens(piece)
	sum := 0
	for _, n := range lens {
		if n <= 0 {
			return fmt.Errorf("plan chunks: tokenizer %s returned a token of %d bytes at offset %d", p.tok.Name(), n, p.offset+int64(sum))
		}
		sum += n
	}
	if sum != len(piece) {
		return fmt.Errorf("plan chunks: tokenizer %s: token lengths sum to %d for a piece of %d bytes at offset %d", p.tok.Name(), sum, len(piece), p.offset)
	}

	// A unit is a run of tokens ending on a character boundary (byte-level
	// BPE may split one character across tokens); chunks hold whole units.
	// hashed is how much of the piece went into the open chunk's hash.
	unitStart, pos, unitTokens, hashed := 0, 0, 0, 0
	for _, n := range lens {
		pos += n
		unitTokens++
		if pos < len(piece) && !utf8.RuneStart(piece[pos]) {
			continue
		}
		if p.tokens > 0 && p.tokens+unitTokens > p.limit {
			p.chunkHash.Write([]byte(piece[hashed:unitStart]))
			hashed = unitStart
			p.closeChunk(p.offset + int64(unitStart))
		}
		p.tokens += unitTokens
		p.index.Tokens += int64(unitTokens)
		unitStart, unitTokens = pos, 0
	}
	p.chunkHash.Write([]byte(piece[hashed:]))
	p.offset += int64(len(piece))
	return nil
}

// closeChunk ends the open chunk at end and opens the next one there.
func (p *planner) closeChunk(end int64) {
	if end == p.start {
		return
	}
	var sum [sha256.Size]byte
	p.chunkHash.Sum(sum[:0])
	p.chunkHash.Reset()
	p.chain = ChainNext(p.chain, sum)
	p.index.Chunks = append(p.index.Chunks, Chunk{
		Index:  len(p.index.Chunks),
		Start:  p.start,
		End:    end,
		Tokens: p.tokens,
		Chain:  hex.EncodeToString(p.chain),
	})
	p.start, p.tokens = end, 0
}
