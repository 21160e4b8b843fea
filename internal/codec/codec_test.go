package codec

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	redact "github.com/memagent/memagent/internal/secret"
)

func key(t *testing.T, id string) Key {
	t.Helper()
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	return Key{ID: id, Raw: redact.Value(raw)}
}

const secret = "the memory says the vault code is 4417-ORCHID"

func payloads(t *testing.T) []*commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayloads(secret, map[string]int{"chunk": 3})
	if err != nil {
		t.Fatal(err)
	}
	return p.Payloads
}

func TestRoundTripAndRotation(t *testing.T) {
	k1, k2 := key(t, "k1"), key(t, "k2")
	old, err := New([]Key{k1})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := old.Encode(payloads(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range enc {
		if bytes.Contains(p.Data, []byte("4417-ORCHID")) || string(p.Metadata[MetadataKeyID]) != "k1" {
			t.Fatalf("encrypted payload leaks text or lacks key id: %v", p.Metadata)
		}
	}
	// After rotation k2 encrypts, and k1's payloads still decrypt.
	rotated, err := New([]Key{k2, k1})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := rotated.Decode(enc)
	if err != nil {
		t.Fatalf("decode after rotation: %v", err)
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(dec[0], &s); err != nil || s != secret {
		t.Errorf("decoded %q, %v; want the original", s, err)
	}
	enc2, _ := rotated.Encode(payloads(t))
	if string(enc2[0].Metadata[MetadataKeyID]) != "k2" {
		t.Errorf("rotated codec encrypts with %q, want k2", enc2[0].Metadata[MetadataKeyID])
	}
	// Without k1 the old payloads fail clearly, naming the key id only.
	_, err = mustNew(t, k2).Decode(enc)
	if err == nil || !strings.Contains(err.Error(), `"k1"`) || strings.Contains(err.Error(), base64.StdEncoding.EncodeToString([]byte(k1.Raw))) {
		t.Errorf("decode without k1: %v", err)
	}
	// Plain payloads pass through.
	plain := payloads(t)
	if got, err := rotated.Decode(plain); err != nil || got[0] != plain[0] {
		t.Errorf("plain payload did not pass through: %v", err)
	}
}

func mustNew(t *testing.T, keys ...Key) *Codec {
	t.Helper()
	c, err := New(keys)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTamperAndSwapDetected(t *testing.T) {
	k1, k2 := key(t, "k1"), key(t, "k2")
	c, _ := New([]Key{k1, k2})
	enc, _ := c.Encode(payloads(t))
	enc[0].Data[len(enc[0].Data)-1] ^= 1
	if _, err := c.Decode(enc[:1]); err == nil {
		t.Error("tampered payload decoded")
	}
	enc, _ = c.Encode(payloads(t))
	enc[0].Metadata[MetadataKeyID] = []byte("k2") // claims the other key
	if _, err := c.Decode(enc[:1]); err == nil {
		t.Error("payload with a swapped key id decoded")
	}
}

func TestParseKeys(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(make([]byte, 32))
	tests := []struct {
		spec    string
		wantIDs []string
		wantErr string
	}{
		{"a:" + good + ",b:" + good, []string{"a", "b"}, ""},
		{"# comment\na:" + good + "\n\n", []string{"a"}, ""},
		{"", nil, "no keys"},
		{"a" + good, nil, "not id:base64key"},
		{"a:!!!", nil, "not valid base64"},
	}
	for _, tt := range tests {
		keys, err := ParseKeys(tt.spec)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseKeys(%.20q) error %v, want %q", tt.spec, err, tt.wantErr)
			}
			continue
		}
		var ids []string
		for _, k := range keys {
			ids = append(ids, k.ID)
		}
		if err != nil || strings.Join(ids, ",") != strings.Join(tt.wantIDs, ",") {
			t.Errorf("ParseKeys = %v, %v; want ids %v", ids, err, tt.wantIDs)
		}
	}
	if _, err := New([]Key{{ID: "short", Raw: redact.Value(make([]byte, 16))}}); err == nil || !strings.Contains(err.Error(), "want 32") {
		t.Errorf("New with a 16-byte key: %v", err)
	}
}

func TestServer(t *testing.T) {
	c, _ := New([]Key{key(t, "k1")})
	enc, _ := c.Encode(payloads(t))
	body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: enc})
	srv := httptest.NewServer(NewServer(c, ServerOptions{Token: "tok", AllowOrigins: []string{"http://127.0.0.1:8233"}}))
	defer srv.Close()

	post := func(auth, origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/decode", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := post("", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", resp.StatusCode)
	}
	if resp := post("Bearer wrong", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: status %d, want 401", resp.StatusCode)
	}
	resp := post("Bearer tok", "http://127.0.0.1:8233")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "http://127.0.0.1:8233" {
		t.Fatalf("authorised decode: status %d, CORS %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	var out struct {
		Payloads []struct {
			Data string `json:"data"`
		} `json:"payloads"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Payloads) != 2 {
		t.Fatalf("decode response: %v %+v", err, out)
	}
	raw, _ := base64.StdEncoding.DecodeString(out.Payloads[0].Data)
	if !strings.Contains(string(raw), "4417-ORCHID") {
		t.Errorf("decoded payload %q does not hold the plaintext", raw)
	}
	if resp := post("Bearer tok", "http://evil.example"); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("CORS allowed an unlisted origin")
	}
}

// TestServerRefusesHostileCallers performs what a web page or a caller on
// the network could try against the codec server and checks each is
// refused: credentials for a wildcard origin, a foreign Host without a
// token (DNS rebinding), a text/plain body (a form a page can post without
// a preflight), an oversized body, and encode when the operator did not
// turn it on.
func TestServerRefusesHostileCallers(t *testing.T) {
	c, _ := New([]Key{key(t, "k1")})
	enc, _ := c.Encode(payloads(t))
	body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: enc})
	open := httptest.NewServer(NewServer(c, ServerOptions{AllowOrigins: []string{"*"}, MaxBodyBytes: 1 << 16}))
	defer open.Close()
	encoding := httptest.NewServer(NewServer(c, ServerOptions{AllowEncode: true}))
	defer encoding.Close()

	do := func(base, path, host, contentType, origin string, body []byte) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := do(open.URL, "/decode", "", "application/json", "http://evil.example", body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("wildcard origin: status %d, allow-origin %q, allow-credentials %q; want 200, * and no credentials",
			resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Allow-Credentials"))
	}
	for _, tt := range []struct {
		name, base, path, host, contentType string
		body                                []byte
		want                                int
	}{
		{"a rebound host name", open.URL, "/decode", "attacker.example:9464", "application/json", body, http.StatusMisdirectedRequest},
		{"a text/plain body", open.URL, "/decode", "", "text/plain", body, http.StatusUnsupportedMediaType},
		{"no content type", open.URL, "/decode", "", "", body, http.StatusUnsupportedMediaType},
		{"an oversized body", open.URL, "/decode", "", "application/json", bytes.Repeat([]byte(" "), 1<<17), http.StatusRequestEntityTooLarge},
		{"encode, not turned on", open.URL, "/encode", "", "application/json", body, http.StatusForbidden},
	} {
		if got := do(tt.base, tt.path, tt.host, tt.contentType, "", tt.body).StatusCode; got != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
		}
	}
	for _, host := range []string{"localhost:9464", "127.0.0.1", "[::1]:9464"} {
		if got := do(open.URL, "/decode", host, "application/json", "", body).StatusCode; got != http.StatusOK {
			t.Errorf("loopback host %s: status %d, want 200", host, got)
		}
	}
	plain, _ := protojson.Marshal(&commonpb.Payloads{Payloads: payloads(t)})
	if got := do(encoding.URL, "/encode", "", "application/json", "", plain).StatusCode; got != http.StatusOK {
		t.Errorf("encode turned on: status %d, want 200", got)
	}
}
