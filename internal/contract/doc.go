// Package contract checks JSON against the Go types that define memagent's
// wire format, and describes those types as JSON Schema.
//
// Decode is the strict decoder every workflow runs on its input: an unknown
// member, a wrong type or malformed JSON is reported with its JSON path
// ("options.chunk_token: unknown field; did you mean options.chunk_tokens?")
// instead of being dropped or defaulted. Schema generates the published
// schemas (docs/schemas) from the same types and their `contract` tags,
// Check enforces those tags' ranges (every input's Validate calls it), and
// SourceDocs lifts the types' doc comments: the shapes, the ranges of
// single fields and the docs come from one source. ClipUTF8 brings a value
// within a byte limit without cutting a character; it is here because every
// package may import this one, the contract included. What a tag cannot say
// (sizes across fields, an alias given with its name, what a worker's
// prefixes allow) is checked by each input's Validate and by the
// activities, and documented in docs/API.md.
//
// The package is pure: no I/O but SourceDocs' reading of source files (for
// generators and tests), no Temporal, no clocks, deterministic output, so
// workflow code may call Decode.
package contract
