package workflows

// RawJSON is rawJSON for the external tests: one argument as a client in
// another language sends it.
var RawJSON = rawJSON
