package docconvtest

import (
	"reflect"
	"testing"
)

func TestTexinfoPanels(t *testing.T) {
	text := "Next: Ranges, Previous: Matrix and Vector Operations [Contents][Index]\n\n" +
		"4 Arrays\n\n" +
		"Next: run the command again.\n\n" +
		"Next: GNU GENERAL PUBLIC LICENSE [Contents][Index]\n\n" +
		"  Up: Optimization, Next: Bounds\n\n" +
		"See the [Index] for more."
	got := TexinfoPanels(text)
	want := []string{
		"Next: Ranges, Previous: Matrix and Vector Operations [Contents][Index]",
		"Next: GNU GENERAL PUBLIC LICENSE [Contents][Index]",
		"Up: Optimization, Next: Bounds",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TexinfoPanels = %q, want %q", got, want)
	}
}
