package inference

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// API is the HTTP dialect a model server speaks.
type API string

// The dialects.
const (
	// APIOpenAI is OpenAI's own API and every server compatible with it
	// (vLLM, SGLang, the simulator): requests go to BaseURL+"/chat/completions"
	// with a bearer key, and BaseURL+"/models" lists the models. The zero
	// API means this one.
	APIOpenAI API = "openai"
	// APIAzure is Azure OpenAI: requests go to
	// {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=V
	// with an api-key header. The deployment is the model name; Azure lists
	// no deployments with their context lengths, so the context length comes
	// from configuration, and nothing is asked of the server but
	// completions.
	APIAzure API = "azure"
)

// DefaultAzureAPIVersion is the Azure OpenAI api-version sent when none is
// configured: a generally available version that accepts
// max_completion_tokens, which the reasoning models require.
const DefaultAzureAPIVersion = "2024-10-21"

// ParseAPI reads a dialect name: "" or "openai", or "azure" (any case).
func ParseAPI(s string) (API, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", string(APIOpenAI):
		return APIOpenAI, nil
	case string(APIAzure):
		return APIAzure, nil
	}
	return "", fmt.Errorf("inference: model API %q: use openai (OpenAI and compatible servers such as vLLM) or azure (Azure OpenAI)", s)
}

// normalizeAzureEndpoint checks an Azure OpenAI resource URL and trims it to
// the form go-openai appends "/openai/deployments/..." to. A URL that
// already names a deployment is refused: the deployment goes in the model
// name, so that a request may name another one.
func normalizeAzureEndpoint(raw string) (string, error) {
	base := strings.TrimRight(strings.TrimSpace(raw), "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("Azure OpenAI endpoint %q is not an http or https URL with a host: set AZURE_OPENAI_ENDPOINT to the resource's URL, e.g. https://NAME.openai.azure.com", redactURL(raw))
	}
	if strings.Contains(u.Path, "/deployments") {
		return "", fmt.Errorf("Azure OpenAI endpoint %q names a deployment: set AZURE_OPENAI_ENDPOINT to the resource's URL (https://NAME.openai.azure.com) and MEMAGENT_MODEL to the deployment name", redactURL(base))
	}
	return strings.TrimSuffix(base, "/openai"), nil
}

// reasoningFamily reports whether model, or the model behind it that
// family names (an Azure deployment's), is one of OpenAI's reasoning
// models: the o1, o3 and o4 families and gpt-5. Their chat API refuses
// max_tokens (it wants max_completion_tokens, which also bounds the hidden
// reasoning) and any temperature or top_p but the defaults. A model whose
// own name reads as a reasoning model's is sent as one whatever family
// says: go-openai refuses anything else for such names before sending.
func reasoningFamily(model, family string) bool {
	return isReasoningName(model) || isReasoningName(family)
}

func isReasoningName(name string) bool {
	m := strings.ToLower(strings.TrimSpace(name))
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	if strings.HasPrefix(m, "gpt-5") {
		return true
	}
	for _, f := range []string{"o1", "o3", "o4"} {
		if m == f || strings.HasPrefix(m, f+"-") {
			return true
		}
	}
	return false
}

// Reasoning markup some models put in the content (Qwen3, DeepSeek-R1 and
// their kin without a reasoning parser in the server).
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// stripReasoning removes a model's reasoning from a completion's content,
// so that only what it concluded becomes the memory or the answer:
// everything up to the last "</think>" (the opening tag may be in the
// prompt's template rather than the output), or, when a "<think>" at the
// start is never closed (the budget ran out mid-thought), everything.
// Whitespace between the reasoning and the rest goes with the reasoning.
// Content without reasoning is returned unchanged. Reasoning a server
// returns apart from the content (reasoning_content) never reaches it.
func stripReasoning(s string) string {
	if i := strings.LastIndex(s, thinkClose); i >= 0 {
		return strings.TrimLeft(s[i+len(thinkClose):], " \t\r\n")
	}
	if strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), thinkOpen) {
		return ""
	}
	return s
}

// retryAfterValue is the delay a response asks for, as Retry-After
// (seconds or an HTTP date): Azure's retry-after-ms, which is more
// precise, when it is there, else Retry-After.
func retryAfterValue(h http.Header) string {
	if ms := strings.TrimSpace(h.Get("Retry-After-Ms")); ms != "" {
		if v, err := strconv.ParseFloat(ms, 64); err == nil && v >= 0 {
			return strconv.FormatFloat(v/1000, 'f', -1, 64)
		}
	}
	return h.Get("Retry-After")
}

// clientSideErrors are go-openai's refusals of a request before it is
// sent: the request is at fault, so they are bad requests, not connection
// failures.
var clientSideErrors = []error{
	openai.ErrChatCompletionInvalidModel,
	openai.ErrChatCompletionStreamNotSupported,
	openai.ErrReasoningModelMaxTokensDeprecated,
	openai.ErrReasoningModelLimitationsLogprobs,
	openai.ErrReasoningModelLimitationsOther,
	openai.ErrReasoningSamplingUnsupported,
	openai.ErrReasoningEffortUnsupported,
	openai.ErrReasoningToolsRequireResponses,
	openai.ErrO1MaxTokensDeprecated,
	openai.ErrO1BetaLimitationsOther,
}

func isClientSideError(err error) bool {
	for _, e := range clientSideErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
