package memagent

import (
	"math"
	"testing"

	"github.com/memagent/memagent/api"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"The Eiffel Tower.", "eiffel tower"},
		{"  An   apple a day ", "apple day"},
		{"Theatre and the thesis", "theatre and thesis"},
		{"a-b_c", "abc"},
		{"U.S.A.", "usa"},
		{"Don't!", "dont"},
		{"the(the)the", "thethethe"}, // punctuation goes first, as in SQuAD
		{"the, a; an", ""},
		{"Über Café", "über café"},
		{"东京 the 大学", "东京 大学"},
		{"A\tB\nC", "b c"},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Normalize(tt.in); got != tt.want {
				t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestScore(t *testing.T) {
	tests := []struct {
		name  string
		pred  string
		golds []string
		want  api.Scores
	}{
		{"exact after normalization", "The Eiffel Tower.", []string{"eiffel tower"},
			api.Scores{ExactMatch: true, SubstringMatch: true, F1: 1, BestGold: "eiffel tower", Recall: 1}},
		{"prediction contains gold", "It is the Eiffel Tower in Paris", []string{"Eiffel Tower"},
			api.Scores{SubstringMatch: true, F1: 0.5, BestGold: "Eiffel Tower", Recall: 1}},
		{"gold contains prediction", "Tower", []string{"The Eiffel Tower"},
			api.Scores{SubstringMatch: true, F1: 2 * 1 * 0.5 / 1.5, BestGold: "The Eiffel Tower"}},
		{"no overlap", "Louvre", []string{"Eiffel Tower"}, api.Scores{BestGold: "Eiffel Tower"}},
		{"repeated tokens count once each", "paris paris paris", []string{"paris france"},
			api.Scores{SubstringMatch: false, F1: 2 * (1.0 / 3) * 0.5 / (1.0/3 + 0.5), BestGold: "paris france"}},
		{"best of several golds", "Athens", []string{"Paris", "Athens, Greece", "athens"},
			api.Scores{ExactMatch: true, SubstringMatch: true, F1: 1, BestGold: "athens", Recall: 1.0 / 3}},
		{"best F1 gold", "New York City", []string{"York", "New York"},
			api.Scores{SubstringMatch: true, F1: 0.8, BestGold: "New York", Recall: 1}},
		{"yes vs no", "yes", []string{"no"}, api.Scores{BestGold: "no"}},
		{"yes vs longer gold", "yes", []string{"yes indeed"},
			api.Scores{SubstringMatch: true, F1: 0, BestGold: "yes indeed"}},
		{"gold no vs prediction", "no way", []string{"no"},
			api.Scores{SubstringMatch: true, F1: 0, BestGold: "no", Recall: 1}},
		{"yes matches yes", "Yes.", []string{"yes"},
			api.Scores{ExactMatch: true, SubstringMatch: true, F1: 1, BestGold: "yes", Recall: 1}},
		{"noanswer", "noanswer", []string{"Athens"}, api.Scores{BestGold: "Athens"}},
		{"empty prediction matches nothing", "", []string{"Athens", ""}, api.Scores{BestGold: "Athens"}},
		{"punctuation-only prediction", "...", []string{"Athens"}, api.Scores{BestGold: "Athens"}},
		{"article-only prediction", "The", []string{"the end"}, api.Scores{BestGold: "the end"}},
		{"empty gold does not match", "Athens", []string{""}, api.Scores{BestGold: ""}},
		{"no golds", "Athens", nil, api.Scores{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Score(tt.pred, tt.golds)
			if got.ExactMatch != tt.want.ExactMatch || got.SubstringMatch != tt.want.SubstringMatch ||
				math.Abs(got.F1-tt.want.F1) > 1e-9 || got.BestGold != tt.want.BestGold ||
				math.Abs(got.Recall-tt.want.Recall) > 1e-9 {
				t.Errorf("Score(%q, %q) = %+v, want %+v", tt.pred, tt.golds, got, tt.want)
			}
		})
	}
}

// Recall counts every gold answer as expected: partial answers get partial
// credit, where substring match (the best over aliases) would give full.
func TestScoreRecall(t *testing.T) {
	values := []string{"4954804", "1187230", "7731942", "2290417"}
	tests := []struct {
		name  string
		pred  string
		golds []string
		want  float64
	}{
		{"all values", "4954804, 1187230, 7731942 and 2290417", values, 1},
		{"one of four", "The special magic number is 4954804.", values, 0.25},
		{"three of four in any order", "2290417 7731942 4954804", values, 0.75},
		{"none", "I could not find it", values, 0},
		{"after normalization", "The Eiffel Tower and the LOUVRE!", []string{"eiffel tower", "Louvre", "Orsay"}, 2.0 / 3},
		{"gold containing prediction is not found", "Tower", []string{"The Eiffel Tower"}, 0},
		{"contained inside a longer token", "14954804", []string{"4954804"}, 1},
		{"hyphen removed, words joined", "Eiffel-Tower", []string{"eiffel tower"}, 0},
		{"duplicate golds count once", "paris", []string{"Paris", "paris", "PARIS.", "Rome"}, 0.5},
		{"duplicates all found", "paris", []string{"Paris", "paris"}, 1},
		{"empty golds are ignored", "paris", []string{"", "Paris", "  ", "..."}, 1},
		{"only empty golds", "paris", []string{"", "the"}, 0},
		{"no golds", "paris", nil, 0},
		{"empty prediction", "", []string{"paris"}, 0},
		{"punctuation-only prediction", "?!", []string{"paris"}, 0},
		{"single gold equals contains", "it is Athens, Greece", []string{"Athens"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Score(tt.pred, tt.golds)
			if math.Abs(got.Recall-tt.want) > 1e-9 {
				t.Errorf("Score(%q, %q).Recall = %v, want %v", tt.pred, tt.golds, got.Recall, tt.want)
			}
			if got.Recall < 0 || got.Recall > 1 {
				t.Errorf("Recall %v is outside [0, 1]", got.Recall)
			}
		})
	}
	// The case the metric exists for: 1 of 4 values is a full substring hit
	// but a quarter of the recall.
	if s := Score("4954804", values); !s.SubstringMatch || s.Recall != 0.25 {
		t.Errorf("one of four values: substring %v recall %v, want true and 0.25", s.SubstringMatch, s.Recall)
	}
}
