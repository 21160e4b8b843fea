package docconv_test

import (
	"strings"
	"testing"
)

// TestHTMLMainContent: the boilerplate of manuals' HTML (DocBook's
// Prev/Up/Next bars and per-page tables of contents, Sphinx's related bar,
// sidebar and footer around its role=main body or without roles, Texinfo
// 6's and 7's navigation panels, whose names of the pages around made ten
// words and more, LaTeX2HTML's navigation panel, a generic site's menu
// and footer) is left out by structure and main-content detection, and
// the text, headings and tables stay, a table row a line.
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
		{"Texinfo 7, a panel of ten words and more", `<!DOCTYPE html><html><!-- Created by GNU Texinfo 7.1.1 --><body>
<div class="section-level-extent" id="Bezier-curves">
<div class="nav-panel"><p>Next: <a href="LaTeX-usage.html" accesskey="n" rel="next">LaTeX usage</a>, Previous: <a href="Drawing-commands.html" accesskey="p" rel="prev">Drawing commands and their options</a>, Up: <a href="index.html" accesskey="u" rel="up">Asymptote</a> &nbsp; [<a href="index.html#SEC_Contents" title="Table of contents" rel="contents">Contents</a>][<a href="Index.html" title="Index" rel="index">Index</a>]</p></div><hr>
<h2 class="chapter" id="Bezier-curves-1"><span>5 Bezier curves<a class="copiable-link" href="#Bezier-curves-1"> &para;</a></span></h2>
<p>Each interior node of a cubic spline may be given a direction prefix or suffix.</p>
<hr><div class="nav-panel"><p>Next: <a href="LaTeX-usage.html" accesskey="n" rel="next">LaTeX usage</a>, Previous: <a href="Drawing-commands.html" accesskey="p" rel="prev">Drawing commands and their options</a>, Up: <a href="index.html" accesskey="u" rel="up">Asymptote</a> &nbsp; [<a href="index.html#SEC_Contents" title="Table of contents" rel="contents">Contents</a>][<a href="Index.html" title="Index" rel="index">Index</a>]</p></div></div></body></html>`,
			[]string{"5 Bezier curves", "Each interior node of a cubic spline may be given a direction prefix or suffix."}},
		{"Texinfo 7, a node that is its heading and menu", `<html><body><div class="section-level-extent" id="Operators">
<div class="nav-panel"><p>Next: <a href="Implicit-scaling.html" accesskey="n" rel="next">Implicit scaling</a>, Previous: <a href="Structures.html" accesskey="p" rel="prev">Structures</a>, Up: <a href="Programming.html" accesskey="u" rel="up">Programming</a> &nbsp; [<a href="index.html#SEC_Contents" rel="contents">Contents</a>][<a href="Index.html" rel="index">Index</a>]</p></div><hr>
<h3 class="section">6.10 Operators</h3>
<ul class="mini-toc"><li><a href="a.html" accesskey="1">Arithmetic &amp; logical operators</a></li><li><a href="b.html" accesskey="2">Self &amp; prefix operators</a></li><li><a href="c.html" accesskey="3">User-defined operators</a></li></ul></div></body></html>`,
			[]string{"6.10 Operators"}},
		{"Texinfo 6", `<html><body><span id="Tutorial"></span><div class="header"><p>
Next: <a href="Command_002dLine-Interface.html" accesskey="n" rel="next">Command-Line Interface</a>, Previous: <a href="Configuring.html" accesskey="p" rel="prev">Configuring Asymptote for your system</a>, Up: <a href="index.html" accesskey="u" rel="up">Top</a> &nbsp; [<a href="index.html#SEC_Contents" title="Table of contents" rel="contents">Contents</a>][<a href="Index.html" title="Index" rel="index">Index</a>]</p>
</div><hr><h2 class="chapter">3 Tutorial</h2><p>A concise introduction to Asymptote is given here.</p></body></html>`,
			[]string{"3 Tutorial", "A concise introduction to Asymptote is given here."}},
		{"DocBook, a footer naming the pages in sentences", `<html><body><div class="navheader"><table><tr><th colspan="5">15.1. How Parallel Query Works</th></tr>
<tr><td><a accesskey="p" href="parallel-query.html">Prev</a></td><td><a accesskey="u" href="parallel-query.html">Up</a></td><th>Chapter 15. Parallel Query</th><td><a accesskey="h" href="index.html">Home</a></td><td><a accesskey="n" href="when.html">Next</a></td></tr></table><hr /></div>
<div class="sect1"><h2 class="title">15.1. How Parallel Query Works</h2><p>When the optimizer determines that parallel query is the fastest execution strategy, it creates a plan.</p></div>
<div class="navfooter"><hr /><table><tr><td><a accesskey="p" href="parallel-query.html">Prev</a></td><td><a accesskey="u" href="parallel-query.html">Up</a></td><td><a accesskey="n" href="when.html">Next</a></td></tr>
<tr><td>Chapter 15. Parallel Query </td><td><a accesskey="h" href="index.html">Home</a></td><td> 15.2. When Can Parallel Query Be Used?</td></tr></table></div></body></html>`,
			[]string{"15.1. How Parallel Query Works", "When the optimizer determines that parallel query is the fastest execution strategy, it creates a plan."}},
		{"Sphinx without roles", `<html><body><div class="related"><h3>Navigation</h3><ul><li class="right"><a href="genindex.html" title="General Index">index</a></li><li class="right"><a href="usage.html" title="Using Sphinx">next</a> |</li><li><a href="index.html">Sphinx documentation</a> &#187;</li></ul></div>
<div class="document"><div class="body"><section><h1>Installing Sphinx</h1><p>Sphinx is written in Python and supports Python 3.7+.</p></section></div>
<div class="sphinxsidebar"><div class="sphinxsidebarwrapper"><h3>Table of Contents</h3><ul><li><a href="#">Installing Sphinx</a><ul><li><a href="#overview">Overview</a></li><li><a href="#linux">Linux</a></li></ul></li></ul><h3>Previous topic</h3><p><a href="tutorial.html" title="previous chapter">Tutorial: Build your first project</a></p></div></div></div>
<div class="footer">&#169; Copyright 2007-2022, the Sphinx developers. Created using Sphinx 5.3.0.</div></body></html>`,
			[]string{"Installing Sphinx", "Sphinx is written in Python and supports Python 3.7+."}},
		{"LaTeX2HTML", `<html><body><div class="navigation"><a name="tex2html1" href="node6.html"><img alt="next" src="next.png"></a> <a href="gnuplot.html"><img alt="up" src="up.png"></a> <a href="node4.html"><img alt="previous" src="prev.png"></a> <a href="node7.html"><img alt="index" src="index.png"></a><br>
<b> Next:</b> <a href="node6.html">Features introduced in version</a> <b> Up:</b> <a href="gnuplot.html">Gnuplot</a> <b> Previous:</b> <a href="node4.html">Seeking-assistance</a> &nbsp; <b><a href="node7.html">Index</a></b><br><br></div>
<h1>New features</h1><p>This section lists major additions since version 5.2.</p></body></html>`,
			[]string{"New features", "This section lists major additions since version 5.2."}},
		{"a site without main", `<html><body><header><a href="/">Home</a> <a href="/docs">Docs</a> <a href="/blog">Blog</a></header>
<div><div class="crumbs"><a href="/">Home</a> › <a href="/docs">Docs</a> › <a href="/docs/x">X</a></div>
<h1>Setting up</h1><p>Install the package, then run it once. It writes its configuration on the first run.</p><p>Then restart.</p></div>
<footer><p>Copyright 2024 Example Inc. All rights reserved.</p></footer></body></html>`,
			[]string{"Setting up", "Install the package, then run it once. It writes its configuration on the first run.", "Then restart."}},
		{"a page that is a table of contents", `<html><body><div class="book"><h1>The Manual</h1><div class="toc"><p><b>Table of Contents</b></p><dl>
<dt><a href="a.html">1. Getting Started</a></dt><dt><a href="b.html">2. The SQL Language</a></dt><dt><a href="c.html">3. Advanced Features</a></dt></dl></div></div></body></html>`,
			[]string{"The Manual", "Table of Contents", "1. Getting Started", "2. The SQL Language", "3. Advanced Features"}},
		{"unclosed paragraphs and items", `<html><body><p>First paragraph, left open.<p>Second paragraph.<ul><li>one<li>two</ul></body></html>`,
			[]string{"First paragraph, left open.", "Second paragraph.", "• one", "• two"}},
		{"a table of contents in a page left open", `<html><body><h1>Chapter 2</h1><div class="toc"><ul><li><a href="a">2.1 One</a><li><a href="b">2.2 Two</a><li><a href="c">2.3 Three</a></ul></div>
<p>The chapter begins here, and it goes on for a while, as chapters do, with sentences.`,
			[]string{"Chapter 2", "The chapter begins here, and it goes on for a while, as chapters do, with sentences."}},
		{"links alone", `<html><body><ul><li><a href="a">A</a><li><a href="b">B</a><li><a href="c">C</a></ul></body></html>`,
			[]string{"• A", "• B", "• C"}},
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

// TestHTMLStructure: the structure the markup says is kept in the text:
// headings on their own line, list items one a line with their markers (a
// bullet, or their number in an ordered list: its start, an item's value,
// its type of letters or roman numerals, nested lists), preformatted blocks as lines with their indentation, the
// first line's included, a table row a line with its cells apart by
// " | " (as PDF and DOCX tables are), a definition list's term on its
// line and its description after it.
func TestHTMLStructure(t *testing.T) {
	for _, tc := range []struct {
		name, html, want string
	}{
		{"heading", `<html><body><h2>2.2.2 Working on input files</h2>LilyPond input files are similar to source files.</body></html>`,
			"2.2.2 Working on input files\n\nLilyPond input files are similar to source files."},
		{"bullets", `<html><body><ul><li>one item</li><li>two <b>items</b></li><li><p>in a paragraph</p></li><li></li></ul></body></html>`,
			"• one item\n\n• two items\n\n• in a paragraph"},
		{"numbers", `<html><body><ol start="3"><li>third</li><li><p>fourth</p><ul><li><a href="x">nested</a></li></ul></li><li value="9">ninth</li><li>tenth</li></ol><ol><li>one</li></ol></body></html>`,
			"3. third\n\n4. fourth\n\n• nested\n\n9. ninth\n\n10. tenth\n\n1. one"},
		{"letters and roman numerals", `<html><body><ol type="a"><li>first</li><li value="27">later</li></ol><ol type="I" start="4"><li>fourth</li><li>fifth</li></ol></body></html>`,
			"a. first\n\naa. later\n\nIV. fourth\n\nV. fifth"},
		{"preformatted", "<html><body><p>Here:</p><pre class=\"example\">\n  pair z=(3,4);\n    z=(z.x,-z.y);\n\n</pre><p>Here I is the imaginary unit.</p></body></html>",
			"Here:\n\n  pair z=(3,4);\n    z=(z.x,-z.y);\n\nHere I is the imaginary unit."},
		{"table", `<html><body><table><tr><th>Name</th><th>Size</th></tr><tr><td>smallint</td><td>2 bytes</td></tr></table></body></html>`,
			"Name | Size\n\nsmallint | 2 bytes"},
		{"definition list", `<html><body><dl><dt><code>-V</code></dt><dd><p>Print the version.</p></dd><dt>-h</dt><dd>Print help.</dd></dl></body></html>`,
			"-V\n\nPrint the version.\n\n-h\n\nPrint help."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, _, err := convert(t, []byte(tc.html))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimRight(text, "\n"); got != tc.want {
				t.Errorf("text:\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
