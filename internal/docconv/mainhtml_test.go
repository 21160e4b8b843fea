package docconv_test

import (
	"strings"
	"testing"
)

// TestHTMLMainContent: the boilerplate of manuals' HTML (DocBook's
// Prev/Up/Next bars and per-page tables of contents, Sphinx's related bar,
// sidebar and footer around its role=main body, Texinfo's navigation
// panel, a generic site's menu and footer) is left out by main-content
// detection, and the text, headings and tables stay, a table row a line.
func TestHTMLMainContent(t *testing.T) {
	for _, tc := range []struct {
		name, html string
		want       []string // the paragraphs, in order
	}{
		{"DocBook", `<html><head><title>28.2. Stats</title></head><body>
<div class="navheader"><table width="100%" summary="Navigation header"><tr><th colspan="3" align="center">28.2. The Cumulative Statistics System</th></tr>
<tr><td><a accesskey="p" href="monitoring-ps.html">Prev</a> </td><th>Chapter 28. Monitoring Database Activity</th><td><a accesskey="h" href="index.html">Home</a></td><td><a accesskey="n" href="monitoring-locks.html">Next</a></td></tr></table><hr/></div>
<div class="sect1"><div class="titlepage"><h2 class="title">28.2. The Cumulative Statistics System</h2></div>
<div class="toc"><dl class="toc"><dt><a href="#a">28.2.1. Statistics Collection Configuration</a></dt><dt><a href="#b">28.2.2. Viewing Statistics</a></dt><dt><a href="#c">28.2.3. pg_stat_activity</a></dt></dl></div>
<p>PostgreSQL's cumulative statistics system supports collection and reporting of information about server activity.</p>
<p>See <a class="xref" href="runtime-config.html">Chapter 20</a> for details.</p>
<div class="table"><table><tr><th>Name</th><th>Storage Size</th></tr><tr><td>smallint</td><td>2 bytes</td></tr></table></div>
</div>
<div class="navfooter"><hr/><table width="100%" summary="Navigation footer"><tr><td><a accesskey="p" href="monitoring-ps.html">Prev</a> </td><td><a accesskey="u" href="monitoring.html">Up</a></td><td> <a accesskey="n" href="monitoring-locks.html">Next</a></td></tr>
<tr><td>28.1. Standard Unix Tools </td><td><a accesskey="h" href="index.html">Home</a></td><td> 28.3. Viewing Locks</td></tr></table></div></body></html>`,
			[]string{"28.2. The Cumulative Statistics System",
				"PostgreSQL's cumulative statistics system supports collection and reporting of information about server activity.",
				"See Chapter 20 for details.", "Name | Storage Size", "smallint | 2 bytes"}},
		{"Sphinx", `<!DOCTYPE html><html><body>
<div class="pageheader"><a href="index.html"><img src="h.png" alt="SPHINX"/></a></div>
<div class="related" role="navigation" aria-label="related navigation"><h3>Navigation</h3><ul><li><a href="genindex.html">index</a></li><li><a href="index.html">Documentation</a> &raquo;</li></ul></div>
<div class="document"><div class="sphinxsidebar" role="navigation"><h3>On this page</h3><ul><li><a href="#">Sphinx FAQ</a></li></ul></div>
<div class="body" role="main"><section id="faq"><h1>Sphinx FAQ<a class="headerlink" href="#faq" title="Permalink">¶</a></h1>
<p>This is a list of Frequently Asked Questions about Sphinx.</p></section></div></div>
<div class="footer" role="contentinfo">&copy; Copyright 2007-2022, the Sphinx developers. Created using Sphinx 5.3.0.</div></body></html>`,
			[]string{"Sphinx FAQ", "This is a list of Frequently Asked Questions about Sphinx."}},
		{"Texinfo", `<html><body><div class="chapter-level-extent" id="Overview">
<div class="nav-panel"><p>Next: <a href="Basics.html" accesskey="n" rel="next">Basics</a>, Previous: <a href="index.html" accesskey="p" rel="prev">Top</a>, Up: <a href="index.html" accesskey="u" rel="up">Top</a> &nbsp; [<a href="#toc" rel="contents">Contents</a>]</p></div><hr>
<h2 class="chapter">1 Overview</h2>
<p>The program reads its input and writes its output.</p></div></body></html>`,
			[]string{"1 Overview", "The program reads its input and writes its output."}},
		{"a site without main", `<html><body><header><a href="/">Home</a> <a href="/docs">Docs</a> <a href="/blog">Blog</a></header>
<div><div class="crumbs"><a href="/">Home</a> › <a href="/docs">Docs</a> › <a href="/docs/x">X</a></div>
<h1>Setting up</h1><p>Install the package, then run it once. It writes its configuration on the first run.</p><p>Then restart.</p></div>
<footer><p>Copyright 2024 Example Inc. All rights reserved.</p></footer></body></html>`,
			[]string{"Setting up", "Install the package, then run it once. It writes its configuration on the first run.", "Then restart."}},
		{"a page that is a table of contents", `<html><body><div class="book"><h1>The Manual</h1><div class="toc"><p><b>Table of Contents</b></p><dl>
<dt><a href="a.html">1. Getting Started</a></dt><dt><a href="b.html">2. The SQL Language</a></dt><dt><a href="c.html">3. Advanced Features</a></dt></dl></div></div></body></html>`,
			[]string{"The Manual", "Table of Contents", "1. Getting Started", "2. The SQL Language", "3. Advanced Features"}},
		{"unclosed paragraphs and items", `<html><body><p>First paragraph, left open.<p>Second paragraph.<ul><li>one<li>two</ul></body></html>`,
			[]string{"First paragraph, left open.", "Second paragraph.", "one", "two"}},
		{"a table of contents in a page left open", `<html><body><h1>Chapter 2</h1><div class="toc"><ul><li><a href="a">2.1 One</a><li><a href="b">2.2 Two</a><li><a href="c">2.3 Three</a></ul></div>
<p>The chapter begins here, and it goes on for a while, as chapters do, with sentences.`,
			[]string{"Chapter 2", "The chapter begins here, and it goes on for a while, as chapters do, with sentences."}},
		{"links alone", `<html><body><ul><li><a href="a">A</a><li><a href="b">B</a><li><a href="c">C</a></ul></body></html>`,
			[]string{"A", "B", "C"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, _, err := convert(t, []byte(tc.html))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(strings.TrimSpace(text), "\n\n"); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("text:\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
