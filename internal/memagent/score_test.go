package memagent

import (
	"math"
	"testing"
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
		want  Scores
	}{
		{"exact after normalization", "The Eiffel Tower.", []string{"eiffel tower"},
			Scores{ExactMatch: true, SubstringMatch: true, F1: 1, BestGold: "eiffel tower"}},
		{"prediction contains gold", "It is the Eiffel Tower in Paris", []string{"Eiffel Tower"},
			Scores{SubstringMatch: true, F1: 0.5, BestGold: "Eiffel Tower"}},
		{"gold contains prediction", "Tower", []string{"The Eiffel Tower"},
			Scores{SubstringMatch: true, F1: 2 * 1 * 0.5 / 1.5, BestGold: "The Eiffel Tower"}},
		{"no overlap", "Louvre", []string{"Eiffel Tower"}, Scores{BestGold: "Eiffel Tower"}},
		{"repeated tokens count once each", "paris paris paris", []string{"paris france"},
			Scores{SubstringMatch: false, F1: 2 * (1.0 / 3) * 0.5 / (1.0/3 + 0.5), BestGold: "paris france"}},
		{"best of several golds", "Athens", []string{"Paris", "Athens, Greece", "athens"},
			Scores{ExactMatch: true, SubstringMatch: true, F1: 1, BestGold: "athens"}},
		{"best F1 gold", "New York City", []string{"York", "New York"},
			Scores{SubstringMatch: true, F1: 0.8, BestGold: "New York"}},
		{"yes vs no", "yes", []string{"no"}, Scores{BestGold: "no"}},
		{"yes vs longer gold", "yes", []string{"yes indeed"},
			Scores{SubstringMatch: true, F1: 0, BestGold: "yes indeed"}},
		{"gold no vs prediction", "no way", []string{"no"},
			Scores{SubstringMatch: true, F1: 0, BestGold: "no"}},
		{"yes matches yes", "Yes.", []string{"yes"},
			Scores{ExactMatch: true, SubstringMatch: true, F1: 1, BestGold: "yes"}},
		{"noanswer", "noanswer", []string{"Athens"}, Scores{BestGold: "Athens"}},
		{"empty prediction matches nothing", "", []string{"Athens", ""}, Scores{BestGold: "Athens"}},
		{"punctuation-only prediction", "...", []string{"Athens"}, Scores{BestGold: "Athens"}},
		{"article-only prediction", "The", []string{"the end"}, Scores{BestGold: "the end"}},
		{"empty gold does not match", "Athens", []string{""}, Scores{BestGold: ""}},
		{"no golds", "Athens", nil, Scores{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Score(tt.pred, tt.golds)
			if got.ExactMatch != tt.want.ExactMatch || got.SubstringMatch != tt.want.SubstringMatch ||
				math.Abs(got.F1-tt.want.F1) > 1e-9 || got.BestGold != tt.want.BestGold {
				t.Errorf("Score(%q, %q) = %+v, want %+v", tt.pred, tt.golds, got, tt.want)
			}
		})
	}
}
