// Package secret owns how memagent prints what must not be read: the
// marker that stands for a key, token or password, URLs without their user
// info or query values, and the Format helper the types holding secrets
// use so that every fmt verb and slog handler prints them redacted.
//
// It must never log, return or keep a secret it is given.
package secret
