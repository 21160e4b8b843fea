package embedstack_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/internal/dev/embedstack"
)

const (
	taskQueue        = "devstack-test"
	greetWorkflow    = "devstack.Greet"
	greetActivity    = "devstack.GreetActivity"
	persistedWFID    = "devstack-persisted"
	childDataDirEnv  = "DEVSTACK_TEST_CHILD_DATA_DIR"
	childWorkflowEnv = "DEVSTACK_TEST_CHILD_WORKFLOW_ID"
)

// testLogger shows the stack's warnings and errors on stderr (printed by go
// test only for failing packages or with -v).
func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func startStack(t *testing.T, opts embedstack.Options) *embedstack.Stack {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	began := time.Now()
	st, err := embedstack.Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("stack ready in %v (data_dir=%q): temporal=%s ui=%s s3=%s; VmRSS after start: %s",
		time.Since(began).Round(time.Millisecond), opts.DataDir, st.TemporalAddress, st.UIURL, st.S3Endpoint, vmRSS(t))
	t.Cleanup(func() {
		began := time.Now()
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		t.Logf("stack closed in %v", time.Since(began).Round(time.Millisecond))
	})
	return st
}

func vmRSS(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func dial(t *testing.T, st *embedstack.Stack) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  st.TemporalAddress,
		Namespace: st.Namespace,
		Logger:    sdklog.NewStructuredLogger(testLogger()),
	})
	if err != nil {
		t.Fatalf("dial temporal: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func greet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, greetActivity, name).Get(ctx, &out)
	return out, err
}

func greetAct(_ context.Context, name string) (string, error) {
	return "hello " + name, nil
}

func startWorker(t *testing.T, c client.Client) {
	t.Helper()
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(greet, workflow.RegisterOptions{Name: greetWorkflow})
	w.RegisterActivityWithOptions(greetAct, activity.RegisterOptions{Name: greetActivity})
	if err := w.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(w.Stop)
}

// runGreet runs the greeting workflow end to end and checks its result.
func runGreet(t *testing.T, c client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue}, greetWorkflow, "memagent")
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatalf("workflow result: %v", err)
	}
	if want := "hello memagent"; got != want {
		t.Errorf("workflow result = %q, want %q", got, want)
	}
}

func newS3Client(st *embedstack.Stack, secret string) *s3.Client {
	return s3.New(s3.Options{
		Region:       st.Region,
		BaseEndpoint: aws.String(st.S3Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(st.S3AccessKey, secret, ""),
		HTTPClient:   awshttp.NewBuildableClient(),
	})
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func TestStackInMemory(t *testing.T) {
	st := startStack(t, embedstack.Options{
		TemporalPort: embedstack.FreePort,
		UIPort:       embedstack.FreePort,
		S3Port:       embedstack.FreePort,
	})
	c := dial(t, st)

	t.Run("workflow", func(t *testing.T) {
		startWorker(t, c)
		runGreet(t, c, "devstack-greet")
	})

	t.Run("ui", func(t *testing.T) {
		code, body := httpGet(t, st.UIURL+"/")
		if code != http.StatusOK || !strings.Contains(strings.ToLower(body), "<html") {
			t.Errorf("GET / = %d, %.80q; want 200 and the UI's HTML", code, body)
		}
		code, body = httpGet(t, st.UIURL+"/api/v1/namespaces")
		if code != http.StatusOK || !strings.Contains(body, `"`+st.Namespace+`"`) {
			t.Errorf("GET /api/v1/namespaces = %d, %.200q; want 200 listing %q", code, body, st.Namespace)
		}
	})

	t.Run("temporal http api", func(t *testing.T) {
		code, body := httpGet(t, "http://"+st.TemporalHTTPAddress+"/api/v1/namespaces/"+st.Namespace)
		if code != http.StatusOK || !strings.Contains(body, st.Namespace) {
			t.Errorf("GET frontend HTTP namespace = %d, %.200q; want 200", code, body)
		}
	})

	t.Run("s3", func(t *testing.T) {
		testS3RoundTrips(t, st)
	})

	t.Run("search attributes", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		attrs := map[string]enumspb.IndexedValueType{
			"MemagentDocument":   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
			"MemagentChunkCount": enumspb.INDEXED_VALUE_TYPE_INT,
		}
		for i := range 2 { // the second call must be a no-op
			if err := st.RegisterSearchAttributes(ctx, attrs); err != nil {
				t.Fatalf("RegisterSearchAttributes call %d: %v", i+1, err)
			}
		}
		list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: st.Namespace})
		if err != nil {
			t.Fatalf("ListSearchAttributes: %v", err)
		}
		for name, want := range attrs {
			if got := list.GetCustomAttributes()[name]; got != want {
				t.Errorf("search attribute %s = %v, want %v", name, got, want)
			}
		}
		err = st.RegisterSearchAttributes(ctx, map[string]enumspb.IndexedValueType{"MemagentDocument": enumspb.INDEXED_VALUE_TYPE_INT})
		if err == nil {
			t.Errorf("re-registering MemagentDocument as Int: got nil error, want a type conflict")
		}
	})
}

func testS3RoundTrips(t *testing.T, st *embedstack.Stack) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := newS3Client(st, st.S3SecretKey)
	body := []byte("0123456789abcdefghijklmnopqrstuvwxyz")

	for _, key := range []string{"docs/a.txt", "docs/b.txt", "other/c.txt"} {
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: &st.Bucket, Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
	}

	tests := []struct {
		name string
		rng  string
		want string
	}{
		{"whole object", "", string(body)},
		{"range 10-19", "bytes=10-19", "abcdefghij"},
		{"suffix range", "bytes=-4", "wxyz"},
	}
	for _, tt := range tests {
		t.Run("get "+tt.name, func(t *testing.T) {
			in := &s3.GetObjectInput{Bucket: &st.Bucket, Key: aws.String("docs/a.txt")}
			if tt.rng != "" {
				in.Range = aws.String(tt.rng)
			}
			out, err := cl.GetObject(ctx, in)
			if err != nil {
				t.Fatalf("GetObject: %v", err)
			}
			defer out.Body.Close()
			got, err := io.ReadAll(out.Body)
			if err != nil {
				t.Fatalf("read body: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("body = %q, want %q", got, tt.want)
			}
		})
	}

	t.Run("head missing", func(t *testing.T) {
		_, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &st.Bucket, Key: aws.String("missing")})
		var nf *types.NotFound
		if !errors.As(err, &nf) {
			t.Errorf("HeadObject missing: err = %v, want *types.NotFound", err)
		}
	})
	t.Run("get missing", func(t *testing.T) {
		_, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: &st.Bucket, Key: aws.String("missing")})
		var nsk *types.NoSuchKey
		if !errors.As(err, &nsk) {
			t.Errorf("GetObject missing: err = %v, want *types.NoSuchKey", err)
		}
	})
	t.Run("list", func(t *testing.T) {
		out, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &st.Bucket, Prefix: aws.String("docs/")})
		if err != nil {
			t.Fatalf("ListObjectsV2: %v", err)
		}
		var got []string
		for _, o := range out.Contents {
			got = append(got, aws.ToString(o.Key))
		}
		if want := "docs/a.txt,docs/b.txt"; strings.Join(got, ",") != want {
			t.Errorf("keys = %v, want %s", got, want)
		}
	})
	t.Run("wrong secret rejected", func(t *testing.T) {
		bad := newS3Client(st, "not-the-secret")
		if _, err := bad.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &st.Bucket}); err == nil {
			t.Errorf("HeadBucket with a wrong secret: got nil error, want a signature error")
		}
	})
}

// TestTwoStacksInOneProcess runs two in-memory stacks side by side.
func TestTwoStacksInOneProcess(t *testing.T) {
	var (
		wg     sync.WaitGroup
		stacks [2]*embedstack.Stack
		errs   [2]error
	)
	for i := range stacks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			stacks[i], errs[i] = embedstack.Start(ctx, embedstack.Options{
				TemporalPort: embedstack.FreePort,
				UIPort:       embedstack.FreePort,
				S3Port:       embedstack.FreePort,
				Namespace:    fmt.Sprintf("ns-%d", i),
				DisableUI:    i == 1,
				Logger:       testLogger(),
			})
		})
	}
	wg.Wait()
	for i, st := range stacks {
		if st != nil {
			t.Cleanup(func() {
				if err := st.Close(); err != nil {
					t.Errorf("Close stack %d: %v", i, err)
				}
			})
		}
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Start stack %d: %v", i, err)
		}
	}
	t.Logf("VmRSS with two stacks: %s", vmRSS(t))
	if stacks[1].UIURL != "" {
		t.Errorf("UIURL with DisableUI = %q, want empty", stacks[1].UIURL)
	}
	for i, st := range stacks {
		c := dial(t, st)
		startWorker(t, c)
		runGreet(t, c, fmt.Sprintf("two-stacks-%d", i))
		// Each stack sees only its own namespace's workflows.
		other := stacks[1-i].Namespace
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: other})
		cancel()
		if err == nil {
			t.Errorf("stack %d knows namespace %s of the other stack", i, other)
		}
	}
}

// TestRestartOnSameFile starts a stack on a data dir, records a workflow,
// an object and a search attribute, stops it, starts it again on the same
// ports and data dir and finds them; then a fresh process finds them too.
func TestRestartOnSameFile(t *testing.T) {
	dir := t.TempDir()
	attrs := map[string]enumspb.IndexedValueType{"MemagentBatch": enumspb.INDEXED_VALUE_TYPE_KEYWORD}
	var first *embedstack.Stack

	// Subtests so that the first stack's worker and client stop before the
	// stack does, and the stack is closed before the second start.
	if !t.Run("first start", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		first = startStack(t, embedstack.Options{
			DataDir:      dir,
			TemporalPort: freeBasePort(t),
			UIPort:       embedstack.FreePort,
			S3Port:       embedstack.FreePort,
		})
		// The journal_mode pragma took effect (an ignored pragma would leave
		// SQLite in rollback-journal mode, without a -wal file).
		if _, err := os.Stat(filepath.Join(dir, "temporal.db-wal")); err != nil {
			t.Errorf("temporal.db-wal: %v; want SQLite in WAL mode", err)
		}
		c := dial(t, first)
		startWorker(t, c)
		runGreet(t, c, persistedWFID)
		if err := first.RegisterSearchAttributes(ctx, attrs); err != nil {
			t.Fatalf("RegisterSearchAttributes: %v", err)
		}
		cl := newS3Client(first, first.S3SecretKey)
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: &first.Bucket, Key: aws.String("kept.txt"), Body: strings.NewReader("still here")}); err != nil {
			t.Fatalf("PutObject: %v", err)
		}
	}) {
		return
	}

	t.Run("restart on the same ports", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		second := startStack(t, embedstack.Options{
			DataDir:      dir,
			TemporalPort: port(t, first.TemporalAddress),
			UIPort:       port(t, strings.TrimPrefix(first.UIURL, "http://")),
			S3Port:       port(t, strings.TrimPrefix(first.S3Endpoint, "http://")),
		})
		if second.TemporalAddress != first.TemporalAddress || second.S3Endpoint != first.S3Endpoint || second.UIURL != first.UIURL {
			t.Errorf("second stack at %s %s %s, want the first one's %s %s %s",
				second.TemporalAddress, second.S3Endpoint, second.UIURL, first.TemporalAddress, first.S3Endpoint, first.UIURL)
		}
		checkPersisted(t, second, persistedWFID)
		if err := second.RegisterSearchAttributes(ctx, attrs); err != nil {
			t.Errorf("RegisterSearchAttributes after restart: %v", err)
		}
	})

	// The SQLite plugin keeps connections in a process-wide pool, so the
	// in-process restart may have read through a cached connection. A fresh
	// process proves the state is in the files.
	t.Run("fresh process", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildReadsPersisted$", "-test.v")
		cmd.Env = append(os.Environ(), childDataDirEnv+"="+dir, childWorkflowEnv+"="+persistedWFID)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestChildReadsPersisted") {
			t.Fatalf("child process on the same data dir: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "stack ready") {
				t.Logf("child: %s", strings.TrimSpace(line))
			}
		}
	})
}

// TestChildReadsPersisted is run by TestRestartOnSameFile in a child process.
func TestChildReadsPersisted(t *testing.T) {
	dir := os.Getenv(childDataDirEnv)
	if dir == "" {
		t.Skip("run by TestRestartOnSameFile")
	}
	st := startStack(t, embedstack.Options{
		DataDir:      dir,
		TemporalPort: embedstack.FreePort,
		UIPort:       embedstack.FreePort,
		S3Port:       embedstack.FreePort,
		DisableUI:    true,
	})
	checkPersisted(t, st, os.Getenv(childWorkflowEnv))
}

func checkPersisted(t *testing.T, st *embedstack.Stack, workflowID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dial(t, st)
	desc, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		t.Fatalf("DescribeWorkflowExecution %s: %v", workflowID, err)
	}
	if got := desc.GetWorkflowExecutionInfo().GetStatus(); got != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("workflow %s status = %v, want COMPLETED", workflowID, got)
	}
	cl := newS3Client(st, st.S3SecretKey)
	out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: &st.Bucket, Key: aws.String("kept.txt")})
	if err != nil {
		t.Fatalf("GetObject kept.txt: %v", err)
	}
	defer out.Body.Close()
	got, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("read kept.txt: %v", err)
	}
	if string(got) != "still here" {
		t.Errorf("kept.txt = %q, want %q", got, "still here")
	}
}

// freeBasePort returns a Temporal port whose derived ports (+1, +2, +6,
// +10) are free too. It looks below the usual ephemeral range, where the
// process's own outgoing connections cannot take a derived port between two
// starts.
func freeBasePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		base := 20000 + rand.IntN(10000)
		free := true
		for _, off := range []int{0, 1, 2, 6, 10} {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+off)))
			if err != nil {
				free = false
				break
			}
			_ = l.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free block of Temporal ports in 20000-30010")
	return 0
}

func port(t *testing.T, hostport string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatalf("split %q: %v", hostport, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("port of %q: %v", hostport, err)
	}
	return n
}
