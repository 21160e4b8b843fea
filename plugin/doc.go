// Package plugin adds MemAgent to an existing Temporal Go worker with one
// call: a Temporal SDK plugin that registers memagent's workflows
// (memagent.DocumentQA, memagent.ReviewDocument, memagent.BatchQA,
// memagent.Estimate and memagent.SignOff) and their activities under their
// stable names on the worker it is attached to.
//
//	p, err := plugin.New(plugin.Options{
//		Bucket:    "my-memagent-bucket",
//		S3Client:  s3Client, // or AWSConfig, or S3Endpoint and keys
//		ModelURLs: []string{"http://vllm.internal:8000/v1"},
//	})
//	w := worker.New(c, "memagent", worker.Options{Plugins: []worker.Plugin{p}})
//	err = w.Run(worker.InterruptCh()) // fails here if the options cannot work
//
// Options are set in code and nothing is read from the environment, unless
// the host asks: OptionsFromEnv returns the options memagent's own worker
// reads from MEMAGENT_BUCKET, AWS_ENDPOINT_URL_S3, OPENAI_BASE_URL and the
// rest. Runs are started and awaited with the memclient package.
//
// # Where the plugin goes
//
// The plugin may be listed in worker.Options.Plugins, in
// client.Options.Plugins (the SDK then attaches it to every worker created
// from that client) or in both. However many times one Plugin is listed on
// a worker, it sets that worker up once. Two different Plugin values on one
// worker are an error at worker start, as they would register the same
// names twice. One Plugin may serve many workers.
//
// In client.Options.Plugins the plugin also checks, when the client
// connects, that the namespace has memagent's search attributes, and
// registers the missing ones where the server allows it; where it does
// not, the connection fails naming `starter setup`. In worker options alone
// it never sees a client: run `starter setup` once per namespace, or call
// Plugin.CheckSearchAttributes with the worker's client before starting the
// worker (memagent's own worker does); otherwise the worker logs at start
// that they were not checked.
//
// # What it owns
//
// It owns the lifetime of what the activities need, for each worker it is
// attached to: at worker start it checks the options, checks that the
// bucket and the model server answer, and starts the model pool; at worker
// stop, after in-flight activities had their WorkerStopTimeout, it closes
// the pool. A worker whose options cannot work fails to start; it never
// starts and then fails its activities. It fills in only the worker
// options the host left at their zero value (activity slots, the task
// queue's activity rate, the stop timeout, and with
// Options.DeploymentName the Worker Deployment version).
//
// # Worker Versioning
//
// Every workflow registers as Pinned, which an unversioned worker ignores.
// With Options.DeploymentName (or the host's own
// worker.Options.DeploymentOptions) the worker polls as one build of a
// Temporal Worker Deployment: a run stays on the build that started it
// and moves to the target build when it continues as new, at its next
// boundary once Temporal says the target changed. The build id defaults
// to the host binary's version. docs/DEPLOY.md, "Upgrading", is the
// operators' path.
//
// It must never own the host's client or worker, or change what the host
// set. It dials Temporal in one case only: listed in client.Options.Plugins,
// when the host creates a client that is not lazy, it opens one short-lived
// connection of its own, with the host's client options less the plugins,
// to check the namespace's search attributes (see above), and closes it at
// once; a lazy client or worker options alone dial nothing. In particular it never changes a data or failure
// converter unless Options.InstallConverter asks it to.
//
// # Encrypted payloads, and how operators read them
//
// With Options.CodecKeys, the plugin offers memagent's AES-256-GCM payload
// codec; how it is used is the host's choice. The host may chain it into
// its own converter, which then encrypts every payload of the client,
// memagent's and the host's alike (p.DataConverter(hostConverter) builds
// the same converter):
//
//	dc := converter.NewCodecDataConverter(hostConverter, p.PayloadCodec())
//	c, err := client.Dial(client.Options{DataConverter: dc, FailureConverter: plugin.FailureConverter(dc)})
//
// Or it sets Options.InstallConverter and lists the plugin in
// client.Options.Plugins: the plugin then wraps the client's converter
// (the host's, or the SDK's default) in the codec as the client is built,
// and sets an encrypting failure converter unless the host set one. A
// worker whose client the plugin did not configure refuses to start with
// InstallConverter, rather than write plaintext.
//
// Operators then need the codec server to read runs in the Temporal Web UI
// or CLI. p.CodecHandler() is that server (POST …/encode and …/decode, the
// protocol the UI and CLI speak), behind Options.CodecServer's bearer token
// and CORS origins. Serve it from the host, under a prefix:
//
//	mux.Handle("/codec/", p.CodecHandler())
//
// and point readers at it: in the Web UI, the Codec Server settings of the
// top bar (endpoint http://host:port/codec, with "pass the user access
// token" when a token is set), or for every user the UI server's
// codec.endpoint setting; in the CLI, temporal workflow show
// --codec-endpoint http://host:port/codec --codec-auth "Bearer TOKEN". A
// service that runs no HTTP server can serve NewCodecHandler(NewCodec(keys))
// from a separate process holding the same keys. Without a token, serve it
// on loopback only: it decrypts for anyone who reaches it.
package plugin
