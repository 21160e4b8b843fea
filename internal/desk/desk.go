// Package desk is the review desk: a web page on which reviewers go
// through the reviews and batches waiting for sign-off, decide on each
// answer with the cited page in front of them (the quote highlighted where
// it stands, from PDFium's character boxes, or on a scanned page from the
// boxes of the words OCR read when the document was converted, and
// scrolled into view), and sign a level off. It is
// Go's net/http and html/template with a little plain JavaScript, and no
// build step.
//
// Every decision goes to the sign-off workflow as an Update, under the
// reviewer the identity source says the request comes from; the page can
// name no other. It reads only what the worker would: a review's grid
// among that review's outputs, a document within the read prefixes. It is
// safe against cross-site requests (Fetch metadata and Origin checked,
// a per-session CSRF token on every change, SameSite=Strict cookies, a
// Host check against DNS rebinding) and listens on loopback unless told
// otherwise. It renders pages in a few PDFium instances, each page under
// a deadline (a hostile page of a few KB can keep PDFium busy for
// minutes), and keeps rendered pages in a cache bounded by bytes. It never
// logs a token, a document's text or an answer.
package desk

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/signoff"
	"github.com/memagent/memagent/memclient"
)

//go:embed static templates
var files embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{"stateWords": stateWords}).ParseFS(files, "templates/*.html"))

// stateWords is a sign-off's state (its MemagentSignoff search attribute)
// as the list says it.
func stateWords(state string) string {
	switch state {
	case api.SignOffWaitingLevel1:
		return "level 1's reviewers"
	case api.SignOffWaitingLevel2:
		return "level 2's reviewers"
	}
	return state
}

// Store is what the desk reads from S3.
type Store interface {
	Head(ctx context.Context, loc s3store.Location) (s3store.ObjectInfo, error)
	ReadAll(ctx context.Context, loc s3store.Location) ([]byte, error)
}

// Checks are the worker's checks of where a caller may read and whose
// output a grid is (activities.Activities has them).
type Checks interface {
	CheckRead(field, uri string) error
	CheckOutputOf(ctx context.Context, field, uri, workflowID string) error
}

// OCRReadings finds what OCR read of a document's page when a conversion
// read it (activities.Activities has it): the words and their boxes, one
// list a reading (engine and languages), none when the page was not read
// by OCR or was read before word boxes were kept.
//
// AttachmentOCRWords is OCRWords for a page of a mailbox's attachment,
// whose pages are kept under the attachment's own key: the attachment
// is named by the SHA-256 (hex) of its decoded bytes, page is its own.
type OCRReadings interface {
	OCRWords(ctx context.Context, uri string, page int) ([][]docconv.WordBox, error)
	AttachmentOCRWords(ctx context.Context, uri, sum string, page int) ([][]docconv.WordBox, error)
}

// EmailMessages finds a message of a converted email or mailbox
// (activities.Activities has it): its headers and its attachments, as
// the conversion of the document's current version indexed them; nil
// when no conversion is kept or the index has no such message. number is
// the message's place in the mailbox, as citations name it (`msg 12`).
//
// EmailAttachmentAt writes the decoded bytes of attachment part of
// message number (its place, from 1, among the message's attachments as
// the index lists them; 0 names it by apath alone), which must be at
// path apath, at most maxBytes of them: the desk renders a cited page of
// a PDF attachment from it.
type EmailMessages interface {
	EmailMessage(ctx context.Context, uri string, number int) (*memagent.EmailMessage, error)
	EmailAttachmentAt(ctx context.Context, uri string, number, part int, apath string, maxBytes int64, w io.Writer) error
}

// Config is what a desk needs.
type Config struct {
	// Temporal is the desk's client; ClientIdentity the identity it dialed
	// with (recorded beside each reviewer).
	Temporal       client.Client
	ClientIdentity string
	TaskQueue      string
	Store          Store
	// Checks are the worker's read checks, configured as the worker's
	// (its bucket, read and write prefixes, Store).
	Checks Checks
	// Reviewers is the identity source.
	Reviewers *reviewer.Source
	// Hosts are the Host header values the desk answers (the address it
	// listens on and its names); others are refused, against DNS
	// rebinding.
	Hosts  []string
	Logger *slog.Logger
	// MaxDocumentBytes bounds a PDF the desk renders pages of (default
	// 128 MiB).
	MaxDocumentBytes int64
	// RenderTimeout bounds PDFium's work on one page, its image or its
	// character boxes (default DefaultRenderTimeout): past it the request
	// fails (504) and the instance is killed.
	RenderTimeout time.Duration
	// RenderInstances is the PDFium instances pages render in at once
	// (default DefaultRenderInstances); a page that finds none free within
	// RenderTimeout fails (503).
	RenderInstances int
	// PageCacheBytes bounds the rendered pages and character boxes kept
	// (default DefaultPageCacheBytes).
	PageCacheBytes int64
	// OCR finds the words OCR read on a scanned page, for a quote not on
	// the page's text layer; nil, no highlight on a scan. The desk never
	// runs the engine itself: the words come from the conversion's OCR
	// cache, read once per page and kept in the page cache.
	OCR OCRReadings
	// Email finds the message a cell grounded on email cites, for the
	// family panel's headers and attachments; nil, the panel lists the
	// family's members only. The desk never converts a mailbox itself:
	// the message comes from the conversion's email index, read once and
	// kept in the page cache.
	Email EmailMessages
}

// Desk serves the review desk.
type Desk struct {
	cfg    Config
	mc     *memclient.Client
	pages  *renderer
	secret []byte
	mux    *http.ServeMux

	mu       sync.Mutex
	sessions map[string]session
	docs     map[string][]byte // source URI@etag → the PDF, at most maxDocs
}

type session struct {
	reviewer string
	expires  time.Time
}

const (
	sessionCookie = "memagent_desk"
	sessionTTL    = 12 * time.Hour
	maxDocs       = 2
	renderDPI     = 110
)

// New returns a desk; Close it.
func New(cfg Config) (*Desk, error) {
	if cfg.Temporal == nil || cfg.Store == nil || cfg.Checks == nil || cfg.Reviewers == nil {
		return nil, errors.New("desk: Temporal, Store, Checks and Reviewers are required")
	}
	if err := cfg.Reviewers.Check(); err != nil {
		return nil, fmt.Errorf("desk: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxDocumentBytes <= 0 {
		cfg.MaxDocumentBytes = 128 << 20
	}
	if cfg.RenderTimeout <= 0 {
		cfg.RenderTimeout = DefaultRenderTimeout
	}
	if cfg.RenderInstances <= 0 {
		cfg.RenderInstances = DefaultRenderInstances
	}
	if cfg.PageCacheBytes <= 0 {
		cfg.PageCacheBytes = DefaultPageCacheBytes
	}
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = api.DefaultTaskQueue
	}
	d := &Desk{
		cfg: cfg, mc: memclient.New(cfg.Temporal, memclient.Options{TaskQueue: cfg.TaskQueue}),
		pages:  newRenderer(cfg.RenderTimeout, cfg.RenderInstances, cfg.PageCacheBytes, cfg.Logger),
		secret: make([]byte, 32), sessions: map[string]session{}, docs: map[string][]byte{},
	}
	if _, err := rand.Read(d.secret); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.FileServerFS(files))
	mux.HandleFunc("GET /{$}", d.authed(d.index))
	mux.HandleFunc("GET /login", d.loginPage)
	mux.HandleFunc("POST /login", d.login)
	mux.HandleFunc("POST /logout", d.authed(d.logout))
	mux.HandleFunc("GET /signoff", d.authed(d.signOffPage))
	mux.HandleFunc("GET /api/grid", d.authed(d.apiGrid))
	mux.HandleFunc("GET /api/cell", d.authed(d.apiCell))
	mux.HandleFunc("GET /page.png", d.authed(d.pagePNG))
	mux.HandleFunc("GET /export.xlsx", d.authed(d.export))
	mux.HandleFunc("GET /export.csv", d.authed(d.export))
	mux.HandleFunc("POST /api/start", d.authed(d.changes(d.apiStart)))
	mux.HandleFunc("POST /api/decide", d.authed(d.changes(d.apiDecide)))
	mux.HandleFunc("POST /api/signoff", d.authed(d.changes(d.apiSignOff)))
	mux.HandleFunc("POST /api/reopen", d.authed(d.changes(d.apiReopen)))
	d.registerValidation(mux)
	mux.HandleFunc("GET /api/families", d.authed(d.apiFamilies))
	mux.HandleFunc("POST /api/family", d.authed(d.changes(d.apiFamilyDecide)))
	mux.HandleFunc("GET /api/message", d.authed(d.apiMessage))
	d.mux = mux
	return d, nil
}

// Close stops PDFium.
func (d *Desk) Close() error { return d.pages.Close() }

// ServeHTTP checks the Host, refuses cross-site requests that change
// anything, sets the page's security headers, and serves.
func (d *Desk) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !d.hostAllowed(r.Host) {
		http.Error(w, "unknown host: the desk answers only the addresses it listens on", http.StatusMisdirectedRequest)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	// Not no-referrer: a browser then sends "Origin: null" with the
	// desk's own forms.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if err := crossSite(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
	}
	d.mux.ServeHTTP(w, r)
}

// crossSite refuses a request another site's page made: the browser's
// Sec-Fetch-Site says so, or its Origin is not the desk's own.
func crossSite(r *http.Request) error {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return nil
	case "":
	default:
		return errors.New("cross-site request refused: use the desk's own page")
	}
	// A browser without Fetch metadata: its Origin, when it sends one.
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return errors.New("cross-origin request refused: use the desk's own page")
		}
	}
	return nil
}

func (d *Desk) hostAllowed(host string) bool {
	if len(d.cfg.Hosts) == 0 {
		return true
	}
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	for _, a := range d.cfg.Hosts {
		if strings.EqualFold(a, host) || strings.EqualFold(a, h) {
			return true
		}
	}
	return false
}

// who is the reviewer a request comes from, and its session id ("" for a
// header source).
func (d *Desk) who(r *http.Request) (name, sid string, err error) {
	if !d.cfg.Reviewers.Tokens() {
		name, err = d.cfg.Reviewers.FromHeader(r)
		return name, "", err
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", "", errNotSignedIn
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.sessions[c.Value]
	if !ok || time.Now().After(s.expires) {
		delete(d.sessions, c.Value)
		return "", "", errNotSignedIn
	}
	return s.reviewer, c.Value, nil
}

// errNotSignedIn is a request without a session, or with one past its
// time.
var errNotSignedIn = errors.New("not signed in, or signed in more than 12 hours ago: sign in again (reload the page)")

// csrf is the token a page of the session sends with every change.
func (d *Desk) csrf(name, sid string) string {
	m := hmac.New(sha256.New, d.secret)
	m.Write([]byte(name + "\x00" + sid))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

type authedHandler func(w http.ResponseWriter, r *http.Request, name, sid string)

func (d *Desk) authed(h authedHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, sid, err := d.who(r)
		if err != nil {
			if d.cfg.Reviewers.Tokens() && r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			http.Error(w, plain(err), http.StatusUnauthorized)
			return
		}
		h(w, r, name, sid)
	}
}

// changes checks the CSRF token of a request that changes something.
func (d *Desk) changes(h authedHandler) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, name, sid string) {
		if !hmac.Equal([]byte(r.Header.Get("X-CSRF-Token")), []byte(d.csrf(name, sid))) {
			http.Error(w, "missing or wrong CSRF token: reload the desk's page", http.StatusForbidden)
			return
		}
		h(w, r, name, sid)
	}
}

func (d *Desk) loginPage(w http.ResponseWriter, r *http.Request) {
	if !d.cfg.Reviewers.Tokens() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	d.render(w, "login.html", map[string]any{"Error": r.URL.Query().Get("error")})
}

func (d *Desk) login(w http.ResponseWriter, r *http.Request) {
	if !d.cfg.Reviewers.Tokens() {
		http.Error(w, "this desk signs reviewers in through its proxy", http.StatusNotFound)
		return
	}
	name, err := d.cfg.Reviewers.FromToken(r.PostFormValue("token"))
	if err != nil {
		http.Redirect(w, r, "/login?error="+url.QueryEscape("that token signs no reviewer in"), http.StatusSeeOther)
		return
	}
	sid := make([]byte, 32)
	if _, err := rand.Read(sid); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	id := base64.RawURLEncoding.EncodeToString(sid)
	d.mu.Lock()
	for k, s := range d.sessions {
		if time.Now().After(s.expires) {
			delete(d.sessions, k)
		}
	}
	d.sessions[id] = session{reviewer: name, expires: time.Now().Add(sessionTTL)}
	d.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(sessionTTL / time.Second)})
	d.cfg.Logger.Info("reviewer signed in", "reviewer", name)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (d *Desk) logout(w http.ResponseWriter, r *http.Request, name, sid string) {
	d.mu.Lock()
	delete(d.sessions, sid)
	d.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func (d *Desk) render(w http.ResponseWriter, name string, data any) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		d.cfg.Logger.Error("render page", "template", name, "err", err)
		http.Error(w, "the page could not be made", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// waiting is one sign-off the index lists.
type waiting struct {
	Subject, State string
	// Document is the document's file name, DocumentURI its s3:// URI
	// (on hover).
	Document, DocumentURI string
	// Progress is the cells decided of all, a level each ("level 1:
	// 12/40 · level 2: 3/40"), "" when the sign-off did not answer.
	Progress string
	Started  time.Time
}

// Bounds of the index's reading of sign-offs.
const (
	// progressReads is the sign-offs whose grids the index reads at once
	// for their progress, and progressTimeout how long it waits for them.
	progressReads   = 8
	progressTimeout = 5 * time.Second
	// aheadSignOffs is the newest sign-offs waiting whose first cells'
	// pages are rendered ahead, at the desk's start and from the index.
	aheadSignOffs = 4
)

// waitingList lists the sign-offs waiting, newest first.
func (d *Desk) waitingList(ctx context.Context) ([]waiting, error) {
	resp, err := d.cfg.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		// Only memagent's: a look-alike of the type on another task queue
		// is not listed (and memclient refuses it if named).
		Query:    fmt.Sprintf("WorkflowType = %q AND TaskQueue = %q AND ExecutionStatus = 'Running'", api.SignOffName, d.cfg.TaskQueue),
		PageSize: 200,
	})
	if err != nil {
		return nil, err
	}
	var list []waiting
	for _, e := range resp.GetExecutions() {
		// Either form: <id>.signoff, or <id>/signoff of a sign-off
		// started before it. memclient verifies what it opens.
		id, ok := api.SignOffSubjectOf(e.GetExecution().GetWorkflowId())
		if !ok {
			id = e.GetExecution().GetWorkflowId()
		}
		wt := waiting{Subject: id, Started: e.GetStartTime().AsTime()}
		if e.GetSearchAttributes() != nil {
			if v, ok := e.GetSearchAttributes().GetIndexedFields()[api.AttrSignoff]; ok {
				_ = jsonPayload(v.GetData(), &wt.State)
			}
			if v, ok := e.GetSearchAttributes().GetIndexedFields()[api.AttrDocument]; ok {
				_ = jsonPayload(v.GetData(), &wt.DocumentURI)
			}
		}
		wt.Document = signoff.DocumentName(wt.DocumentURI)
		list = append(list, wt)
	}
	return list, nil
}

func (d *Desk) index(w http.ResponseWriter, r *http.Request, name, sid string) {
	ctx := r.Context()
	list, err := d.waitingList(ctx)
	if err == nil {
		d.progress(ctx, list)
	}
	d.render(w, "index.html", map[string]any{
		"Reviewer": name, "CSRF": d.csrf(name, sid), "Waiting": list, "Error": errString(err), "Tokens": d.cfg.Reviewers.Tokens(),
		"Validations": d.validationIndex(ctx),
	})
}

// progress sets each sign-off's progress from its grid, read a few at a
// time for at most progressTimeout; one that does not answer by then is
// listed without.
func (d *Desk) progress(ctx context.Context, list []waiting) {
	readAhead(ctx, len(list), func(ctx context.Context, i int) {
		g, err := d.mc.SignOffGrid(ctx, list[i].Subject)
		if err != nil {
			return
		}
		list[i].Progress = progressOf(g)
		if g.Subject.Source != "" {
			list[i].Document, list[i].DocumentURI = signoff.DocumentName(g.Subject.Source), g.Subject.Source
		}
	})
}

// readAhead runs read for 0 … n-1, progressReads at a time, for at most
// progressTimeout in all: a read that has not started by then is not
// run, and one running sees its context end.
func readAhead(ctx context.Context, n int, read func(ctx context.Context, i int)) {
	ctx, cancel := context.WithTimeout(ctx, progressTimeout)
	defer cancel()
	sem := make(chan struct{}, progressReads)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			read(ctx, i)
		}()
	}
	wg.Wait()
}

// progressOf is a sign-off's cells decided of all, a level each, and
// which levels are signed off: "level 1: 40/40 signed off · level 2:
// 3/40".
func progressOf(g *api.SignOffGrid) string {
	levels := max(g.Levels, 1)
	var parts []string
	for l := 1; l <= levels; l++ {
		// Level 1 decides every cell; level 2 the cells level 1 edited or
		// rejected (api.SignOffCell.NeedsLevel2), which are what it has to
		// get through, whatever else it approves besides.
		n, of := 0, 0
		for _, c := range g.Cells {
			switch {
			case l == 1:
				of++
				if c.Level1 != nil {
					n++
				}
			case c.NeedsLevel2():
				of++
				if c.Level2 != nil {
					n++
				}
			}
		}
		p := fmt.Sprintf("level %d: %d/%d", l, n, of)
		if l == 2 {
			p += " edited or rejected"
		}
		for _, s := range g.SignOffs {
			if s.Level == l {
				p += " signed off"
			}
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " · ")
}

// Warm readies the desk for its first reviewer, so that the first cell's
// panel comes as fast as the next: it starts PDFium, which took seconds
// on the first page asked for (4.4 s to compile its module with wazero's
// compilation cache empty, 0.14 s with it, against 0.1-0.2 s a page
// after), and returns; then it renders ahead, in the background, the
// cited pages of the first cells of the newest sign-offs waiting.
// Command desk (desk/deskapp) runs it before it says where it listens.
func (d *Desk) Warm(ctx context.Context) {
	start := time.Now()
	if err := d.pages.warm(); err != nil {
		d.cfg.Logger.WarnContext(ctx, "PDFium did not start ahead of the first page", "err", err)
	} else {
		d.cfg.Logger.InfoContext(ctx, "PDFium started", "took", time.Since(start).Round(time.Millisecond))
	}
	go func() {
		list, err := d.waitingList(ctx)
		if err != nil {
			return
		}
		for _, w := range list[:min(len(list), aheadSignOffs)] {
			if g, rows, err := d.load(ctx, w.Subject); err == nil && len(g.Cells) > 0 {
				d.renderAhead(g, rows, aheadCells(g, -1)...)
			}
		}
	}()
}

// aheadCells are the cells whose pages a reviewer is likely to ask for
// next, after cell i of g (-1: on opening the grid): the next two, and
// the next open at the level g waits for.
func aheadCells(g *api.SignOffGrid, i int) []string {
	var out []string
	for k := i + 1; k < len(g.Cells) && k <= i+2; k++ {
		out = append(out, g.Cells[k].ID)
	}
	lv := level(g)
	for k := i + 1; k < len(g.Cells); k++ {
		c := g.Cells[k]
		if (lv == 1 && c.Level1 == nil) || (lv == 2 && c.Level2 == nil && c.NeedsLevel2()) {
			if k > i+2 {
				out = append(out, c.ID)
			}
			break
		}
	}
	return out
}

// renderAhead renders, in the background, the cited pages of cells (and
// their character boxes) of the sign-off g with rows, reading their
// documents with the worker's checks.
func (d *Desk) renderAhead(g *api.SignOffGrid, rows []signoff.Row, cells ...string) {
	if len(cells) == 0 {
		return
	}
	go func() {
		ctx := d.pages.base
		for _, id := range cells {
			for _, row := range rows {
				gr := row.Grounding
				if row.Cell != id || !gr.Found() || gr.Pages == nil || gr.Pages.Unit != api.UnitPage || pageSource(g, row) == "" {
					continue
				}
				data, key, err := d.document(ctx, pageSource(g, row))
				if err != nil {
					continue
				}
				d.pages.renderAhead(key, data, gr.Pages.First, renderDPI)
			}
		}
	}()
}

func jsonPayload(data []byte, v any) error { return json.Unmarshal(data, v) }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return plain(err)
}

func (d *Desk) signOffPage(w http.ResponseWriter, r *http.Request, name, sid string) {
	id := r.URL.Query().Get("id")
	if id == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	d.render(w, "signoff.html", map[string]any{
		"Reviewer": name, "CSRF": d.csrf(name, sid), "Subject": id, "Tokens": d.cfg.Reviewers.Tokens(),
	})
}

// gridView is /api/grid's answer.
type gridView struct {
	Reviewer string          `json:"reviewer"`
	Level    int             `json:"level"`
	Grid     api.SignOffGrid `json:"grid"`
	Rows     []rowView       `json:"rows"`
}

// rowView is a row of the grid as the desk shows it: the answer that
// stands beside the model's, the document by its file name.
type rowView struct {
	signoff.Row
	// FinalAnswer is the answer that stands (signoff.Record.FinalAnswer):
	// the edited one, the model's when accepted, "" when rejected or
	// pending; Decided is the decision that stands, or pending.
	FinalAnswer string `json:"final_answer"`
	Decided     string `json:"decided"`
	// DocumentName is the file name of the evidence's document (the full
	// URI is Document, or the grounding's).
	DocumentName string `json:"document_name"`
}

// rowViews are rows as g's cells decide them.
func rowViews(g *api.SignOffGrid, rows []signoff.Row) []rowView {
	out := make([]rowView, 0, len(rows))
	for _, r := range rows {
		v := rowView{Row: r, Decided: api.DecisionPending, DocumentName: signoff.DocumentName(r.EvidenceDocument())}
		if c := g.Cell(r.Cell); c != nil {
			v.FinalAnswer = signoff.Record{Row: r, Cell: *c}.FinalAnswer()
			if d := c.Decided(); d != nil {
				v.Decided = d.Decision
			}
		}
		out = append(out, v)
	}
	return out
}

// load reads the sign-off and its rows, with the worker's checks.
func (d *Desk) load(ctx context.Context, subject string) (*api.SignOffGrid, []signoff.Row, error) {
	g, err := d.mc.SignOffGrid(ctx, subject)
	if err != nil {
		return nil, nil, err
	}
	if g.Subject.WorkflowID != subject {
		return nil, nil, fmt.Errorf("the sign-off of %s names %s", subject, g.Subject.WorkflowID)
	}
	if err := d.cfg.Checks.CheckOutputOf(ctx, "grid", g.Subject.GridURI, subject); err != nil {
		return nil, nil, err
	}
	loc, err := s3store.ParseURI(g.Subject.GridURI)
	if err != nil {
		return nil, nil, err
	}
	info, err := d.cfg.Store.Head(ctx, loc)
	if err != nil {
		return nil, nil, err
	}
	if info.Size > signoff.MaxGridBytes {
		return nil, nil, fmt.Errorf("%s is %d bytes, over %d", g.Subject.GridURI, info.Size, signoff.MaxGridBytes)
	}
	data, err := d.cfg.Store.ReadAll(ctx, loc)
	if err != nil {
		return nil, nil, err
	}
	var rows []signoff.Row
	if g.Subject.Kind == api.SubjectReview {
		rg, err := signoff.DecodeReviewGrid(data)
		if err != nil {
			return nil, nil, err
		}
		rows = signoff.ReviewRows(rg)
	} else if rows, err = signoff.BatchRows(data); err != nil {
		return nil, nil, err
	}
	return g, rows, nil
}

// level is the level a sign-off waits for.
func level(g *api.SignOffGrid) int {
	for _, s := range g.SignOffs {
		if s.Level == 1 {
			return 2
		}
	}
	return 1
}

func (d *Desk) apiGrid(w http.ResponseWriter, r *http.Request, name, sid string) {
	g, rows, err := d.load(r.Context(), r.URL.Query().Get("id"))
	if err != nil {
		jsonError(w, http.StatusNotFound, err)
		return
	}
	d.renderAhead(g, rows, aheadCells(g, -1)...)
	writeJSON(w, gridView{Reviewer: name, Level: level(g), Grid: *g, Rows: rowViews(g, rows)})
}

// cellView is /api/cell's answer.
type cellView struct {
	Cell    api.SignOffCell    `json:"cell"`
	Row     rowView            `json:"row"`
	History []api.SignOffEntry `json:"history"`
	Page    *pageView          `json:"page,omitempty"`
}

// pageView is the cited page of a cell and where its quote stands.
type pageView struct {
	Number int    `json:"number"`
	Cite   string `json:"cite"`
	Image  string `json:"image"`
	// Highlight is "quote" when the quote was found on the page,
	// "answer" when only the answer was, "" when neither.
	Highlight string `json:"highlight"`
	// From is where the highlight's boxes come from: "text" (the page's
	// text layer) or "ocr" (the words OCR read on the page).
	From string `json:"from,omitempty"`
	// OCR says, for a quote not on the text layer, what OCR had of the
	// page: "words" (its words were looked in), "none" (no reading of the
	// page with word boxes is kept), "" (not looked at).
	OCR         string        `json:"ocr,omitempty"`
	QuoteBoxes  []docconv.Box `json:"quote_boxes,omitempty"`
	AnswerBoxes []docconv.Box `json:"answer_boxes,omitempty"`
	Error       string        `json:"error,omitempty"`
	// More are the next pages of a quote that crosses a page boundary
	// (api.Grounding.QuoteParts), a page a part after the first, each
	// with its own part highlighted: this page shows the first part only.
	More []*pageView `json:"more,omitempty"`
}

func (d *Desk) apiCell(w http.ResponseWriter, r *http.Request, name, sid string) {
	ctx := r.Context()
	subject, id := r.URL.Query().Get("id"), r.URL.Query().Get("cell")
	timing := startTiming()
	g, rows, err := d.load(ctx, subject)
	timing.add("grid")
	if err != nil {
		jsonError(w, http.StatusNotFound, err)
		return
	}
	i := slices.IndexFunc(g.Cells, func(c api.SignOffCell) bool { return c.ID == id })
	if i < 0 {
		jsonError(w, http.StatusNotFound, fmt.Errorf("no cell %q in the sign-off of %s: reload the grid", id, subject))
		return
	}
	d.renderAhead(g, rows, aheadCells(g, i)...)
	v := cellView{Cell: g.Cells[i], History: []api.SignOffEntry{}}
	for _, rv := range rowViews(g, rows) {
		if rv.Cell == id {
			v.Row = rv
		}
	}
	// The cell's history (a query of the sign-off) while the page is
	// found.
	history := make(chan []api.SignOffEntry, 1)
	go func() {
		if g.State != api.SignOffSignedOff {
			if h, err := d.mc.CellHistory(ctx, subject, id); err == nil {
				history <- h.Entries
				return
			}
		}
		history <- nil
	}()
	v.Page = d.page(ctx, g, v.Row.Row, subject)
	timing.add("page")
	if h := <-history; h != nil {
		v.History = h
	}
	timing.add("history")
	w.Header().Set("Server-Timing", timing.String())
	writeJSON(w, v)
}

// serverTiming is a Server-Timing header's durations, so that a slow
// panel says (in the browser's developer tools) where its time went: a
// part's duration is from the previous part's end ("history" is what
// the cell's history took beyond the page, found meanwhile).
type serverTiming struct {
	last  time.Time
	parts []string
}

func startTiming() *serverTiming { return &serverTiming{last: time.Now()} }

// add ends the part named name, begun where the previous one ended.
func (t *serverTiming) add(name string) {
	now := time.Now()
	t.parts = append(t.parts, fmt.Sprintf("%s;dur=%.1f", name, float64(now.Sub(t.last).Microseconds())/1000))
	t.last = now
}

func (t *serverTiming) String() string { return strings.Join(t.parts, ", ") }

// source is the PDF a cell's page is rendered from, "" when there is none:
// the document's, or for a cell grounded on a page of a mailbox's PDF
// attachment, the attachment (attachmentSource), named by its place in
// the message as the mailbox's email index lists it (d.attachmentPlace).
func (d *Desk) source(ctx context.Context, g *api.SignOffGrid, row signoff.Row) string {
	if gr := row.Grounding; gr != nil && gr.Pages != nil && gr.Pages.Unit == api.UnitMessage {
		doc := mailbox(g, row)
		if attachmentSource(doc, row, 0) == "" {
			return "" // the message's text, or an attachment that is no PDF
		}
		return attachmentSource(doc, row, d.attachmentPlace(ctx, doc, row))
	}
	return pageSource(g, row)
}

// pageSource is source for a cell grounded on a page of a PDF: the
// document, "" when it is no PDF.
func pageSource(g *api.SignOffGrid, row signoff.Row) string {
	doc := row.EvidenceDocument()
	if g.Subject.Kind == api.SubjectReview && row.Grounding != nil && row.Grounding.Document == "" {
		doc = g.Subject.Source
	}
	if gr := row.Grounding; gr != nil && gr.Pages != nil && gr.Pages.Unit == api.UnitMessage {
		return ""
	}
	if !strings.HasSuffix(strings.ToLower(doc), ".pdf") {
		return ""
	}
	return doc
}

// citedPage is the page of source(g, row) the row's grounding cites.
func citedPage(row signoff.Row) int {
	if gr := row.Grounding; gr != nil && gr.Pages != nil && gr.Pages.Unit == api.UnitMessage {
		_, _, n, _ := attachmentPage(row)
		return n
	}
	return row.Grounding.Pages.First
}

func (d *Desk) page(ctx context.Context, g *api.SignOffGrid, row signoff.Row, subject string) *pageView {
	gr := row.Grounding
	if !gr.Found() || gr.Pages == nil || (gr.Pages.Unit != api.UnitPage && gr.Pages.Unit != api.UnitMessage) {
		return nil
	}
	src := d.source(ctx, g, row)
	if src == "" {
		return nil
	}
	image := "/page.png?id=" + url.QueryEscape(subject) + "&cell=" + url.QueryEscape(row.Cell)
	parts := quoteParts(gr)
	if parts == nil {
		return d.pageOf(ctx, src, citedPage(row), gr.Pages.String(), image, gr.Quote, row.ModelAnswer)
	}
	// A quote across pages: each part highlighted on its own page.
	p := d.pageOf(ctx, src, parts[0].Pages.First, parts[0].Pages.String(), image, parts[0].Text, row.ModelAnswer)
	for _, part := range parts[1:] {
		n := part.Pages.First
		p.More = append(p.More, d.pageOf(ctx, src, n, part.Pages.String(), image+"&page="+strconv.Itoa(n), part.Text, row.ModelAnswer))
	}
	return p
}

// quoteParts are the parts of gr's quote when it crosses a page boundary
// and every part cites one page of the grounding's own; nil otherwise.
func quoteParts(gr *api.Grounding) []api.QuotePart {
	if len(gr.QuoteParts) < 2 {
		return nil
	}
	for _, part := range gr.QuoteParts {
		if pr := part.Pages; pr == nil || pr.Unit != api.UnitPage || pr.First != pr.Last || pr.First < gr.Pages.First || pr.First > gr.Pages.Last {
			return nil
		}
	}
	return gr.QuoteParts
}

// pageOf is page number of the PDF at src, cited as cite and shown from
// image, with quote (and answer) highlighted where they stand on it: on
// its text layer, or else among the words OCR read on it.
func (d *Desk) pageOf(ctx context.Context, src string, number int, cite, image, quote, answer string) *pageView {
	p := &pageView{Number: number, Cite: cite, Image: image}
	chars, err := d.charBoxes(ctx, src, number)
	if err != nil {
		p.Error = plain(err)
		return p
	}
	find(p, chars, quote, answer, "text")
	if p.Highlight == "quote" || d.cfg.OCR == nil {
		return p
	}
	// A scan, or a page whose text layer is not what was read: the
	// words OCR read when the document was converted.
	readings, err := d.ocrWords(ctx, src, number)
	if err != nil {
		d.cfg.Logger.WarnContext(ctx, "OCR words of a page not read", "page", number, "err", err)
	}
	p.OCR = "none"
	for _, words := range readings {
		p.OCR = "words"
		var o pageView
		find(&o, docconv.OCRChars(words), quote, answer, "ocr")
		if o.Highlight == "quote" || (o.Highlight == "answer" && p.Highlight == "") {
			p.Highlight, p.From, p.QuoteBoxes, p.AnswerBoxes = o.Highlight, o.From, o.QuoteBoxes, o.AnswerBoxes
		}
		if o.Highlight == "quote" {
			break
		}
	}
	return p
}

// find sets p's highlight from where the quote (or one of its
// candidates) and the answer stand among chars, from names them.
func find(p *pageView, chars []docconv.CharBox, quote, answer, from string) {
	for _, q := range quoteCandidates(quote) {
		if boxes, err := docconv.FindText(chars, q); err == nil {
			p.Highlight, p.From, p.QuoteBoxes = "quote", from, boxes
			break
		}
	}
	if boxes, err := docconv.FindText(chars, answer); err == nil {
		p.AnswerBoxes = boxes
		if p.Highlight == "" {
			p.Highlight, p.From = "answer", from
		}
	}
}

// ocrWords are the readings of page of the document at uri (Config.OCR),
// kept in the page cache once found.
func (d *Desk) ocrWords(ctx context.Context, uri string, page int) ([][]docconv.WordBox, error) {
	// The document's version, or the attachment (read from its mailbox's
	// version), under the worker's read check of the document or the
	// mailbox.
	data, key, err := d.document(ctx, uri)
	if err != nil {
		return nil, err
	}
	ck := fmt.Sprintf("ocr %s#%d", key, page)
	if v, ok := d.pages.cache.get(ck); ok {
		return v.([][]docconv.WordBox), nil
	}
	var readings [][]docconv.WordBox
	if mbox, _, _, _, isPart := parseAttachmentSource(uri); isPart {
		// An attachment's scanned pages are kept under the attachment's
		// own key, its bytes' digest.
		sum := sha256.Sum256(data)
		readings, err = d.cfg.OCR.AttachmentOCRWords(ctx, mbox, hex.EncodeToString(sum[:]), page)
	} else {
		readings, err = d.cfg.OCR.OCRWords(ctx, uri, page)
	}
	if err != nil || len(readings) == 0 {
		// Not kept: a conversion may read the page later.
		return nil, err
	}
	var size int64
	for _, r := range readings {
		for _, w := range r {
			size += int64(len(w.Text)) + 64
		}
	}
	d.pages.cache.put(ck, readings, size+int64(len(ck)))
	return readings, nil
}

// quoteCandidates are the quote, then the quote without its first and
// last words (cut off mid-word where the quote was clipped).
func quoteCandidates(q string) []string {
	out := []string{q}
	f := strings.Fields(q)
	if len(f) > 3 {
		out = append(out, strings.Join(f[1:len(f)-1], " "))
	}
	return out
}

// document returns the PDF at uri, read once (with the worker's read
// check) and kept for the next pages, and the key of its version
// (URI@ETag).
//
// uri may name a mailbox's PDF attachment (attachmentSource): the mailbox
// is checked and its version keys the attachment, whose bytes the worker
// extracts (Config.Email) and the desk keeps as it keeps a PDF.
func (d *Desk) document(ctx context.Context, uri string) (data []byte, key string, err error) {
	mbox, number, part, apath, isPart := parseAttachmentSource(uri)
	if !isPart {
		mbox = uri
	}
	loc, info, key, err := d.version(ctx, mbox)
	if err != nil {
		return nil, "", err
	}
	if isPart {
		key += uri[len(mbox):]
	}
	d.mu.Lock()
	data, ok := d.docs[key]
	d.mu.Unlock()
	if ok {
		return data, key, nil
	}
	switch {
	case isPart && d.cfg.Email == nil:
		return nil, "", errors.New("this desk does not read mailboxes' attachments")
	case isPart:
		var b bytes.Buffer
		if err := d.cfg.Email.EmailAttachmentAt(ctx, mbox, number, part, apath, d.cfg.MaxDocumentBytes, &b); err != nil {
			return nil, "", err
		}
		data = b.Bytes()
	case info.Size > d.cfg.MaxDocumentBytes:
		return nil, "", fmt.Errorf("%s is %d bytes, over the %d the desk renders", uri, info.Size, d.cfg.MaxDocumentBytes)
	default:
		if data, err = d.cfg.Store.ReadAll(ctx, loc); err != nil {
			return nil, "", err
		}
	}
	d.mu.Lock()
	if len(d.docs) >= maxDocs {
		clear(d.docs)
	}
	d.docs[key] = data
	d.mu.Unlock()
	return data, key, nil
}

// version checks that the worker may read uri (CheckRead) and returns
// its location, its current version and that version's key (URI@ETag).
func (d *Desk) version(ctx context.Context, uri string) (loc s3store.Location, info s3store.ObjectInfo, key string, err error) {
	if err := d.cfg.Checks.CheckRead("document", uri); err != nil {
		return loc, info, "", err
	}
	if loc, err = s3store.ParseURI(uri); err != nil {
		return loc, info, "", err
	}
	if info, err = d.cfg.Store.Head(ctx, loc); err != nil {
		return loc, info, "", err
	}
	return loc, info, uri + "@" + info.ETag, nil
}

func (d *Desk) charBoxes(ctx context.Context, uri string, page int) ([]docconv.CharBox, error) {
	data, key, err := d.document(ctx, uri)
	if err != nil {
		return nil, err
	}
	chars, err := d.pages.charBoxes(ctx, key, data, page)
	return chars, d.renderError(err, page)
}

func (d *Desk) pagePNG(w http.ResponseWriter, r *http.Request, name, sid string) {
	ctx := r.Context()
	subject, id := r.URL.Query().Get("id"), r.URL.Query().Get("cell")
	g, rows, err := d.load(ctx, subject)
	if err != nil {
		http.Error(w, plain(err), http.StatusNotFound)
		return
	}
	var row *signoff.Row
	for i := range rows {
		if rows[i].Cell == id {
			row = &rows[i]
		}
	}
	src := ""
	if row != nil && row.Grounding.Found() && row.Grounding.Pages != nil {
		src = d.source(ctx, g, *row)
	}
	if src == "" {
		http.Error(w, "this cell cites no page of a PDF", http.StatusNotFound)
		return
	}
	// The first page the grounding cites, or (page=N) the page of one of
	// its quote's parts.
	page := citedPage(*row)
	if v := r.URL.Query().Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || !slices.ContainsFunc(quoteParts(row.Grounding), func(p api.QuotePart) bool { return p.Pages.First == n }) {
			http.Error(w, "this cell's quote is on no page "+v+": reload the cell", http.StatusNotFound)
			return
		}
		page = n
	}
	data, key, err := d.document(ctx, src)
	if err != nil {
		http.Error(w, plain(err), http.StatusForbidden)
		return
	}
	d.writePage(w, r, key, data, page)
}

// writePage answers the PNG of page of the PDF data (key its version), or
// a JSON error: 504 for a page past the render deadline, 503 when every
// renderer stayed busy.
func (d *Desk) writePage(w http.ResponseWriter, r *http.Request, key string, data []byte, page int) {
	png, err := d.pages.page(r.Context(), key, data, page, renderDPI)
	if err != nil {
		err = d.renderError(err, page)
		switch {
		case errors.Is(err, errRenderTimeout):
			jsonError(w, http.StatusGatewayTimeout, err)
		case errors.Is(err, errRenderBusy):
			w.Header().Set("Retry-After", fmt.Sprint(int(d.cfg.RenderTimeout.Seconds())+1))
			jsonError(w, http.StatusServiceUnavailable, err)
		default:
			jsonError(w, http.StatusInternalServerError, err)
		}
		return
	}
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(png)
}

// renderError says what a renderer's error means for page.
func (d *Desk) renderError(err error, page int) error {
	var msg string
	switch {
	case errors.Is(err, errSlowAgain):
		msg = fmt.Sprintf("page %d took longer than %v to render less than %v ago and is not tried again yet: a page this slow is likely made to be; read it in the document itself", page, d.cfg.RenderTimeout, slowPageTTL)
	case errors.Is(err, errRenderTimeout):
		msg = fmt.Sprintf("page %d took longer than %v to render and PDFium was stopped: a page this slow is likely made to be; read it in the document itself", page, d.cfg.RenderTimeout)
	case errors.Is(err, errRenderBusy):
		msg = fmt.Sprintf("page %d: the desk's page renderers stayed busy with other pages for %v: try again in a moment", page, d.cfg.RenderTimeout)
	default:
		return err
	}
	return &renderFailure{msg: msg, err: err}
}

// renderFailure is a renderer's error as the desk tells it.
type renderFailure struct {
	msg string
	err error
}

func (e *renderFailure) Error() string { return e.msg }
func (e *renderFailure) Unwrap() error { return e.err }

func (d *Desk) export(w http.ResponseWriter, r *http.Request, name, sid string) {
	subject := r.URL.Query().Get("id")
	g, rows, err := d.load(r.Context(), subject)
	if err != nil {
		http.Error(w, plain(err), http.StatusNotFound)
		return
	}
	recs, err := signoff.Join(*g, rows)
	if err != nil {
		http.Error(w, plain(err), http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	file := strings.NewReplacer("/", "_", "\"", "_").Replace(subject)
	if strings.HasSuffix(r.URL.Path, ".xlsx") {
		// A finished validation of the same run is the workbook's
		// Validation sheet.
		var val *api.ValidationReport
		// A look-alike under the validation's id is not believed, and
		// does not keep the grid from being exported.
		if val, err = d.mc.FinishedValidation(r.Context(), subject, g.Subject.RunID); err != nil && !errors.Is(err, memclient.ErrNotMemagent) {
			http.Error(w, plain(err), http.StatusInternalServerError)
			return
		}
		err = signoff.WriteXLSXWithValidation(&buf, *g, recs, val)
		w.Header().Set("Content-Type", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
		file += ".xlsx"
	} else {
		err = signoff.WriteCSV(&buf, recs)
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		file += ".csv"
	}
	if err != nil {
		http.Error(w, "the export could not be written: "+plain(err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", file))
	_, _ = w.Write(buf.Bytes())
}

// decodeBody reads a change's JSON body strictly: a field it does not
// know (a "reviewer", say) is refused, not ignored.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the request's body is not what the desk takes (%s): reload the desk's page", bodyError(err))
	}
	return nil
}

// bodyError says what is wrong with a body in the JSON's words, not Go's.
func bodyError(err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		want := typ.Type.Kind().String()
		if strings.ContainsRune("aeiou", rune(want[0])) {
			want = "an " + want
		} else {
			want = "a " + want
		}
		return fmt.Sprintf("%q is a JSON %s, not %s", typ.Field, typ.Value, want)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// claimsAnother refuses a body that names a reviewer other than the one
// signed in: a decision is recorded only under who makes it.
func claimsAnother(r *http.Request, name string) error {
	var probe struct {
		Reviewer *string `json:"reviewer"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if json.Unmarshal(body, &probe) == nil && probe.Reviewer != nil && *probe.Reviewer != name {
		return fmt.Errorf("you are signed in as %s: a decision is recorded under the reviewer who makes it, never another", name)
	}
	return nil
}

// readChange reads a change's body into v, answering the refusal itself
// (and returning false) when the body names another reviewer or does not
// decode.
func readChange(w http.ResponseWriter, r *http.Request, name string, v any) bool {
	if err := claimsAnother(r, name); err != nil {
		jsonError(w, http.StatusForbidden, err)
		return false
	}
	if err := decodeBody(r, v); err != nil {
		jsonError(w, http.StatusBadRequest, err)
		return false
	}
	return true
}

// decideBody is what the page sends to decide; the reviewer comes from
// the request's authentication.
type decideBody struct {
	Cell        string  `json:"cell"`
	Level       int     `json:"level"`
	Decision    string  `json:"decision"`
	FinalAnswer string  `json:"final_answer"`
	Reason      string  `json:"reason"`
	Comment     string  `json:"comment"`
	Version     int     `json:"version"`
	Reviewer    *string `json:"reviewer,omitempty"`
}

func (d *Desk) apiDecide(w http.ResponseWriter, r *http.Request, name, sid string) {
	var b decideBody
	if !readChange(w, r, name, &b) {
		return
	}
	cell, err := d.mc.Decide(r.Context(), r.URL.Query().Get("id"), api.DecideRequest{
		Cell: b.Cell, Level: b.Level, Decision: b.Decision, FinalAnswer: b.FinalAnswer, Reason: b.Reason, Comment: b.Comment,
		Version: b.Version, Reviewer: name, ClientIdentity: d.cfg.ClientIdentity,
	})
	if err != nil {
		jsonError(w, statusOf(err, http.StatusConflict), err)
		return
	}
	d.cfg.Logger.Info("decided", "reviewer", name, "signoff", r.URL.Query().Get("id"), "cell", b.Cell, "level", b.Level, "decision", b.Decision)
	writeJSON(w, cell)
}

type signOffBody struct {
	Level    int     `json:"level"`
	Comment  string  `json:"comment"`
	Reviewer *string `json:"reviewer,omitempty"`
}

func (d *Desk) apiSignOff(w http.ResponseWriter, r *http.Request, name, sid string) {
	var b signOffBody
	if !readChange(w, r, name, &b) {
		return
	}
	g, err := d.mc.SignOff(r.Context(), r.URL.Query().Get("id"), api.SignOffRequest{
		Level: b.Level, Comment: b.Comment, Reviewer: name, ClientIdentity: d.cfg.ClientIdentity,
	})
	if err != nil {
		jsonError(w, statusOf(err, http.StatusConflict), err)
		return
	}
	d.cfg.Logger.Info("signed off", "reviewer", name, "signoff", r.URL.Query().Get("id"), "level", b.Level)
	writeJSON(w, g)
}

type reopenBody struct {
	Cell     string  `json:"cell"`
	Level    int     `json:"level"`
	Reason   string  `json:"reason"`
	Version  int     `json:"version"`
	Reviewer *string `json:"reviewer,omitempty"`
}

func (d *Desk) apiReopen(w http.ResponseWriter, r *http.Request, name, sid string) {
	var b reopenBody
	if !readChange(w, r, name, &b) {
		return
	}
	cell, err := d.mc.Reopen(r.Context(), r.URL.Query().Get("id"), api.ReopenRequest{
		Cell: b.Cell, Level: b.Level, Reason: b.Reason, Version: b.Version, Reviewer: name, ClientIdentity: d.cfg.ClientIdentity,
	})
	if err != nil {
		jsonError(w, statusOf(err, http.StatusConflict), err)
		return
	}
	writeJSON(w, cell)
}

type startBody struct {
	Review string `json:"review"`
	Batch  string `json:"batch"`
	Levels int    `json:"levels"`
}

func (d *Desk) apiStart(w http.ResponseWriter, r *http.Request, name, sid string) {
	var b startBody
	if err := decodeBody(r, &b); err != nil {
		jsonError(w, http.StatusBadRequest, err)
		return
	}
	id, err := d.mc.StartSignOff(r.Context(), api.SignOffInput{Review: b.Review, Batch: b.Batch, Levels: b.Levels})
	if err != nil {
		jsonError(w, statusOf(err, http.StatusBadRequest), err)
		return
	}
	writeJSON(w, map[string]string{"workflow_id": id})
}

// statusOf is the HTTP status of a refusal: 403 for an execution that is
// not memagent's (memclient.ErrNotMemagent), else def.
func statusOf(err error, def int) int {
	if errors.Is(err, memclient.ErrNotMemagent) {
		return http.StatusForbidden
	}
	return def
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

// jsonError answers {"error": "..."} in plain words (plain): a refused
// Update's message is the validator's.
func jsonError(w http.ResponseWriter, status int, err error) {
	msg := plain(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
