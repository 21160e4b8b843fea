// Package validation holds the statistics of a validation: how many cells
// a stratum's sample needs for a margin of error, which cells a recorded
// seed draws from a recorded population, and what the reviewers' blind
// decisions on the sample say about the whole, each figure with an exact
// confidence interval by a named method.
//
// It is pure: no I/O, no clock, no randomness of its own. The same seed
// and population always draw the same sample, in any language that has
// SHA-256 (the recipe is in Draw's comment), so anyone can redraw a sample
// and recompute every figure from the audit log.
package validation
