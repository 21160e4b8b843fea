// The review desk's page: plain JavaScript, no build step. Every change is
// a POST with the page's CSRF token; untrusted text (questions, answers,
// quotes) only ever goes into textContent.
"use strict";
(function () {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;

  async function post(url, body) {
    const r = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    }).catch(() => { throw new Error("the desk is out of reach: check that `desk` still runs, then reload the page"); });
    const data = await answer(r);
    if (!r.ok) throw new Error(data.error);
    return data;
  }

  // answer is a response's JSON, or for one that is not (a plain-text
  // refusal, a proxy's page) its text as the error, in the desk's words.
  async function answer(r) {
    const text = await r.text();
    try {
      const data = JSON.parse(text);
      if (r.ok || data.error) return data;
    } catch (e) { /* not JSON */ }
    const said = text.trim().split("\n")[0].slice(0, 300);
    return { error: said && !said.startsWith("<") ? said : "the desk answered " + r.status + " " + r.statusText + ": reload the page" };
  }

  const start = document.getElementById("start");
  if (start) {
    start.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const f = new FormData(start);
      const body = { levels: Number(f.get("levels")) };
      body[f.get("kind")] = f.get("id").trim();
      try {
        await post("/api/start", body);
        location.href = "/signoff?id=" + encodeURIComponent(body.review || body.batch);
      } catch (e) {
        document.getElementById("start-error").textContent = e.message;
      }
    });
  }

  const main = document.querySelector("main.signoff");
  if (!main) return;
  const subject = main.dataset.subject;
  const q = "id=" + encodeURIComponent(subject);
  let view = null;     // /api/grid's answer
  let current = -1;    // index of the selected cell
  let cellView = null; // /api/cell's answer for it
  let pending = null;  // "edited" or "rejected" while the reason form is open

  const $ = (id) => document.getElementById(id);
  function say(text, refused) {
    const m = $("message");
    m.textContent = text;
    m.className = "message" + (refused ? " refused" : "");
  }
  function td(text, cls) {
    const c = document.createElement("td");
    c.textContent = text;
    if (cls) c.className = cls;
    return c;
  }
  function decisionText(d, c) {
    if (!d) {
      // Level 2 decides the edits and rejections; an accepted cell only
      // when its reviewer chooses to.
      return c && c.level1 && c.level1.decision === "accepted" ? "—" : "pending";
    }
    const word = d.level === 2 && d.decision === "accepted" ? "approved" : d.decision;
    return word + " · " + d.reviewer;
  }
  function decisionLine(d) {
    const word = d.level === 2 && d.decision === "accepted" ? "approved" : d.decision;
    return word + " by " + d.reviewer + " at level " + d.level + (d.final_answer ? ": " + d.final_answer : "") + (d.reason ? " (" + d.reason + ")" : "");
  }

  // The document a row's evidence is in, its full URI.
  function documentURI(row) {
    return (row.grounding && row.grounding.document) || row.document || "";
  }
  // The answer that stands, and the model's struck through where a
  // reviewer replaced or rejected it.
  function answerCell(row) {
    const c = document.createElement("td");
    c.className = "answer decided-" + (row.decided || "pending");
    const model = row.model_answer || "";
    if (row.decided === "edited") {
      const f = document.createElement("span");
      f.className = "final";
      f.textContent = row.final_answer;
      const m = document.createElement("del");
      m.className = "model";
      m.title = "the model's answer";
      m.textContent = model;
      c.append(f, " ", m);
    } else if (row.decided === "rejected") {
      const m = document.createElement("del");
      m.className = "model";
      m.title = "the model's answer, rejected";
      m.textContent = model;
      const n = document.createElement("span");
      n.className = "final none";
      n.textContent = "no answer";
      c.append(n, " ", m);
    } else {
      const f = document.createElement("span");
      f.className = "final";
      f.textContent = model;
      c.append(f);
    }
    return c;
  }
  // Who signed each level off: "level 1 signed off by alice".
  function signedOff(g) {
    return (g.sign_offs || []).map((s) => "level " + s.level + " signed off by " + s.reviewer).join(" · ");
  }

  // get fetches url, saying so (and returning null) when the desk is out
  // of reach.
  async function get(url) {
    try {
      return await fetch(url, { credentials: "same-origin" });
    } catch (e) {
      say("the desk is out of reach: check that `desk` still runs, then reload the page", true);
      return null;
    }
  }

  async function loadGrid() {
    const r = await get("/api/grid?" + q);
    if (!r) return;
    const data = await answer(r);
    if (!r.ok) { say(data.error, true); return; }
    view = data;
    const g = view.grid;
    // The run signed off, not only the id: an id can be run again.
    $("title").textContent = g.subject.kind + " " + g.subject.workflow_id + " · run " + g.subject.run_id;
    const signed = signedOff(g);
    $("state").textContent = g.state === "signed-off"
      ? "Signed off at every level" + (signed ? ": " + signed : "") + "."
      : "Waiting for level " + view.level + (signed ? " · " + signed : "") + " · " + g.pending + " of " + g.cells.length + " cells pending · audit log: " + g.audit_lines + " lines";
    // One document (a review's): named once, above the grid, not on
    // every row.
    const names = new Set(view.rows.map((r) => r.document_name));
    const one = names.size === 1 && view.rows.length > 0;
    $("cells").classList.toggle("one-document", one);
    $("document").hidden = !one;
    if (one) {
      $("document").textContent = "Document: " + view.rows[0].document_name;
      $("document").title = documentURI(view.rows[0]);
    }
    $("signoff").textContent = "Sign off level " + view.level;
    $("signoff").disabled = g.state === "signed-off";
    const rows = new Map(view.rows.map((r) => [r.cell, r]));
    const tb = document.querySelector("#cells tbody");
    tb.replaceChildren();
    g.cells.forEach((c, i) => {
      const row = rows.get(c.id) || {};
      const tr = document.createElement("tr");
      tr.dataset.cell = c.id;
      tr.dataset.index = i;
      const doc = td(row.document_name || "", "doc");
      doc.title = documentURI(row);
      tr.append(td(c.id), doc, td(row.question || ""), answerCell(row),
        td(decisionText(c.level1), "level1 status-" + (c.level1 ? c.level1.decision : "pending")),
        td(decisionText(c.level2, c), "level2 status-" + (c.level2 ? c.level2.decision : "pending")));
      if (row.reused) {
        // Reused from an earlier reading: no model call in this run.
        const m = document.createElement("span");
        m.className = "reused";
        m.title = "answer reused from an earlier reading: no model call in this run";
        m.textContent = "reused";
        tr.firstChild.append(" ", m);
      }
      tr.addEventListener("click", () => select(i));
      tb.append(tr);
    });
    if (current < 0 && g.cells.length) current = 0;
    if (current >= 0) await select(current);
  }

  function open(c) {
    if (!view) return false;
    return view.level === 1 ? !c.level1 : (!c.level2 && c.level1 && c.level1.decision !== "accepted");
  }

  async function select(i) {
    if (!view || i < 0 || i >= view.grid.cells.length) return;
    current = i;
    document.querySelectorAll("#cells tbody tr").forEach((tr) => tr.classList.toggle("current", Number(tr.dataset.index) === i));
    const c = view.grid.cells[i];
    const r = await get("/api/cell?" + q + "&cell=" + encodeURIComponent(c.id));
    if (!r) return;
    const data = await answer(r);
    if (!r.ok) { say(data.error, true); return; }
    if (current !== i) return;
    cellView = data;
    showCell();
  }

  // highlight draws boxes (fractions of the page) over a page's frame.
  function highlight(frame, boxes, cls) {
    (boxes || []).forEach((b) => {
      const h = document.createElement("div");
      h.className = "hl " + cls;
      h.style.left = (b.left * 100) + "%";
      h.style.top = (b.top * 100) + "%";
      h.style.width = ((b.right - b.left) * 100) + "%";
      h.style.height = ((b.bottom - b.top) * 100) + "%";
      frame.append(h);
    });
  }

  // morePage is the next page of a quote that crosses pages, with its own
  // part highlighted, scrolled into its box as the first page is.
  function morePage(m) {
    const div = document.createElement("div");
    div.className = "page page-more";
    const cite = document.createElement("p");
    cite.className = "page-cite";
    cite.textContent = "The quote goes on, on page: " + m.cite + (m.highlight ? " · highlighted: the " + m.highlight + (m.from === "ocr" ? " (from the words OCR read on the scan)" : "")
      : " · the quote's part is not on the page's text layer") + (m.error ? " · " + m.error : "");
    const box = document.createElement("div");
    box.className = "page-scroll";
    const frame = document.createElement("div");
    frame.className = "page-frame";
    const img = document.createElement("img");
    img.alt = "the next page of the quote";
    frame.append(img);
    highlight(frame, m.quote_boxes, "quote");
    highlight(frame, m.answer_boxes, "answer");
    img.onload = () => {
      frame.classList.add("loaded");
      const first = frame.querySelector(".hl");
      box.scrollTop = first ? Math.max(0, first.offsetTop - box.clientHeight / 3) : 0;
    };
    img.src = m.image;
    box.append(frame);
    div.append(cite, box);
    return div;
  }

  function showCell() {
    const v = cellView, row = v.row, g = row.grounding || {};
    $("cell").hidden = false;
    $("cell-title").textContent = "Cell " + v.cell.id + " · version " + v.cell.version + " · " + v.cell.status;
    $("cell-question").textContent = row.question || "";
    $("cell-final").textContent = row.decided === "edited" ? row.final_answer + " (edited)"
      : row.decided === "rejected" ? "none: the model's answer was rejected"
      : row.decided === "accepted" ? row.final_answer + " (accepted)" : "pending";
    $("cell-answer").textContent = row.model_answer || "";
    $("cell-document").textContent = documentURI(row);
    $("cell-grounding").textContent = g.status ? g.status + (g.found_in ? " (in " + g.found_in.replace("_", " ") + ")" : "") : "none";
    // A quote across pages: its parts, a page each.
    $("cell-quote").textContent = g.quote_parts && g.quote_parts.length > 1 ? g.quote_parts.map((q) => q.text).join(" / ") : g.quote || "";
    $("cell-pages").textContent = row.answer_pages || "";
    const ds = [v.cell.level1, v.cell.level2].filter((d) => d);
    $("cell-decision").textContent = ds.length ? v.cell.status + " · " + ds.map(decisionLine).join(" · ") : "pending";
    const hist = $("history");
    hist.replaceChildren();
    (v.history || []).forEach((e) => {
      const li = document.createElement("li");
      li.textContent = e.at + " · " + e.reviewer + " · " + e.action + " at level " + e.level + (e.decision ? ": " + e.decision : "") + (e.reason ? " (" + e.reason + ")" : "");
      hist.append(li);
    });
    const p = v.page;
    const frame = $("page-frame");
    frame.querySelectorAll(".hl").forEach((h) => h.remove());
    $("page-more").replaceChildren(...((p && p.more) || []).map(morePage));
    if (!p) { $("page").hidden = true; return; }
    $("page").hidden = false;
    let found;
    if (p.highlight) {
      found = " · highlighted: the " + p.highlight + (p.from === "ocr" ? " (from the words OCR read on the scan)" : "");
    } else if (p.ocr === "words") {
      found = " · the quote is neither on the page's text layer nor among the words OCR read on it";
    } else if (p.ocr === "none") {
      found = " · the quote is not on the page's text layer, and no OCR reading of this version of the page with word boxes is kept (one read before they were kept, or not read by OCR)";
    } else {
      found = " · the quote is not on the page's text layer";
    }
    $("page-cite").textContent = "Cited page: " + p.cite + found + (p.error ? " · " + p.error : "");
    const img = $("page-img");
    highlight(frame, p.quote_boxes, "quote");
    highlight(frame, p.answer_boxes, "answer");
    // The frame shows nothing until this cell's page is there: never
    // another cell's page under this one's highlight.
    const box = $("page-scroll");
    const shown = () => {
      frame.classList.add("loaded");
      // The highlight in view: the page's own scroll box puts its first
      // line a third of the way down (the page at its top when there is
      // none), and the window moves only as far as it takes to show the
      // highlight whole, when the box is partly off screen.
      const first = frame.querySelector(".hl");
      box.scrollTop = first ? Math.max(0, first.offsetTop - box.clientHeight / 3) : 0;
      if (!first) return;
      const hls = [...frame.querySelectorAll(".hl")];
      const top = Math.min(...hls.map((h) => h.getBoundingClientRect().top));
      const bottom = Math.max(...hls.map((h) => h.getBoundingClientRect().bottom));
      if (bottom > window.innerHeight) window.scrollBy(0, Math.min(bottom - window.innerHeight + 16, top - 16));
      else if (top < 0) window.scrollBy(0, top - 16);
    };
    if (img.getAttribute("src") !== p.image) {
      frame.classList.remove("loaded");
      img.onload = shown;
      // A page that did not render says why (past the render deadline,
      // the renderers busy, the document unreadable), in the desk's words.
      img.onerror = async () => {
        const r = await get(p.image);
        if (!r || r.ok) return; // rendered since: shown when the cell is selected again
        const d = await answer(r);
        $("page-cite").textContent = "Cited page: " + p.cite + " · the page did not load: " + (d.error || "reload the page");
      };
      img.src = p.image;
    } else if (img.complete) {
      shown();
    }
  }

  async function decide(decision, finalAnswer, reason, comment) {
    const c = cellView && cellView.cell;
    if (!c) return;
    try {
      await post("/api/decide?" + q, {
        cell: c.id, level: view.level, decision: decision, final_answer: finalAnswer || "",
        reason: reason || "", comment: comment || "", version: c.version,
      });
      say("Cell " + c.id + ": " + decision + " at level " + view.level + ".", false);
      await loadGrid();
    } catch (e) {
      say(e.message, true);
    }
  }

  function openReason(kind) {
    if (!cellView) return;
    pending = kind;
    $("reason-form").hidden = false;
    $("final-label").hidden = kind !== "edited";
    $("final-answer").value = kind === "edited" ? (cellView.row.model_answer || "") : "";
    $("reason").value = "";
    $("comment").value = "";
    const first = kind === "edited" ? $("final-answer") : $("reason");
    first.focus();
    first.select();
  }
  function closeReason() {
    pending = null;
    $("reason-form").hidden = true;
    document.activeElement && document.activeElement.blur();
  }
  $("reason-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const kind = pending;
    const fa = $("final-answer").value, reason = $("reason").value, comment = $("comment").value;
    closeReason();
    await decide(kind, kind === "edited" ? fa : "", reason, comment);
  });
  $("reason-cancel").addEventListener("click", closeReason);

  async function signOff() {
    if (!view) return;
    try {
      await post("/api/signoff?" + q, { level: view.level });
      say("Level " + view.level + " signed off.", false);
      current = -1;
      await loadGrid();
    } catch (e) {
      say(e.message, true);
    }
  }
  $("signoff").addEventListener("click", signOff);

  function nextOpen() {
    if (!view) return;
    const cells = view.grid.cells;
    for (let k = 1; k <= cells.length; k++) {
      const i = (current + k) % cells.length;
      if (open(cells[i])) return select(i);
    }
    say("No open cell at level " + view.level + ".", false);
  }

  // Shortcuts act on keyup, when the key's character has gone (to the
  // page, not to the form a shortcut opens).
  document.addEventListener("keyup", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) {
      if (ev.key === "Escape") closeReason();
      return;
    }
    switch (ev.key) {
      case "a": ev.preventDefault(); decide("accepted"); break;
      case "e": ev.preventDefault(); openReason("edited"); break;
      case "r": ev.preventDefault(); openReason("rejected"); break;
      case "n": ev.preventDefault(); nextOpen(); break;
      case "j": ev.preventDefault(); select(current + 1); break;
      case "k": ev.preventDefault(); select(current - 1); break;
      case "S": ev.preventDefault(); signOff(); break;
    }
  });

  loadGrid();
})();
