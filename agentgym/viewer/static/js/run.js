// One run: its summary, success by tag, and its episodes filtered, sorted and paged by the server.
import { api, badge, clear, date, errorBox, h, hashFor, int, money, num, pager, secs, successCell } from "./dom.js";
import { barChart } from "./plots.js";

const DEFAULTS = { success: "any", status: "any", tag: "", min_steps: "", max_steps: "", q: "", sort: "task", desc: "", page: "1", page_size: "50" };
const SORTS = ["task", "steps", "score", "reward", "duration", "tokens", "cost", "started"];

export function runView(container, runId) {
  const header = h("section", { id: "run-header" });
  const plot = h("section", { id: "tag-plot", class: "plot-row" });
  const form = h("form", { id: "filters", class: "filters", onsubmit: (e) => e.preventDefault() });
  const list = h("section", { id: "episode-list" });
  container.append(header, plot, form, list);
  let params = { ...DEFAULTS };
  let built = false;

  function go(changes) {
    const next = { ...params, ...changes };
    if (!("page" in changes)) next.page = "1";
    const shown = Object.fromEntries(Object.entries(next).filter(([k, v]) => v !== DEFAULTS[k]));
    location.hash = hashFor("run/" + encodeURIComponent(runId), shown);
  }

  async function update(p) {
    params = { ...DEFAULTS, ...p };
    const pending = refreshList(); // in parallel with the header: the list is what one waits for
    pending.catch(() => {}); // if the header fails first, its error is the one shown
    if (!built) {
      built = true;
      await refreshHeader();
    }
    syncForm(form, params);
    await pending;
  }

  async function refreshHeader() {
    const run = await api("runs/" + encodeURIComponent(runId));
    clear(header, runHeader(run));
    if (!form.childElementCount) clear(form, filterControls(run.tags, go));
    loadSummary(); // the tag plot reads the whole run: drawn when ready, never waited for
  }

  async function loadSummary() {
    try {
      const summary = await api(`runs/${encodeURIComponent(runId)}/summary`);
      clear(plot, summaryPlot(summary), summaryTable(summary));
    } catch (err) {
      clear(plot, errorBox(err));
    }
  }

  let latest = 0; // a slow answer to an older filter must not overwrite a newer one
  async function refreshList() {
    const mine = ++latest;
    const page = await api(`runs/${encodeURIComponent(runId)}/episodes`, { ...params, desc: params.desc ? "true" : "" });
    if (mine !== latest) return;
    clear(list, h("p", { id: "total", class: "total", dataset: { total: page.total } }, `${int(page.total)} episode${page.total === 1 ? "" : "s"} match`),
      episodesTable(runId, page.rows), pager(page.page, page.pages, (n) => go({ page: String(n) })));
  }

  return { update, refresh: async () => { await refreshHeader(); await refreshList(); } };
}

function runHeader(run) {
  return [
    h("nav", { class: "crumbs" }, h("a", { href: "#/" }, "runs"), " › ", run.name),
    h("h1", {}, run.name),
    h("dl", { class: "facts" },
      fact("suite", run.suite), fact("agent", run.agent), fact("run id", run.id),
      fact("success", successCell(run.success_rate, run.ci95)), fact("episodes", int(run.episodes)),
      fact("errors", int(run.errors)), fact("tokens", int(run.tokens)), fact("cost", money(run.cost)),
      fact("created", date(run.created_at)), fact("git", run.git_sha || "–")),
    h("details", {}, h("summary", {}, "configuration and versions"),
      h("pre", { class: "json" }, JSON.stringify({ config: run.config, versions: run.versions }, null, 2))),
  ];
}

export function fact(label, value) {
  return h("div", { class: "fact" }, h("dt", {}, label), h("dd", {}, value));
}

function summaryPlot(summary) {
  const bars = summary.map((s) => ({ label: s.group, rate: s.success_rate, ci: s.ci95, n: s.episodes }));
  return barChart(bars, "success by tag (95% Wilson CI)");
}

function summaryTable(summary) {
  const ks = [...new Set(summary.flatMap((s) => Object.keys(s.pass_at).map(Number)))].filter((k) => k > 1).sort((a, b) => a - b);
  return h("table", { id: "tag-summary", class: "grid compact" },
    h("thead", {}, h("tr", {}, ["group", "episodes", "success [95% CI]", "score", "steps", ...ks.map((k) => `pass@${k} / pass^${k}`), "errors"].map((c) => h("th", {}, c)))),
    h("tbody", {}, summary.map((s) => h("tr", {},
      h("td", {}, s.group), h("td", { class: "num" }, int(s.episodes)),
      h("td", {}, successCell(s.success_rate, s.ci95)), h("td", { class: "num" }, num(s.mean_score, 3)),
      h("td", { class: "num" }, num(s.mean_steps, 1)),
      ks.map((k) => h("td", { class: "num" }, `${num(s.pass_at[k], 3)} / ${num(s.pass_hat[k], 3)}`)),
      h("td", { class: "num" }, int(s.errors))))));
}

function select(name, label, options) {
  return h("label", {}, label, h("select", { name, id: "filter-" + name }, options.map(([v, text]) => h("option", { value: v }, text))));
}

function filterControls(tags, go) {
  const controls = [
    select("success", "success", [["any", "any"], ["yes", "solved"], ["no", "failed"]]),
    select("status", "status", [["any", "any"], ["completed", "completed"], ["limit", "hit a limit"], ["error", "error"]]),
    select("tag", "tag", [["", "any"], ...tags.map((t) => [t, t])]),
    h("label", {}, "steps ≥", h("input", { name: "min_steps", id: "filter-min_steps", type: "number", min: 0, class: "narrow" })),
    h("label", {}, "steps ≤", h("input", { name: "max_steps", id: "filter-max_steps", type: "number", min: 0, class: "narrow" })),
    h("label", { class: "grow" }, "search task", h("input", { name: "q", id: "filter-q", type: "search", placeholder: "text in the task id or instruction" })),
    select("sort", "sort by", SORTS.map((s) => [s, s])),
    h("label", {}, h("input", { name: "desc", id: "filter-desc", type: "checkbox" }), "descending"),
    select("page_size", "per page", ["25", "50", "100", "250"].map((n) => [n, n])),
  ];
  let timer = null;
  const apply = (e) => {
    const el = e.target;
    const value = el.type === "checkbox" ? (el.checked ? "1" : "") : el.value.trim();
    clearTimeout(timer);
    timer = setTimeout(() => go({ [el.name]: value }), el.type === "search" || el.type === "number" ? 300 : 0);
  };
  // Text fields apply as one types; selects and checkboxes on change (which every browser and
  // WebDriver fires for them, unlike input).
  const typed = (e) => e.target.type === "search" || e.target.type === "number";
  for (const c of controls) {
    c.addEventListener("input", (e) => typed(e) && apply(e));
    c.addEventListener("change", (e) => !typed(e) && apply(e));
  }
  return controls;
}

function syncForm(form, params) {
  for (const el of form.querySelectorAll("[name]")) {
    if (document.activeElement === el && el.type !== "checkbox" && el.tagName !== "SELECT") continue;
    if (el.type === "checkbox") el.checked = Boolean(params[el.name]);
    else el.value = params[el.name] ?? "";
  }
}

function episodesTable(runId, rows) {
  if (!rows.length) return h("p", { class: "muted" }, "no episode matches these filters");
  const head = ["task", "sample", "result", "status", "score", "reward", "steps", "tokens", "cost", "time", "tags", "task text"];
  return h("table", { id: "episodes", class: "grid" },
    h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows.map((r) => h("tr", { dataset: { task: r.task_id, sample: r.sample, success: r.success } },
      h("td", { class: "mono" }, h("a", { href: hashFor("episode/" + encodeURIComponent(runId), { task: r.task_id, sample: r.sample }) }, r.task_id)),
      h("td", { class: "num" }, r.sample),
      h("td", {}, badge(r.success)),
      h("td", { class: r.status === "error" ? "bad-text" : "" }, r.status),
      h("td", { class: "num" }, num(r.score, 3)), h("td", { class: "num" }, num(r.reward, 3)),
      h("td", { class: "num" }, r.steps), h("td", { class: "num" }, r.prompt_tokens + r.completion_tokens || "–"),
      h("td", { class: "num" }, money(r.cost)), h("td", { class: "num" }, secs(r.duration_s)),
      h("td", {}, r.tags.map((t) => h("span", { class: "tag" }, t))),
      h("td", { class: "clip" }, r.instruction)))));
}
