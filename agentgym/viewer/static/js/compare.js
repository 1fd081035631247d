// Two runs side by side, per task: who solved what (a task counts as solved by a run when any of
// its samples succeeded).
import { api, clear, h, hashFor, int, pager } from "./dom.js";

const VERDICTS = [["all", "all tasks"], ["differ", "differ"], ["both", "both solved"], ["only_a", "only A"], ["only_b", "only B"], ["neither", "neither"], ["missing", "missing in one"]];

const LABEL = { both: "both solved", only_a: "only A", only_b: "only B", neither: "neither", missing: "missing in one" };

export function compareView(container) {
  let params = {};
  return {
    refresh() { return this.update(params); },
    async update(p) {
      params = p;
      const runs = await api("runs");
      const pick = (name, value) => h("select", { id: "compare-" + name, "aria-label": "run " + name.toUpperCase(),
        onchange: (e) => { location.hash = hashFor("compare", { ...p, [name]: e.target.value, page: "" }); } },
        h("option", { value: "" }, "choose a run"),
        runs.map((r) => h("option", { value: r.id, selected: r.id === value }, `${r.name} (${r.id.slice(0, 8)})`)));
      const head = [h("h1", {}, "Compare two runs"), h("div", { class: "toolbar" }, "A ", pick("a", p.a), " B ", pick("b", p.b))];
      if (!p.a || !p.b) return clear(container, head, h("p", { class: "muted" }, "choose two runs"));
      const res = await api("compare", { a: p.a, b: p.b, only: p.only || "all", page: p.page || 1 });
      const name = Object.fromEntries(runs.map((r) => [r.id, r.name]));
      clear(container, head,
        h("div", { id: "verdicts", class: "toolbar" }, VERDICTS.map(([v, label]) => h("a", {
          class: "chip" + ((p.only || "all") === v ? " active" : ""), href: hashFor("compare", { a: p.a, b: p.b, only: v }),
          dataset: { verdict: v } }, label, v in res.counts ? ` (${int(res.counts[v])})` : ""))),
        table(res, name), pager(res.page, res.pages, (n) => { location.hash = hashFor("compare", { ...p, page: n }); }));
    },
  };
}

function cell(runId, task, s, n) {
  if (n === null) return h("td", { class: "muted" }, "not run");
  return h("td", { class: s > 0 ? "ok-text" : "bad-text" },
    h("a", { href: hashFor("episode/" + encodeURIComponent(runId), { task, sample: 0 }) }, `${s > 0 ? "✓" : "✗"} ${s}/${n}`));
}

function table(res, name) {
  if (!res.rows.length) return h("p", { class: "muted" }, "no task with this verdict");
  return h("table", { id: "compare", class: "grid" },
    h("thead", {}, h("tr", {}, h("th", {}, "task"), h("th", {}, "A: " + name[res.a]), h("th", {}, "B: " + name[res.b]), h("th", {}, "verdict"))),
    h("tbody", {}, res.rows.map((r) => h("tr", { dataset: { verdict: r.verdict } },
      h("td", { class: "mono" }, r.task_id), cell(res.a, r.task_id, r.a_s, r.a_n), cell(res.b, r.task_id, r.b_s, r.b_n),
      h("td", {}, LABEL[r.verdict])))));
}
