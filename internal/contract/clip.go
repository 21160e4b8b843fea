package contract

import "unicode/utf8"

// ClipUTF8 returns the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 character: how a value is brought within a byte limit
// such as a maxlen tag or a store's column width. A string within n bytes
// is returned as it is; bytes that are not valid UTF-8 are left alone.
func ClipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
