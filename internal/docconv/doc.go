// Package docconv turns documents that are not plain text (PDF, DOCX and
// HTML) into UTF-8 text and a page map: which byte range of the text came
// from which page (PDF) or section (DOCX and HTML headings). It reads a
// local file and writes the text to an io.Writer, so memory stays bounded
// by a page, not by the document.
//
// PDF goes through PDFium compiled to WebAssembly and run by wazero (no
// cgo): one runtime per Converter, started on first use, with a bounded
// number of instances. DOCX is read as the zip of XML it is, HTML with the
// x/net tokenizer.
//
// What this package must never do: network or S3 I/O, Temporal calls,
// logging of document text, or holding a whole document in memory.
package docconv
