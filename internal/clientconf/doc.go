// Package clientconf is the configuration of memagent's clients (the
// starter CLI and the review desk): where Temporal is and how to reach it
// (the Temporal SDK's envconfig variables), the task queue, the bucket and
// the S3 service a client uploads to and reads results from, the model a
// run names and the payload codec's keys. Dial connects a Temporal client
// with it.
//
// The variables are the worker's (the same names, read the same way):
// worker/config embeds Temporal and maps its own configuration onto a
// Config (config.Config.Client), and a test checks every name here against
// plugin's table. It must never link what runs work (workflows,
// activities, plugin, the model pool, document conversion): a client that
// imports it stays a client.
package clientconf
