#!/usr/bin/env node
// An external AURA Town assistant in Node.js, speaking the wire protocol of docs/protocol.md
// directly: Redis Streams, consumer groups, msgpack envelopes. No AURA Town code is used.
//
//   node agent.js --redis redis://127.0.0.1:6379/0 --namespace episodes.mine --address agent.node
//   node agent.js --redis URL --namespace town:demo --probe world.time     (one ask, print, exit)
//
// Serving, it joins the consumer group "inbox" of its address's inbox stream, and for each entry:
//   episode.user_turn    -> optionally asks the episode's tool registry (a probe.call ask with its
//                           own reply stream), then XADDs episode.assistant_reply to the turn's
//                           reply_to address, echoing `session`; XACK in the same MULTI
//   episode.end_session  -> XACK
//   sys.ping (an ask)    -> sys.pong to the envelope's reply_to, same correlation_id
//   anything else, or undecodable bytes -> the dead-letter stream (and sys.error to an asker)
// It heartbeats its presence, reclaims entries a dead consumer left pending, retries a failed
// handler (the message is re-added with attempt + 1) and dead-letters it after 5 attempts.
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const { createClient } = require('redis');
const { encode, decode } = require('@msgpack/msgpack');

const ENVELOPE_FORMAT = 1;
const INBOX_GROUP = 'inbox';
const FIELD = 'm';
const MAX_ATTEMPTS = 5;
const RAW = { returnBuffers: true };

// ------------------------------------------------------------------ options

function parseArgs(argv) {
  const opts = {
    redis: process.env.AURATOWN_REDIS_URL || 'redis://127.0.0.1:6379/0',
    namespace: 'town:main',
    address: 'agent.node',
    prefix: 'auratown',
    tool: 'list_dir',
    probe: null,
    args: '{}',
    registry: 'environment',
    to: 'registry',
    timeout: 30,
    heartbeatMs: 2000,
    visibilityMs: 30000,
  };
  const names = {
    '--redis': 'redis', '--namespace': 'namespace', '--address': 'address', '--prefix': 'prefix',
    '--tool': 'tool', '--probe': 'probe', '--args': 'args', '--registry': 'registry', '--to': 'to',
    '--timeout': 'timeout', '--heartbeat-ms': 'heartbeatMs', '--visibility-ms': 'visibilityMs',
  };
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === '-h' || argv[i] === '--help') {
      process.stdout.write(`usage: node agent.js [${Object.keys(names).join(' X] [')} X]\n`);
      process.exit(0);
    }
    const key = names[argv[i]];
    if (key === undefined || i + 1 >= argv.length) fail(`unknown option or missing value: ${argv[i]}`);
    const value = argv[(i += 1)];
    opts[key] = typeof opts[key] === 'number' ? Number(value) : value;
  }
  return opts;
}

function fail(message) {
  process.stderr.write(`agent.js: error: ${message}\n`);
  process.exit(2);
}

function log(event, fields = {}) {
  process.stderr.write(`${JSON.stringify({ event, time: new Date().toISOString(), ...fields })}\n`);
}

// redis://[user:pass@]host:port/db, rediss://...?ssl_ca_certs=FILE, unix://[:pass@]/path?db=N
function clientOptions(url) {
  const parsed = new URL(url);
  const password = parsed.password ? decodeURIComponent(parsed.password) : undefined;
  const username = parsed.username ? decodeURIComponent(parsed.username) : undefined;
  if (parsed.protocol === 'unix:') {
    return {
      socket: { path: parsed.pathname },
      username,
      password,
      database: Number(parsed.searchParams.get('db') || 0),
    };
  }
  const ca = parsed.searchParams.get('ssl_ca_certs');
  const socket = { host: parsed.hostname, port: Number(parsed.port || 6379) };
  if (parsed.protocol === 'rediss:') {
    socket.tls = true;
    if (ca) socket.ca = fs.readFileSync(ca);
  }
  const database = Number((parsed.pathname || '/0').slice(1) || 0);
  return { socket, username, password, database };
}

// ------------------------------------------------------------------ keys (actors/bus/_keys.py)

function keyLayout(prefix, namespace, identity) {
  const base = `${prefix}:{${namespace}}`;
  return {
    inbox: (address) => `${base}:inbox:${address}`,
    topic: (name) => `${base}:topic:${name}`,
    // An agent with its own Redis user writes its dead letters to its own stream (the shared one
    // is the runtime's: docs/protocol.md, section 6); the operator's user writes the shared one.
    deadLetters: identity ? `${base}:dlq:${identity}` : `${base}:dlq`,
    presence: `${base}:presence`,
    alive: (processId) => `${base}:alive:${processId}`,
  };
}

// ------------------------------------------------------------------ envelopes (messages/_codec.py)

const newId = () => crypto.randomUUID().replace(/-/g, '');
const now = () => Date.now() / 1000;
const bytes = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);

class Agent {
  constructor(opts) {
    this.opts = opts;
    this.namespace = opts.namespace;
    this.address = opts.address;
    // With its own Redis user (the URL's user name is its identity, `auratown acl --agent IDENT`),
    // the agent's process id, reply streams and dead letters fall under that user's ACL patterns.
    const user = new URL(opts.redis).username;
    this.identity = user && user !== 'default' ? decodeURIComponent(user) : null;
    this.keys = keyLayout(opts.prefix, opts.namespace, this.identity);
    const host = (os.hostname().split('.')[0] || 'host').replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 40);
    const unique = `${host}-${process.pid}-${crypto.randomBytes(3).toString('hex')}`;
    this.processId = this.identity ? `${this.identity}.${unique}` : unique;
    this.replyAddress = `_reply.${this.processId}`;
    this.replyStream = this.keys.inbox(this.replyAddress);
    this.inbox = this.keys.inbox(this.address);
    this.lastReplyId = '0-0';
    this.stopping = false;
    this.started = now();
    this.stats = { handled: 0, replies: 0, asks: 0, dead_lettered: 0, retried: 0, reclaimed: 0 };
  }

  async connect() {
    const options = clientOptions(this.opts.redis);
    this.cmd = createClient(options);
    this.cmd.on('error', (err) => log('redis_error', { error: String(err) }));
    await this.cmd.connect();
    // Blocking reads (XREADGROUP/XREAD ... BLOCK) get their own connection.
    this.blocking = this.cmd.duplicate();
    this.blocking.on('error', (err) => log('redis_error', { error: String(err) }));
    await this.blocking.connect();
  }

  envelope(recipient, type, payload, { version = 1, correlationId = null, replyTo = null, causation = null,
    deadline = null } = {}) {
    return {
      format: ENVELOPE_FORMAT,
      type,
      version,
      id: newId(),
      sender: this.address,
      recipient,
      namespace: this.namespace,
      wall_time: now(),
      correlation_id: correlationId,
      reply_to: replyTo,
      causation_id: causation ? causation.id : null,
      sim_time: causation ? causation.sim_time : null,
      attempt: 1,
      deadline,
      trace: causation && causation.trace ? causation.trace : {},
      payload,
    };
  }

  // ------------------------------------------------------------------ ask / reply

  async ask(recipient, type, payload, { causation = null, timeout = this.opts.timeout } = {}) {
    const correlationId = newId();
    const deadline = now() + timeout;
    const env = this.envelope(recipient, type, payload, {
      correlationId, replyTo: this.replyAddress, causation, deadline,
    });
    await this.cmd.sendCommand(['XADD', this.keys.inbox(recipient), '*', FIELD, bytes(encode(env))]);
    this.stats.asks += 1;
    for (;;) {
      const remaining = deadline - now();
      if (remaining <= 0) throw new Error(`ask ${type} to ${recipient} timed out after ${timeout}s`);
      const block = String(Math.max(1, Math.min(1000, Math.ceil(remaining * 1000))));
      const reply = await this.blocking.sendCommand(
        ['XREAD', 'COUNT', '16', 'BLOCK', block, 'STREAMS', this.replyStream, this.lastReplyId], RAW);
      const entries = reply ? reply[0][1] : [];
      let found = null;
      for (const [rawId, fields] of entries) {
        this.lastReplyId = rawId.toString();
        const data = fieldOf(fields, FIELD);
        let env2 = null;
        try {
          env2 = data ? decode(data) : null;
        } catch (err) {
          log('undecodable_reply', { error: String(err) });
        }
        if (env2 && env2.correlation_id === correlationId) found = env2;
        else if (env2) log('late_reply', { correlation_id: env2.correlation_id });
      }
      if (entries.length) {
        await this.cmd.sendCommand(['XDEL', this.replyStream, ...entries.map(([id]) => id.toString())]);
      }
      if (found) {
        if (found.type === 'sys.error') {
          throw new Error(`${recipient} refused ${type}: ${found.payload.reason}: ${found.payload.detail}`);
        }
        return found;
      }
    }
  }

  // Acknowledge an inbox entry and add the outgoing entries, all or nothing (MULTI/EXEC).
  async commit(entryId, adds) {
    const multi = this.cmd.multi();
    for (const [stream, fields] of adds) multi.addCommand(['XADD', stream, '*', ...fields]);
    multi.addCommand(['XACK', this.inbox, INBOX_GROUP, entryId]);
    await multi.exec();
  }

  replyTo(request, type, payload) {
    const env = this.envelope(request.reply_to, type, payload, {
      correlationId: request.correlation_id, causation: request,
    });
    return [this.keys.inbox(request.reply_to), [FIELD, bytes(encode(env))]];
  }

  async deadLetter(entryId, data, reason, detail, env, attempts) {
    let header = env;
    if (!header) {
      try {
        header = decode(data);
      } catch (err) {
        header = null;
      }
      if (!header || typeof header !== 'object') header = {};
    }
    const record = [
      'reason', reason,
      'detail', String(detail).slice(0, 8192),
      'stream', this.inbox,
      'entry_id', entryId,
      'group', INBOX_GROUP,
      'consumer', this.processId,
      'attempts', String(attempts),
      'message_id', String(header.id || ''),
      'type', String(header.type || ''),
      'data', data || Buffer.alloc(0),
      'wall_time', String(now()),
    ];
    const adds = [[this.keys.deadLetters, record]];
    if (typeof header.reply_to === 'string' && header.reply_to && typeof header.correlation_id === 'string') {
      adds.push(this.replyTo(header, 'sys.error', {
        reason, detail: String(detail).slice(0, 2000), request_type: header.type || null,
      }));
    }
    await this.commit(entryId, adds);
    this.stats.dead_lettered += 1;
    log('dead_lettered', { reason, detail: String(detail).slice(0, 300), entry_id: entryId });
  }

  // ------------------------------------------------------------------ handlers

  async onUserTurn(env) {
    const turn = env.payload;
    const records = [];
    let seen = '';
    if (turn.tools && this.opts.tool !== 'none') {
      const call = { registry: 'episode', tool: this.opts.tool, args: { path: '.' }, caller: this.address };
      try {
        const reply = await this.ask(turn.tools, 'probe.call', call, { causation: env });
        const r = reply.payload;
        records.push({
          tool_name: r.tool,
          call: r.args || {},
          result: r.status === 'ok' ? { response: r.result || {} } : { error: r.error || r.status },
          status: r.status,
        });
        seen = ` I looked at your workspace (${r.tool}: ${r.status}).`;
      } catch (err) {
        seen = ` I could not reach your tools (${err.message}).`;
      }
    }
    let text = `Node assistant here: I will take care of "${String(turn.text).slice(0, 80)}".${seen}`;
    if (turn.turn === 1) text += ' Is there a deadline I should plan around?';
    const reply = this.envelope(turn.reply_to, 'episode.assistant_reply', {
      task_id: turn.task_id,
      turn: turn.turn,
      text,
      tool_records: records,
      backend: 'node',
      session: turn.session || '',
    }, { causation: env });
    this.stats.replies += 1;
    return [[this.keys.inbox(turn.reply_to), [FIELD, bytes(encode(reply))]]];
  }

  async onPing(env) {
    if (!env.reply_to) return [];
    const p = env.payload;
    return [this.replyTo(env, 'sys.pong', { seq: p.seq || 0, body: p.body || '', responder: this.processId })];
  }

  async handle(env) {
    switch (env.type) {
      case 'episode.user_turn': return this.onUserTurn(env);
      case 'episode.end_session': return [];
      case 'sys.ping': return this.onPing(env);
      default: {
        const err = new Error(`${this.address} has no handler for ${env.type}`);
        err.reason = 'unhandled_type';
        throw err;
      }
    }
  }

  // One inbox entry: decode, check, handle, commit (or retry, or dead-letter).
  async process(entryId, fields, deliveries) {
    const data = fieldOf(fields, FIELD);
    if (!data) return this.deadLetter(entryId, null, 'malformed', `entry has no '${FIELD}' field`, null, 1);
    let env;
    try {
      env = decode(data);
    } catch (err) {
      return this.deadLetter(entryId, data, 'malformed', `not msgpack: ${err.message}`, null, 1);
    }
    if (!env || typeof env !== 'object' || env.format !== ENVELOPE_FORMAT || typeof env.type !== 'string'
        || typeof env.payload !== 'object' || env.payload === null) {
      return this.deadLetter(entryId, data, 'malformed', 'not an envelope of format 1', null, 1);
    }
    const attempts = (env.attempt || 1) + deliveries - 1;
    if (attempts > MAX_ATTEMPTS) {
      return this.deadLetter(entryId, data, 'max_attempts', `delivered ${attempts} times`, env, attempts);
    }
    if (env.deadline != null && now() > env.deadline) return this.commit(entryId, []); // nobody waits
    let adds;
    try {
      adds = await this.handle(env);
    } catch (err) {
      if (err.reason || attempts >= MAX_ATTEMPTS) {
        return this.deadLetter(entryId, data, err.reason || 'handler_error', err.stack || String(err), env, attempts);
      }
      log('handler_failed', { type: env.type, attempt: attempts, error: String(err) });
      const again = { ...env, attempt: attempts + 1 };
      await this.commit(entryId, [[this.inbox, [FIELD, bytes(encode(again))]]]);
      this.stats.retried += 1;
      return undefined;
    }
    await this.commit(entryId, adds);
    this.stats.handled += 1;
    return undefined;
  }

  // ------------------------------------------------------------------ presence

  async heartbeat() {
    const info = {
      name: 'node-assistant',
      language: 'node',
      host: os.hostname(),
      pid: process.pid,
      started: this.started,
      addresses: [this.address],
      in_flight: 0,
      stats: this.stats,
      process_id: this.processId,
      heartbeat: now(),
    };
    await this.cmd.sendCommand(['HSET', this.keys.presence, this.processId, JSON.stringify(info)]);
    await this.cmd.sendCommand(['SET', this.keys.alive(this.processId), '1', 'PX', String(this.opts.heartbeatMs * 5)]);
  }

  async reclaim() {
    // Entries another consumer of the group took and left unacknowledged too long (it died).
    const res = await this.cmd.sendCommand(['XAUTOCLAIM', this.inbox, INBOX_GROUP, this.processId,
      String(this.opts.visibilityMs), '0-0', 'COUNT', '16'], RAW);
    for (const [rawId, fields] of res[1]) {
      if (!fields) continue;
      const id = rawId.toString();
      const pending = await this.cmd.sendCommand(['XPENDING', this.inbox, INBOX_GROUP, id, id, '1']);
      const deliveries = pending.length ? Number(pending[0][3]) : 1;
      this.stats.reclaimed += 1;
      await this.process(id, fields, deliveries);
    }
  }

  // ------------------------------------------------------------------ serving

  async serve() {
    try {
      await this.cmd.sendCommand(['XGROUP', 'CREATE', this.inbox, INBOX_GROUP, '0', 'MKSTREAM']);
    } catch (err) {
      if (!String(err.message).includes('BUSYGROUP')) throw err;
    }
    await this.heartbeat();
    const beat = setInterval(() => this.heartbeat().catch((e) => log('heartbeat_failed', { error: String(e) })),
      this.opts.heartbeatMs);
    let nextReclaim = Date.now() + this.opts.visibilityMs / 2;
    log('ready', { address: this.address, namespace: this.namespace, process_id: this.processId });
    while (!this.stopping) {
      try {
        if (Date.now() >= nextReclaim) {
          nextReclaim = Date.now() + this.opts.visibilityMs / 2;
          await this.reclaim();
        }
        const reply = await this.blocking.sendCommand(['XREADGROUP', 'GROUP', INBOX_GROUP, this.processId,
          'COUNT', '16', 'BLOCK', '500', 'STREAMS', this.inbox, '>'], RAW);
        if (!reply) continue;
        for (const [rawId, fields] of reply[0][1]) {
          await this.process(rawId.toString(), fields, 1);
        }
      } catch (err) {
        if (this.stopping) break;
        log('read_failed', { error: String(err) });
        await new Promise((resolve) => { setTimeout(resolve, 500); });
      }
    }
    clearInterval(beat);
    await this.leave();
  }

  async leave() {
    try {
      await this.cmd.sendCommand(['HDEL', this.keys.presence, this.processId]);
      await this.cmd.sendCommand(['DEL', this.keys.alive(this.processId), this.replyStream]);
    } catch (err) {
      log('leave_failed', { error: String(err) });
    }
    log('stopped', { stats: this.stats });
    await Promise.allSettled([this.cmd.quit(), this.blocking.quit()]);
  }
}

function fieldOf(fields, name) {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i].toString() === name) return fields[i + 1];
  }
  return null;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const agent = new Agent(opts);
  await agent.connect();
  if (opts.probe) {
    // One ask to the town's probe registry of a running daemon; print the result and exit.
    let args;
    try {
      args = JSON.parse(opts.args);
    } catch (err) {
      fail(`--args is not JSON: ${err.message}`);
    }
    const call = { tool: opts.probe, args, caller: opts.address, registry: opts.registry };
    const reply = await agent.ask(opts.to, 'probe.call', call);
    process.stdout.write(`${JSON.stringify({ type: reply.type, payload: reply.payload })}\n`);
    await agent.leave();
    process.exitCode = reply.payload.status === 'ok' ? 0 : 1;
    return;
  }
  const stop = () => { agent.stopping = true; };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  await agent.serve();
}

main().catch((err) => {
  process.stderr.write(`agent.js: error: ${err.stack || err}\n`);
  process.exit(1);
});
