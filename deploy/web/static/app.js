// AURA Town live view: the map, the agents, the event feed and (operators) the probe calls,
// kept current by Server-Sent Events from /api/stream. Plain JS, no dependencies.
"use strict";

(() => {
  const TYPE_COLORS = {
    home: "#8aa4d6", cafe: "#e9b65a", bakery: "#f0a868", teahouse: "#9fcf8f", shop: "#d98fb6",
    pharmacy: "#6fd0c8", gallery: "#c7a0f0", library: "#c4a97a", school: "#f2d16b",
    townhall: "#cfd6dd", temple: "#f28c6d", park: "#5fae6e", square: "#a9b4be",
  };
  const AGENT_COLORS = [
    "#ff6b6b", "#4fc3f7", "#ffd54f", "#81c784", "#ce93d8", "#ff8a65", "#4db6ac", "#f06292",
    "#aed581", "#7986cb", "#fff176", "#a1887f",
  ];
  const KIND_COLORS = {
    argument: "#f26d6d", emergency: "#ff5252", accident: "#ff8a65", celebration: "#ffd54f",
    announcement: "#4fc3f7", weather: "#90caf9", outage: "#b0bec5", delivery: "#a5d6a7",
    conversation: "#9fa8da", assistant: "#ce93d8", plan: "#80cbc4",
  };
  const MOVE_MS = 700;
  const PULSE_MS = 4000;
  const MAX_EVENTS = 300;
  const MAX_AUDIT = 200;

  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };
  const hashColor = (text, palette) => {
    let h = 0;
    for (const ch of text) h = (h * 31 + ch.codePointAt(0)) >>> 0;
    return palette[h % palette.length];
  };
  const typeColor = (type) => TYPE_COLORS[type] || hashColor(type, Object.values(TYPE_COLORS));
  const kindColor = (kind) => KIND_COLORS[kind] || "#b0bec5";
  const initials = (name) => name.split(/\s+/).filter(Boolean).map((w) => w[0]).join("").slice(0, 2).toUpperCase();

  const view = {
    town: null,
    locations: new Map(),
    agentColor: new Map(),
    state: null,
    clock: null,
    lastTick: null,
    operator: false,
    sprites: new Map(), // slug -> {x, y, fromX, fromY, toX, toY, t0}
    selected: null,
    events: new Map(), // id -> event
    audit: [],
    auditSeqs: new Set(),
    pulses: [],
    backlogDone: false,
    openBeliefs: new Set(),
    hover: null,
  };

  // ------------------------------------------------------------------ map

  const canvas = $("map");
  const ctx = canvas.getContext("2d");
  let base = null; // the static layer (grid and locations), redrawn on resize
  let cell = 12;

  function resize() {
    if (!view.town) return;
    const dpr = window.devicePixelRatio || 1;
    const cssWidth = canvas.clientWidth || 720;
    const size = Math.max(240, Math.round(cssWidth * dpr));
    canvas.width = size;
    canvas.height = Math.round(size * view.town.height / view.town.width);
    cell = size / view.town.width;
    base = drawBase();
  }

  function drawBase() {
    const off = document.createElement("canvas");
    off.width = canvas.width;
    off.height = canvas.height;
    const g = off.getContext("2d");
    g.fillStyle = "#1b2630";
    g.fillRect(0, 0, off.width, off.height);
    g.strokeStyle = "rgba(255,255,255,0.035)";
    g.lineWidth = 1;
    for (let i = 0; i <= view.town.width; i += 1) {
      g.beginPath(); g.moveTo(i * cell, 0); g.lineTo(i * cell, off.height); g.stroke();
    }
    for (let j = 0; j <= view.town.height; j += 1) {
      g.beginPath(); g.moveTo(0, j * cell); g.lineTo(off.width, j * cell); g.stroke();
    }
    g.strokeStyle = "rgba(255,255,255,0.08)";
    for (let i = 0; i <= view.town.width; i += 10) {
      g.beginPath(); g.moveTo(i * cell, 0); g.lineTo(i * cell, off.height); g.stroke();
      g.beginPath(); g.moveTo(0, i * cell); g.lineTo(off.width, i * cell); g.stroke();
    }
    for (const loc of view.town.locations) {
      const color = typeColor(loc.type);
      const x = loc.x * cell, y = loc.y * cell, w = loc.width * cell, h = loc.height * cell;
      g.fillStyle = color + "40";
      g.strokeStyle = color;
      g.lineWidth = Math.max(1, cell * 0.12);
      roundRect(g, x + 1, y + 1, w - 2, h - 2, Math.min(6, cell * 0.5));
      g.fill();
      g.stroke();
    }
    const font = Math.max(9, Math.round(cell * 0.78));
    g.font = `600 ${font}px system-ui, sans-serif`;
    g.textAlign = "center";
    g.textBaseline = "top";
    g.lineJoin = "round";
    for (const loc of view.town.locations) {
      const cx = (loc.x + loc.width / 2) * cell;
      const ty = (loc.y + loc.height) * cell + 2;
      g.lineWidth = Math.max(2, font / 3.5);
      g.strokeStyle = "rgba(16,22,29,0.92)";
      g.strokeText(loc.name, cx, ty);
      g.fillStyle = "rgba(228,233,238,0.86)";
      g.fillText(loc.name, cx, ty);
    }
    return off;
  }

  function roundRect(g, x, y, w, h, r) {
    g.beginPath();
    g.moveTo(x + r, y);
    g.arcTo(x + w, y, x + w, y + h, r);
    g.arcTo(x + w, y + h, x, y + h, r);
    g.arcTo(x, y + h, x, y, r);
    g.arcTo(x, y, x + w, y, r);
    g.closePath();
  }

  function nightAlpha() {
    const time = (view.lastTick && view.lastTick.time) || (view.state && view.state.time);
    if (!time) return 0;
    const [hh, mm] = time.split(":").map(Number);
    const h = hh + mm / 60;
    if (h >= 8 && h <= 18) return 0;
    if (h < 8) return Math.min(0.35, (8 - h) * 0.17);
    return Math.min(0.38, (h - 18) * 0.08);
  }

  // Agents sharing a cell are fanned out around it.
  function layoutOffsets(agents) {
    const groups = new Map();
    for (const a of agents) {
      const key = `${a.x},${a.y}`;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(a.slug);
    }
    const offsets = new Map();
    for (const slugs of groups.values()) {
      slugs.forEach((slug, i) => {
        if (slugs.length === 1) { offsets.set(slug, [0, 0]); return; }
        const angle = (2 * Math.PI * i) / slugs.length - Math.PI / 2;
        const r = Math.min(1.6, 0.6 + 0.15 * slugs.length);
        offsets.set(slug, [Math.cos(angle) * r, Math.sin(angle) * r]);
      });
    }
    return offsets;
  }

  function updateSprites(agents) {
    const now = performance.now();
    const offsets = layoutOffsets(agents);
    const alive = new Set();
    for (const a of agents) {
      alive.add(a.slug);
      const [ox, oy] = offsets.get(a.slug);
      const tx = a.x + 0.5 + ox, ty = a.y + 0.5 + oy;
      const s = view.sprites.get(a.slug);
      if (!s) {
        view.sprites.set(a.slug, { x: tx, y: ty, fromX: tx, fromY: ty, toX: tx, toY: ty, t0: now });
      } else if (s.toX !== tx || s.toY !== ty) {
        Object.assign(s, { fromX: s.x, fromY: s.y, toX: tx, toY: ty, t0: now });
      }
    }
    for (const slug of [...view.sprites.keys()]) if (!alive.has(slug)) view.sprites.delete(slug);
  }

  function frame(now) {
    requestAnimationFrame(frame);
    if (!base) return;
    ctx.drawImage(base, 0, 0);
    const night = nightAlpha();
    if (night > 0) {
      ctx.fillStyle = `rgba(6,10,30,${night})`;
      ctx.fillRect(0, 0, canvas.width, canvas.height);
    }
    drawPulses(now);
    const agents = (view.state && view.state.agents) || [];
    const selected = agents.find((a) => a.slug === view.selected);
    if (selected && selected.target && view.locations.has(selected.target)) {
      const s = view.sprites.get(selected.slug);
      const loc = view.locations.get(selected.target);
      if (s) {
        ctx.save();
        ctx.setLineDash([cell * 0.5, cell * 0.4]);
        ctx.strokeStyle = "rgba(233,182,90,0.8)";
        ctx.lineWidth = Math.max(1.5, cell * 0.15);
        ctx.beginPath();
        ctx.moveTo(s.x * cell, s.y * cell);
        ctx.lineTo((loc.x + loc.width / 2) * cell, (loc.y + loc.height / 2) * cell);
        ctx.stroke();
        ctx.restore();
      }
    }
    const radius = Math.max(6, cell * 0.85);
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.font = `700 ${Math.max(7, Math.round(radius * 0.95))}px system-ui, sans-serif`;
    for (const a of agents) {
      const s = view.sprites.get(a.slug);
      if (!s) continue;
      const k = Math.min(1, (now - s.t0) / MOVE_MS);
      const e = k < 0.5 ? 2 * k * k : 1 - (-2 * k + 2) ** 2 / 2;
      s.x = s.fromX + (s.toX - s.fromX) * e;
      s.y = s.fromY + (s.toY - s.fromY) * e;
      const px = s.x * cell, py = s.y * cell;
      ctx.beginPath();
      ctx.arc(px, py + radius * 0.18, radius, 0, Math.PI * 2);
      ctx.fillStyle = "rgba(0,0,0,0.35)";
      ctx.fill();
      ctx.beginPath();
      ctx.arc(px, py, radius, 0, Math.PI * 2);
      ctx.fillStyle = view.agentColor.get(a.slug) || "#fff";
      ctx.fill();
      ctx.lineWidth = Math.max(1.5, radius * 0.18);
      ctx.strokeStyle = a.slug === view.selected ? "#ffffff" : "rgba(16,22,29,0.9)";
      ctx.stroke();
      if (a.slug === view.selected) {
        ctx.beginPath();
        ctx.arc(px, py, radius * 1.6, 0, Math.PI * 2);
        ctx.strokeStyle = "rgba(255,255,255,0.55)";
        ctx.lineWidth = Math.max(1, radius * 0.12);
        ctx.stroke();
      }
      ctx.fillStyle = "#10161d";
      ctx.fillText(initials(a.name), px, py + 0.5);
    }
  }

  function drawPulses(now) {
    view.pulses = view.pulses.filter((p) => now - p.t0 < PULSE_MS);
    for (const p of view.pulses) {
      const k = (now - p.t0) / PULSE_MS;
      for (const phase of [0, 0.33]) {
        const kk = (k + phase) % 1;
        ctx.beginPath();
        ctx.arc(p.x * cell, p.y * cell, cell * (1 + kk * p.spread), 0, Math.PI * 2);
        ctx.strokeStyle = p.color;
        ctx.globalAlpha = (1 - kk) * (1 - k * 0.5);
        ctx.lineWidth = Math.max(2, cell * 0.25);
        ctx.stroke();
        ctx.globalAlpha = 1;
      }
    }
  }

  function pulseFor(event) {
    const color = kindColor(event.kind);
    const loc = event.location && view.locations.get(event.location);
    if (loc) {
      view.pulses.push({
        x: loc.x + loc.width / 2, y: loc.y + loc.height / 2, spread: 4, color, t0: performance.now(),
      });
    } else if (!event.location && view.town) {
      view.pulses.push({
        x: view.town.width / 2, y: view.town.height / 2, spread: view.town.width / 2, color, t0: performance.now(),
      });
    }
  }

  // ------------------------------------------------------------------ hover and selection

  function cellAt(evt) {
    const rect = canvas.getBoundingClientRect();
    const x = ((evt.clientX - rect.left) / rect.width) * canvas.width / cell;
    const y = ((evt.clientY - rect.top) / rect.height) * canvas.height / cell;
    return { x, y, rect };
  }

  function agentAt(x, y) {
    let best = null, bestD = 1.1;
    for (const [slug, s] of view.sprites) {
      const d = Math.hypot(s.x - x, s.y - y);
      if (d < bestD) { best = slug; bestD = d; }
    }
    return best;
  }

  function locationAt(x, y) {
    for (const loc of view.town ? view.town.locations : []) {
      if (x >= loc.x && x < loc.x + loc.width && y >= loc.y && y < loc.y + loc.height) return loc;
    }
    return null;
  }

  // On the way to the place of its activity (target), perhaps passing another: a place someone
  // only walks through is never shown as where they are.
  function isMoving(agent) {
    return Boolean(agent.target) && agent.location !== agent.target;
  }

  function whereabouts(agent) {
    if (isMoving(agent)) {
      return agent.location ? `passing ${agent.location}, on the way to ${agent.target}` : `on the way to ${agent.target}`;
    }
    return agent.location ? `at ${agent.location}` : "between places";
  }

  function showTooltip(evt) {
    const tip = $("tooltip");
    if (!view.town) return;
    const { x, y, rect } = cellAt(evt);
    const slug = agentAt(x, y);
    tip.replaceChildren();
    const agent = slug && view.state && view.state.agents.find((a) => a.slug === slug);
    const loc = locationAt(x, y);
    if (agent) {
      tip.append(el("b", null, agent.name));
      tip.append(el("div", null, agent.action));
      tip.append(el("div", "dim", whereabouts(agent)));
      if (agent.private) tip.append(el("div", "dim", `${agent.private.availability}, ${agent.private.emotional_state}`));
    } else if (loc) {
      tip.append(el("b", null, loc.name));
      const hours = loc.opening_hours ? `open ${loc.opening_hours[0]}–${loc.opening_hours[1]}` : "always open";
      tip.append(el("div", "dim", `${loc.type} · ${hours}`));
      if (loc.description) tip.append(el("div", null, loc.description));
      const here = view.state ? view.state.agents.filter((a) => a.location === loc.name).map((a) => a.name) : [];
      tip.append(el("div", "dim", here.length ? `here: ${here.join(", ")}` : "nobody here"));
    } else {
      tip.hidden = true;
      return;
    }
    tip.hidden = false;
    const px = evt.clientX - rect.left + 14, py = evt.clientY - rect.top + 14;
    tip.style.left = `${Math.min(px, rect.width - tip.offsetWidth - 4)}px`;
    tip.style.top = `${Math.min(py, rect.height - tip.offsetHeight - 4)}px`;
  }

  canvas.addEventListener("mousemove", showTooltip);
  canvas.addEventListener("mouseleave", () => { $("tooltip").hidden = true; });
  canvas.addEventListener("click", (evt) => {
    const { x, y } = cellAt(evt);
    const slug = agentAt(x, y);
    select(slug && slug !== view.selected ? slug : null);
  });

  function select(slug) {
    view.selected = slug;
    for (const card of document.querySelectorAll(".agent")) {
      card.classList.toggle("selected", card.dataset.slug === slug);
      if (card.dataset.slug === slug) card.scrollIntoView({ block: "nearest", behavior: "smooth" });
    }
  }

  // ------------------------------------------------------------------ panels

  function renderLegend() {
    const legend = $("legend");
    legend.replaceChildren();
    legend.append(el("span", "group", "Places"));
    const types = [...new Set(view.town.locations.map((l) => l.type))].sort();
    for (const type of types) {
      const item = el("span");
      const swatch = el("i");
      swatch.style.background = typeColor(type);
      item.append(swatch, document.createTextNode(type));
      legend.append(item);
    }
    legend.append(el("span", "group", "Agents"));
    for (const a of view.town.agents) {
      const item = el("span");
      const swatch = el("i", "round");
      swatch.style.background = view.agentColor.get(a.slug);
      item.append(swatch, document.createTextNode(a.name));
      legend.append(item);
    }
    legend.append(el("span", "group", "Events"));
    for (const kind of ["argument", "emergency", "celebration", "announcement", "conversation"]) {
      const item = el("span");
      const swatch = el("i", "round");
      swatch.style.background = "transparent";
      swatch.style.border = `2px solid ${kindColor(kind)}`;
      item.append(swatch, document.createTextNode(kind));
      legend.append(item);
    }
  }

  function availabilityClass(value) {
    if (/not.?disturb|dnd/i.test(value)) return "dnd";
    if (/busy|occupied/i.test(value)) return "busy";
    if (/available|free|open/i.test(value)) return "available";
    return "";
  }

  function renderAgents() {
    const list = $("agents");
    const agents = (view.state && view.state.agents) || [];
    $("agent-count").textContent = agents.length ? `(${agents.length})` : "";
    const profiles = new Map((view.town ? view.town.agents : []).map((a) => [a.slug, a]));
    const cards = agents.map((a) => {
      const card = el("li", "agent");
      card.dataset.slug = a.slug;
      if (a.slug === view.selected) card.classList.add("selected");
      const head = el("div", "head");
      const dot = el("span", "dot");
      dot.style.background = view.agentColor.get(a.slug) || "#fff";
      const occupation = profiles.get(a.slug) ? profiles.get(a.slug).occupation : "";
      head.append(dot, el("span", "name", a.name), el("span", "occupation", occupation));
      card.append(head, el("div", "action", a.action));
      const where = el("div", "where");
      if (isMoving(a)) {
        where.append(el("span", "moving", "moving"), document.createTextNode(` → ${a.target}`));
        if (a.location) where.append(document.createTextNode(`, passing ${a.location}`));
      } else {
        where.textContent = a.location ? `at ${a.location}` : "between places";
      }
      if (a.nearby && a.nearby.length) where.append(document.createTextNode(` · with ${a.nearby.join(", ")}`));
      card.append(where);
      if (a.private) card.append(renderPrivate(a));
      card.addEventListener("click", (evt) => {
        if (evt.target.closest("details")) return;
        select(view.selected === a.slug ? null : a.slug);
      });
      return card;
    });
    list.replaceChildren(...cards);
  }

  function renderPrivate(agent) {
    const p = agent.private;
    const box = el("div", "private");
    box.append(el("div", "label", "private state"));
    const badges = el("div", "badges");
    badges.append(
      el("span", `badge ${availabilityClass(p.availability)}`, p.availability),
      el("span", "badge", p.emotional_state),
      el("span", "badge", `rule: ${p.rule}`),
    );
    box.append(badges);
    box.append(el("div", "goal", `goal: ${p.unspoken_goal || "–"}`));
    const beliefs = Object.entries(p.beliefs_about_others || {});
    if (beliefs.length) {
      const details = el("details");
      details.open = view.openBeliefs.has(agent.slug);
      details.addEventListener("toggle", () => {
        if (details.open) view.openBeliefs.add(agent.slug); else view.openBeliefs.delete(agent.slug);
      });
      details.append(el("summary", null, `beliefs about ${beliefs.length} others`));
      for (const [other, b] of beliefs) {
        details.append(el(
          "div", "belief",
          `${other}: at ${b.location || "?"}, ${b.availability}, ${b.emotional_state} (seen tick ${b.observed_tick})`,
        ));
      }
      box.append(details);
    }
    return box;
  }

  function eventVisible(e) {
    const filter = $("feed-filter").value;
    if (filter === "environment") return e.source === "environment";
    if (filter === "conversation") return e.kind === "conversation";
    if (filter === "other") return e.kind !== "conversation";
    return true;
  }

  function eventItem(e, fresh) {
    const li = el("li", fresh ? "new" : "");
    li.dataset.id = e.id;
    li.dataset.kind = e.kind;
    li.style.borderLeftColor = kindColor(e.kind);
    const kind = el("span", "kind", e.kind);
    kind.style.color = kindColor(e.kind);
    const meta = el("span", "meta", `#${e.id} · day ${e.day} ${e.time} · tick ${e.tick}`);
    li.append(kind, meta, el("div", "desc", e.description));
    const loc = el("div", "loc", e.location ? `at ${e.location}` : "town-wide");
    if (e.participants && e.participants.length) loc.append(document.createTextNode(` · ${e.participants.join(", ")}`));
    if (e.source === "environment") loc.append(document.createTextNode(" · "), el("span", "src", "injected"));
    li.append(loc);
    return li;
  }

  function renderFeed(freshIds) {
    const all = [...view.events.values()].sort((a, b) => b.id - a.id);
    const shown = all.filter(eventVisible);
    $("feed").replaceChildren(...shown.map((e) => eventItem(e, freshIds && freshIds.has(e.id))));
    $("event-count").textContent = all.length ? `(${all.length})` : "";
    $("feed-empty").hidden = shown.length > 0;
  }
  $("feed-filter").addEventListener("change", () => renderFeed(null));

  function addEvents(items) {
    const fresh = new Set();
    for (const e of items) {
      if (view.events.has(e.id)) continue;
      view.events.set(e.id, e);
      if (view.backlogDone) { fresh.add(e.id); pulseFor(e); }
    }
    view.backlogDone = true;
    if (view.events.size > MAX_EVENTS) {
      const ids = [...view.events.keys()].sort((a, b) => a - b);
      for (const id of ids.slice(0, view.events.size - MAX_EVENTS)) view.events.delete(id);
    }
    renderFeed(fresh);
  }

  function auditRow(r) {
    const tr = el("tr");
    const when = new Date(r.wall_time * 1000);
    tr.append(el("td", null, when.toLocaleTimeString([], { hour12: false })));
    const caller = el("td", null, r.identity || r.caller || r.sender || "?");
    if (r.identity) caller.title = `identity ${r.identity} (declared caller: ${r.caller || "none"})`;
    if (r.asker && r.asker !== r.caller) caller.append(el("div", "args", `as ${r.asker}`));
    tr.append(caller);
    const tool = el("td", "tool");
    tool.append(el("code", null, r.tool));
    const args = JSON.stringify(r.args || {});
    if (args !== "{}") tool.append(el("div", "args", args.length > 90 ? `${args.slice(0, 87)}…` : args));
    tr.append(tool);
    const cls = r.status === "ok" ? "ok" : r.status === "denied" ? "denied" : "other";
    const status = el("td", `status ${cls}`, r.status);
    status.append(el("div", "args", r.status === "ok" ? `${r.result_chars} chars` : r.error || ""));
    tr.append(status);
    return tr;
  }

  function addAudit(items) {
    for (const r of items) {
      if (view.auditSeqs.has(r.seq)) continue;
      view.auditSeqs.add(r.seq);
      view.audit.push(r);
    }
    view.audit = view.audit.slice(-MAX_AUDIT);
    $("audit").replaceChildren(...view.audit.slice().reverse().map(auditRow));
    $("audit-count").textContent = view.audit.length ? `(${view.audit.length})` : "";
    $("audit-empty").hidden = view.audit.length > 0;
  }

  function renderHeader() {
    const s = view.state, t = view.lastTick;
    if (view.town) $("town-name").textContent = view.town.name;
    let tick = null, day = null, time = null;
    if (t) ({ tick, day, time } = t);
    if (s && (tick === null || s.tick - 1 > tick)) { tick = s.tick - 1; day = s.day; time = s.time; }
    const tickEl = $("tick");
    const shown = tick === null || tick < 0 ? "–" : String(tick);
    if (tickEl.textContent !== shown) {
      tickEl.textContent = shown;
      tickEl.parentElement.classList.add("flash");
      setTimeout(() => tickEl.parentElement.classList.remove("flash"), 400);
    }
    $("day").textContent = day === null ? "day –" : `day ${day}`;
    $("time").textContent = time || "--:--";
    const pill = $("clock-state");
    const c = view.clock;
    if (!c) {
      pill.textContent = "clock ?";
      pill.className = "pill muted";
    } else if (c.paused && !c.steps_pending) {
      pill.textContent = "paused";
      pill.className = "pill paused";
    } else {
      const speed = c.ticks_per_second === 0 ? "max speed" : `${c.ticks_per_second} ticks/s`;
      pill.textContent = c.paused ? `stepping (${c.steps_pending} left)` : `running · ${speed}`;
      pill.className = "pill running";
    }
    pill.title = c ? `next tick ${c.next_tick}, last completed ${c.completed}` : "the clock does not answer";
  }

  function renderBanner(errors) {
    const banner = $("banner");
    const parts = [];
    if (errors.world) parts.push(`The world does not answer (${errors.world}); showing the last state it gave.`);
    for (const [source, error] of Object.entries(errors)) {
      if (source !== "world" && source !== "clock") parts.push(`Cannot read ${source}: ${error}`);
    }
    banner.textContent = parts.join(" ");
    banner.hidden = parts.length === 0;
  }

  function setOperator(operator) {
    view.operator = operator;
    const role = $("role");
    role.textContent = operator ? "operator view" : "public view";
    role.className = operator ? "pill operator" : "pill muted";
    $("logout").hidden = !operator;
    $("audit-panel").hidden = !operator;
    $("agents-hint").textContent = operator ? "public + private state" : "public state";
    document.body.classList.toggle("operator", operator);
  }

  function onState(payload) {
    view.clock = payload.clock;
    view.lastTick = payload.last_tick;
    if (payload.state) {
      view.state = payload.state;
      updateSprites(payload.state.agents);
      renderAgents();
    }
    renderHeader();
    renderBanner(payload.errors || {});
  }

  // ------------------------------------------------------------------ connection

  function setConn(cls, text) {
    const conn = $("conn");
    conn.className = `conn ${cls}`;
    conn.lastElementChild.textContent = text;
  }

  function connect() {
    const source = new EventSource("/api/stream");
    source.addEventListener("open", () => setConn("live", "live"));
    source.addEventListener("hello", (m) => {
      view.backlogDone = view.events.size > 0; // a reconnect: what it resends is not news
      setOperator(JSON.parse(m.data).operator);
    });
    source.addEventListener("state", (m) => onState(JSON.parse(m.data)));
    source.addEventListener("events", (m) => addEvents(JSON.parse(m.data)));
    source.addEventListener("audit", (m) => addAudit(JSON.parse(m.data)));
    source.addEventListener("error", () => {
      setConn("down", "reconnecting…");
      // A refused stream (503: the view's limit) is not retried by the browser itself.
      if (source.readyState === EventSource.CLOSED) setTimeout(connect, 5000);
    });
  }

  async function start() {
    try {
      const response = await fetch("/api/town", { cache: "no-store" });
      view.town = await response.json();
    } catch (err) {
      setConn("down", "cannot load the town");
      setTimeout(start, 2000);
      return;
    }
    view.town.agents.forEach((a, i) => view.agentColor.set(a.slug, AGENT_COLORS[i % AGENT_COLORS.length]));
    for (const loc of view.town.locations) view.locations.set(loc.name, loc);
    document.title = `${view.town.name} · live view`;
    renderLegend();
    resize();
    new ResizeObserver(resize).observe(canvas);
    requestAnimationFrame(frame);
    connect();
  }

  start();
})();
