package contract

import "testing"

func TestClipUTF8(t *testing.T) {
	tests := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"within", "héllo", 9, "héllo"},
		{"exact", "héllo", 6, "héllo"},
		{"ascii", "hello", 3, "hel"},
		{"not inside a character", "hé", 2, "h"},
		{"after a character", "hé!", 3, "hé"},
		{"four-byte character", "a😀b", 4, "a"},
		{"four-byte character kept", "a😀b", 5, "a😀"},
		{"nothing fits", "😀", 3, ""},
		{"zero", "abc", 0, ""},
		{"empty", "", 5, ""},
		{"invalid bytes left alone", "a\xffbc", 2, "a\xff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClipUTF8(tt.s, tt.n); got != tt.want {
				t.Errorf("ClipUTF8(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
			}
		})
	}
}
