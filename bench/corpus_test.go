package main

import "testing"

func TestEditMiddleReplacesOneSentence(t *testing.T) {
	text := "Oak reed mill. Fern dune kelp. Wagon quill vine. Ember ivy oak. Harbor reed fern."
	got, err := editMiddle(text)
	if err != nil {
		t.Fatal(err)
	}
	want := "Oak reed mill. Fern dune kelp. Wagon quill vine. " + corpusEdit + " Harbor reed fern."
	if got != want {
		t.Errorf("editMiddle:\n got %q\nwant %q", got, want)
	}
	if _, err := editMiddle("No sentence ends here"); err == nil {
		t.Error("editMiddle of text without a sentence past its middle: no error")
	}
}

func TestFirstDifference(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string
		want int
	}{
		{"equal", "abc", "abc", 3},
		{"prefix", "abc", "abcdef", 3},
		{"differ", "abXdef", "abcdef", 2},
		{"empty", "", "abc", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := firstDifference([]byte(tc.a), []byte(tc.b)); got != tc.want {
				t.Errorf("firstDifference(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
		})
	}
}
