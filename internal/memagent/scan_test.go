package memagent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
)

func TestScanText(t *testing.T) {
	long := strings.Repeat("é", planBlockSize) // a 2-byte character straddles every block boundary
	tests := []struct {
		name      string
		in        string
		wantEmpty bool
		wantBad   int64 // -1: valid
	}{
		{"ascii", "hello world", false, -1},
		{"multibyte across blocks", long, false, -1},
		{"empty", "", true, -1},
		{"whitespace only", " \n\t\u00a0\u3000", true, -1},
		{"invalid byte", "abc\xffdef", false, 3},
		{"truncated character at end", "abc\xc3", false, 3},
		{"invalid after a long prefix", long + "\xfe", false, int64(len(long))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := ScanText(iotest.HalfReader(strings.NewReader(tt.in)))
			var bad *InvalidUTF8Error
			switch {
			case tt.wantBad >= 0:
				if !errors.As(err, &bad) || bad.Offset != tt.wantBad {
					t.Fatalf("ScanText error = %v, want invalid UTF-8 at %d", err, tt.wantBad)
				}
			case tt.wantEmpty:
				if !errors.Is(err, ErrEmptyDocument) {
					t.Fatalf("ScanText error = %v, want ErrEmptyDocument", err)
				}
			default:
				if err != nil {
					t.Fatalf("ScanText: %v", err)
				}
				sum := sha256.Sum256([]byte(tt.in))
				if info.Bytes != int64(len(tt.in)) || info.SHA256 != hex.EncodeToString(sum[:]) {
					t.Errorf("ScanText = %+v, want %d bytes and sha %x", info, len(tt.in), sum)
				}
			}
		})
	}
}
