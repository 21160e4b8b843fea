// Package codec owns the encryption of what memagent stores in Temporal
// history: an AES-256-GCM payload codec (key id in the payload metadata,
// several keys accepted so keys can rotate), loading key material from a
// file or the environment, and the codec server endpoint that lets
// authorised operators read encrypted runs in the Temporal UI and CLI.
//
// It must never log, print or put into an error any key material or
// payload contents.
package codec
