// Package devaddr names where the embedded dev stack listens and the
// credentials it accepts: the defaults of the plugin's and the worker's
// configuration, which find the dev stack without any environment, and of
// the stack itself. It holds values only; it never starts or dials
// anything, so the production worker may link it.
package devaddr

// Addresses and credentials of the embedded dev stack.
const (
	TemporalAddress = "127.0.0.1:7233"
	UIURL           = "http://127.0.0.1:8233"
	S3Endpoint      = "http://127.0.0.1:9000"
	ModelBaseURL    = "http://127.0.0.1:8000/v1"
	S3AccessKey     = "memagent"
	S3SecretKey     = "memagent-dev-secret"
	Region          = "us-east-1"
	Bucket          = "memagent"
)

// Stack is where one running dev stack is: what a configuration points at
// to use it (worker/config's Config.AtDevStack).
type Stack struct {
	TemporalAddress, Namespace string
	S3Endpoint, Region         string
	S3AccessKey, S3SecretKey   string
	Bucket                     string
	// SimulatorURL is the simulator's base URL, or empty when the stack
	// runs without it (a model server of the environment's is used).
	SimulatorURL string
}
