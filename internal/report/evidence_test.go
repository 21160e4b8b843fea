package report

import (
	"reflect"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
)

func TestReviewMaterialChange(t *testing.T) {
	tests := []struct {
		name          string
		before, after string
		material      bool
		added         []string
	}{
		{"initial memory to a placeholder", "No previous memory", "No relevant information yet.", false, nil},
		{"placeholder reworded", "No relevant information yet.", "Nothing relevant found so far; the section does not mention it.", false, nil},
		{"unchanged", "The code is 7391-ALPHA.", "The code is 7391-ALPHA.", false, nil},
		{"whitespace, case and punctuation only", "The code is 7391-ALPHA.", "  the CODE is\n7391 alpha ", false, nil},
		{"order only", "Ilse chairs. Marquardt signs.", "Marquardt signs. Ilse chairs.", false, nil},
		{"one common word reworded", "The gate code is kept by the warden.", "The gate code is held by the warden.", false, []string{"held"}},
		{"a fact sentence appears", "No relevant information yet.",
			"The access code for the north gate of the Halvorsen observatory is 7391-ALPHA.", true,
			[]string{"halvorsen", "7391", "alpha", "access", "code", "north", "gate", "observatory"}},
		{"a number alone is distinctive", "The meeting is on Tuesday.", "The meeting is on Tuesday at 15.", true, []string{"15"}},
		{"a name inside a sentence is distinctive", "The chemist is unknown.", "The chemist is Marquardt.", true, []string{"marquardt"}},
		{"a capitalised first word is not a name", "The chemist signs.", "Perhaps the chemist signs.", false, []string{"perhaps"}},
		{"two new common words", "The gate is green.", "The gate is green and narrow, beside a meadow.", true, []string{"narrow", "beside", "meadow"}},
		{"dropped content is not new content", "The gate is green. The code is 42.", "The gate is green.", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MaterialChange(tt.before, tt.after)
			if got.Material != tt.material || !reflect.DeepEqual(got.Added, tt.added) {
				t.Errorf("MaterialChange(%q, %q) = material %v added %q, want %v %q", tt.before, tt.after, got.Material, got.Added, tt.material, tt.added)
			}
		})
	}
}

func TestReviewMaterialChangeBoundsAdded(t *testing.T) {
	got := MaterialChange("", "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo 99")
	if len(got.Added) != EvidenceMaxAdded || got.AddedTotal != 12 || got.Added[0] != "99" {
		t.Errorf("added %q (total %d), want %d words, the distinctive 99 first, total 12", got.Added, got.AddedTotal, EvidenceMaxAdded)
	}
}

func TestReviewLocatePassage(t *testing.T) {
	fact := "The access code for the north gate of the Halvorsen observatory is 7391-ALPHA."
	chunk := "River harvest lantern. Meadow copper winter orchard.\n\nValley whistle pebble. " + fact + " Ferry harbor candle.\nRibbon marble."
	added := MaterialChange("No relevant information yet.", fact).Added
	s, e, ok := LocatePassage([]byte(chunk), added)
	if !ok || chunk[s:e] != fact {
		t.Fatalf("passage = %q (ok %v), want the fact %q", chunk[s:e], ok, fact)
	}

	t.Run("no word found", func(t *testing.T) {
		if _, _, ok := LocatePassage([]byte(chunk), []string{"zebra"}); ok {
			t.Error("found a passage for a word the chunk lacks")
		}
		if _, _, ok := LocatePassage([]byte(chunk), nil); ok {
			t.Error("found a passage for no words")
		}
	})
	t.Run("the sentence with most words wins, the first on a tie", func(t *testing.T) {
		text := "The gate is old. The north gate code is here. The north gate code is there."
		s, e, _ := LocatePassage([]byte(text), []string{"north", "gate", "code"})
		if got := text[s:e]; got != "The north gate code is here." {
			t.Errorf("passage = %q", got)
		}
	})
	t.Run("a long line is narrowed around its first match, on rune boundaries", func(t *testing.T) {
		text := strings.Repeat("é word ", 800) + "Halvorsen 7391 " + strings.Repeat("é word ", 800)
		s, e, ok := LocatePassage([]byte(text), []string{"halvorsen"})
		if !ok || e-s > EvidenceMaxPassageBytes || !strings.Contains(text[s:e], "Halvorsen") {
			t.Fatalf("passage [%d,%d) of %d bytes, want at most %d holding the match", s, e, e-s, EvidenceMaxPassageBytes)
		}
		if !validUTF8(text[s:e]) {
			t.Errorf("passage %q splits a character", text[s:e])
		}
	})
}

// TestReviewLocatePassageWholeWords: a long sentence is narrowed at white
// space, wherever its window falls, so that a passage neither starts nor
// ends inside a word.
func TestReviewLocatePassageWholeWords(t *testing.T) {
	for pad := range 9 {
		text := strings.Repeat("x", pad) + strings.Repeat(" harbor", 120) + " Halvorsen 7391" + strings.Repeat(" lantern 2.85", 150)
		s, e, ok := LocatePassage([]byte(text), []string{"halvorsen"})
		if !ok || e-s > EvidenceMaxPassageBytes || !strings.Contains(text[s:e], "Halvorsen") {
			t.Fatalf("pad %d: passage [%d,%d), want at most %d bytes holding the match", pad, s, e, EvidenceMaxPassageBytes)
		}
		if (s > 0 && text[s-1] != ' ') || (e < len(text) && text[e] != ' ') || strings.TrimSpace(text[s:e]) != text[s:e] {
			t.Errorf("pad %d: passage %q… …%q cuts a word", pad, text[s:s+12], text[e-12:e])
		}
	}
}

func validUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestReviewSupportAndPrune(t *testing.T) {
	memory := "The code is 7391-ALPHA. The chemist is Marquardt."
	ev := []api.Evidence{
		{Chunk: 1, Added: []string{"lantern", "meadow"}},          // forgotten
		{Chunk: 2, Added: []string{"7391", "alpha", "code"}},      // kept
		{Chunk: 3, Added: []string{"chemist", "marquardt", "ox"}}, // mostly kept
		{Chunk: 4, Added: []string{"river", "chemist"}},           // half kept
	}
	if got := EvidenceSupport(ev[0].Added, memory); got != 0 {
		t.Errorf("support of forgotten words = %v, want 0", got)
	}
	if !EvidenceSupports(ev[3].Added, memory) || EvidenceSupports(ev[0].Added, memory) {
		t.Error("EvidenceSupports: want half kept to support and none kept not to")
	}
	tests := []struct {
		max         int
		wantChunks  []int
		wantDropped int
	}{
		{4, []int{1, 2, 3, 4}, 0},
		{3, []int{2, 3, 4}, 1},
		{2, []int{2, 3}, 2},
		{1, []int{2}, 3},
		{0, nil, 4},
	}
	for _, tt := range tests {
		kept, dropped := PruneEvidence(ev, memory, tt.max)
		var chunks []int
		for _, e := range kept {
			chunks = append(chunks, e.Chunk)
		}
		if !reflect.DeepEqual(chunks, tt.wantChunks) || dropped != tt.wantDropped {
			t.Errorf("max %d: kept chunks %v, dropped %d; want %v, %d", tt.max, chunks, dropped, tt.wantChunks, tt.wantDropped)
		}
	}
	if ev[0].Chunk != 1 || len(ev) != 4 {
		t.Error("PruneEvidence modified its input")
	}
}

// TestReviewLocatePassageRanges pins the exact byte ranges for the sentence
// rules and the narrowing of a long sentence.
func TestReviewLocatePassageRanges(t *testing.T) {
	long := strings.Repeat("é word ", 800) + "Halvorsen 7391 " + strings.Repeat("é word ", 800)
	tests := []struct {
		name, text string
		added      []string
		start, end int
		ok         bool
	}{
		{"white space trimmed", "  \t one gate.  \n", []string{"gate"}, 4, 13, true},
		{"a word counts once", "gate gate gate. north gate!", []string{"gate", "north"}, 16, 27, true},
		{"a decimal point ends no sentence", "pi is 3.14 here? yes", []string{"pi", "14"}, 0, 16, true},
		{"a line break ends one", "north\ngate code", []string{"gate", "code"}, 6, 15, true},
		{"only blank sentences", " \n\n . ", []string{"gate"}, 0, 0, false},
		{"long sentence narrowed on whole words", long, []string{"halvorsen"}, 6144, 7166, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, e, ok := LocatePassage([]byte(tt.text), tt.added)
			if s != tt.start || e != tt.end || ok != tt.ok {
				t.Errorf("LocatePassage = [%d,%d) %v, want [%d,%d) %v", s, e, ok, tt.start, tt.end, tt.ok)
			}
		})
	}
}

// TestLocateChunkPassageLeavesOutCutWords: a chunk cut between the tokens
// of a word ("…1.9" | "9 | Asymptote…") starts or ends inside it; its
// passage starts and ends on whole words, unless the chunk's edge is the
// text's own.
func TestLocateChunkPassageLeavesOutCutWords(t *testing.T) {
	text := []byte("9 | Asymptote graphics, which requires the attach")
	for _, tc := range []struct {
		cutStart, cutEnd bool
		want             string
	}{
		{true, true, "| Asymptote graphics, which requires the"},
		{false, true, "9 | Asymptote graphics, which requires the"},
		{true, false, "| Asymptote graphics, which requires the attach"},
		{false, false, string(text)},
	} {
		s, e, ok := LocateChunkPassage(text, []string{"asymptote"}, tc.cutStart, tc.cutEnd)
		if got := string(text[s:e]); !ok || got != tc.want {
			t.Errorf("cut start %v, end %v: %q (%v), want %q", tc.cutStart, tc.cutEnd, got, ok, tc.want)
		}
	}
	if s, e, ok := LocateChunkPassage([]byte("asymptote"), []string{"asymptote"}, true, false); ok {
		t.Errorf("a chunk of one cut word: passage %d..%d, want none", s, e)
	}
}
