package plugin

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/memclient"
)

// hostMark is the metadata key the host's own codec (markCodec) adds to
// every payload, so a history shows whose converter wrote it.
const hostMark = "host-codec"

// markCodec stands for a host's own payload codec: it only marks payloads.
type markCodec struct{}

func (markCodec) Encode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		q := proto.Clone(p).(*commonpb.Payload)
		q.Metadata[hostMark] = []byte("1")
		out[i] = q
	}
	return out, nil
}

func (markCodec) Decode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		q := proto.Clone(p).(*commonpb.Payload)
		delete(q.Metadata, hostMark)
		out[i] = q
	}
	return out, nil
}

// hostEcho is the host's own workflow, run on the same worker as memagent.
func hostEcho(_ workflow.Context, s string) (string, error) { return "echo: " + s, nil }

// TestPluginPlacement runs DocumentQA, and a workflow of the host's own on
// the same worker, with the plugin in the worker's options, the client's,
// or both, with and without codec keys, a converter of the host's and
// InstallConverter. It checks that each worker is set up once (one model
// pool, no duplicate registration), and reads the raw history to see which
// converter wrote the payloads: the host's is kept unless InstallConverter
// asks for the codec, which then wraps it.
func TestPluginPlacement(t *testing.T) {
	st := sharedStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	keys := []CodecKey{{ID: "k1", Key: raw}}

	tests := []struct {
		name                 string
		inClient, inWorker   bool
		keys, install, host  bool
		wantEncrypted        bool
		wantHostMark         bool
		wantStartErrContains string
	}{
		{name: "worker options", inWorker: true},
		{name: "client options", inClient: true},
		{name: "both", inClient: true, inWorker: true},
		{name: "worker options, codec keys, host converter", inWorker: true, keys: true, host: true, wantHostMark: true},
		{name: "client options, codec keys, host converter", inClient: true, keys: true, host: true, wantHostMark: true},
		{name: "both, codec keys, host converter", inClient: true, inWorker: true, keys: true, host: true, wantHostMark: true},
		{name: "both, codec keys, InstallConverter", inClient: true, inWorker: true, keys: true, install: true, wantEncrypted: true},
		{name: "client options, codec keys, InstallConverter over host converter", inClient: true, keys: true, install: true, host: true, wantEncrypted: true, wantHostMark: true},
		{name: "worker options, codec keys, InstallConverter", inWorker: true, keys: true, install: true,
			wantStartErrContains: "InstallConverter needs the plugin in client.Options.Plugins"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := st.options()
			if tc.keys {
				opts.CodecKeys = keys
			}
			opts.InstallConverter = tc.install
			p, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			var hostDC converter.DataConverter
			c := st.dial(ctx, t, func(co *client.Options) {
				if tc.host {
					hostDC = converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), markCodec{})
					co.DataConverter = hostDC
				}
				if tc.inClient {
					co.Plugins = []client.Plugin{p}
				}
			})
			taskQueue := fmt.Sprintf("placement-%d", i)
			wo := worker.Options{}
			if tc.inWorker {
				wo.Plugins = []worker.Plugin{p}
			}
			w := worker.New(c, taskQueue, wo)
			w.RegisterWorkflowWithOptions(hostEcho, workflow.RegisterOptions{Name: "host.Echo"})
			err = w.Start()
			if tc.wantStartErrContains != "" {
				if err == nil {
					w.Stop()
					t.Fatalf("Start succeeded, want an error containing %q", tc.wantStartErrContains)
				}
				if !strings.Contains(err.Error(), tc.wantStartErrContains) {
					t.Errorf("Start error = %q, want it to contain %q", err, tc.wantStartErrContains)
				}
				if n := p.openPools(); n != 0 {
					t.Errorf("model pools open after a failed start = %d, want 0", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer w.Stop()
			if n := p.openPools(); n != 1 {
				t.Errorf("model pools open = %d, want 1 (the worker set up once)", n)
			}

			mc := memclient.New(c, memclient.Options{TaskQueue: taskQueue})
			in := api.DocumentQAInput{
				// Every chunk read: no checkpoint of an earlier test run is used.
				Reuse:    api.ReuseNone,
				Document: st.doc, Question: docgen.Question, GoldAnswers: []string{docgen.Answer},
				Options: api.ModelOptions{ChunkTokens: 2000},
			}
			run, err := mc.Start(ctx, in, memclient.StartOptions{Fresh: true})
			if err != nil {
				t.Fatalf("Start DocumentQA: %v", err)
			}
			res, err := run.Get(ctx)
			if err != nil {
				t.Fatalf("DocumentQA: %v", err)
			}
			if res.Answer != docgen.Answer {
				t.Errorf("answer %q, want %q", res.Answer, docgen.Answer)
			}
			echo, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "host-echo-" + taskQueue, TaskQueue: taskQueue}, "host.Echo", "hi")
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if err := echo.Get(ctx, &got); err != nil || got != "echo: hi" {
				t.Fatalf("host workflow = %q, %v; want %q", got, err, "echo: hi")
			}

			for _, r := range []struct{ id, runID, plain string }{
				{run.ID, run.RunID, docgen.Question},
				{echo.GetID(), echo.GetRunID(), "hi"},
			} {
				pl := startInput(ctx, t, c, r.id, r.runID)
				encrypted := string(pl.Metadata[converter.MetadataEncoding]) == "binary/encrypted"
				if encrypted != tc.wantEncrypted {
					t.Errorf("%s: input payload encrypted = %v, want %v (metadata %v)", r.id, encrypted, tc.wantEncrypted, keysOf(pl.Metadata))
				}
				if encrypted {
					if bytes.Contains(pl.Data, []byte(r.plain)) {
						t.Errorf("%s: encrypted input holds %q in clear", r.id, r.plain)
					}
					// The codec server decodes it for an operator.
					pl = decodeWithHandler(t, p.CodecHandler(), pl)
				}
				if _, marked := pl.Metadata[hostMark]; marked != tc.wantHostMark {
					t.Errorf("%s: input payload written by the host's converter = %v, want %v (metadata %v)", r.id, marked, tc.wantHostMark, keysOf(pl.Metadata))
				}
				if !bytes.Contains(pl.Data, []byte(r.plain)) {
					t.Errorf("%s: decoded input does not hold %q", r.id, r.plain)
				}
			}
		})
	}

	t.Run("two Plugin values on one worker", func(t *testing.T) {
		a, err := New(st.options())
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(st.options())
		if err != nil {
			t.Fatal(err)
		}
		c := st.dial(ctx, t, func(co *client.Options) { co.Plugins = []client.Plugin{a} })
		w := worker.New(c, "placement-two", worker.Options{Plugins: []worker.Plugin{b}})
		err = w.Start()
		if err == nil {
			w.Stop()
			t.Fatal("Start succeeded, want an error naming the second Plugin")
		}
		if !strings.Contains(err.Error(), "another memagent Plugin already set this worker up") {
			t.Errorf("Start error = %q", err)
		}
		if a.openPools()+b.openPools() != 0 {
			t.Errorf("model pools open after a failed start = %d+%d, want 0", a.openPools(), b.openPools())
		}
	})
}

// startInput returns the first input payload of a run, as the server
// holds it.
func startInput(ctx context.Context, t *testing.T, c client.Client, id, runID string) *commonpb.Payload {
	t.Helper()
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	ev, err := it.Next()
	if err != nil {
		t.Fatalf("history of %s: %v", id, err)
	}
	ps := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(ps) == 0 {
		t.Fatalf("%s: no input payload in the first event", id)
	}
	return ps[0]
}

// decodeWithHandler posts a payload to the codec server, as the Web UI
// does, and returns the decoded payload.
func decodeWithHandler(t *testing.T, h http.Handler, p *commonpb.Payload) *commonpb.Payload {
	t.Helper()
	if h == nil {
		t.Fatal("CodecHandler is nil with codec keys")
	}
	mux := http.NewServeMux()
	mux.Handle("/codec/", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{p}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/codec/decode", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("codec server: %s: %s", resp.Status, data)
	}
	var out commonpb.Payloads
	if err := protojson.Unmarshal(data, &out); err != nil || len(out.Payloads) != 1 {
		t.Fatalf("codec server answered %s: %v", data, err)
	}
	return out.Payloads[0]
}

func keysOf(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
