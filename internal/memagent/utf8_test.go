package memagent

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

func TestUTF8Replacer(t *testing.T) {
	tests := []struct {
		in, want string
		replaced int64
	}{
		{"plain ascii", "plain ascii", 0},
		{"caf\xc3\xa9 東京", "café 東京", 0},
		{"a\xffb", "a\uFFFDb", 1},
		{"\xfe\xff", "\uFFFD\uFFFD", 2},
		{"truncated \xe6\x9d", "truncated \uFFFD\uFFFD", 2},
		{strings.Repeat("é", 40000) + "\xc3", strings.Repeat("é", 40000) + "\uFFFD", 1},
	}
	for _, tt := range tests {
		r := NewUTF8Replacer(iotest.OneByteReader(strings.NewReader(tt.in)))
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want || r.Replaced() != tt.replaced || !utf8.Valid(got) {
			t.Errorf("replace(%.20q) = %.20q (%d replaced), want %.20q (%d)", tt.in, got, r.Replaced(), tt.want, tt.replaced)
		}
	}
}
