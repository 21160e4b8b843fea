package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
)

type tokenizeRequest struct {
	Model    string        `json:"model"`
	Prompt   *string       `json:"prompt"`
	Messages []chatMessage `json:"messages"`
}

// tokenizeResponse is vLLM's /tokenize answer. The simulator's Tokenizer
// only counts, so Tokens holds Count placeholder ids, all zero: its length
// is right, its values mean nothing.
type tokenizeResponse struct {
	Count       int   `json:"count"`
	MaxModelLen int   `json:"max_model_len"`
	Tokens      []int `json:"tokens"`
}

// tokenize serves POST /tokenize in the shape vLLM and SGLang serve it at
// the server's root: a "prompt" string or chat "messages". For messages the
// count is the sum over their text, the prompt_tokens a completion of the
// same messages reports.
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		s.flatError(w, r, http.StatusBadRequest, "BadRequestError", "request body is not a tokenize request: "+err.Error())
		return
	}
	if req.Model != "" && req.Model != s.model {
		s.nestedError(w, r, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist: this simulator serves %q.", req.Model, s.model))
		return
	}
	n := 0
	switch {
	case req.Messages != nil && req.Prompt != nil:
		s.flatError(w, r, http.StatusBadRequest, "BadRequestError", "send either prompt or messages, not both")
		return
	case req.Messages != nil:
		for _, m := range req.Messages {
			n += s.count(m.text())
		}
	case req.Prompt != nil:
		n = s.count(*req.Prompt)
	default:
		s.flatError(w, r, http.StatusBadRequest, "BadRequestError", "send a prompt string or a messages list to tokenize")
		return
	}
	writeJSON(w, http.StatusOK, tokenizeResponse{Count: n, MaxModelLen: s.maxLen, Tokens: make([]int, n)})
}
