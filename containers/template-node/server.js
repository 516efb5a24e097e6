// A complete apmbench.v1.MemorySystem server in Node.js, written from
// docs/PROTOCOL.md and memory_system.proto only. Copy this directory, replace
// the four functions marked METHOD with your memory, keep the rest.
//
//   node server.js unix:/tmp/my.sock       (or APMBENCH_ADDRESS=... node server.js)
//   apmbench-grpc check --command 'node server.js {address}'
'use strict';

const crypto = require('node:crypto');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const { HealthImplementation } = require('grpc-health-check');
const { ReflectionService } = require('@grpc/reflection');

const PROTOCOL_VERSION = '1.1';
const PROTO = process.env.APMBENCH_PROTO || path.join(__dirname, 'memory_system.proto');
const DEFAULT_CHUNK = 1 << 20; // max_chunk_bytes = 0 (R7)
const MAX_CHUNK = 2 << 20; // the cap whatever a client asks (R7)

// The health service's own .proto, loaded beside ours so that reflection lists it too.
const HEALTH_PROTO = path.join(
  path.dirname(require.resolve('grpc-health-check/package.json')),
  'proto/health/v1/health.proto',
);

const definition = protoLoader.loadSync([PROTO, HEALTH_PROTO], {
  keepCase: true, // field names as in the .proto
  longs: Number, // int64 times fit a double for millennia
  enums: String, // 'FRAME_ENCODING_JPEG', ...
  defaults: true,
  oneofs: true, // msg.item === 'frame' | 'user_turn', msg.chunk === 'manifest' | 'data'
});
const apmbench = grpc.loadPackageDefinition(definition).apmbench.v1;

// -- the protocol's errors: one class per status code ---------------------------------

class Refusal extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
    this.details = message;
  }
}
const invalid = (m) => new Refusal(grpc.status.INVALID_ARGUMENT, m);
const precondition = (m) => new Refusal(grpc.status.FAILED_PRECONDITION, m);

function asStatus(error) {
  if (error instanceof Refusal) return { code: error.code, details: error.details };
  // Anything unanticipated is INTERNAL and the server keeps serving.
  return { code: grpc.status.INTERNAL, details: `${error.name}: ${error.message}` };
}

// -- METHOD: your memory. Everything here must be in export() (R6). ------------------

const INFO = {
  name: 'template-node',
  version: '1',
  protocol_version: PROTOCOL_VERSION,
  capabilities: {
    frame_encodings: ['FRAME_ENCODING_JPEG'],
    preferred_max_side: 448,
    supports_import: true,
    streaming_ingest: true,
  },
  details: { language: `node ${process.version}` },
};

let memory = emptyMemory();

function emptyMemory() {
  return { sessions: [], frames: 0, turns: [] };
}

function ingestFrame(frame) {
  // A real method encodes the pixels here (frame.data is a Buffer of JPEG bytes).
  memory.frames += 1;
  memory.sessions[memory.sessions.length - 1].last_frame_ms = frame.time_ms;
}

function ingestTurn(turn) {
  memory.turns.push({ time_ms: turn.time_ms, kind: turn.kind, text: turn.text });
}

// The answer as deltas (R11). It depends only on memory, so it survives a restart.
function* answer(query) {
  const format = query.answer_format;
  const options = query.choices.map((c) => c.option_id);
  if (format === 'ANSWER_FORMAT_OPTION' || (format === 'ANSWER_FORMAT_UNSPECIFIED' && options.length)) {
    const pick = options[(memory.frames + memory.turns.length) % options.length];
    yield '{"answer":';
    yield JSON.stringify(pick) + '}';
    return;
  }
  // ANSWER_FORMAT_DECISION and _WITH_OPTION: SILENT is valid in both.
  yield '{"decision":"SILENT",';
  yield `"reason":"${memory.turns.length} turns remembered, nothing to say yet"}`;
}

// -- state: canonical JSON, so the same memory exports the same bytes (R6) -------------

function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const exportState = () => Buffer.from(canonical(memory), 'utf8');
const importState = (data) => {
  memory = JSON.parse(data.toString('utf8'));
};

// -- the lifecycle (R2, R3, R8, R10), checked before method code ------------------------

let openSession = null;
let lastTime = null;

function advance(what, time) {
  if (lastTime !== null && time < lastTime) {
    throw invalid(`${what} at time_ms=${time} is earlier than the previous item at ${lastTime} (R2)`);
  }
  lastTime = time;
}

function requireSession(what) {
  if (openSession === null) throw precondition(`${what} outside a session: StartSession first (R3)`);
}

function checkFrame(f) {
  if (f.encoding === 'FRAME_ENCODING_UNSPECIFIED') throw invalid(`frame at ${f.time_ms} has no encoding (R10)`);
  if (!INFO.capabilities.frame_encodings.includes(f.encoding)) {
    throw invalid(`frame at ${f.time_ms} is ${f.encoding}, not declared (R8)`);
  }
  if (!f.width || !f.height || !f.data.length) throw invalid(`frame at ${f.time_ms} has no size or data (R10)`);
  if (f.encoding === 'FRAME_ENCODING_JPEG' && !(f.data[0] === 0xff && f.data[1] === 0xd8)) {
    throw invalid(`jpeg frame at ${f.time_ms} does not begin with the SOI marker FF D8 (R10)`);
  }
}

// An enum value this server does not know arrives as a number (enums: String): no value (R10).
const known = (value, unspecified) => typeof value === 'string' && value !== unspecified;

// -- the service ---------------------------------------------------------------------

function unary(body) {
  return (call, callback) => {
    try {
      callback(null, body(call.request));
    } catch (e) {
      callback(asStatus(e));
    }
  };
}

const service = {
  Describe: unary(() => INFO),

  Reset: unary(() => {
    memory = emptyMemory();
    openSession = null;
    lastTime = null;
    return {};
  }),

  StartSession: unary((r) => {
    // Precedence: FAILED_PRECONDITION before INVALID_ARGUMENT.
    if (openSession !== null) throw precondition(`StartSession while ${openSession} is open (R3)`);
    if (!r.session_id) throw invalid('StartSession needs a session_id (R10)');
    advance('StartSession', r.time_ms);
    openSession = r.session_id;
    memory.sessions.push({ session_id: r.session_id, day_id: r.day_id, start_ms: r.time_ms });
    return {};
  }),

  PushFrames: (call, callback) => {
    let frames = 0;
    let turns = 0;
    let failed = null;
    call.on('data', (msg) => {
      if (failed) return; // R2: nothing after a refused item is applied
      try {
        requireSession('PushFrames');
        if (msg.item === 'frame') {
          checkFrame(msg.frame);
          advance('frame', msg.frame.time_ms);
          ingestFrame(msg.frame);
          frames += 1;
        } else if (msg.item === 'user_turn') {
          if (!known(msg.user_turn.kind, 'USER_TURN_KIND_UNSPECIFIED')) {
            throw invalid(`user turn at ${msg.user_turn.time_ms} has no kind (R10)`);
          }
          advance('user turn', msg.user_turn.time_ms);
          ingestTurn(msg.user_turn);
          turns += 1;
        } else {
          throw invalid('a stream item with neither frame nor user turn (R10)');
        }
      } catch (e) {
        failed = e;
      }
    });
    call.on('end', () => {
      if (failed) callback(asStatus(failed));
      else callback(null, { frames_ingested: frames, user_turns_ingested: turns });
    });
  },

  EndSession: unary((r) => {
    requireSession('EndSession');
    if (r.session_id !== openSession) {
      throw invalid(`EndSession(${r.session_id}) is not the open session ${openSession} (R3)`);
    }
    advance('EndSession', r.time_ms);
    openSession = null;
    return {};
  }),

  Query: (call) => {
    try {
      requireSession('Query');
      const q = call.request;
      if (!known(q.kind, 'QUERY_KIND_UNSPECIFIED')) throw invalid('Query has no known kind (R10)');
      advance('Query', q.time_ms);
      // R5: answer() only reads memory. A slow method checks call.cancelled between steps.
      for (const piece of answer(q)) {
        if (call.cancelled) return;
        if (piece) call.write({ text: piece });
      }
      call.end();
    } catch (e) {
      call.emit('error', asStatus(e));
    }
  },

  ExportState: (call) => {
    try {
      const data = exportState();
      const asked = call.request.max_chunk_bytes;
      const size = asked > 0 ? Math.min(asked, MAX_CHUNK) : DEFAULT_CHUNK;
      const sha256 = crypto.createHash('sha256').update(data).digest('hex');
      call.write({
        manifest: { total_bytes: data.length, sha256, content_type: 'application/json', format_version: 1 },
      });
      for (let at = 0; at < data.length; at += size) call.write({ data: data.subarray(at, at + size) });
      call.end();
    } catch (e) {
      call.emit('error', asStatus(e));
    }
  },

  ImportState: (call, callback) => {
    let manifest = null;
    let failed = null;
    const pieces = [];
    const digest = crypto.createHash('sha256');
    let received = 0;
    // Precedence: UNIMPLEMENTED, then FAILED_PRECONDITION, before reading the stream.
    if (!INFO.capabilities.supports_import) {
      failed = new Refusal(grpc.status.UNIMPLEMENTED, 'ImportState is not supported (R8)');
    } else if (openSession !== null) {
      failed = precondition(`ImportState while session ${openSession} is open`);
    }
    call.on('data', (msg) => {
      if (failed) return;
      try {
        if (manifest === null) {
          if (msg.chunk !== 'manifest') throw invalid('the first state chunk must be the manifest');
          if (!/^[0-9a-f]{64}$/.test(msg.manifest.sha256)) {
            throw invalid('manifest sha256 is not 64 lower-case hex digits');
          }
          manifest = msg.manifest;
          return;
        }
        if (msg.chunk !== 'data') throw invalid('only the first state chunk may carry a manifest');
        if (msg.data.length > MAX_CHUNK) throw invalid('a state chunk over 2 MiB (R7)');
        digest.update(msg.data);
        received += msg.data.length;
        pieces.push(msg.data);
      } catch (e) {
        failed = e;
      }
    });
    call.on('end', () => {
      try {
        if (failed) throw failed;
        if (manifest === null) throw invalid('ImportState stream is empty: send the manifest first');
        const loss = (m) => new Refusal(grpc.status.DATA_LOSS, m);
        if (received !== manifest.total_bytes) {
          throw loss(`manifest announced ${manifest.total_bytes} bytes, ${received} arrived`);
        }
        if (digest.digest('hex') !== manifest.sha256) throw loss('sha256 does not match the manifest');
        importState(Buffer.concat(pieces));
        lastTime = null; // ImportState starts the clock afresh (R2)
        callback(null, { bytes_imported: received });
      } catch (e) {
        callback(asStatus(e));
      }
    });
  },
};

function main() {
  const address = process.argv[2] || process.env.APMBENCH_ADDRESS;
  if (!address) {
    console.error('usage: node server.js unix:/path/to/sock   (or set APMBENCH_ADDRESS)');
    process.exit(2);
  }
  const server = new grpc.Server();
  server.addService(apmbench.MemorySystem.service, service);
  const health = new HealthImplementation({ '': 'NOT_SERVING', 'apmbench.v1.MemorySystem': 'NOT_SERVING' });
  health.addToServer(server);
  // Reflection is recommended, not required: v1 and v1alpha, as grpcurl asks.
  new ReflectionService(definition).addToServer(server);
  server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error) => {
    if (error) {
      console.error(`cannot listen on ${address}: ${error.message}`);
      process.exit(1);
    }
    health.setStatus('', 'SERVING');
    health.setStatus('apmbench.v1.MemorySystem', 'SERVING');
    console.log(`template-node serving protocol ${PROTOCOL_VERSION} at ${address}`);
  });
  const stop = () => server.tryShutdown(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
