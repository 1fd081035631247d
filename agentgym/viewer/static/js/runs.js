// The runs page: every run with success and its interval, a search box, two-run comparison and
// the training curve when runs were evaluated at training steps.
import { api, clear, date, h, hashFor, int, money, successCell } from "./dom.js";
import { lineChart } from "./plots.js";

const ACTIVE_S = 15; // a run whose last episode ended this recently is marked active

export function runsView(container) {
  const selected = new Set();
  let q = "";
  const search = h("input", { id: "runs-search", type: "search", placeholder: "filter by suite, agent, name or id", "aria-label": "filter runs" });
  const compareBtn = h("button", { id: "compare-selected", type: "button", disabled: true }, "compare the two selected runs");
  const table = h("div", { id: "runs-table" });
  const training = h("section", { id: "training" });
  let timer = null;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => { q = search.value.trim(); refresh(); }, 250);
  });
  compareBtn.addEventListener("click", () => {
    const [a, b] = [...selected];
    location.hash = hashFor("compare", { a, b });
  });
  container.append(h("h1", {}, "Runs"), h("div", { class: "toolbar" }, search, compareBtn), table, training);

  function toggle(id, on) {
    if (on) selected.add(id); else selected.delete(id);
    compareBtn.disabled = selected.size !== 2;
  }

  async function refresh() {
    const [runs, curves] = await Promise.all([api("runs", { q }), api("training")]);
    for (const id of [...selected]) if (!runs.some((r) => r.id === id)) toggle(id, false);
    clear(table, runs.length ? runsTable(runs, selected, toggle) : h("p", { class: "muted" }, q ? "no run matches" : "no runs in this store yet"));
    clear(training, curves.length ? [h("h2", {}, "Success over training steps"), lineChart(curves, "success rate (95% CI) by training step")] : []);
  }
  return { update: refresh, refresh };
}

function runsTable(runs, selected, toggle) {
  const now = Date.now() / 1000;
  const head = ["", "run", "suite", "agent", "success [95% CI]", "episodes", "errors", "tokens", "cost", "created"];
  return h("table", { id: "runs", class: "grid" },
    h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))),
    h("tbody", {}, runs.map((r) => h("tr", { dataset: { runId: r.id } },
      h("td", {}, h("input", { type: "checkbox", "aria-label": "select for comparison", checked: selected.has(r.id), onchange: (e) => toggle(r.id, e.target.checked) })),
      h("td", {}, h("a", { href: hashFor((isTraining(r) ? "train/" : "run/") + encodeURIComponent(r.id)), class: "run-link" }, r.name),
        isTraining(r) ? h("span", { class: "badge", title: "metrics and held-out success over steps" }, "training") : null,
        h("div", { class: "muted mono" }, r.id.slice(0, 8)),
        r.last_at && now - r.last_at < ACTIVE_S ? h("span", { class: "badge live-badge", title: `an episode finished in the last ${ACTIVE_S} s` }, "active") : null),
      h("td", {}, r.suite),
      h("td", { class: "mono" }, r.agent),
      h("td", { class: "success" }, successCell(r.success_rate, r.ci95)),
      h("td", { class: "num episodes" }, int(r.episodes)),
      h("td", { class: "num" + (r.errors ? " bad-text" : "") }, int(r.errors)),
      h("td", { class: "num" }, r.tokens ? int(r.tokens) : "–"),
      h("td", { class: "num" }, money(r.cost)),
      h("td", { class: "nowrap" }, date(r.created_at))))));
}

// A training run (agentgym train with a db) opens its training page; its held-out evaluations,
// runs of their own with config.train_step, stay ordinary runs.
function isTraining(r) {
  return r.agent.startsWith("train:") && r.config.train_step === undefined;
}
