// Command embed is a Go service in its own module that embeds memagent:
// one Temporal worker runs the service's own workflow and, through the
// plugin, memagent's. Everything is configured in code, from its flags;
// it reads no environment variable. It uploads a document with its own S3
// client, which the plugin shares, asks one question about it, and prints
// the result as JSON.
//
// The memagent module's plugin tests (TestEmbedInAnotherModule) run it
// against the embedded dev stack.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/plugin"
)

// config is what the flags say.
type config struct {
	temporal, namespace, taskQueue      string
	s3Endpoint, region, keyID, secret   string
	bucket, modelURL, docFile, question string
}

// Result is what the command prints.
type Result struct {
	Greeting   string `json:"greeting"`
	Answer     string `json:"answer"`
	Chunks     int    `json:"chunks"`
	WorkflowID string `json:"workflow_id"`
	Document   string `json:"document"`
}

func main() {
	var c config
	flag.StringVar(&c.temporal, "temporal", "", "Temporal frontend host:port")
	flag.StringVar(&c.namespace, "namespace", "default", "Temporal namespace")
	flag.StringVar(&c.taskQueue, "task-queue", "embed", "task queue of the service and of memagent")
	flag.StringVar(&c.s3Endpoint, "s3-endpoint", "", "S3-compatible endpoint URL")
	flag.StringVar(&c.region, "region", "us-east-1", "S3 region")
	flag.StringVar(&c.keyID, "s3-key-id", "", "S3 access key id")
	flag.StringVar(&c.secret, "s3-secret", "", "S3 secret access key")
	flag.StringVar(&c.bucket, "bucket", "", "bucket for the document and memagent's outputs")
	flag.StringVar(&c.modelURL, "model-url", "", "OpenAI-compatible base URL, including /v1")
	flag.StringVar(&c.docFile, "doc", "", "text file to upload and ask about")
	flag.StringVar(&c.question, "question", "", "the question")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		os.Exit(1)
	}
}

// Greet is the service's own workflow.
func Greet(_ workflow.Context, name string) (string, error) { return "hello, " + name, nil }

func run(ctx context.Context, c config) (*Result, error) {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	// The service's own S3 client, which memagent shares.
	s3c := s3.NewFromConfig(aws.Config{
		Region:      c.region,
		Credentials: credentials.NewStaticCredentialsProvider(c.keyID, c.secret, ""),
	}, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(c.s3Endpoint)
		o.UsePathStyle = true
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	text, err := os.ReadFile(c.docFile)
	if err != nil {
		return nil, err
	}
	doc := activities.Location{Bucket: c.bucket, Key: "embed/" + c.taskQueue + "/doc.txt"}
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(doc.Bucket), Key: aws.String(doc.Key),
		Body: strings.NewReader(string(text)), ContentType: aws.String("text/plain"),
	}); err != nil {
		return nil, fmt.Errorf("upload %s: %w", doc, err)
	}

	// memagent, configured in code only.
	p, err := plugin.New(plugin.Options{
		Bucket:    c.bucket,
		S3Client:  s3c,
		ModelURLs: []string{c.modelURL},
		Limits:    activities.Limits{MaxChunks: 1000},
		Logger:    logger,
	})
	if err != nil {
		return nil, err
	}
	tc, err := client.DialContext(ctx, client.Options{
		HostPort: c.temporal, Namespace: c.namespace,
		Logger:  log.NewStructuredLogger(logger), // stdout is the result's
		Plugins: []client.Plugin{p},              // every worker of this client runs memagent
	})
	if err != nil {
		return nil, err
	}
	defer tc.Close()
	w := worker.New(tc, c.taskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(Greet, workflow.RegisterOptions{Name: "embed.Greet"})
	if err := w.Start(); err != nil {
		return nil, err
	}
	defer w.Stop()

	greet, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "embed-greet-" + c.taskQueue, TaskQueue: c.taskQueue}, "embed.Greet", "memagent")
	if err != nil {
		return nil, err
	}
	res := &Result{Document: doc.String()}
	if err := greet.Get(ctx, &res.Greeting); err != nil {
		return nil, err
	}
	mc := memclient.New(tc, memclient.Options{TaskQueue: c.taskQueue})
	out, err := mc.Ask(ctx, api.DocumentQAInput{
		Document: doc.String(), Question: c.question,
		Options: api.ModelOptions{ChunkTokens: 2000},
	})
	if err != nil {
		return nil, err
	}
	res.Answer, res.Chunks, res.WorkflowID = out.Answer, out.Chunks, out.WorkflowID
	return res, nil
}
