// A training run: held-out success with 95% intervals at the steps where it was evaluated (each
// evaluation is a run of its own, linked here), and every logged metric over steps.
import { api, clear, h, hashFor, int, pct } from "./dom.js";
import { lineChart, valueChart } from "./plots.js";

export function trainView(container, runId) {
  async function refresh() {
    const t = await api("train/" + encodeURIComponent(runId));
    clear(container,
      h("h1", {}, "Training run ", h("span", { class: "mono" }, t.run.name)),
      h("p", { class: "muted mono" }, `${t.run.id} · ${t.run.agent} · ${t.run.suite}`),
      h("section", { id: "held-out" },
        h("h2", {}, "Held-out success"),
        t.held_out.length
          ? [lineChart([{ label: "held-out success", points: t.held_out }], "held-out success (95% CI) by training step"), heldOutTable(t.held_out)]
          : h("p", { class: "muted" }, "no held-out evaluation stored yet (set env.eval_suite, eval_every and db)")),
      h("section", { id: "train-metrics" },
        h("h2", {}, "Training metrics"),
        t.curves.length
          ? h("div", { class: "plot-row" }, t.curves.map((name, i) => valueChart(t.metrics[name], name, i)))
          : h("p", { class: "muted" }, "no metrics logged yet")));
  }
  return { update: refresh, refresh };
}

function heldOutTable(points) {
  return h("table", { id: "held-out-table", class: "grid" },
    h("thead", {}, h("tr", {}, ["step", "success [95% CI]", "episodes", ""].map((c) => h("th", {}, c)))),
    h("tbody", {}, points.map((p) => h("tr", {},
      h("td", { class: "num" }, int(p.step)),
      h("td", {}, `${pct(p.success_rate)} [${pct(p.ci95[0])}, ${pct(p.ci95[1])}]`),
      h("td", { class: "num" }, int(p.episodes)),
      h("td", {}, h("a", { href: hashFor("run/" + encodeURIComponent(p.run_id)) }, "episodes"))))));
}
