// Package reviewer says who a reviewer is: the identity source an operator
// configures for the review desk and the starter's sign-off commands.
// Two kinds:
//
//   - tokens:FILE, a file of reviewers and the SHA-256 of each one's
//     secret token ("alice sha256:9f86d0…" a line, # comments). The file
//     holds no secret, so the starter may read it; each reviewer keeps
//     their own token (MEMAGENT_REVIEWER_TOKEN for the CLI, the desk's
//     sign-in form in a browser).
//   - header:NAME, a header an authenticating proxy in front of the desk
//     sets to the signed-in user (X-Forwarded-User, X-Remote-User …). The
//     desk believes it only from the proxy's addresses (loopback unless
//     configured), and the proxy must drop the header a client sends.
//
// A reviewer is whoever the source says: no request can name another.
// The package never logs a token, nor keeps one.
package reviewer

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"unicode/utf8"
)

// Env names the environment variable that holds the identity source, and
// TokenEnv the one that holds a CLI user's token.
const (
	Env      = "MEMAGENT_REVIEWERS"
	TokenEnv = "MEMAGENT_REVIEWER_TOKEN"
)

// Source authenticates reviewers.
type Source struct {
	// Header is the trusted header's name (header sources), Trusted the
	// addresses it is believed from.
	Header  string
	Trusted []netip.Prefix
	// hashes maps the SHA-256 of a token to its reviewer (token sources).
	hashes map[[32]byte]string
	file   string
}

// ErrNoSource is Parse's error for an empty spec.
var ErrNoSource = errors.New("no reviewer identity source: set " + Env + " to tokens:FILE or header:NAME (docs/REVIEW.md#who-decided)")

// Parse reads a source spec: "tokens:FILE" or "header:NAME". A header
// source believes the header from loopback addresses; trusted, a list of
// CIDRs or addresses, replaces them.
func Parse(spec string, trusted []string) (*Source, error) {
	kind, arg, _ := strings.Cut(strings.TrimSpace(spec), ":")
	switch {
	case spec == "":
		return nil, ErrNoSource
	case kind == "tokens" && arg != "":
		return LoadTokens(arg)
	case kind == "header" && arg != "":
		s := &Source{Header: http.CanonicalHeaderKey(arg)}
		if len(trusted) == 0 {
			trusted = []string{"127.0.0.0/8", "::1/128"}
		}
		for _, t := range trusted {
			p, err := netip.ParsePrefix(t)
			if err != nil {
				a, aerr := netip.ParseAddr(t)
				if aerr != nil {
					return nil, fmt.Errorf("trusted proxy %q is not an address or a CIDR", t)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			s.Trusted = append(s.Trusted, p)
		}
		return s, nil
	}
	return nil, fmt.Errorf("reviewer identity source %q is not tokens:FILE or header:NAME", spec)
}

// HashToken is the form a token file holds a token in: "sha256:" and the
// hex SHA-256 of the token.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(h[:])
}

// LoadTokens reads a token file.
func LoadTokens(file string) (*Source, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reviewer tokens: %w", err)
	}
	defer f.Close()
	s := &Source{hashes: map[[32]byte]string{}, file: file}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 || !strings.HasPrefix(fields[1], "sha256:") {
			return nil, fmt.Errorf("%s:%d: want \"REVIEWER sha256:HEX\" (the SHA-256 of the reviewer's token, never the token)", file, n)
		}
		raw, err := hex.DecodeString(strings.TrimPrefix(fields[1], "sha256:"))
		if err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("%s:%d: %q is not a hex SHA-256", file, n, fields[1])
		}
		if err := CheckName(fields[0]); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n, err)
		}
		var h [32]byte
		copy(h[:], raw)
		if other, dup := s.hashes[h]; dup {
			return nil, fmt.Errorf("%s:%d: %s has the token of %s: give each reviewer their own", file, n, fields[0], other)
		}
		s.hashes[h] = fields[0]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reviewer tokens: %w", err)
	}
	if len(s.hashes) == 0 {
		return nil, fmt.Errorf("%s names no reviewer", file)
	}
	return s, nil
}

// CheckName checks a reviewer's name: one word of printable UTF-8, at most
// 128 bytes.
func CheckName(name string) error {
	if name == "" || len(name) > 128 || !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f || r == ' ' }) {
		return fmt.Errorf("reviewer name %q must be 1 to 128 bytes of printable UTF-8 without spaces", name)
	}
	return nil
}

// Tokens reports whether the source is a token file.
func (s *Source) Tokens() bool { return s.hashes != nil }

// FromToken returns the reviewer whose token this is.
func (s *Source) FromToken(token string) (string, error) {
	if !s.Tokens() {
		return "", errors.New("the reviewer identity source is a header, not tokens: a token signs no one in")
	}
	if token == "" {
		return "", fmt.Errorf("no reviewer token: set %s to your token", TokenEnv)
	}
	h := sha256.Sum256([]byte(token))
	for k, name := range s.hashes {
		if subtle.ConstantTimeCompare(k[:], h[:]) == 1 {
			return name, nil
		}
	}
	return "", fmt.Errorf("the reviewer token is not in %s", s.file)
}

// FromHeader returns the reviewer a header source's proxy names in r;
// a request from an address the proxy does not have, or without the
// header, has none.
func (s *Source) FromHeader(r *http.Request) (string, error) {
	if s.Header == "" {
		return "", errors.New("the reviewer identity source is tokens, not a header")
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return "", fmt.Errorf("request from %q: not an address", r.RemoteAddr)
	}
	trusted := false
	for _, p := range s.Trusted {
		trusted = trusted || p.Contains(a.Unmap())
	}
	if !trusted {
		return "", fmt.Errorf("request from %s, which is not a trusted proxy: the %s header is believed only from the proxy", a, s.Header)
	}
	vals := r.Header.Values(s.Header)
	if len(vals) != 1 {
		return "", fmt.Errorf("the proxy sent %d %s headers: want one, the signed-in reviewer", len(vals), s.Header)
	}
	name := strings.TrimSpace(vals[0])
	if err := CheckName(name); err != nil {
		return "", err
	}
	return name, nil
}
