// DOM building (text always goes in as text nodes, never as HTML), formatting and the API call.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "style") el.style.cssText = value; // CSSOM: the page's CSP refuses style attributes
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined));
  return el;
}

export class ApiError extends Error {}

export async function api(path, params = {}) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== null && v !== undefined && v !== "") query.set(k, v);
  }
  const url = "/api/" + path + (query.toString() ? "?" + query : "");
  const response = await fetch(url, { cache: "no-store" });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(describe(body.detail) || response.statusText);
  return body;
}

function describe(detail) {
  if (!Array.isArray(detail)) return detail;
  return detail.map((d) => `${(d.loc || []).slice(1).join(".")}: ${d.msg}`).join("; ");
}

export const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");
export const num = (x, digits = 2) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
export const int = (x) => (x === null || x === undefined ? "–" : Number(x).toLocaleString("en"));
export const money = (x) => (x ? "$" + Number(x).toFixed(4) : "–");
export const secs = (x) => (x === null || x === undefined ? "–" : x < 1 ? (1000 * x).toFixed(0) + " ms" : x.toFixed(2) + " s");
export const date = (t) => (t ? new Date(t * 1000).toLocaleString("sv") : "–");

export function successCell(rate, ci) {
  if (rate === null || rate === undefined) return h("span", { class: "muted" }, "no episodes");
  const [lo, hi] = ci;
  return h("span", { class: "success-cell", title: "95% Wilson interval" },
    h("span", { class: "bar" },
      h("span", { class: "ci", style: `left:${100 * lo}%;width:${100 * (hi - lo)}%` }),
      h("span", { class: "rate", style: `left:${100 * rate}%` })),
    h("span", { class: "value" }, `${pct(rate)} [${pct(lo)}, ${pct(hi)}]`));
}

export function badge(ok, yes = "success", no = "failure") {
  return h("span", { class: "badge " + (ok ? "ok" : "bad") }, ok ? yes : no);
}

export function errorBox(err) {
  return h("p", { class: "error-box", role: "alert" }, String(err.message || err));
}

export function pager(page, pages, go) {
  return h("div", { class: "pager" },
    h("button", { type: "button", disabled: page <= 1, onclick: () => go(page - 1), "aria-label": "previous page" }, "‹ prev"),
    h("span", { class: "page-of" }, `page ${page} of ${pages}`),
    h("button", { type: "button", disabled: page >= pages, onclick: () => go(page + 1), "aria-label": "next page" }, "next ›"));
}

export function hashFor(path, params = {}) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== null && v !== undefined && v !== "") query.set(k, v);
  }
  return "#/" + path + (query.toString() ? "?" + query : "");
}
