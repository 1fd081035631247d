// Hash router and live updates: a view is rebuilt when the route changes, updated in place when
// only its query changes, and refreshed when the store's version changes (an eval wrote to it).
import { api, clear, errorBox } from "./dom.js";
import { runsView } from "./runs.js";
import { runView } from "./run.js";
import { episodeView } from "./episode.js";
import { compareView } from "./compare.js";
import { trainView } from "./train.js";

const VIEWS = { "": runsView, run: runView, episode: episodeView, compare: compareView, train: trainView };
const POLL_MS = Number(new URLSearchParams(location.search).get("poll")) || 2000;
let current = null; // {key, view}
let version = null;

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?");
  const [name = "", ...rest] = path.split("/");
  return { name, arg: rest.map(decodeURIComponent).join("/"), params: Object.fromEntries(new URLSearchParams(query)) };
}

async function route() {
  const { name, arg, params } = parseHash();
  const make = VIEWS[name];
  const container = document.getElementById("view");
  if (!make) {
    clear(container, errorBox(`unknown page #/${name}; pages: runs (#/), run, episode, compare, train`));
    current = null;
    return;
  }
  const key = name + "/" + arg;
  try {
    if (current && current.key === key) {
      await current.view.update(params);
    } else {
      clear(container);
      current = { key, view: make(container, arg) };
      await current.view.update(params);
    }
  } catch (err) {
    clear(container, errorBox(err));
    current = null;
  }
}

async function poll() {
  const live = document.getElementById("live");
  try {
    const v = (await api("version")).version;
    if (version !== null && v !== version && current && current.view.refresh) await current.view.refresh();
    version = v;
    live.textContent = "● live · " + new Date().toLocaleTimeString("sv");
    live.className = "live on";
    live.dataset.version = v;
  } catch (err) {
    live.textContent = "○ store unreachable";
    live.className = "live off";
  }
  setTimeout(poll, POLL_MS);
}

window.addEventListener("hashchange", route);
route();
poll();
