// A validation at the review desk: the sampled cells, each decided blind
// (the model's answer hidden until the reviewer reveals it, which the
// validation records), and the figures so far. Plain JavaScript, no build
// step; every change is a POST with the page's CSRF token, and untrusted
// text (questions, answers) only ever goes into textContent.
"use strict";
(function () {
  const main = document.querySelector("main.validation");
  if (!main) return;
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const id = main.dataset.id;
  const q = "id=" + encodeURIComponent(id);
  const $ = (x) => document.getElementById(x);
  let data = null;   // /api/validation's answer
  let current = -1;  // index of the selected cell
  let page = 1;      // the page shown of its document

  async function answer(r) {
    const text = await r.text();
    try {
      const d = JSON.parse(text);
      if (r.ok || d.error) return d;
    } catch (e) { /* not JSON */ }
    const said = text.trim().split("\n")[0].slice(0, 300);
    return { error: said && !said.startsWith("<") ? said : "the desk answered " + r.status + " " + r.statusText + ": reload the page" };
  }
  async function get(url) {
    const r = await fetch(url, { credentials: "same-origin" }).catch(() => { throw new Error("the desk is out of reach: reload the page"); });
    const d = await answer(r);
    if (!r.ok) throw new Error(d.error);
    return d;
  }
  async function post(url, body) {
    const r = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    }).catch(() => { throw new Error("the desk is out of reach: check that `desk` still runs, then reload the page"); });
    const d = await answer(r);
    if (!r.ok) throw new Error(d.error);
    return d;
  }
  function say(text, refused) {
    $("message").textContent = text;
    $("message").className = "message" + (refused ? " refused" : "");
  }
  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  const pct = (x) => (100 * x).toFixed(1) + "%";
  const stratumWords = { answered: "answered", not_found: "found no answer" };
  const verdictWords = { right: "right", wrong: "wrong", no_answer: "no answer", has_answer: "has an answer" };
  function decisionText(d) {
    if (!d) return "pending";
    let s = verdictWords[d.verdict] + " · " + d.reviewer;
    if (d.answer) s += " (" + d.answer + (d.page ? ", p. " + d.page : "") + ")";
    return s;
  }

  // The figures: one row overall and one a question, each figure its
  // estimate, its interval and a bar of it.
  function figures(v) {
    const box = $("figures");
    box.replaceChildren();
    const t = el("table");
    const head = el("tr");
    ["", "sampled", "precision", "elusion", "richness", "recall"].forEach((h) => head.append(el("th", h)));
    head.children[1].title = "answered cells sampled of all · not-found cells sampled of all";
    t.append(head);
    const sets = [["Overall", v.overall]];
    if (v.questions && v.questions.length > 1) v.questions.forEach((f) => sets.push([f.question, f]));
    for (const [title, f] of sets) {
      const tr = el("tr");
      tr.dataset.population = title;
      tr.append(el("th", title, title === "Overall" ? "population overall" : "population"));
      const n = el("td", f.answered_sampled + "/" + f.answered + " · " + f.not_found_sampled + "/" + f.not_found, "sizes");
      n.title = f.right + " right, " + f.wrong_held + " wrong with an answer in the document, " + f.missed + " missed";
      tr.append(n);
      if (f.error) {
        const c = el("td", "no figures yet", "sizes");
        c.title = f.error;
        c.colSpan = 4;
        tr.append(c);
        t.append(tr);
        continue;
      }
      for (const name of ["precision", "elusion", "richness", "recall"]) {
        const i = f[name], c = el("td", undefined, "figure");
        c.dataset.figure = name;
        if (name === "recall" && !f.recall_defined) {
          c.append(el("span", "undefined", "sizes"));
          c.title = "no sampled cell holds an answer";
        } else {
          c.append(el("b", pct(i.estimate)), el("span", pct(i.lower) + "–" + pct(i.upper), "interval"));
          const bar = el("div", undefined, "bar"), span = el("div", undefined, "span"), mark = el("div", undefined, "mark");
          span.style.left = (100 * i.lower) + "%";
          span.style.width = Math.max(100 * (i.upper - i.lower), 0.5) + "%";
          mark.style.left = (100 * i.estimate) + "%";
          bar.append(span, mark);
          c.append(bar);
        }
        tr.append(c);
      }
      t.append(tr);
    }
    box.append(t);
    if (v.thresholds && v.thresholds.length) {
      const ul = el("ul", undefined, "thresholds");
      for (const o of v.thresholds) {
        const th = o.threshold;
        const text = (th.question ? th.question + ": " : "") + th.figure + " " + th.op + " " + th.value + ": " + (o.passed ? "pass" : "fail") +
          (o.why ? (o.why.length > 60 ? " (no figures yet)" : " (" + o.why + ")") : " (bound " + pct(o.bound) + ")");
        const li = el("li", text, o.passed ? "pass" : "fail");
        if (o.why) li.title = o.why;
        ul.append(li);
      }
      box.append(ul);
    }
    box.append(el("p", "Intervals at " + pct(v.confidence) + ": " + v.interval_method + " (precision, elusion); " + v.combined_method +
      " (richness, recall) of a question." + (v.overall_method ? " Overall: " + v.overall_method + "." : "") +
      " Seed " + v.seed + ".", "sizes"));
  }

  function render() {
    const v = data.view;
    const decided = v.cells.length - v.pending;
    $("title").textContent = "Validation of " + v.kind + " " + v.subject;
    $("state").textContent = v.finished ? "Signed off by " + v.finished.reviewer + ": the report is final." :
      (v.blind ? "Blind" : "Not blind") + " · " + decided + " of " + v.cells.length + " sampled cells decided · " + v.kind + " " + v.subject +
      (v.four_eyes ? " · four eyes: signed off by a reviewer who decided no cell" : "");
    figures(v);
    const body = document.querySelector("#cells tbody");
    body.replaceChildren();
    v.cells.forEach((c, i) => {
      const tr = el("tr");
      tr.dataset.cell = c.id;
      tr.append(el("td", c.id), el("td", c.question), el("td", data.cells[i].document_name, "doc"), el("td", stratumWords[c.stratum]));
      tr.append(el("td", decisionText(c.decision), "decision" + (c.decision ? " verdict-" + c.decision.verdict : "")));
      if (i === current) tr.className = "current";
      tr.addEventListener("click", () => select(i));
      body.append(tr);
    });
    $("finish-form").hidden = !!v.finished;
    if (current >= 0) show();
  }

  function select(i) {
    if (i < 0 || i >= data.view.cells.length) return;
    current = i;
    page = data.cells[i].first_page;
    document.querySelectorAll("#cells tbody tr").forEach((tr, k) => {
      tr.className = k === i ? "current" : "";
      if (k === i) tr.scrollIntoView({ block: "nearest" });
    });
    show();
    resetForm();
    showPage();
  }

  function show() {
    const c = data.view.cells[current], x = data.cells[current], v = data.view;
    $("cell").hidden = false;
    $("cell-title").textContent = "Cell " + c.id;
    $("cell-question").textContent = c.question;
    $("cell-document").textContent = x.document_name;
    $("cell-document").title = c.document || "";
    $("cell-stratum").textContent = c.stratum === "answered" ? "answered this question" : "found no answer in this document";
    const shown = c.model_answer !== undefined && c.model_answer !== "";
    const ans = $("cell-answer");
    if (c.stratum !== "answered") {
      ans.textContent = "none";
      ans.className = "";
    } else if (shown) {
      ans.textContent = c.model_answer + (c.answer_pages ? " (" + c.answer_pages + ")" : "");
      ans.className = "revealed";
    } else {
      ans.textContent = "hidden: decide what the document says first";
      ans.className = "hidden-answer";
    }
    $("reveal-row").hidden = !v.blind || c.revealed || c.stratum !== "answered" || !!v.finished;
    $("cell-decision").textContent = decisionText(c.decision);
    const a = c.stratum === "answered";
    $("verdict-a").value = a ? "right" : "no_answer";
    $("verdict-b").value = a ? "wrong" : "has_answer";
    $("verdict-a-text").textContent = a ? "the answer is right" : "the document holds no answer";
    $("verdict-b-text").textContent = a ? "the answer is wrong" : "the document holds one";
    $("cannot").textContent = x.cannot_decide || "";
    $("cannot").hidden = !x.cannot_decide;
    $("decide-fields").disabled = !!x.cannot_decide;
    answerRow();
  }

  function resetForm() {
    $("decide").reset();
    answerRow();
  }
  // answerRow shows the right answer's fields where the verdict needs
  // them: a wrong answer the document holds another for, a missed one.
  function answerRow() {
    const c = data.view.cells[current];
    const wrong = $("verdict-b").checked;
    $("held-row").hidden = c.stratum !== "answered" || !wrong;
    $("answer-row").hidden = !(wrong && (c.stratum !== "answered" || $("held").checked));
    if (!$("answer-page").value) $("answer-page").value = page;
  }
  ["verdict-a", "verdict-b", "held"].forEach((x) => $(x).addEventListener("change", answerRow));

  function showPage() {
    const c = data.view.cells[current], x = data.cells[current];
    const img = $("page-img");
    $("page-error").hidden = true;
    if (!x.pdf) {
      $("page").hidden = true;
      return;
    }
    $("page").hidden = false;
    const cited = c.page && page === c.page ? " · the page the model's answer cites" : "";
    $("page-cite").textContent = "page " + page + cited;
    $("page-frame").classList.remove("loaded");
    img.src = "/validation/page.png?" + q + "&cell=" + encodeURIComponent(c.id) + "&page=" + page;
  }
  $("page-img").addEventListener("load", () => $("page-frame").classList.add("loaded"));
  $("page-img").addEventListener("error", async () => {
    let msg = "page " + page + " could not be shown";
    try { await get($("page-img").src); } catch (e) { msg = e.message; }
    $("page-error").textContent = msg;
    $("page-error").hidden = false;
  });
  $("page-prev").addEventListener("click", () => { if (page > 1) { page--; showPage(); } });
  $("page-next").addEventListener("click", () => { page++; showPage(); });

  // next is the next cell after i this reviewer can decide and no one
  // has, else i.
  function next(i) {
    for (let k = 1; k <= data.view.cells.length; k++) {
      const j = (i + k) % data.view.cells.length;
      if (!data.view.cells[j].decision && !data.cells[j].cannot_decide) return j;
    }
    return i;
  }

  $("decide").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const c = data.view.cells[current];
    const v = $("verdict-a").checked ? $("verdict-a").value : $("verdict-b").checked ? $("verdict-b").value : "";
    if (!v) { say("choose what is true of cell " + c.id + " first", true); return; }
    const body = { cell: c.id, verdict: v, comment: $("comment").value };
    if (!$("answer-row").hidden) {
      body.answer = $("answer").value;
      body.page = Number($("answer-page").value) || 0;
    }
    if (v === "wrong") body.has_answer = $("held").checked;
    try {
      data = await post("/api/validation/decide?" + q, body);
      say("cell " + c.id + ": " + verdictWords[v] + " recorded");
      const i = next(current);
      render();
      if (i !== current) select(i);
    } catch (e) {
      say(e.message, true);
    }
  });

  $("reveal").addEventListener("click", async () => {
    const c = data.view.cells[current];
    try {
      await post("/api/validation/reveal?" + q, { cell: c.id });
      data = await get("/api/validation?" + q);
      say("cell " + c.id + ": the model's answer is revealed to you, and recorded");
      render();
    } catch (e) {
      say(e.message, true);
    }
  });

  $("finish-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      data = await post("/api/validation/finish?" + q, { comment: $("finish-comment").value });
      say("the validation is signed off; its report is " + (data.view.report_uri || "written"));
      render();
    } catch (e) {
      say(e.message, true);
    }
  });

  get("/api/validation?" + q).then((d) => {
    data = d;
    render();
    if (data.view.cells.length) select(next(-1) >= 0 ? next(-1) : 0);
  }).catch((e) => say(e.message, true));
})();
