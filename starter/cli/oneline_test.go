package cli

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	failurepb "go.temporal.io/api/failure/v1"
)

// TestShortMessagesKeepCharacters: the one-line messages the CLI prints of a
// long error or failure are cut at a character boundary, never inside one.
func TestShortMessagesKeepCharacters(t *testing.T) {
	long := "x" + strings.Repeat("é", 300) // a 2-byte character ends at every odd offset
	line := oneLine(errors.New(long))
	if !utf8.ValidString(line) || line != "x"+strings.Repeat("é", 99)+"…" {
		t.Errorf("oneLine = %q (valid %v), want x, 99 é and an ellipsis", line, utf8.ValidString(line))
	}
	d := describeFailure(&failurepb.Failure{Message: long})
	if !utf8.ValidString(d) || !strings.Contains(d, "x"+strings.Repeat("é", 119)+"…") || strings.Contains(d, strings.Repeat("é", 120)) {
		t.Errorf("describeFailure = %q (valid %v), want x, 119 é and an ellipsis", d, utf8.ValidString(d))
	}
}
