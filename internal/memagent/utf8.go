package memagent

import (
	"io"
	"unicode/utf8"
)

// UTF8Replacer streams a document, replacing every byte that is not part of
// valid UTF-8 with U+FFFD, the way a lenient reader would show it. Valid
// text passes through unchanged.
type UTF8Replacer struct {
	r        io.Reader
	in       []byte // read, not yet converted (at most a split character at the end)
	out      []byte // converted, not yet returned
	eof      bool
	replaced int64
}

// NewUTF8Replacer wraps r.
func NewUTF8Replacer(r io.Reader) *UTF8Replacer {
	return &UTF8Replacer{r: r, in: make([]byte, 0, 64<<10)}
}

// Replaced is how many invalid bytes were replaced so far.
func (u *UTF8Replacer) Replaced() int64 { return u.replaced }

// Read implements io.Reader.
func (u *UTF8Replacer) Read(p []byte) (int, error) {
	for len(u.out) == 0 {
		if u.eof && len(u.in) == 0 {
			return 0, io.EOF
		}
		if !u.eof {
			n, err := u.r.Read(u.in[len(u.in):cap(u.in)])
			u.in = u.in[:len(u.in)+n]
			if err == io.EOF {
				u.eof = true
			} else if err != nil {
				return 0, err
			}
		}
		u.convert()
	}
	n := copy(p, u.out)
	u.out = u.out[n:]
	return n, nil
}

// convert moves what can be decided from in to out, keeping an incomplete
// character at the end of in unless the input has ended.
func (u *UTF8Replacer) convert() {
	out := u.out[:0:0]
	i := 0
	for i < len(u.in) {
		c := u.in[i]
		if c < utf8.RuneSelf {
			out = append(out, c)
			i++
			continue
		}
		if !u.eof && !utf8.FullRune(u.in[i:]) {
			break
		}
		r, size := utf8.DecodeRune(u.in[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
			u.replaced++
		} else {
			out = append(out, u.in[i:i+size]...)
		}
		i += size
	}
	u.out = out
	u.in = u.in[:copy(u.in, u.in[i:])]
}
