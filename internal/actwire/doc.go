// Package actwire holds the inputs and outputs that memagent's workflows
// and activities pass each other: what one activity call carries in
// workflow history. They are JSON in recorded histories and change only by
// addition, like the contract in package api, but they are plumbing, not
// part of the contract: no caller of the workflows needs them, so they
// live here rather than in the public activities package.
//
// Pure data: no methods with behaviour, no I/O.
package actwire
