package tokenizer

import "math"

// tokenSink collects what an encoding produces: the token ids, their byte
// lengths, or only their number, so that Count and TokenLens build no
// slice they do not return.
type tokenSink struct {
	wantIDs, wantLens bool
	ids, lens         []int
	count             int
}

// part is a boundary of bytePairMerge: where a part starts in the piece,
// and the rank of merging it with the next part (math.MaxInt for none).
type part struct{ start, rank int }

// add records the token piece, whose id is id.
func (s *tokenSink) add(id int, piece string) {
	s.count++
	if s.wantIDs {
		s.ids = append(s.ids, id)
	}
	if s.wantLens {
		s.lens = append(s.lens, len(piece))
	}
}

// splitInto encodes text, valid UTF-8 that longRuns does not cut, piece by
// piece as tiktoken-go's EncodeOrdinary does, into s.
func (t *bpeTokenizer) splitInto(text string, s *tokenSink) {
	// parts is bytePairMerge's scratch, reused from piece to piece; buf
	// backs it, on the stack, for pieces of up to len(buf)-1 bytes.
	var buf [48]part
	parts := buf[:0]
	for i := 0; i < len(text); {
		j := t.split.next(text, i)
		piece := text[i:j]
		i = j
		if id, ok := t.ranks[piece]; ok {
			s.add(id, piece)
			continue
		}
		parts = bytePairMerge(piece, t.ranks, t.pairs, parts)
		if !s.wantIDs {
			// A part's length is its token's: ranks maps each token to
			// its own id (tiktoken.NewCoreBPE checks that).
			s.count += len(parts) - 1
			if s.wantLens {
				for k := 0; k+1 < len(parts); k++ {
					s.lens = append(s.lens, parts[k+1].start-parts[k].start)
				}
			}
			continue
		}
		for k := 0; k+1 < len(parts); k++ {
			tok := piece[parts[k].start:parts[k+1].start]
			s.add(t.ranks[tok], tok)
		}
	}
}

// pairRanks holds the rank of every two-byte token, indexed by its bytes
// (first<<8 | second), and -1 for a pair that is no token: the first
// round of bytePairMerge looks up every pair of a piece, and an array is
// much faster than the map.
type pairRanks [1 << 16]int32

// newPairRanks tabulates the two-byte tokens of ranks.
func newPairRanks(ranks map[string]int) *pairRanks {
	var p pairRanks
	for i := range p {
		p[i] = -1
	}
	for tok, r := range ranks {
		if len(tok) == 2 {
			p[int(tok[0])<<8|int(tok[1])] = int32(r)
		}
	}
	return &p
}

// bytePairMerge is tiktoken-go's bytePairMerge without its allocations: it
// merges the bytes of piece (at least two) pair by pair, the lowest rank
// first and the leftmost of equal ranks, and returns the boundaries of the
// resulting tokens in parts (reused), the last at len(piece). pairs holds
// the two-byte entries of ranks.
func bytePairMerge(piece string, ranks map[string]int, pairs *pairRanks, parts []part) []part {
	parts = parts[:0]
	for i := range len(piece) + 1 {
		r := math.MaxInt
		if i+1 < len(piece) {
			if pr := pairs[int(piece[i])<<8|int(piece[i+1])]; pr >= 0 {
				r = int(pr)
			}
		}
		parts = append(parts, part{i, r})
	}
	// rank returns the rank of parts[i] merged with the skip+1 parts after
	// it, or math.MaxInt.
	rank := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r, ok := ranks[piece[parts[i].start:parts[i+skip+2].start]]; ok {
				return r
			}
		}
		return math.MaxInt
	}
	for len(parts) > 1 {
		minRank, i := math.MaxInt, -1
		for k := 0; k < len(parts)-1; k++ {
			if parts[k].rank < minRank {
				minRank, i = parts[k].rank, k
			}
		}
		if i < 0 {
			break
		}
		parts[i].rank = rank(i, 1)
		if i > 0 {
			parts[i-1].rank = rank(i-1, 1)
		}
		parts = append(parts[:i+1], parts[i+2:]...)
	}
	return parts
}
