// forkbomb's run view. Every string that came from a run (a model's
// words, a tool's output, a patch, a task) reaches the page through
// textContent or an SVG text node's textContent — never innerHTML — and the
// page makes no link from data. The CSP allows no inline script.
'use strict';
(function () {
  const EXPORT = window.FORKBOMB_EXPORT || null;
  const MAX_ITEMS = 200; // stream items drawn per fork; older ones on demand
  const BLOCKED = /permission denied|read-only file system|operation not permitted|network is unreachable|connection refused|no connection|no DNS|outside (the|its) (fork|workspace|tree)|refus|not allowed|sandbox/i;
  const app = document.getElementById('app');
  const where = document.getElementById('where');

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k === 'on') for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
      else e.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text != null) e.textContent = String(text);
    return e;
  }
  const badge = (s) => el('span', { class: 'badge s-' + String(s).replace(/[^a-z-]/g, '') }, s);
  const usd = (micro) => '$' + ((micro || 0) / 1e6).toFixed(4);
  const secs = (ms) => (ms / 1000).toFixed(1) + ' s';

  // --- data: the server's API, or the export's bundle -----------------------
  const api = {
    async get(path) {
      const r = await fetch(path, { credentials: 'omit', cache: 'no-store' });
      if (!r.ok) throw Object.assign(new Error(path + ': ' + r.status), { status: r.status });
      return r;
    },
    async runs() { return EXPORT ? [EXPORT.run] : (await api.get('api/runs')).json(); },
    async run(id) { return EXPORT ? EXPORT.run : (await api.get('api/run/' + encodeURIComponent(id))).json(); },
    async board(min) { return (await api.get('api/board' + (min ? '?min_strength=' + encodeURIComponent(min) : ''))).json(); },
    async event(id, n) {
      if (EXPORT) return EXPORT.events[n - 1];
      return (await api.get('api/run/' + encodeURIComponent(id) + '/event/' + n)).json();
    },
    async patch(id, which) {
      if (EXPORT) { const p = EXPORT.patches[which]; if (p == null) throw new Error('no patch'); return p; }
      return (await api.get('api/run/' + encodeURIComponent(id) + '/patch/' + which)).text();
    },
  };

  // --- the state of a run, folded from its events ---------------------------
  function fold(events, upto) {
    const st = { forks: new Map(), start: null, last: null, winner: null, status: 'running', info: {} };
    const fork = (n) => {
      if (!st.forks.has(n)) st.forks.set(n, { n, state: 'waiting', phase: 'waiting', turns: 0, tin: 0, tout: 0, items: [], segs: [], verdict: null, blocked: 0 });
      return st.forks.get(n);
    };
    for (let i = 0; i < upto && i < events.length; i++) {
      const ev = events[i], d = ev.data || {}, t = Date.parse(ev.time) || st.last || 0;
      if (st.start == null) st.start = t;
      st.last = Math.max(st.last || t, t);
      if (ev.type === 'run_start') { st.info = d; for (let n = 0; n < (d.forks | 0) && n < 1024; n++) fork(n); continue; }
      if (ev.type === 'winner') st.winner = ev.fork;
      if (ev.type === 'run_end') { st.status = String(d.status || 'ended'); if (d.winner != null && d.winner >= 0) st.winner = d.winner; } // -1: none
      // Two passing forks compared on each other's tests: a run-level
      // event, shown on both forks' cards.
      if (ev.type === 'compared') {
        const pair = Array.isArray(d.forks) ? d.forks.filter((n) => Number.isInteger(n) && n >= 0 && n < 1024).slice(0, 2) : [];
        for (const n of pair) { const f = fork(n); f.compared = (f.compared || []).concat([d]); }
        continue;
      }
      if (ev.fork == null || ev.fork < 0 || ev.fork > 1023) continue;
      const f = fork(ev.fork);
      const close = () => { const s = f.segs[f.segs.length - 1]; if (s && s.to == null) s.to = t; };
      const open = (kind) => { close(); f.segs.push({ kind, from: t, to: null }); f.phase = kind; };
      switch (ev.type) {
        case 'fork_start': f.state = 'running'; open('working'); break;
        case 'fork_exit': f.state = String(d.state || 'exited'); f.exitReason = d.reason; open('ended'); break;
        case 'judge_start': open('judging'); break;
        case 'verdict': f.verdict = d; open(String(d.verdict) === 'pass' ? 'pass' : String(d.verdict) === 'review' ? 'review' : 'fail'); break;
        case 'kill': f.state = 'killed'; open('killed'); break;
        case 'verified': f.strength = d; break;
        case 'model_response': case 'model_request':
          f.turns = Math.max(f.turns, d.turn | 0);
          f.tin += +d.input_tokens || 0; f.tout += +d.output_tokens || 0;
          // The api engine's answers show their text; a real CLI's traffic
          // through the model proxy ("via": "proxy") shows as it was recorded.
          if ((ev.type === 'model_response' && d.text) || d.via === 'proxy') f.items.push(ev);
          break;
        // The hosted engine's word from the gateway: what the fork was
        // charged, and the workspace's balance after it (the latest one
        // is the run's).
        case 'gateway_usage':
          f.gateway = { charged: +d.charged_micro_usd || 0, balance: +d.balance_micro_usd || 0 };
          st.balance = f.gateway.balance;
          f.items.push(ev);
          break;
        default: f.items.push(ev);
      }
      if (isBlocked(ev)) f.blocked++;
      if (ev.type === 'tool_call' || ev.type === 'tool_result') f.turns = Math.max(f.turns, d.turn | 0);
    }
    if (st.winner != null && st.forks.has(st.winner)) st.forks.get(st.winner).winner = true;
    return st;
  }

  // An escape attempt the walls stopped: a display hint, not a control.
  function isBlocked(ev) {
    const d = ev.data || {};
    if (ev.type === 'net_connect') return d.allowed === false;
    if (ev.type === 'limit') return true;
    if (ev.type !== 'tool_result') return false;
    return BLOCKED.test(String(d.output || '')) || (d.error === true && d.tool === 'editor');
  }

  // --- rendering -------------------------------------------------------------
  function meta(pairs) {
    const dl = el('dl', { class: 'meta' });
    for (const [k, v] of pairs) if (v != null && v !== '') dl.append(el('dt', {}, k), el('dd', {}, v));
    return dl;
  }

  function timeline(st, now) {
    const forks = [...st.forks.values()];
    const W = 1000, lane = 26, left = 70, H = forks.length * lane + 24;
    const t0 = st.start || now, span = Math.max(1000, now - t0);
    const x = (t) => left + (W - left - 20) * Math.min(1, Math.max(0, (t - t0) / span));
    const s = svg('svg', { id: 'timeline', viewBox: `0 0 ${W} ${H}`, role: 'img' });
    forks.forEach((f, i) => {
      const y = 8 + i * lane;
      s.append(svg('text', { x: 4, y: y + 14, class: f.winner ? 'winner' : '' }, (f.winner ? '★ ' : '') + 'fork ' + f.n));
      for (const g of f.segs) {
        const to = g.to == null ? now : g.to;
        const r = svg('rect', { x: x(g.from), y, width: Math.max(2, x(to) - x(g.from)), height: lane - 8, class: 'seg seg-' + g.kind, 'data-fork': f.n });
        r.append(svg('title', {}, g.kind + ' ' + secs(to - g.from)));
        s.append(r);
      }
    });
    s.append(svg('text', { x: left, y: H - 4, class: 'muted' }, '0 s'), svg('text', { x: W - 60, y: H - 4 }, secs(span)));
    const legend = el('div', { class: 'legend' }, ...['working', 'judging', 'pass', 'fail', 'killed', 'ended'].map((k) => el('span', { class: 's-' + k }, '■ ' + k)));
    return el('div', {}, s, legend);
  }

  function diffView(text) {
    const pre = el('pre', { class: 'diff' });
    for (const line of String(text).split('\n')) {
      let c = '';
      if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff ')) c = 'file';
      else if (line.startsWith('+')) c = 'add';
      else if (line.startsWith('-')) c = 'del';
      else if (line.startsWith('@@')) c = 'hunk';
      pre.append(el('div', { class: c }, line || ' '));
    }
    return pre;
  }

  function itemView(view, ev) {
    const runID = view.id;
    if (view.full.has(ev.id)) ev = view.full.get(ev.id);
    const d = ev.data || {};
    const blocked = isBlocked(ev);
    const box = el('div', { class: 'item' + (blocked ? ' blocked' : ''), 'data-event': ev.id });
    const head = el('div', {}, blocked ? badge('blocked') : null, ' ', ev.type.replace('_', ' '), d.tool ? ' · ' + d.tool : '');
    box.append(head);
    let body;
    switch (ev.type) {
      case 'tool_call': body = typeof d.input === 'string' ? d.input : JSON.stringify(d.input); break;
      case 'tool_result': body = d.output; break;
      case 'model_response': body = d.text; break;
      case 'net_connect': body = `${d.host}:${d.port} ${d.allowed ? 'allowed' : 'refused'}${d.reason ? ' — ' + d.reason : ''}`; break;
      default: body = JSON.stringify(d);
    }
    const pre = el('pre', {}, body == null ? '' : String(body));
    box.append(pre);
    if (ev.truncated) {
      box.append(el('button', { on: { click: async (e) => {
        e.target.disabled = true;
        try {
          const full = await api.event(runID, ev.id);
          view.full.set(ev.id, full);
          const fd = full.data || {};
          pre.textContent = String(ev.type === 'tool_result' ? fd.output : ev.type === 'model_response' ? fd.text : JSON.stringify(ev.type === 'tool_call' ? fd.input : fd));
          e.target.remove();
        } catch (err) { e.target.textContent = 'could not load: ' + err.message; }
      } } }, 'expand (output cut)'));
    }
    return box;
  }

  // A verdict's findings: code in the patch that detects or inspects a
  // test run, one line each (text only: they come from a fork's patch).
  function findingsList(findings) {
    return el('ul', { class: 'findings' }, ...findings.slice(0, 50).map((x) => el('li', {}, 'finding: ' + String(x))));
  }

  // The verifier's word on a passing fork: the share of its patch's
  // mutants the tests caught, and the survivors (text only: their lines
  // come from a fork's patch).
  function strengthView(d) {
    const judged = d.judged | 0, caught = d.caught | 0, mutants = d.mutants | 0;
    let text = mutants === 0 ? 'verifier: no mutants of its patch' : `verifier: ${caught}/${judged} mutants caught` + (judged < mutants ? ` (${mutants} on the changed lines${d.cut ? '; ' + String(d.cut) : ''})` : '');
    if (d.unverified) text += ` — unverified: tests too weak (below --min-strength ${d.min_strength})`;
    const sv = Array.isArray(d.survivors) ? d.survivors.slice(0, 50) : [];
    return el('div', { class: 'strength' + (d.unverified ? ' unverified' : ''), 'data-caught': caught, 'data-judged': judged }, text,
      sv.length ? el('ul', { class: 'survivors' }, ...sv.map((x) => el('li', {}, 'survivor: ' + survivorText(x)))) : null);
  }
  function survivorText(x) { return `${String(x.file)}:${x.line | 0}: ${String(x.original)} → ${String(x.replacement)} (${String(x.operator)})`; }

  // Fork n compared with another passing fork on each other's tests (the
  // compared event; its lines as 'forkbomb show' prints them): tests one
  // fork's code fails and the other's passes, survivors the other's tests
  // catch, and what was not compared. Text only: test names, files and
  // survivors come from forks' patches.
  function compareView(d, n) {
    const list = (x) => Array.isArray(x) ? x.slice(0, 50) : [];
    const forks = list(d.forks).map((x) => x | 0);
    const other = forks[0] === n ? forks[1] : forks[0];
    const of = (m) => (forks[0] === (m | 0) ? forks[1] : forks[0]);
    const dis = list(d.disagreements), pinned = list(d.pinned), unpinned = list(d.unpinned);
    const lines = [];
    for (const x of dis) {
      const t = x.tests | 0, f = x.fails | 0;
      const what = x.build ? `fork ${f}'s code fails ${String(x.test)} with fork ${t}'s tests (it does not build or run with them: their code differs in what those tests call)`
        : `fork ${f} fails fork ${t}'s ${String(x.test)}`;
      lines.push(el('li', { class: 'disagree' }, `forks ${Math.min(t, f)} and ${Math.max(t, f)} disagree: ${what}${x.file ? ` (${String(x.file)}:${x.line | 0})` : ''}; the suite does not cover it`));
    }
    for (const x of pinned) lines.push(el('li', { class: 'pinned' }, `fork ${of(x.fork)}'s ${list(x.caught_by).map(String).join(', ')} catches fork ${x.fork | 0}'s survivor ${survivorText(x)}; the suite does not`));
    for (const x of unpinned) lines.push(el('li', {}, `survivor of fork ${x.fork | 0} only: ${survivorText(x)}`));
    for (const x of list(d.notes)) lines.push(el('li', { class: 'muted' }, 'note: ' + String(x)));
    const quiet = !dis.length && !pinned.length && !unpinned.length;
    return el('div', { class: 'compared' + (dis.length ? ' disagree' : ''), 'data-with': other, 'data-disagreements': dis.length },
      `compared with fork ${other}` + (quiet ? ': no difference their tests see' : ''), lines.length ? el('ul', {}, ...lines) : null);
  }

  function card(view, f, runFork) {
    const c = el('div', { class: 'card' + (f.winner ? ' winner' : ''), id: 'fork-' + f.n, 'data-state': f.state, 'data-phase': f.phase });
    c.append(el('h3', {}, (f.winner ? '★ ' : '') + 'fork ' + f.n + ' ', badge(f.state), ' ', f.verdict ? badge(String(f.verdict.verdict)) : null, f.blocked ? ' ' : null, f.blocked ? badge('blocked ×' + f.blocked) : null));
    // run.json's cost when the fork has ended; the gateway's charge
    // while the record is still being written.
    const cost = (runFork && runFork.cost_micro_usd) || (f.gateway && f.gateway.charged);
    c.append(el('div', { class: 'muted cost' }, `turns ${f.turns} · tokens ${f.tin} in / ${f.tout} out` + (cost ? ' · ' + usd(cost) : '') + (f.gateway ? ' (gateway)' : '') + (f.exitReason ? ' · ' + f.exitReason : '')));
    if (f.verdict) c.append(el('div', {}, 'judge: ', String(f.verdict.reason || ''), f.verdict.score != null ? ` (score ${f.verdict.score})` : ''));
    if (f.verdict && Array.isArray(f.verdict.findings)) c.append(findingsList(f.verdict.findings));
    // the judge's warnings about the judgement (sentinels left unchecked on this base, hidden tests that add nothing)
    if (f.verdict && Array.isArray(f.verdict.warnings)) c.append(el('ul', { class: 'warnings' }, ...f.verdict.warnings.slice(0, 10).map((x) => el('li', {}, 'judge warning: ' + String(x)))));
    if (f.strength) c.append(strengthView(f.strength));
    for (const d of f.compared || []) c.append(compareView(d, f.n));
    const stream = el('div', { class: 'stream', 'data-fork': f.n });
    const shown = view.expanded.has(f.n) ? f.items : f.items.slice(-MAX_ITEMS);
    if (shown.length < f.items.length) stream.append(el('button', { on: { click: () => { view.expanded.add(f.n); view.draw(); } } }, `show ${f.items.length - shown.length} earlier`));
    for (const ev of shown) stream.append(itemView(view, ev));
    c.append(stream);
    const diffBox = el('div', {});
    c.append(el('button', { on: { click: async () => {
      diffBox.textContent = 'loading…';
      try { const p = await api.patch(view.id, f.n); diffBox.replaceChildren(p ? diffView(p) : el('span', { class: 'muted' }, 'empty patch')); }
      catch (e) { diffBox.textContent = 'no patch yet'; }
    } } }, 'current diff'), diffBox);
    return c;
  }

  // --- a run ---------------------------------------------------------------
  function RunView(id) {
    this.id = id; this.events = []; this.pos = 0; this.run = null; this.ended = false;
    this.expanded = new Set(); this.full = new Map(); this.playing = null; this.speed = 4; this.pending = false;
    this.winnerPatch = null;
  }
  RunView.prototype.draw = function () {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.render(); });
  };
  RunView.prototype.render = function () {
    const r = this.run || {}, st = fold(this.events, this.pos);
    const now = this.ended || this.pos < this.events.length ? (st.last || Date.now()) : Date.now();
    const forks = new Map((r.fork_results || []).map((f) => [f.n, f]));
    const out = [];
    out.push(el('h2', {}, 'run ' + this.id + ' ', badge(this.pos < this.events.length ? 'replay' : (this.ended ? r.status || st.status : 'running'))));
    let tin = 0, tout = 0;
    for (const f of st.forks.values()) { tin += f.tin; tout += f.tout; }
    out.push(meta([['task', r.task], ['repository', r.repo], ['base', r.base], ['engine', r.engine], ['model', r.model], ['test', r.test],
      ['elapsed', st.start ? secs(now - st.start) : ''], ['tokens', `${tin} in / ${tout} out`], ['cost', r.cost_micro_usd ? usd(r.cost_micro_usd) : ''],
      ['balance', st.balance != null ? usd(st.balance) + ' (gateway)' : ''],
      ['events', `${this.pos} / ${this.events.length}`]]));
    if (this.ended && this.events.length) out.push(this.replayBar());
    out.push(timeline(st, now));
    out.push(el('div', { class: 'cards' }, ...[...st.forks.values()].map((f) => card(this, f, forks.get(f.n)))));
    const verdicts = [...st.forks.values()].filter((f) => f.verdict);
    if (verdicts.length) {
      out.push(el('h3', {}, 'verdicts'));
      out.push(el('table', { id: 'verdicts' }, el('tr', {}, el('th', {}, 'fork'), el('th', {}, 'verdict'), el('th', {}, 'score'), el('th', {}, 'reason'), el('th', {}, 'stripped')),
        ...verdicts.map((f) => el('tr', {}, el('td', {}, f.n), el('td', {}, badge(String(f.verdict.verdict))), el('td', {}, String(f.verdict.score ?? '')),
          el('td', {}, String(f.verdict.reason || ''), Array.isArray(f.verdict.findings) ? findingsList(f.verdict.findings) : null), el('td', {}, f.verdict.stripped ? JSON.stringify(f.verdict.stripped) : '')))));
    }
    const status = this.ended ? r.status || st.status : st.status;
    if (status === 'unverified') {
      const weak = [...st.forks.values()].filter((f) => f.strength && f.strength.unverified).map((f) => f.n);
      out.push(el('div', { class: 'review-note', id: 'unverified' }, 'unverified: fork(s) ' + weak.join(', ') +
        ' passed, but their tests caught too few mutants of their patches (survivors above). No fork was crowned; after reading one, take it with ',
        el('code', {}, 'forkbomb apply ' + this.id + ' --fork N')));
    }
    if (status === 'needs-review') {
      const review = verdicts.filter((f) => String(f.verdict.verdict) === 'review').map((f) => f.n);
      out.push(el('div', { class: 'review-note', id: 'needs-review' }, 'needs review: fork(s) ' + review.join(', ') +
        ' passed the tests, but their patches add code that detects or inspects a test run (findings above). No fork was crowned; after reading one, take it with ',
        el('code', {}, 'forkbomb apply ' + this.id + ' --fork N')));
    }
    if (st.winner != null) out.push(this.winnerView(st.winner));
    // Keep each stream where the reader left it; one scrolled to its end
    // follows new items.
    const scroll = new Map();
    for (const s of app.querySelectorAll('.stream')) scroll.set(s.dataset.fork, s.scrollTop + s.clientHeight >= s.scrollHeight - 4 ? -1 : s.scrollTop);
    app.replaceChildren(...out);
    for (const s of app.querySelectorAll('.stream')) {
      const top = scroll.has(s.dataset.fork) ? scroll.get(s.dataset.fork) : -1;
      s.scrollTop = top < 0 ? s.scrollHeight : top;
    }
  };
  RunView.prototype.winnerView = function (n) {
    const box = el('section', { id: 'winner' }, el('h3', {}, '★ winner: fork ' + n));
    const cmd = 'forkbomb apply ' + this.id;
    box.append(el('p', {}, 'apply it on a new branch: ', el('code', { class: 'cmd' }, cmd)));
    const pre = el('div', { id: 'winner-patch' });
    const copy = el('button', { on: { click: async () => {
      try { await navigator.clipboard.writeText(this.winnerPatch || ''); copy.textContent = 'copied'; }
      catch (e) { const s = window.getSelection(); s.selectAllChildren(pre); copy.textContent = 'selected: press Ctrl-C'; }
    } } }, 'copy patch');
    box.append(copy, pre);
    if (this.winnerPatch == null) {
      this.winnerPatch = '';
      api.patch(this.id, 'winner').then((p) => { this.winnerPatch = p; this.draw(); }, () => { this.winnerPatch = null; });
    } else pre.append(diffView(this.winnerPatch));
    return box;
  };
  RunView.prototype.replayBar = function () {
    const range = el('input', { type: 'range', min: 0, max: this.events.length, value: this.pos, id: 'scrubber' });
    range.addEventListener('input', () => { this.stop(); this.pos = +range.value; this.draw(); });
    const play = el('button', { id: 'play', on: { click: () => (this.playing ? this.stop() : this.play()) } }, this.playing ? 'pause' : 'play');
    const speed = el('select', { id: 'speed' }, ...[1, 4, 16, 64].map((s) => el('option', s === this.speed ? { value: s, selected: '' } : { value: s }, s + '×')));
    speed.addEventListener('change', () => { this.speed = +speed.value; });
    return el('div', { class: 'replay' }, play, range, speed);
  };
  // play advances through the events at their recorded pace × speed
  // (gaps over two seconds shortened).
  RunView.prototype.play = function () {
    if (this.pos >= this.events.length) this.pos = 0;
    const step = () => {
      if (this.pos >= this.events.length) { this.stop(); return; }
      this.pos++;
      this.draw();
      const a = Date.parse((this.events[this.pos - 1] || {}).time), b = Date.parse((this.events[this.pos] || {}).time);
      const gap = Math.min(2000, Math.max(0, (b - a) || 0)) / this.speed;
      this.playing = setTimeout(step, gap);
    };
    this.playing = setTimeout(step, 0);
    this.draw();
  };
  RunView.prototype.stop = function () { clearTimeout(this.playing); this.playing = null; this.draw(); };
  RunView.prototype.add = function (ev) {
    if (ev.id !== this.events.length + 1) return; // a duplicate after a reconnect
    const atEnd = this.pos === this.events.length;
    this.events.push(ev);
    if (atEnd) this.pos = this.events.length;
    this.draw();
  };
  RunView.prototype.start = async function () {
    where.textContent = 'run ' + this.id;
    if (EXPORT) {
      this.run = EXPORT.run; this.events = EXPORT.events; this.pos = this.events.length; this.ended = true;
      this.render();
      return;
    }
    this.run = await api.run(this.id);
    this.render();
    // EventSource reconnects by itself and sends Last-Event-ID: the
    // server resumes after the last event this page has.
    const es = new EventSource('api/run/' + encodeURIComponent(this.id) + '/stream');
    es.onmessage = (m) => { try { this.add(JSON.parse(m.data)); } catch (e) { /* a malformed line is skipped */ } };
    es.addEventListener('end', async () => {
      es.close(); this.ended = true;
      try { this.run = await api.run(this.id); } catch (e) { /* keep what we have */ }
      this.winnerPatch = null;
      this.draw();
    });
    this.es = es;
  };

  // --- the runs list ---------------------------------------------------------
  async function runsList() {
    where.textContent = 'runs';
    const runs = await api.runs();
    const rows = runs.map((r) => el('tr', { class: 'link', on: { click: () => { location.hash = 'run=' + r.id; } } },
      el('td', {}, r.id), el('td', {}, r.task), el('td', {}, r.repo), el('td', {}, [r.engine, r.model].filter(Boolean).join(' · ')),
      el('td', {}, badge(r.status)), el('td', {}, r.winner == null ? '—' : 'fork ' + r.winner), el('td', {}, r.seconds ? r.seconds.toFixed(1) + ' s' : ''),
      el('td', {}, r.cost_micro_usd ? usd(r.cost_micro_usd) : '')));
    app.replaceChildren(el('h2', {}, 'runs'), el('p', {}, el('a', { href: '#board', id: 'board-link' }, 'eval board')), rows.length ? el('table', { id: 'runs' }, el('tr', {}, ...['id', 'task', 'repository', 'engine', 'status', 'winner', 'duration', 'cost'].map((h) => el('th', {}, h))), ...rows) : el('p', { class: 'muted' }, 'no runs yet'));
  }

  // --- eval's board ----------------------------------------------------------
  // The standings of 'forkbomb eval --tasks' over every attempt recorded,
  // with the verifier's word on the passes: "strength" is the median
  // share of a solution's mutants the tests caught, "weak<R" how many
  // measured passes a verifier demanding R would have rejected (the
  // server counts them). Engine names, task ids and survivors are text
  // only: a survivor's lines come from a fork's patch.
  async function boardView(min) {
    where.textContent = 'eval board';
    let b;
    try { b = await api.board(min); } catch (e) {
      if (e.status !== 404) throw e;
      app.replaceChildren(el('h2', {}, 'eval board'), el('p', { class: 'muted', id: 'no-board' }, 'this view has no eval board; forkbomb ui shows it'));
      return;
    }
    const ms = +b.min_strength;
    const input = el('input', { type: 'number', min: 0, max: 1, step: 0.05, value: ms, id: 'min-strength' });
    input.addEventListener('change', () => { location.hash = 'board=' + encodeURIComponent(input.value); });
    const out = [el('h2', {}, 'eval board'),
      el('p', { class: 'muted' }, 'weak: passes a verifier demanding ', input, ' of their mutants caught would have rejected (',
        el('code', {}, 'forkbomb eval --min-strength'), '); a weak pass still counts as solved. Strength measures the tests, not the patch.')];
    const table = Array.isArray(b.table) ? b.table : [];
    if (!table.length) { app.replaceChildren(...out, el('p', { class: 'muted' }, 'no evaluations yet: forkbomb eval --tasks mined:')); return; }
    const head = ['rank', 'engine', 'solved', 'tasks', 'strength', 'weak<' + ms, 'tokens', 'cost', 'median s'];
    out.push(el('table', { id: 'board' }, el('tr', {}, ...head.map((h) => el('th', {}, h))),
      ...table.map((r, i) => el('tr', { 'data-engine': String(r.engine) }, el('td', {}, i + 1), el('td', {}, String(r.engine)),
        el('td', {}, `${r.solved | 0}/${r.attempts | 0}`), el('td', {}, `${r.tasks_solved | 0}/${r.tasks | 0}`),
        el('td', { class: 'strength' }, r.median_strength == null ? '—' : (+r.median_strength).toFixed(2)),
        el('td', { class: 'weak' + (r.weak_passes ? ' s-fail' : '') }, `${r.weak_passes | 0}/${r.verified | 0}`),
        el('td', {}, r.tokens | 0), el('td', {}, '$' + (+r.cost_usd || 0).toFixed(4)), el('td', {}, (+r.median_seconds || 0).toFixed(1))))));
    const attempts = Array.isArray(b.attempts) ? b.attempts : [];
    out.push(el('h3', {}, 'attempts' + (b.total > attempts.length ? ` (newest ${attempts.length} of ${b.total | 0})` : '')));
    out.push(el('table', { id: 'attempts' }, el('tr', {}, ...['when', 'engine', 'task', 'verdict', 'verifier', 'run'].map((h) => el('th', {}, h))),
      ...attempts.map((a) => el('tr', { class: 'link', 'data-run': String(a.run), on: { click: () => { location.hash = 'run=' + encodeURIComponent(String(a.run)); } } },
        el('td', {}, String(a.at || '')), el('td', {}, String(a.engine)), el('td', {}, String(a.task || '')),
        el('td', {}, badge(a.fixed ? 'pass' : String(a.verdict || 'fail'))),
        el('td', { class: 'verifier' + (a.weak ? ' weak' : '') }, a.strength ? attemptStrength(a) : '—'), el('td', {}, String(a.run))))));
    app.replaceChildren(...out);
  }

  // attemptStrength is the verifier's word on one solution: the share,
  // "weak" when the table counts it so, and the first survivors.
  function attemptStrength(a) {
    const d = a.strength, sv = Array.isArray(d.survivors) ? d.survivors.slice(0, 5) : [];
    const text = (d.mutants | 0) === 0 ? 'no mutants' : `${d.caught | 0}/${d.judged | 0} mutants caught`;
    return el('div', {}, text, a.weak ? ' ' : null, a.weak ? badge('weak') : null,
      sv.length ? el('ul', { class: 'survivors' }, ...sv.map((x) => el('li', {}, `survivor: ${String(x.file)}:${x.line | 0}: ${String(x.original)} → ${String(x.replacement)} (${String(x.operator)})`))) : null);
  }

  let current = null;
  async function route() {
    if (current && current.es) current.es.close();
    if (current) current.stop();
    current = null;
    try {
      if (EXPORT) { current = new RunView(EXPORT.run.id); return current.start(); }
      const h = location.hash.slice(1);
      if (h.startsWith('run=')) { current = new RunView(decodeURIComponent(h.slice(4))); return current.start(); }
      if (h === 'board' || h.startsWith('board=')) return boardView(decodeURIComponent(h.slice(6)));
      if (h === 'live') {
        app.replaceChildren(el('p', { class: 'muted' }, 'waiting for the race to start…'));
        for (;;) {
          const l = await (await api.get('api/live')).json();
          if (l.run) { location.replace('#run=' + encodeURIComponent(l.run)); return; }
          await new Promise((res) => setTimeout(res, 300));
        }
      }
      return runsList();
    } catch (e) { app.replaceChildren(el('p', { class: 's-fail' }, String(e.message || e))); }
  }
  window.addEventListener('hashchange', route);
  route();
})();
