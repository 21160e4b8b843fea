package memagent

import (
	"encoding/json"
	"os"
	"testing"
)

// TestScorePaperVectors checks ScorePaper against vectors computed with
// Python's own string semantics from the protocol's definition
// (testdata/paper_vectors.py, which writes testdata/paper_vectors.json):
// hand-picked edge cases — empty normalisation, yes/no, F1 rounding ties,
// Python's lower-casing and whitespace, Unicode word boundaries — and 400
// seeded random strings over an alphabet of such characters.
func TestScorePaperVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/paper_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Python  string `json:"python"`
		Unicode string `json:"unicode"`
		Cases   []struct {
			Pred  string  `json:"pred"`
			Gold  string  `json:"gold"`
			EM    float64 `json:"em"`
			SubEM float64 `json:"sub_em"`
			F1    float64 `json:"f1"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) < 400 {
		t.Fatalf("%d vectors, want 400+", len(v.Cases))
	}
	bad := 0
	for i, c := range v.Cases {
		want := PaperScores{EM: c.EM, SubEM: c.SubEM, F1: c.F1}
		if got := ScorePaper(c.Pred, c.Gold); got != want {
			bad++
			t.Errorf("case %d: ScorePaper(%q, %q) = %+v, want %+v (normalised %q, %q)", i, c.Pred, c.Gold, got, want, NormalizePaper(c.Pred), NormalizePaper(c.Gold))
		}
	}
	t.Logf("%d vectors from Python %s (Unicode %s), %d differ", len(v.Cases), v.Python, v.Unicode, bad)
}

// The protocol's own edge cases, stated here as well as in the vectors.
func TestScorePaper(t *testing.T) {
	for _, tc := range []struct {
		name, pred, gold string
		want             PaperScores
	}{
		{"exact", "The Eiffel Tower.", "Eiffel Tower", PaperScores{1, 1, 1}},
		{"prediction contains gold", "It is the Eiffel Tower in Paris", "Eiffel Tower", PaperScores{0, 1, 0.5}},
		{"prediction normalises to empty: in every gold", "The", "Greenwich Village, New York City", PaperScores{0, 1, 0}},
		{"punctuation only: in every gold", "...", "Athens", PaperScores{0, 1, 0}},
		{"both normalise to empty: exact, no F1", "a an the", "the", PaperScores{1, 1, 0}},
		{"gold normalises to empty: in every prediction", "Athens", "The.", PaperScores{0, 1, 0}},
		{"no prediction scores nothing", "", "Athens", PaperScores{}},
		{"whitespace prediction is not empty", " ", "Athens", PaperScores{0, 1, 0}},
		{"yes against no", "yes", "no", PaperScores{}},
		{"yes inside a longer gold: substring, no F1", "yes", "yes indeed", PaperScores{0, 1, 0}},
		{"F1 0.125 rounds to even", "paris w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13", "paris", PaperScores{0, 1, 0.12}},
		{"F1 rounded to two decimals", "Tower", "The Eiffel Tower", PaperScores{0, 1, 0.67}},
		{"final sigma", "ΟΔΟΣ", "οδος", PaperScores{1, 1, 1}},
		{"dotted capital I", "İstanbul", "istanbul", PaperScores{}},
		{"information separator is whitespace", "new\x1cyork", "new york", PaperScores{1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ScorePaper(tc.pred, tc.gold); got != tc.want {
				t.Errorf("ScorePaper(%q, %q) = %+v, want %+v", tc.pred, tc.gold, got, tc.want)
			}
		})
	}
}

// The default protocol is unchanged: an empty normalised prediction
// matches nothing there.
func TestDefaultProtocolUnchanged(t *testing.T) {
	if s := Score("The", []string{"Greenwich Village"}); s.SubstringMatch || s.ExactMatch {
		t.Errorf("Score(\"The\") = %+v, want no match under the default protocol", s)
	}
}

func TestRoundHalfEven2(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{0.125, 0.12}, {0.375, 0.38}, {0.625, 0.62}, {0.875, 0.88}, {2.0 / 3, 0.67}, {0.5, 0.5}, {1, 1}, {0, 0},
		{0.285, 0.28}, // 0.28499999999999998 in binary
		{0.675, 0.68}, // 0.67500000000000004
	} {
		if got := roundHalfEven2(tc.in); got != tc.want {
			t.Errorf("roundHalfEven2(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
