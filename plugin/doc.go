// Package plugin adds MemAgent to an existing Temporal Go worker with one
// call: a [temporal.SimplePlugin] that registers the DocumentQA workflow and
// its activities under their stable names on the worker it is attached to.
//
//	p, err := plugin.New(plugin.Options{})  // config from the environment
//	w := worker.New(c, "memagent", worker.Options{Plugins: []worker.Plugin{p}})
//	err = w.Run(worker.InterruptCh())        // fails here if the config cannot work
//
// It owns the lifetime of what the activities need for each worker it is
// attached to: at worker start it validates the configuration, checks that
// the bucket and the model server answer, and starts the model pool; at
// worker stop it closes the pool. A worker whose configuration cannot work
// fails to start; it never starts and then fails its activities.
//
// It must never dial Temporal, own the host's client or worker, or change
// options the host has set: it fills in only the worker options left at
// their zero value.
package plugin
