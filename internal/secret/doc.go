// Package secret owns how memagent prints what must not be read: the types
// that hold a key, token or password (Value), a URL that may carry
// credentials (Endpoint) or a foreign value holding secrets (Opaque) and
// print redacted whatever prints them, so that a struct of them needs no
// printing methods of its own; the marker that stands for a secret; URLs
// without their user info or query values; and the Format helper for the
// public types (plugin.Options) whose fields must stay plain strings.
//
// It must never log, return or keep a secret it is given.
package secret
