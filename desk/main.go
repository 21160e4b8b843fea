// Command desk serves the review desk: a web page on which reviewers decide
// on every answer of a review or batch waiting for sign-off, with the cited
// page of the PDF in front of them (docs/REVIEW.md#the-review-desk).
//
//	go run ./desk --reviewers tokens:/etc/memagent/reviewers
//	go run ./desk --help
//
// It reads S3 and renders pages with PDFium, so it is a program of its own
// (package desk/deskapp), not a command of the client CLI (starter).
package main

import (
	"github.com/memagent/memagent/desk/deskapp"
	"github.com/memagent/memagent/worker/workerapp"
)

func main() { workerapp.Main("desk", deskapp.Run) }
