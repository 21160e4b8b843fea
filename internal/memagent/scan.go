package memagent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"unicode"
)

// TextInfo describes a document checked by ScanText.
type TextInfo struct {
	Bytes  int64
	SHA256 string
}

// ScanText reads a whole document once, in blocks, and checks it by the same
// rules as PlanChunks without tokenizing it: UTF-8 throughout
// (*InvalidUTF8Error at the first bad byte) and not empty or whitespace only
// (ErrEmptyDocument). Callers use it to reject bad input before any work
// starts.
func ScanText(r io.Reader) (TextInfo, error) {
	hash := sha256.New()
	buf := make([]byte, 0, planBlockSize+4)
	var base int64
	nonSpace := false
	eof := false
	for !eof {
		n, err := r.Read(buf[len(buf):cap(buf)])
		hash.Write(buf[len(buf) : len(buf)+n])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			eof = true
		case err != nil:
			return TextInfo{}, fmt.Errorf("read document at offset %d: %w", base+int64(len(buf)), err)
		}
		v, bad := validUTF8Prefix(buf, eof)
		if bad {
			return TextInfo{}, &InvalidUTF8Error{Offset: base + int64(v)}
		}
		if !nonSpace && bytes.IndexFunc(buf[:v], func(r rune) bool { return !unicode.IsSpace(r) }) >= 0 {
			nonSpace = true
		}
		buf = buf[:copy(buf, buf[v:])]
		base += int64(v)
	}
	if !nonSpace {
		return TextInfo{}, ErrEmptyDocument
	}
	return TextInfo{Bytes: base, SHA256: hex.EncodeToString(hash.Sum(nil))}, nil
}
