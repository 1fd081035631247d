// One episode as a conversation: the task, then per step the agent's action (text or tool calls)
// and the env's answer (text, JSON tool result, command output, dialogue, judge scores), with
// reward, info, latency and tokens; training steps show their tokens with the loss mask.
import { api, badge, clear, date, h, hashFor, int, money, num, secs } from "./dom.js";
import { fact } from "./run.js";

export function episodeView(container, runId) {
  let params = {};
  async function update(p) {
    params = p;
    const ep = await api("episode", { run: runId, task: p.task, sample: p.sample || 0 });
    clear(container, page(runId, ep));
  }
  return { update, refresh: () => update(params) };
}

function link(runId, key, text) {
  return key ? h("a", { href: hashFor("episode/" + encodeURIComponent(runId), { task: key.task_id, sample: key.sample }), class: "nav-" + text }, text === "prev" ? "‹ previous" : "next ›") : null;
}

function page(runId, ep) {
  return [
    h("nav", { class: "crumbs" }, h("a", { href: "#/" }, "runs"), " › ",
      h("a", { href: hashFor("run/" + encodeURIComponent(runId)) }, ep.run_name), " › ", `${ep.task_id} #${ep.sample}`,
      h("span", { class: "prevnext" }, link(runId, ep.prev, "prev"), " ", link(runId, ep.next, "next"))),
    h("h1", {}, ep.task_id, " ", badge(ep.success)),
    h("dl", { class: "facts" },
      fact("status", ep.status), fact("score", num(ep.score, 3)), fact("return", num(ep.reward, 3)),
      fact("steps", ep.steps.length), fact("tokens", int(ep.prompt_tokens + ep.completion_tokens)),
      fact("cost", money(ep.cost)), fact("duration", secs(ep.duration_s)), fact("env", ep.env_id),
      fact("seed", ep.seed ?? "–"), fact("sample", ep.sample), fact("agent", ep.agent), fact("started", date(ep.started_at)),
      fact("tags", ep.tags.map((t) => h("span", { class: "tag" }, t)))),
    ep.error ? h("section", { class: "error-trace" }, h("h2", {}, "Error"), h("pre", {}, ep.error)) : null,
    h("h2", {}, "Conversation"),
    h("ol", { id: "steps", class: "conversation" },
      h("li", { class: "msg task" }, h("div", { class: "who" }, "task"), h("pre", {}, ep.instruction)),
      ep.first_observation && ep.first_observation !== ep.instruction
        ? h("li", { class: "msg env" }, h("div", { class: "who" }, "env · reset"), h("pre", {}, ep.first_observation)) : null,
      ep.steps.map(step)),
  ];
}

function step(s) {
  const stats = [
    `agent ${secs(s.agent_latency_s)}`, `env ${secs(s.env_latency_s)}`,
    s.prompt_tokens || s.completion_tokens ? `${int(s.prompt_tokens)} prompt + ${int(s.completion_tokens)} completion tokens` : null,
    s.cost ? money(s.cost) : null,
  ].filter(Boolean).join(" · ");
  return h("li", { class: "step", dataset: { t: s.t } },
    h("div", { class: "msg agent" },
      h("div", { class: "who" }, `agent · step ${s.t + 1}`, h("span", { class: "stats" }, stats)),
      s.tool_calls ? s.tool_calls.map(toolCall) : h("pre", { class: "action" }, s.action),
      s.tokens ? tokenStrip(s.tokens) : null),
    h("div", { class: "msg env" + (s.valid ? "" : " invalid") },
      h("div", { class: "who" }, envLabel(s),
        h("span", { class: "stats" },
          h("span", { class: "reward" }, `reward ${num(s.reward, 3)}`),
          s.valid ? null : h("span", { class: "badge bad" }, "invalid action"),
          s.terminated ? h("span", { class: "badge" }, "terminated") : null,
          s.truncated ? h("span", { class: "badge" }, "truncated") : null)),
      observation(s),
      s.dialogue ? dialogue(s.dialogue) : null,
      s.scores ? scores(s.scores) : null,
      Object.keys(s.info).length ? h("details", { class: "info" }, h("summary", {}, "info"), infoTable(s.info)) : null));
}

function envLabel(s) {
  const source = s.info.source;
  if (s.tool_calls && source && source !== "user") return `tool result · ${source}`;
  if (source === "user") return "user";
  return "env";
}

function toolCall(c) {
  return h("div", { class: "tool-call" }, h("span", { class: "tool-name" }, c.name),
    h("pre", { class: "json" }, JSON.stringify(c.arguments, null, 2)));
}

function observation(s) {
  if (s.command) {
    return h("div", { class: "command" },
      h("span", { class: "badge " + (s.command.returncode === 0 ? "ok" : "bad") }, `exit ${s.command.returncode}`),
      h("pre", { class: "output" }, s.command.output));
  }
  if (s.observation_json !== null && s.observation_json !== undefined) {
    return h("pre", { class: "json observation" + (s.info.tool_error ? " bad-text" : "") }, JSON.stringify(s.observation_json, null, 2));
  }
  return h("pre", { class: "observation" }, s.observation);
}

function dialogue(msgs) {
  const speakers = [...new Set(msgs.map((m) => m.speaker))];
  return h("ol", { class: "dialogue" }, msgs.map((m) => h("li", { class: "say s" + (speakers.indexOf(m.speaker) % 4) },
    h("span", { class: "speaker" }, m.speaker), h("span", {}, m.content))));
}

function scores(values) {
  return h("table", { class: "scores grid compact" }, h("caption", {}, "scores"),
    h("tbody", {}, Object.entries(values).map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", { class: "num" }, typeof v === "number" ? num(v, 3) : v)))));
}

function infoTable(info) {
  return h("table", { class: "grid compact" }, h("tbody", {}, Object.entries(info).map(([k, v]) =>
    h("tr", {}, h("th", {}, k), h("td", {}, typeof v === "object" && v !== null ? h("pre", { class: "json" }, JSON.stringify(v, null, 2)) : String(v))))));
}

function tokenStrip(tokens) {
  const masked = tokens.some((t) => t.mask !== null);
  return h("details", { class: "tokens", open: masked },
    h("summary", {}, `${tokens.length} tokens`, masked ? " · loss mask: trained (1) / not trained (0)" : ""),
    h("div", { class: "token-strip" }, tokens.map((t) => h("span", {
      class: "tok" + (t.mask === null ? "" : t.mask ? " m1" : " m0"),
      title: `id ${t.id}` + (t.logprob !== null ? ` · logprob ${t.logprob.toFixed(3)}` : "") + (t.mask !== null ? ` · mask ${t.mask}` : ""),
    }, t.text !== null ? t.text : String(t.id)))));
}
