// Package charts holds the Helm chart of the memagent worker (memagent/)
// and the tests that lint and render it with a Helm built from the Go
// module proxy. It has no Go code of its own: the chart is the product.
package charts
