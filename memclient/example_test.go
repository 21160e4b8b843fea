package memclient_test

import (
	"context"
	"fmt"
	"log"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/memclient"
)

// A service asks one question, a review of many questions and a batch over
// a manifest, and waits for each. It needs a Temporal server and a worker
// running the memagent plugin, so it is compiled, not run; the README shows
// its body.
func ExampleClient() {
	ctx := context.Background()
	c, err := client.Dial(envconfig.MustLoadDefaultClientOptions()) // TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE…
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	mc := memclient.New(c, memclient.Options{})

	res, err := mc.Ask(ctx, api.DocumentQAInput{Document: "s3://bucket/contract.txt", Question: "Who may terminate?"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Answer)

	grid, err := mc.Review(ctx, api.ReviewInput{Document: "s3://bucket/contract.txt", Questions: []api.ReviewQuestion{
		{ID: "termination", Question: "Who may terminate?"},
		{ID: "law", Question: "Which law governs the agreement?"},
	}})
	if err != nil {
		log.Fatal(err)
	}
	for _, row := range grid.Rows {
		fmt.Println(row.ID, row.Status, row.Answer)
	}

	batch, err := mc.Batch(ctx, api.BatchQAInput{Manifest: "s3://bucket/items.jsonl", Name: "nightly"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(batch.Succeeded, "of", batch.Items, "answered; report at", batch.ReportURI)
}

// The workflow id of a question is derived from the request, so the same
// request started twice, here or by `starter ask`, is one run.
func ExampleWorkflowID() {
	in := api.DocumentQAInput{Document: "s3://b/d.txt", Question: "q?"}
	fmt.Println(memclient.WorkflowID(in))
	// Output: memagent-qa-105a1ff7419ddc9d
}
