package plugin_test

import (
	"context"
	"log"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/worker"

	"github.com/memagent/memagent/plugin"
)

// An existing service's worker adds MemAgent with one plugin. It needs a
// Temporal server, a bucket and a model server, so it is compiled, not
// run; the README shows its body, and plugin/testdata/embed is a complete
// service built and run by TestEmbedInAnotherModule.
func Example() {
	ctx := context.Background()
	c, err := client.Dial(envconfig.MustLoadDefaultClientOptions())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	s3Client := s3.NewFromConfig(awsCfg)

	p, err := plugin.New(plugin.Options{ // in code; plugin.OptionsFromEnv() reads the environment instead
		Bucket: "my-memagent-bucket", S3Client: s3Client, ModelURLs: []string{"http://vllm.internal:8000/v1"},
	})
	if err != nil {
		log.Fatal(err)
	}
	w := worker.New(c, "memagent", worker.Options{Plugins: []worker.Plugin{p}})
	if err := w.Run(worker.InterruptCh()); err != nil { // fails at start on a bad bucket or model URL
		log.Fatal(err)
	}
}
