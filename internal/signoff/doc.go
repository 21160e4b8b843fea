// Package signoff turns a sign-off's decisions and the grid they were made
// on into the decided grid: one row a cell, with the model's answer, the
// final answer, the decision, who made it and when, and the evidence
// (document, printed page, quote), as CSV and as an XLSX workbook. The
// worker writes them when a sign-off ends; `starter export grid` and the
// review desk write them on demand.
//
// It reads nothing and writes nothing itself: callers hand it the rows and
// a writer. It never logs what a row holds.
package signoff
