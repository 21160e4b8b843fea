// Package assemble builds memagent's activities from what they need
// (Config: the S3 store, the model servers, the bucket and the areas a run
// may use, the limits; Options: templates, tokenizers, logger): the store,
// the model pool (its model resolved and its tokenizer checked), the prompt
// templates and the limits. The plugin builds every worker's activities with
// it from its Options, and so, through the plugin, does memagent's own
// worker; tools and tests build them from memagent's configuration
// (ConfigFrom). It also checks a namespace's search attributes.
//
// It never dials Temporal for itself and never starts a worker.
package assemble
