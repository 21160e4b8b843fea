// The family panel of the review desk (issue 54): for a cell whose answer
// was found in a mailbox, the message it is grounded on and the cells
// grounded on the same message (its text, its attachments), with a
// decision on the whole family at the level. A family decision is one
// decision a member (POST /api/family), which leaves a member decided on
// its own as it is. Untrusted text only ever goes into textContent.
"use strict";
(function () {
  const main = document.querySelector("main.signoff");
  const cell = document.getElementById("cell");
  if (!main || !cell) return;
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const q = "id=" + encodeURIComponent(main.dataset.subject);
  const css = document.createElement("link");
  css.rel = "stylesheet";
  css.href = "/static/family.css";
  document.head.append(css);

  const box = document.createElement("section");
  box.id = "family";
  box.className = "family";
  box.hidden = true;
  cell.querySelector("dl").after(box);

  let data = null;
  async function load() {
    const r = await fetch("/api/families?" + q, { credentials: "same-origin" });
    const d = await r.json().catch(() => ({ error: "the desk answered " + r.status }));
    return r.ok ? d : null;
  }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }

  function memberState(m) {
    if (m.own) return m.decided + " on its own (a family decision leaves it)";
    if (m.by_family) return m.decided + " by the family";
    return m.decided;
  }

  async function decide(f, decision, reason, say) {
    try {
      const r = await fetch("/api/family?" + q, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify({ document: f.document, message: f.message, level: data.level, decision: decision, reason: reason }),
      });
      const out = await r.json().catch(() => ({ error: "the desk answered " + r.status }));
      if (!r.ok) throw new Error(out.error);
      const failed = out.filter((o) => o.outcome === "failed");
      if (failed.length) throw new Error(failed.map((o) => o.cell + ": " + o.error).join("; "));
      location.reload();
    } catch (e) {
      say.textContent = e.message;
      say.className = "message refused";
    }
  }

  // The message the cell's citation names, as the mailbox's conversion
  // indexed it: its headers, then its attachments in order, the one the
  // cell is grounded on marked.
  async function showMessage(box, id) {
    const r = await fetch("/api/message?" + q + "&cell=" + encodeURIComponent(id), { credentials: "same-origin" });
    const v = await r.json().catch(() => ({ error: "the desk answered " + r.status }));
    if (!r.ok || v.error) {
      box.replaceChildren(el("p", "The message's headers are not shown: " + (v.error || "the desk answered " + r.status), "note"));
      return;
    }
    const dl = el("dl", "", "headers");
    dl.id = "family-headers";
    [["From", v.from], ["To", v.to], ["Cc", v.cc], ["Date", v.date], ["Subject", v.subject]].forEach(([k, val]) => {
      if (!val) return;
      const dd = el("dd", val);
      dd.dataset.header = k;
      dl.append(el("dt", k), dd);
    });
    box.replaceChildren(dl);
    if (v.skipped) box.append(el("p", "Not read: it " + v.skipped, "note"));
    if (v.duplicate_of) box.append(el("p", "A duplicate of message " + v.duplicate_of + ", read there", "note"));
    if (!v.attachments.length) {
      box.append(el("p", "No attachments", "note"));
      return;
    }
    const ol = el("ol", "", "attachments");
    ol.id = "family-attachments";
    v.attachments.forEach((a) => {
      const li = el("li", "", a.cited ? "attachment cited" : "attachment");
      li.dataset.name = a.name;
      const kind = [a.format, a.content_type].filter((x) => x).join(", ");
      // A ZIP attachment that was read was read as a DOCX (the index
      // keeps the format its first bytes tell).
      const unit = a.format === "pdf" ? "page" : ["docx", "zip", "html"].includes(a.format) ? "section" : "part";
      const state = a.read ? "read, " + a.parts + " " + unit + (a.parts === 1 ? "" : "s") : "not read: " + (a.error || "no text");
      li.append(el("b", a.path || a.name), " · " + kind + " · ", el("span", state, a.read ? "read" : "not-read"));
      if (a.cited) li.append(" · ", el("span", "cited", "cited-mark"));
      ol.append(li);
    });
    box.append(el("p", "Attachments, in the message's order:", "note"), ol);
  }

  async function show() {
    const m = /^Cell (\S+) /.exec(document.getElementById("cell-title").textContent);
    if (!m) return;
    if (!data) data = await load();
    const f = data && data.families.find((f) => f.members.some((x) => x.cell === m[1]));
    box.hidden = !f;
    if (!f) return;
    box.replaceChildren(el("h3", "Family: " + f.message));
    const msg = el("div", "", "message-of-family");
    msg.id = "family-message";
    box.append(msg);
    showMessage(msg, m[1]);
    const ul = el("ul");
    f.members.forEach((x) => {
      const li = el("li", "", x.cell === m[1] ? "member current" : "member");
      li.dataset.cell = x.cell;
      li.append(el("b", x.cell), " · " + (x.part || "the message's text") + " · ", el("span", memberState(x), "state status-" + x.decided));
      ul.append(li);
    });
    const reason = el("input");
    reason.id = "family-reason";
    reason.placeholder = "reason (to reject)";
    reason.autocomplete = "off";
    const accept = el("button", "Accept family");
    accept.type = "button";
    accept.id = "family-accept";
    const reject = el("button", "Reject family");
    reject.type = "button";
    reject.id = "family-reject";
    const say = el("p", "", "message");
    accept.addEventListener("click", () => decide(f, "accepted", reason.value, say));
    reject.addEventListener("click", () => decide(f, "rejected", reason.value, say));
    const actions = el("p", "", "actions");
    actions.append(accept, " ", reject, " ", reason);
    box.append(el("p", "Cells grounded on the family:", "note"), ul, actions, say);
  }

  new MutationObserver(show).observe(document.getElementById("cell-title"), { childList: true, characterData: true, subtree: true });
})();
