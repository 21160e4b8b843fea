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

  async function show() {
    const m = /^Cell (\S+) /.exec(document.getElementById("cell-title").textContent);
    if (!m) return;
    if (!data) data = await load();
    const f = data && data.families.find((f) => f.members.some((x) => x.cell === m[1]));
    box.hidden = !f;
    if (!f) return;
    box.replaceChildren(el("h3", "Family: " + f.message));
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
    box.append(ul, actions, say);
  }

  new MutationObserver(show).observe(document.getElementById("cell-title"), { childList: true, characterData: true, subtree: true });
})();
