// Package assemble builds memagent's activities from a worker
// configuration: the S3 store, the model pool (its model resolved and its
// tokenizer checked), the prompt templates and the limits. The plugin
// builds every worker's activities with it, and so, through the plugin, does
// memagent's own worker. It also checks a namespace's search attributes.
//
// It never dials Temporal for itself and never starts a worker.
package assemble
