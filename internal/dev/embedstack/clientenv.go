package embedstack

// EnvVar is one environment variable.
type EnvVar struct{ Name, Value string }

// ClientEnv is the environment a client in any language reaches the stack
// with: the Temporal frontend (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, and
// TEMPORAL_HTTP, the base URL of Temporal's HTTP API), then the S3 server
// with its full credentials (the AWS SDKs' and CLI's AWS_* names) and
// MEMAGENT_BUCKET. Its order is stable: the dev stack prints it as export
// lines, and docs/API.md and examples/typescript read these names.
func (s *Stack) ClientEnv() []EnvVar {
	return []EnvVar{
		{"TEMPORAL_ADDRESS", s.TemporalAddress},
		{"TEMPORAL_NAMESPACE", s.Namespace},
		{"TEMPORAL_HTTP", "http://" + s.TemporalHTTPAddress},
		{"AWS_ACCESS_KEY_ID", s.S3AccessKey},
		{"AWS_SECRET_ACCESS_KEY", s.S3SecretKey},
		{"AWS_ENDPOINT_URL_S3", s.S3Endpoint},
		{"AWS_REGION", s.Region},
		{"MEMAGENT_BUCKET", s.Bucket},
	}
}
