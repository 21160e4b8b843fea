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
//     desk believes it only from a proxy the operator names: its exact
//     addresses (no default: loopback is every local process), or a
//     secret it sends in another header, or both. The proxy must drop the
//     header a client sends.
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

// Env names the environment variable that holds the identity source,
// TokenEnv the one that holds a CLI user's token, TrustedEnv the one that
// holds a header source's proxy addresses (comma-separated) and SecretEnv
// the one that holds the secret its proxy sends.
const (
	Env        = "MEMAGENT_REVIEWERS"
	TokenEnv   = "MEMAGENT_REVIEWER_TOKEN"
	TrustedEnv = "MEMAGENT_TRUSTED_PROXIES"
	SecretEnv  = "MEMAGENT_PROXY_SECRET"
)

// DefaultSecretHeader is the header a proxy sends its secret in, unless
// configured otherwise.
const DefaultSecretHeader = "X-Memagent-Proxy-Secret"

// MinSecretBytes is the shortest proxy secret taken.
const MinSecretBytes = 16

// Proxy is what makes a header source's header believable: the proxy's
// addresses (exact addresses or CIDRs), or a secret the proxy sends in
// SecretHeader (default DefaultSecretHeader), or both (then a request must
// pass both). A header source needs at least one.
type Proxy struct {
	Trusted      []string
	SecretHeader string
	Secret       string
}

// Source authenticates reviewers.
type Source struct {
	// Header is the trusted header's name (header sources), Trusted the
	// addresses it is believed from (none: any), SecretHeader and secret
	// the header and value the proxy proves itself with (none: no proof).
	// A header source has Trusted or a secret.
	Header       string
	Trusted      []netip.Prefix
	SecretHeader string
	// secret is the SHA-256 of the proxy's secret (nil: none), so that
	// comparing takes the same time whatever the length sent.
	secret []byte
	// hashes maps the SHA-256 of a token to its reviewer (token sources).
	hashes map[[32]byte]string
	file   string
}

// ErrNoSource is Parse's error for an empty spec.
var ErrNoSource = errors.New("no reviewer identity source: set " + Env + " to tokens:FILE or header:NAME (docs/REVIEW.md#who-decided)")

// ErrUntrustedHeader is Parse's error for a header source without a
// trusted proxy address or a proxy secret.
var ErrUntrustedHeader = errors.New("a header:NAME reviewer source needs the proxy it trusts: its addresses (--trusted-proxy ADDRESS|CIDR, " +
	TrustedEnv + "), or a secret it sends (" + SecretEnv + " or --proxy-secret-file, in --proxy-secret-header), or both; loopback is not trusted by default, since any local process can send the header (docs/REVIEW.md#who-decided)")

// IsHeader reports whether spec is a header source.
func IsHeader(spec string) bool {
	return strings.HasPrefix(strings.TrimSpace(spec), "header:")
}

// Parse reads a source spec: "tokens:FILE" or "header:NAME". A header
// source needs proxy to name a trusted address or a secret
// (ErrUntrustedHeader); a token source ignores proxy.
func Parse(spec string, proxy *Proxy) (*Source, error) {
	kind, arg, _ := strings.Cut(strings.TrimSpace(spec), ":")
	switch {
	case spec == "":
		return nil, ErrNoSource
	case kind == "tokens" && arg != "":
		return LoadTokens(arg)
	case kind == "header" && arg != "":
		if proxy == nil || (len(proxy.Trusted) == 0 && proxy.Secret == "") {
			return nil, ErrUntrustedHeader
		}
		s := &Source{Header: http.CanonicalHeaderKey(arg)}
		for _, t := range proxy.Trusted {
			t = strings.TrimSpace(t)
			p, err := netip.ParsePrefix(t)
			if err != nil {
				a, aerr := netip.ParseAddr(t)
				if aerr != nil {
					return nil, fmt.Errorf("trusted proxy %q is not an address or a CIDR", t)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			s.Trusted = append(s.Trusted, p.Masked())
		}
		if proxy.Secret != "" {
			if len(proxy.Secret) < MinSecretBytes {
				return nil, fmt.Errorf("the proxy secret is %d bytes: give it at least %d random ones (head -c 24 /dev/urandom | base64)", len(proxy.Secret), MinSecretBytes)
			}
			s.SecretHeader = http.CanonicalHeaderKey(proxy.SecretHeader)
			if s.SecretHeader == "" {
				s.SecretHeader = DefaultSecretHeader
			}
			if s.SecretHeader == s.Header {
				return nil, fmt.Errorf("the proxy secret's header and the reviewer's are both %s: name two headers", s.Header)
			}
			h := sha256.Sum256([]byte(proxy.Secret))
			s.secret = h[:]
		}
		return s, nil
	}
	return nil, fmt.Errorf("reviewer identity source %q is not tokens:FILE or header:NAME", spec)
}

// Check refuses a header source that believes its header from anyone: one
// built without Parse, with neither trusted addresses nor a secret.
func (s *Source) Check() error {
	if s.Header != "" && len(s.Trusted) == 0 && len(s.secret) == 0 {
		return ErrUntrustedHeader
	}
	return nil
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
// a request from an address the proxy does not have, without the proxy's
// secret, or without the header, has none.
func (s *Source) FromHeader(r *http.Request) (string, error) {
	if s.Header == "" {
		return "", errors.New("the reviewer identity source is tokens, not a header")
	}
	if err := s.Check(); err != nil {
		return "", err
	}
	if len(s.Trusted) > 0 {
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
	}
	if len(s.secret) > 0 {
		got := r.Header.Values(s.SecretHeader)
		var h [32]byte
		if len(got) == 1 {
			h = sha256.Sum256([]byte(got[0]))
		}
		if len(got) != 1 || subtle.ConstantTimeCompare(h[:], s.secret) != 1 {
			return "", fmt.Errorf("request without the proxy's secret in %s: the %s header is believed only from the proxy", s.SecretHeader, s.Header)
		}
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
