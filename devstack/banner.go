package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/memagent/memagent/internal/dev/embedstack"
)

// printDevStack writes where the dev stack listens and the shell exports a
// client in any language needs to reach it: Temporal's gRPC and HTTP API
// addresses, the S3 endpoint with its full credentials and, with the
// simulator, the model server's URL (OPENAI_BASE_URL). simulatorURL is
// empty when the model is modelURL instead; dir is empty in memory.
func printDevStack(w io.Writer, s *embedstack.Stack, simulatorURL, modelURL, dir string) {
	fmt.Fprintf(w, "memagent dev stack\n")
	fmt.Fprintf(w, "  Temporal:  %s (namespace %s)\n", s.TemporalAddress, s.Namespace)
	fmt.Fprintf(w, "  HTTP API:  http://%s (Temporal's HTTP API: /api/v1/namespaces/%s/workflows/...)\n", s.TemporalHTTPAddress, s.Namespace)
	if s.UIURL != "" {
		fmt.Fprintf(w, "  Web UI:    %s\n", s.UIURL)
	}
	fmt.Fprintf(w, "  S3:        %s (bucket %s, key %s)\n", s.S3Endpoint, s.Bucket, s.S3AccessKey)
	if simulatorURL != "" {
		fmt.Fprintf(w, "  Model:     %s (inference simulator, not a model)\n", simulatorURL)
	} else {
		fmt.Fprintf(w, "  Model:     %s\n", modelURL)
	}
	if dir != "" {
		fmt.Fprintf(w, "  Data:      %s\n", dir)
	}
	fmt.Fprintf(w, "clients in any language (docs/API.md), paste into a shell:\n")
	var temporal, s3 []embedstack.EnvVar
	for _, v := range s.ClientEnv() {
		if strings.HasPrefix(v.Name, "TEMPORAL_") {
			temporal = append(temporal, v)
		} else {
			s3 = append(s3, v)
		}
	}
	fmt.Fprintf(w, "  %s\n  %s\n", exportLine(temporal), exportLine(s3))
	if simulatorURL != "" {
		// A worker or ask started on its own must reach the simulator
		// too, and it listens on a port of its own (--free-ports).
		fmt.Fprintf(w, "  %s\n", exportLine([]embedstack.EnvVar{{Name: "OPENAI_BASE_URL", Value: simulatorURL}}))
	}
}

// exportLine renders vars as one POSIX shell export command.
func exportLine(vars []embedstack.EnvVar) string {
	var b strings.Builder
	b.WriteString("export")
	for _, v := range vars {
		fmt.Fprintf(&b, " %s=%s", v.Name, shellQuote(v.Value))
	}
	return b.String()
}

// shellQuote leaves a value made only of characters the shell takes
// literally as it is, and single-quotes anything else.
func shellQuote(v string) string {
	if v != "" && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@%+,=") == "" {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}
