package inference

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// Tokenize asks the server to count the tokens of text with the model's own
// tokenizer, through POST /tokenize at the server's root (vLLM and SGLang
// serve it there, not under /v1). The prompt is sent as raw text, without a
// chat template.
//
// Azure OpenAI has no such endpoint: there it fails at once with a
// KindBadRequest error and makes no request.
func (c *Client) Tokenize(ctx context.Context, model, text string) (int, error) {
	if c.dialect == APIAzure {
		return 0, &Error{Kind: KindBadRequest, Message: "Azure OpenAI has no /tokenize endpoint"}
	}
	body, err := json.Marshal(map[string]any{"model": model, "prompt": text, "add_special_tokens": false})
	if err != nil {
		return 0, err
	}
	root := strings.TrimSuffix(c.baseURL, "/v1")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, root+"/tokenize", bytes.NewReader(body))
	if err != nil {
		return 0, &Error{Kind: KindBadRequest, Message: c.sanitize("build request: "+err.Error(), ""), Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, c.classify(ctx, err, &exchange{}, "")
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxModelsBody))
	if err != nil {
		return 0, c.classify(ctx, err, &exchange{}, "")
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, c.statusError(resp.StatusCode, messageFromBody(data), retryAfterValue(resp.Header), "")
	}
	var out struct {
		Count  int   `json:"count"`
		Tokens []int `json:"tokens"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return 0, &Error{Kind: KindServer, StatusCode: resp.StatusCode, Message: c.sanitize("decode tokenize answer: "+err.Error(), ""), Err: err}
	}
	if out.Count == 0 && len(out.Tokens) > 0 {
		out.Count = len(out.Tokens)
	}
	return out.Count, nil
}

// Tokenize counts text with the first endpoint that answers; see
// Client.Tokenize.
func (p *Pool) Tokenize(ctx context.Context, model, text string) (int, error) {
	var firstErr error
	for _, ep := range p.endpoints {
		n, err := ep.client.Tokenize(ctx, model, text)
		if err == nil {
			return n, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return 0, firstErr
}
