package plugin

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/assemble"
	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/devaddr"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
)

// stack is the embedded dev stack the end-to-end tests of this package
// share (a real Temporal server, a real S3 server and the simulator over
// HTTP), with a document holding docgen's planted fact.
type stack struct {
	dev    *devenv.Env
	addr   devaddr.Stack
	store  *s3store.Store
	doc    string // s3:// URI of the document
	logger *slog.Logger
}

var (
	stackOnce sync.Once
	stackVal  *stack
	stackErr  error
)

// TestMain closes the shared stack, if a test started it.
func TestMain(m *testing.M) {
	code := m.Run()
	if stackVal != nil {
		stackVal.dev.Close()
	}
	os.Exit(code)
}

// sharedStack starts the stack on first use; it skips in -short mode.
func sharedStack(t *testing.T) *stack {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	stackOnce.Do(func() { stackVal, stackErr = startStack() })
	if stackErr != nil {
		t.Fatalf("start the dev stack: %v", stackErr)
	}
	return stackVal
}

func startStack() (*stack, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	d, err := devenv.Start(ctx, devenv.Options{FreePorts: true, Simulator: true, DisableUI: true, Logger: logger})
	if err != nil {
		return nil, err
	}
	st := &stack{dev: d, addr: d.Addresses(), logger: logger}
	if st.store, err = assemble.NewStore(ctx, st.options().s3()); err != nil {
		d.Close()
		return nil, err
	}
	if err := st.store.EnsureBucket(ctx, st.addr.Bucket, true); err != nil {
		d.Close()
		return nil, err
	}
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		d.Close()
		return nil, err
	}
	loc := activities.Location{Bucket: st.addr.Bucket, Key: "plugin-e2e/doc.txt"}
	if err := st.store.Put(ctx, loc, []byte(docgen.Needle(tok, 8_000, 0.5, 7)), "text/plain"); err != nil {
		d.Close()
		return nil, err
	}
	st.doc = loc.String()
	return st, nil
}

// options are plugin options for the stack, as OptionsFromEnv would give
// them with the stack's addresses in the environment.
func (st *stack) options() Options {
	a := st.addr
	env := map[string]string{
		"AWS_ENDPOINT_URL_S3": a.S3Endpoint, "AWS_REGION": a.Region, "MEMAGENT_BUCKET": a.Bucket, "MEMAGENT_CREATE_BUCKET": "true",
		"OPENAI_BASE_URL": a.SimulatorURL, "MEMAGENT_NOTIFY_ALLOW_NETS": "127.0.0.0/8,::1/128",
	}
	o, err := OptionsFromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		panic(err)
	}
	// Static keys in the environment are the SDK's chain's to read, not
	// OptionsFromEnv's: the test's map is not the process's environment.
	o.S3AccessKeyID, o.S3SecretAccessKey = a.S3AccessKey, a.S3SecretKey
	o.Logger = st.logger
	return o
}

// dial connects a client to the stack's Temporal server with opts'
// plugins and converters; it is closed when the test ends.
func (st *stack) dial(ctx context.Context, t *testing.T, edit func(*client.Options)) client.Client {
	t.Helper()
	co := client.Options{HostPort: st.addr.TemporalAddress, Namespace: st.addr.Namespace}
	if edit != nil {
		edit(&co)
	}
	c, err := client.DialContext(ctx, co)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// put writes text to loc.
func (st *stack) put(ctx context.Context, t *testing.T, loc activities.Location, text string) {
	t.Helper()
	if err := st.store.Put(ctx, loc, []byte(text), "application/x-ndjson"); err != nil {
		t.Fatal(err)
	}
}
