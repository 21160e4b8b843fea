package docconv

import (
	"bufio"
	"errors"
	"hash/fnv"
	"io"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Threads by quoted text, the fallback for a message whose headers link
// it to nothing the mailbox has (no In-Reply-To or References, or ids of
// messages it lacks): a reply quotes its parent, so a message whose
// quoted block is the body of an earlier message replies to it.
//
// Bodies are not kept: each message leaves a print of its own text (its
// lines that are not quoted, before its signature) and one of its quoted
// text (the lines quoted once, "> …", and the text after an attribution,
// "On … wrote:", or an Outlook separator, "-----Original Message-----").
// A print is the printK smallest hashes of the text's runs of shingleWords
// words (a bottom-k sketch): for text Q within text P, the hashes of Q
// that are not above P's largest kept are among P's kept, whatever the
// lines' wrapping, so the share of those found measures how much of the
// quote P's own text holds. Memory is printK hashes per message.
const (
	shingleWords = 4
	printK       = 32
	// A quote matches an earlier message when at least quoteMinHits of
	// its hashes, and at least quoteMinShare of those its text could
	// hold, are that message's.
	quoteMinHits  = 2
	quoteMinShare = 0.6
	// quoteMaxCommon bounds the messages whose own text may hold a run
	// of words that still tells a parent.
	quoteMaxCommon = 2
)

// msgPrint is what a message leaves for threading by quoted text.
type msgPrint struct {
	own, quoted []uint32 // bottom-k sketches, ascending
}

// attribution is a reply's line before its quote: "On Mon, 2 Jan 2006,
// Alice wrote:", "Alice <a@example.org> writes:", "Am … schrieb …:",
// "Le … a écrit :".
var attribution = regexp.MustCompile(`(?i)^.{0,200}\b(wrote|writes|schrieb|a écrit|escribió|scrisse|skrev|kirjoitti|napisał)\b[^:]{0,60}:\s*$`)

// outlookSeparator opens the original under an Outlook reply; a rule of
// underscores does when a "From:" line follows it (else it opens a
// mailing list's footer).
var (
	outlookSeparator = regexp.MustCompile(`^\s*-{3,}\s*(Original Message|Ursprüngliche Nachricht|Message d'origine|Forwarded message)\s*-{3,}\s*$`)
	underscoreRule   = regexp.MustCompile(`^\s*_{20,}\s*$`)
)

// quoteMark is a quoted line's mark: "> ", or supercite's "Chris> ",
// after at most three spaces.
var quoteMark = regexp.MustCompile(`^ {0,3}([A-Za-z+][\w.+-]{0,15})?>( |$)|^ {0,3}>`)

// quoteScan reads a message's body text line by line into its print.
type quoteScan struct {
	own, quoted   sketch
	state         int
	outlookHeader bool // in the header block after an Outlook separator
	rule          bool // the line before was a rule of underscores
}

const (
	scanOwn         = iota
	scanSignature   // after "-- " or a list's footer: not the message's text, until a quote
	scanAttribution // after an attribution: its first line tells which of the others
	scanQuoted      // after an unmarked quote's attribution, or a separator: all quoted
)

// line reads one line of the body.
func (s *quoteScan) line(l string) {
	t := strings.TrimRightFunc(l, unicode.IsSpace)
	if s.rule {
		s.rule = false
		if strings.HasPrefix(t, "From:") {
			s.state, s.outlookHeader = scanQuoted, true
			return
		}
		if s.state == scanOwn {
			s.state = scanSignature
		}
	}
	switch {
	case underscoreRule.MatchString(t):
		s.rule = true
		s.own.breakRun()
		s.quoted.breakRun()
		return
	case outlookSeparator.MatchString(t):
		s.state, s.outlookHeader = scanQuoted, true
		s.own.breakRun()
		s.quoted.breakRun()
		return
	case s.outlookHeader:
		// From:, Sent:, To:, Subject: … until the blank line.
		if strings.TrimSpace(t) == "" {
			s.outlookHeader = false
		}
		return
	case quoteMark.MatchString(t):
		if s.state == scanAttribution {
			// A marked quote: the lines after it are the reply's again.
			s.state = scanOwn
		}
		q := t[quoteMark.FindStringIndex(t)[1]:]
		if strings.HasPrefix(strings.TrimLeft(q, " "), ">") {
			// Quoted twice: the parent's own quote, not its text.
			s.quoted.breakRun()
			return
		}
		s.quoted.words(q)
		return
	case t == "--" || t == "-- ":
		if s.state == scanOwn {
			s.state = scanSignature
		}
		s.own.breakRun()
		return
	case attribution.MatchString(t):
		// What follows is quoted, with its marks or (HTML converted,
		// a top-posted reply) without them.
		if s.state != scanQuoted {
			s.state = scanAttribution
		}
		s.own.breakRun()
		s.quoted.breakRun()
		return
	}
	if s.state == scanAttribution && strings.TrimSpace(t) != "" {
		// An unmarked quote: all that follows is the original's.
		s.state = scanQuoted
	}
	switch s.state {
	case scanOwn:
		s.own.words(t)
	case scanQuoted:
		s.quoted.words(t)
	}
}

// scanLines reads r's lines into s (a line longer than the reader's
// buffer: its first piece).
func scanLines(r io.Reader, s *quoteScan) error {
	br := bufio.NewReaderSize(r, 32<<10)
	start := true
	for {
		line, err := br.ReadSlice('\n')
		if start {
			s.line(strings.ToValidUTF8(string(line), "\uFFFD"))
		}
		start = !errors.Is(err, bufio.ErrBufferFull)
		if err != nil && start {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// print is the scan's result.
func (s *quoteScan) print() msgPrint {
	return msgPrint{own: s.own.kept, quoted: s.quoted.kept}
}

// sketch keeps the printK smallest hashes of a text's word shingles.
type sketch struct {
	window [shingleWords]string
	n      int // words in window
	kept   []uint32
}

// breakRun starts a new run: shingles do not span a quote's edge.
func (k *sketch) breakRun() { k.n = 0 }

// words adds a line's words, lower case, letters and digits only.
func (k *sketch) words(line string) {
	for _, w := range strings.FieldsFunc(line, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		w = strings.ToLower(w)
		if k.n < shingleWords {
			k.window[k.n] = w
			k.n++
		} else {
			copy(k.window[:], k.window[1:])
			k.window[shingleWords-1] = w
		}
		if k.n == shingleWords {
			h := fnv.New32a()
			for _, x := range k.window {
				h.Write([]byte(x))
				h.Write([]byte{0})
			}
			k.add(h.Sum32())
		}
	}
}

func (k *sketch) add(h uint32) {
	if len(k.kept) == printK && h >= k.kept[printK-1] {
		return
	}
	i := sort.Search(len(k.kept), func(i int) bool { return k.kept[i] >= h })
	if i < len(k.kept) && k.kept[i] == h {
		return
	}
	if len(k.kept) < printK {
		k.kept = append(k.kept, 0)
	}
	copy(k.kept[i+1:], k.kept[i:])
	k.kept[i] = h
}

// quoteParents finds, for each message i for which want(i) holds and
// whose print has a quote, the earlier message whose own text holds its
// quote best (see quoteMinHits, quoteMinShare), or -1; usable(j) says
// message j may be a parent. Ties go to the latest such message.
func quoteParents(prints []msgPrint, want, usable func(int) bool) []int {
	type entry struct {
		h   uint32
		msg int32
	}
	var inv []entry
	for j, p := range prints {
		if usable(j) {
			for _, h := range p.own {
				inv = append(inv, entry{h, int32(j)})
			}
		}
	}
	sort.Slice(inv, func(a, b int) bool {
		if inv[a].h != inv[b].h {
			return inv[a].h < inv[b].h
		}
		return inv[a].msg < inv[b].msg
	})
	// A run of words in the own text of more than quoteMaxCommon
	// messages is boilerplate (a signature, a disclaimer, a list's
	// footer): it tells no parent, and is left out of every quote.
	common := map[uint32]bool{}
	for k := 0; k < len(inv); {
		n := 1
		for k+n < len(inv) && inv[k+n].h == inv[k].h {
			n++
		}
		if n > quoteMaxCommon {
			common[inv[k].h] = true
		}
		k += n
	}
	var quoted []uint32
	parents := make([]int, len(prints))
	hits := map[int]int{}
	for i, p := range prints {
		parents[i] = -1
		if len(p.quoted) < quoteMinHits || !want(i) {
			continue
		}
		quoted = quoted[:0]
		for _, q := range p.quoted {
			if !common[q] {
				quoted = append(quoted, q)
			}
		}
		clear(hits)
		for _, q := range quoted {
			k := sort.Search(len(inv), func(k int) bool { return inv[k].h >= q })
			for ; k < len(inv) && inv[k].h == q; k++ {
				if j := int(inv[k].msg); j < i {
					hits[j]++
				}
			}
		}
		best, bestShare, bestHits := -1, 0.0, 0
		for j, n := range hits {
			if n < quoteMinHits {
				continue
			}
			own := prints[j].own
			eligible := len(quoted)
			if len(own) == printK {
				// Only the quote's hashes P's sketch could hold.
				eligible = sort.Search(len(quoted), func(k int) bool { return quoted[k] > own[printK-1] })
			}
			share := float64(n) / float64(max(eligible, n))
			if share > bestShare || (share == bestShare && (n > bestHits || (n == bestHits && j > best))) {
				best, bestShare, bestHits = j, share, n
			}
		}
		if best >= 0 && bestShare >= quoteMinShare {
			parents[i] = best
		}
	}
	return parents
}
