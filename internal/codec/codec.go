package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	redact "github.com/memagent/memagent/internal/secret"
)

// Metadata written on encrypted payloads.
const (
	// EncodingEncrypted marks a payload this codec encrypted.
	EncodingEncrypted = "binary/encrypted"
	// MetadataKeyID names the key that encrypted a payload.
	MetadataKeyID = "encryption-key-id"
)

// Key is one AES-256 key and the id recorded with what it encrypts.
type Key struct {
	ID  string
	Raw redact.Value // 32 bytes
}

// Codec encrypts payloads with its first key and decrypts with any of its
// keys, chosen by the key id in the payload's metadata.
type Codec struct {
	active string
	aeads  map[string]cipher.AEAD
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New builds a codec. The first key encrypts; all of them decrypt, so a
// rotated-out key stays listed until no history needs it.
func New(keys []Key) (*Codec, error) {
	if len(keys) == 0 {
		return nil, errors.New("codec: no keys")
	}
	c := &Codec{active: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for i, k := range keys {
		if k.ID == "" || strings.ContainsAny(k.ID, ":, \n") {
			return nil, fmt.Errorf("codec: key %d has an empty id or one with ':', ',' or spaces", i+1)
		}
		if len(k.Raw) != 32 {
			return nil, fmt.Errorf("codec: key %q is %d bytes, want 32 (AES-256): generate one with `openssl rand -base64 32`", k.ID, len(k.Raw))
		}
		if _, dup := c.aeads[k.ID]; dup {
			return nil, fmt.Errorf("codec: key id %q is listed twice", k.ID)
		}
		block, err := aes.NewCipher([]byte(k.Raw))
		if err != nil {
			return nil, fmt.Errorf("codec: key %q: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("codec: key %q: %w", k.ID, err)
		}
		c.aeads[k.ID] = aead
	}
	return c, nil
}

// Encode encrypts every payload with the active key. The key id is also
// the GCM additional data, so a payload cannot be passed off as another
// key's.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	aead := c.aeads[c.active]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("codec: encode payload %d: %w", i, err)
		}
		nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("codec: nonce: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(EncodingEncrypted),
				MetadataKeyID:              []byte(c.active),
			},
			Data: aead.Seal(nonce, nonce, plain, []byte(c.active)),
		}
	}
	return out, nil
}

// Decode decrypts the payloads this codec (with any of its keys)
// encrypted and passes others through unchanged.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != EncodingEncrypted {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		aead, ok := c.aeads[id]
		if !ok {
			return nil, fmt.Errorf("codec: payload %d was encrypted with key %q, which is not configured: add it to MEMAGENT_CODEC_KEYS", i, id)
		}
		data := p.GetData()
		if len(data) < aead.NonceSize()+aead.Overhead() {
			return nil, fmt.Errorf("codec: payload %d is too short to be encrypted data", i)
		}
		plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("codec: payload %d does not decrypt with key %q (tampered or wrong key)", i, id)
		}
		var dec commonpb.Payload
		if err := proto.Unmarshal(plain, &dec); err != nil {
			return nil, fmt.Errorf("codec: payload %d: decrypted data is not a payload: %w", i, err)
		}
		out[i] = &dec
	}
	return out, nil
}

// ParseKeys reads keys written as "id:base64key" separated by commas or
// newlines; blank lines and lines starting with # are skipped. The first
// key is the active one.
func ParseKeys(spec string) ([]Key, error) {
	var keys []Key
	for _, f := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == '\n' }) {
		f = strings.TrimSpace(f)
		if f == "" || strings.HasPrefix(f, "#") {
			continue
		}
		id, b64, ok := strings.Cut(f, ":")
		if !ok {
			return nil, fmt.Errorf("codec: key %d is not id:base64key", len(keys)+1)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil {
			return nil, fmt.Errorf("codec: key %q is not valid base64", strings.TrimSpace(id))
		}
		keys = append(keys, Key{ID: strings.TrimSpace(id), Raw: redact.Value(raw)})
	}
	if len(keys) == 0 {
		return nil, errors.New("codec: no keys found: write id:base64key entries")
	}
	return keys, nil
}

// LoadKeys returns the keys configured by MEMAGENT_CODEC_KEYS_FILE (a file
// of id:base64key lines) or else MEMAGENT_CODEC_KEYS (comma-separated), and
// nil when neither is set (no encryption). lookup is os.LookupEnv outside
// tests.
func LoadKeys(lookup func(string) (string, bool)) ([]Key, error) {
	if path, ok := lookup("MEMAGENT_CODEC_KEYS_FILE"); ok && path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("codec: read MEMAGENT_CODEC_KEYS_FILE: %w", err)
		}
		return ParseKeys(string(data))
	}
	if spec, ok := lookup("MEMAGENT_CODEC_KEYS"); ok && spec != "" {
		return ParseKeys(spec)
	}
	return nil, nil
}
