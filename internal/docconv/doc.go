// Package docconv turns documents that are not plain text (PDF, DOCX,
// HTML and email) into UTF-8 text and a page map: which byte range of the
// text came from which page (PDF), section (DOCX and HTML headings) or
// part of an email's family (a message's text, its attachments' pages and
// sections, with an index of its messages' fields, threads and
// duplicates). It reads a local file and writes the text to an io.Writer,
// so memory stays bounded by a page (or a message's text part), not by
// the document.
//
// PDF goes through PDFium compiled to WebAssembly and run by wazero (no
// cgo): one runtime per Converter, started on first use, with a bounded
// number of instances. The converter also reads a PDF's objects itself
// (pdfobj.go), page by page, for the one placement PDFium gets wrong that
// its API cannot show: the space a TJ array drops when it holds an empty
// string (tjshift.go). DOCX is read as the zip of XML it is, HTML with the
// x/net tokenizer, email with net/textproto, mime/multipart and x/text's
// charsets, each attachment by the converter of its format.
//
// What this package must never do: network or S3 I/O, Temporal calls,
// logging of document text, or holding a whole document in memory.
package docconv
