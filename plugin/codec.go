package plugin

import (
	"fmt"
	"net/http"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/internal/codec"
	"github.com/memagent/memagent/internal/secret"
)

// CodecKey is one AES-256 payload encryption key and the id recorded with
// every payload it encrypts, so that keys can rotate: list the new key
// first and keep the old ones while histories need them. It formats as its
// id only, never as key material.
type CodecKey struct {
	// ID names the key; no ':', ',' or spaces.
	ID string
	// Key is 32 random bytes (`openssl rand -base64 32`, decoded).
	Key []byte
}

// String is the key's id, so that printing a key never shows its bytes.
func (k CodecKey) String() string { return "codec key " + k.ID }

// GoString is String, for %#v.
func (k CodecKey) GoString() string { return k.String() }

// ParseCodecKeys reads keys written as "id:base64key", separated by commas
// or newlines (the format of MEMAGENT_CODEC_KEYS and of the file
// MEMAGENT_CODEC_KEYS_FILE names); blank lines and lines starting with #
// are skipped. The first key encrypts.
func ParseCodecKeys(spec string) ([]CodecKey, error) {
	keys, err := codec.ParseKeys(spec)
	if err != nil {
		return nil, err
	}
	out := make([]CodecKey, len(keys))
	for i, k := range keys {
		out[i] = CodecKey{ID: k.ID, Key: []byte(k.Raw)}
	}
	return out, nil
}

// NewCodec returns memagent's payload codec: AES-256-GCM with the first key,
// decrypting with any of them by the key id in each payload's metadata, and
// passing through payloads it did not encrypt. Chain it into a converter
// with converter.NewCodecDataConverter, serve it with NewCodecHandler.
func NewCodec(keys ...CodecKey) (converter.PayloadCodec, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("memagent codec: no keys: pass at least one CodecKey")
	}
	c, err := newCodec(keys)
	if err != nil {
		return nil, fmt.Errorf("memagent codec: %w", err)
	}
	return c, nil
}

// CodecHandlerOptions configure a codec server handler.
type CodecHandlerOptions struct {
	// Token, when set, must arrive as "Authorization: Bearer <token>" (the
	// Temporal Web UI forwards the signed-in user's token, the CLI sends
	// --codec-auth); other requests get 401. Without a token, serve the
	// handler on loopback only: it decrypts for anyone who reaches it.
	Token string
	// AllowOrigins are the browser origins allowed to call the handler
	// with credentials (CORS), such as the Web UI's
	// "http://127.0.0.1:8233", matched exactly; "*" lets any origin call
	// it without credentials.
	AllowOrigins []string
	// AllowHosts are the Host names it answers for besides loopback ones
	// when there is no Token (DNS-rebinding protection).
	AllowHosts []string
	// AllowEncode turns on …/encode, which encrypts whatever it is sent
	// (the CLI needs it to start runs with encrypted input); off, the
	// handler only decodes.
	AllowEncode bool
}

// NewCodecHandler returns the codec server for c: POST …/encode and
// …/decode with JSON payloads, the protocol the Temporal Web UI and CLI
// speak, with CORS for opts.AllowOrigins and opts.Token checked. Mount it
// under a prefix, for example mux.Handle("/codec/", h), and give operators
// that URL ("http://host:port/codec") as the codec endpoint.
func NewCodecHandler(c converter.PayloadCodec, opts CodecHandlerOptions) http.Handler {
	return codec.NewServer(c, codec.ServerOptions{Token: secret.Value(opts.Token), AllowOrigins: opts.AllowOrigins,
		AllowHosts: opts.AllowHosts, AllowEncode: opts.AllowEncode})
}

// PayloadCodec is the plugin's codec, built from Options.CodecKeys, or nil
// without keys. A host that keeps its own converter chains it in:
//
//	dc := converter.NewCodecDataConverter(myConverter, p.PayloadCodec())
func (p *Plugin) PayloadCodec() converter.PayloadCodec {
	if p.codec == nil {
		return nil
	}
	return p.codec
}

// DataConverter returns base (nil means the SDK's default) with the
// plugin's codec applied to everything it writes, or base itself without
// codec keys. It is what Options.InstallConverter installs; a host may set
// it in client.Options.DataConverter itself instead.
func (p *Plugin) DataConverter(base converter.DataConverter) converter.DataConverter {
	if base == nil {
		base = converter.GetDefaultDataConverter()
	}
	if p.codec == nil {
		return base
	}
	return converter.NewCodecDataConverter(base, p.codec)
}

// FailureConverter returns the failure converter that encrypts the message
// and stack trace of every failure with dc (see DataConverter), as failure
// messages may quote what a model said about a document.
func FailureConverter(dc converter.DataConverter) converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          dc,
		EncodeCommonAttributes: true,
	})
}

// CodecHandler is NewCodecHandler for the plugin's codec with
// Options.CodecServer, or nil without codec keys.
func (p *Plugin) CodecHandler() http.Handler {
	if p.codec == nil {
		return nil
	}
	return NewCodecHandler(p.codec, p.opts.CodecServer)
}

// newCodec builds the plugin's codec from its keys; nil without keys.
func newCodec(keys []CodecKey) (*codec.Codec, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	ck := make([]codec.Key, len(keys))
	for i, k := range keys {
		ck[i] = codec.Key{ID: k.ID, Raw: secret.Value(k.Key)}
	}
	c, err := codec.New(ck)
	if err != nil {
		return nil, fmt.Errorf("CodecKeys: %w", err)
	}
	return c, nil
}
