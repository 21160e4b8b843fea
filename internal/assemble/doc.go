// Package assemble builds the parts memagent's activities and tools are
// made of from plain settings: the S3 store (traced), the model pool (its
// model resolved), the prompt templates, the errors that say what to do
// about a bucket, the worker options memagent decides, and the check of a
// namespace's search attributes. The plugin puts the activities together
// from them (and hands them to memagent's tools through internal/pluginkit); the tools use them for
// what they reach themselves.
//
// It is a library: it imports no package above internal/, never dials
// Temporal for itself and never starts a worker.
package assemble
