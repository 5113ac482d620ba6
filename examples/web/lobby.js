// lobbyd's general lobby from JavaScript: the wire format (docs/protocols/general-lobby.md,
// "Frame", "Parameters", "Messages") and a client over a WebSocket whose binary messages each
// carry one frame. One ES module, no dependencies, for browsers and Node 20+.
//
// - `encode(message)` / `decode(bytes, options)`: one message <-> one frame. Every message is a
//   plain object `{ type, ...fields }` (`type` is the protocol's name in snake case, the fields
//   those of the table in camelCase). Decoding is total: any bytes give a message or throw a
//   `WireError` whose `reason` is the Rust parser's label (`truncated`, `bad_size`, ...), plus
//   `oversized` and `trailing_bytes` for a buffer that is not exactly one frame.
// - `LobbyClient`: connects, signs in, keeps `members`, `games` and the owner's `asks` up to
//   date from the frames, emits one event per server message (named by its `type`), and gives
//   a promise per request: resolved by the server's answer, rejected with a `LobbyError`
//   (the server's ERROR code and text), `SignInRefused`, `JoinRefused`, `WireError` or
//   `ConnectionClosed`. Requests the protocol answers only on failure are followed by a PING:
//   the server handles one connection's frames in order, so the PONG says they passed.
//
// Types: clients/js/lobby.d.ts. The module lives here, in the lobby page's folder, because
// `lobbyd --lobby-web` serves no symlink leading out of its folder; clients/js/lobby.js links here.

/** Protocol version HELLO announces. */
export const PROTOCOL_VERSION = 1;
/** Frame header: code (u32 LE) and payload length (u32 LE). */
export const HEADER_LEN = 8;
/** The server's default bound on a frame's payload (`--lobby-max-frame`). */
export const DEFAULT_MAX_FRAME = 16384;
/** Longest string or bytes parameter: its length is a u16. */
export const MAX_PARAM_LEN = 0xffff;
/** Resume token length (WELCOME, SIGN_IN). */
export const TOKEN_LEN = 16;
/** Longest PING (and PONG) payload. */
export const MAX_PING_PAYLOAD = 64;

/** Game flags. */
export const GAME_LOCKED = 1;
export const GAME_CLOSED = 2;
export const GAME_IN_PROGRESS = 4;
export const GAME_HOSTED = 8;
/** Player flag: ready. */
export const PLAYER_READY = 1;
/** Member flag bit 16: the member's connection dropped, its resume grace runs. */
export const MEMBER_AWAY = 0x10000;

/** Message codes by protocol name. */
export const CODE = Object.freeze({
  HELLO: 0x01, CHALLENGE: 0x02, SIGN_IN: 0x03, WELCOME: 0x04, ERROR: 0x05, SYNC_DONE: 0x06,
  MEMBER_INFO: 0x10, MEMBER_LEFT: 0x11, SET_MEMBER: 0x12,
  CHAT: 0x20, CHAT_FROM: 0x21, PRIVATE_CHAT: 0x22, PRIVATE_FROM: 0x23,
  CREATE_GAME: 0x30, GAME_INFO: 0x31, GAME_CLOSED: 0x32, JOIN_REQUEST: 0x33, JOIN_ASK: 0x34,
  JOIN_ANSWER: 0x35, JOIN_RESPONSE: 0x36, LEAVE_GAME: 0x37, SET_GAME: 0x38, SET_READY: 0x39,
  START_GAME: 0x3a, GAME_STARTED: 0x3b, KICK: 0x3c, KICKED: 0x3d, GIVE_OWNER: 0x3e,
  STORE_DATA: 0x40, FETCH_DATA: 0x41, DATA_VALUE: 0x42, TO_OWNER: 0x43, TO_ALL: 0x44,
  TO_PLAYER: 0x45, GAME_MESSAGE: 0x46, LIST_GAMES: 0x50, GAME_LIST_END: 0x51,
  PING: 0x60, PONG: 0x61,
});

/** ERROR codes' labels, indexed by code (the `reason` of `general_refusals_total`). */
export const ERROR_LABELS = Object.freeze([
  'notice', 'not_signed_in', 'malformed', 'unknown_game', 'not_owner', 'already_in_game',
  'full', 'closed', 'wrong_password', 'name_invalid', 'rate_limited', 'frame_too_large',
  'not_in_game', 'unknown_id', 'unknown_code', 'limit_reached',
]);

/** The label of an ERROR code, `other` for one the table does not define. */
export function errorLabel(code) {
  return ERROR_LABELS[code] ?? 'other';
}

// Parameter shapes. The wire kinds are 1 i32, 2 u32, 3 string, 4 bytes; the other shapes
// are those kinds with a message's own rule on the value.
const I32 = 'i32'; // kind 1
const U32 = 'u32'; // kind 2
const FLAG = 'flag'; // kind 2, 0 or 1, a boolean here
const STR = 'str'; // kind 3, UTF-8
const BYTES = 'bytes'; // kind 4
const TOKEN = 'token'; // kind 4, exactly 16 bytes
const RESUME = 'resume'; // kind 4, empty (null here) or 16 bytes
const PING_BYTES = 'ping'; // kind 4, at most 64 bytes
const I32S = 'i32s'; // kind 4, a whole number of i32 LE
const U32S = 'u32s'; // kind 4, a whole number of u32 LE
const KIND = { [I32]: 1, [U32]: 2, [FLAG]: 2, [STR]: 3 };

// Every message: code, type, direction (S server to client, C client to server), parameters.
const TABLE = [
  [0x01, 'hello', 'S', [['serverName', STR], ['version', U32]]],
  [0x02, 'challenge', 'S', [['text', STR], ['failed', FLAG]]],
  [0x03, 'sign_in', 'C', [['username', STR], ['password', STR], ['resume', RESUME]]],
  [0x04, 'welcome', 'S', [['member', I32], ['token', TOKEN]]],
  [0x05, 'error', 'S', [['code', U32], ['request', U32], ['text', STR]]],
  [0x06, 'sync_done', 'S', []],
  [0x10, 'member_info', 'S', [['id', I32], ['flags', U32], ['username', STR], ['displayName', STR]]],
  [0x11, 'member_left', 'S', [['id', I32]]],
  [0x12, 'set_member', 'C', [['flags', U32], ['displayName', STR]]],
  [0x20, 'chat', 'C', [['game', I32], ['text', STR]]],
  [0x21, 'chat_from', 'S', [['game', I32], ['member', I32], ['text', STR]]],
  [0x22, 'private_chat', 'C', [['to', I32], ['text', STR]]],
  [0x23, 'private_from', 'S', [['from', I32], ['text', STR]]],
  [0x30, 'create_game', 'C', [['maxPlayers', U32], ['gameType', STR], ['version', STR],
    ['flags', U32], ['name', STR], ['password', STR]]],
  [0x31, 'game_info', 'S', [['id', I32], ['owner', I32], ['maxPlayers', U32], ['name', STR],
    ['gameType', STR], ['version', STR], ['flags', U32], ['players', I32S], ['playerFlags', U32S]]],
  [0x32, 'game_closed', 'S', [['id', I32]]],
  [0x33, 'join_request', 'C', [['game', I32], ['request', I32], ['password', STR]]],
  [0x34, 'join_ask', 'S', [['game', I32], ['member', I32], ['ask', I32]]],
  [0x35, 'join_answer', 'C', [['ask', I32], ['accept', FLAG], ['reason', STR]]],
  [0x36, 'join_response', 'S', [['game', I32], ['request', I32], ['accepted', FLAG], ['reason', STR]]],
  [0x37, 'leave_game', 'C', [['game', I32]]],
  [0x38, 'set_game', 'C', [['game', I32], ['flags', U32], ['password', STR]]],
  [0x39, 'set_ready', 'C', [['game', I32], ['ready', FLAG]]],
  [0x3a, 'start_game', 'C', [['game', I32]]],
  [0x3b, 'game_started', 'S', [['game', I32], ['flags', U32]]],
  [0x3c, 'kick', 'C', [['game', I32], ['member', I32], ['reason', STR]]],
  [0x3d, 'kicked', 'S', [['game', I32], ['reason', STR]]],
  [0x3e, 'give_owner', 'C', [['game', I32], ['member', I32]]],
  [0x40, 'store_data', 'C', [['game', I32], ['key', STR], ['value', BYTES]]],
  [0x41, 'fetch_data', 'C', [['game', I32], ['key', STR]]],
  [0x42, 'data_value', 'S', [['game', I32], ['key', STR], ['value', BYTES]]],
  [0x43, 'to_owner', 'C', [['game', I32], ['appCode', U32], ['body', BYTES]]],
  [0x44, 'to_all', 'C', [['game', I32], ['appCode', U32], ['body', BYTES]]],
  [0x45, 'to_player', 'C', [['game', I32], ['member', I32], ['appCode', U32], ['body', BYTES]]],
  [0x46, 'game_message', 'S', [['game', I32], ['from', I32], ['appCode', U32], ['body', BYTES]]],
  [0x50, 'list_games', 'C', [['gameType', STR], ['flagsClear', U32], ['minFree', U32]]],
  [0x51, 'game_list_end', 'S', [['count', U32]]],
  [0x60, 'ping', 'C', [['payload', PING_BYTES]]],
  [0x61, 'pong', 'S', [['payload', PING_BYTES]]],
].map(([code, type, dir, params]) => Object.freeze({ code, type, dir, params }));

const BY_CODE = new Map(TABLE.map((m) => [m.code, m]));
const BY_TYPE = new Map(TABLE.map((m) => [m.type, m]));

/** Every message type a client sends, in code order. */
export const CLIENT_TYPES = Object.freeze(TABLE.filter((m) => m.dir === 'C').map((m) => m.type));
/** Every message type the server sends, in code order. */
export const SERVER_TYPES = Object.freeze(TABLE.filter((m) => m.dir === 'S').map((m) => m.type));

/** The code of a message type (`'chat'` -> 0x20), undefined for an unknown one. */
export function codeOf(type) {
  return BY_TYPE.get(type)?.code;
}

/** The message type of a code (0x20 -> `'chat'`), undefined for an unknown one. */
export function typeOf(code) {
  return BY_CODE.get(code)?.type;
}

/** Bytes that could not be turned into a message, or a message that cannot be encoded. */
export class WireError extends Error {
  constructor(reason, detail = {}) {
    super(detail.text ?? reason);
    this.name = 'WireError';
    /** The Rust parser's label, or `oversized` / `trailing_bytes`. */
    this.reason = reason;
    /** The frame's code, when the header was read. */
    this.code = detail.code;
    /** The declared payload length of an oversized frame. */
    this.declared = detail.declared;
    /** The message field concerned, when encoding. */
    this.field = detail.field;
  }
}

const utf8Encoder = new TextEncoder();
// fatal: invalid UTF-8 throws (a typed error here); ignoreBOM: a leading U+FEFF is text.
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A Uint8Array over `value` (Uint8Array, ArrayBuffer, any view, or an array of byte values). */
export function toBytes(value) {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (Array.isArray(value) && value.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) {
    return Uint8Array.from(value);
  }
  throw new TypeError('expected bytes: a Uint8Array, an ArrayBuffer or an array of 0..255');
}

// ---- encoding ----

function encodeValue(shape, value, field, code) {
  const fail = (reason, text) => { throw new WireError(reason, { code, field, text: `${field}: ${text}` }); };
  const word = (lo, hi) => {
    if (!Number.isInteger(value) || value < lo || value > hi) fail('bad_value', `not an integer in ${lo}..${hi}`);
  };
  switch (shape) {
    case I32: word(-0x80000000, 0x7fffffff); return leWord(value);
    case U32: word(0, 0xffffffff); return leWord(value);
    case FLAG:
      if (value !== true && value !== false && value !== 0 && value !== 1) fail('bad_value', 'not a boolean');
      return leWord(value ? 1 : 0);
    case STR: {
      if (typeof value !== 'string') fail('bad_value', 'not a string');
      const bytes = utf8Encoder.encode(value);
      if (bytes.length > MAX_PARAM_LEN) fail('bad_size', `${bytes.length} bytes, over ${MAX_PARAM_LEN}`);
      return bytes;
    }
    case I32S: case U32S: {
      if (!Array.isArray(value)) fail('bad_value', 'not an array');
      if (value.length * 4 > MAX_PARAM_LEN) fail('bad_size', `${value.length} values, too many`);
      const out = new Uint8Array(value.length * 4);
      value.forEach((v, i) => {
        out.set(encodeValue(shape === I32S ? I32 : U32, v, `${field}[${i}]`, code), i * 4);
      });
      return out;
    }
    default: {
      if (shape === RESUME && (value === null || value === undefined)) return new Uint8Array(0);
      let bytes;
      try {
        bytes = toBytes(value);
      } catch {
        fail('bad_value', 'not bytes');
      }
      if (bytes.length > MAX_PARAM_LEN) fail('bad_size', `${bytes.length} bytes, over ${MAX_PARAM_LEN}`);
      if (shape === TOKEN && bytes.length !== TOKEN_LEN) fail('bad_size', `a token is ${TOKEN_LEN} bytes`);
      if (shape === RESUME && bytes.length !== 0 && bytes.length !== TOKEN_LEN) {
        fail('bad_size', `a resume token is empty or ${TOKEN_LEN} bytes`);
      }
      if (shape === PING_BYTES && bytes.length > MAX_PING_PAYLOAD) {
        fail('bad_size', `a ping payload is at most ${MAX_PING_PAYLOAD} bytes`);
      }
      return bytes;
    }
  }
}

function leWord(value) {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value >>> 0, true);
  return out;
}

/**
 * Encodes one message (`{ type, ...fields }`, either direction) as one frame. Throws a
 * `WireError` (`bad_value`, `bad_size`) for a field the wire cannot carry, or a `TypeError`
 * for an unknown type.
 */
export function encode(message) {
  const spec = BY_TYPE.get(message?.type);
  if (!spec) throw new TypeError(`unknown message type ${JSON.stringify(message?.type)}`);
  const values = spec.params.map(([field, shape]) => [shape, encodeValue(shape, message[field], field, spec.code)]);
  if (spec.type === 'game_info' && message.players.length !== message.playerFlags.length) {
    throw new WireError('bad_value', { code: spec.code, field: 'playerFlags', text: 'playerFlags: one per player' });
  }
  const payloadLen = values.reduce((sum, [, v]) => sum + 3 + v.length, 0);
  const out = new Uint8Array(HEADER_LEN + payloadLen);
  const view = new DataView(out.buffer);
  view.setUint32(0, spec.code, true);
  view.setUint32(4, payloadLen, true);
  let at = HEADER_LEN;
  for (const [shape, value] of values) {
    view.setUint8(at, KIND[shape] ?? 4);
    view.setUint16(at + 1, value.length, true);
    out.set(value, at + 3);
    at += 3 + value.length;
  }
  return out;
}

// ---- decoding ----

/**
 * Decodes one frame, which must be the whole of `bytes`. `options.from` (`'server'` or
 * `'client'`) makes a code of the other direction `wrong_direction`; `options.maxFrame`
 * (default `DEFAULT_MAX_FRAME`) bounds the declared payload (`oversized`, decided from the
 * header alone). Throws `WireError` for anything else than one well-formed message.
 */
export function decode(bytes, options = {}) {
  const buf = toBytes(bytes);
  const maxFrame = options.maxFrame ?? DEFAULT_MAX_FRAME;
  if (buf.length < HEADER_LEN) throw new WireError('truncated', { text: 'shorter than a frame header' });
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const code = view.getUint32(0, true);
  const declared = view.getUint32(4, true);
  if (declared > maxFrame) {
    throw new WireError('oversized', { code, declared, text: `payload of ${declared} bytes, over ${maxFrame}` });
  }
  if (buf.length < HEADER_LEN + declared) throw new WireError('truncated', { code, text: 'frame truncated' });
  if (buf.length > HEADER_LEN + declared) {
    throw new WireError('trailing_bytes', { code, text: 'bytes after the frame' });
  }
  const spec = BY_CODE.get(code);
  if (!spec) throw new WireError('unknown_code', { code, text: `unknown message code ${code}` });
  const wanted = { server: 'S', client: 'C' }[options.from];
  if (wanted && spec.dir !== wanted) {
    throw new WireError('wrong_direction', { code, text: `${spec.type} is not sent by the ${options.from}` });
  }
  const message = { type: spec.type };
  let at = HEADER_LEN;
  const end = HEADER_LEN + declared;
  for (const [field, shape] of spec.params) {
    const fail = (reason, text) => { throw new WireError(reason, { code, field, text: `${field}: ${text}` }); };
    if (at === end) fail('missing_param', 'parameter missing');
    if (end - at < 3) fail('param_truncated', 'parameter header runs past the payload');
    const kind = view.getUint8(at);
    const len = view.getUint16(at + 1, true);
    if (end - at - 3 < len) fail('param_truncated', 'parameter runs past the payload');
    const value = buf.subarray(at + 3, at + 3 + len);
    at += 3 + len;
    if (kind !== (KIND[shape] ?? 4)) fail('wrong_kind', `parameter of kind ${kind}`);
    message[field] = decodeValue(shape, value, fail);
  }
  if (spec.type === 'game_info' && message.players.length !== message.playerFlags.length) {
    throw new WireError('bad_value', { code, field: 'playerFlags', text: 'player flags do not pair with the players' });
  }
  if (at !== end) throw new WireError('extra_param', { code, text: 'unexpected extra parameter' });
  return message;
}

function decodeValue(shape, value, fail) {
  const words = (signed) => {
    if (value.length % 4 !== 0) fail('bad_size', `${value.length} bytes, not whole 4-byte words`);
    const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
    const out = [];
    for (let i = 0; i < value.length; i += 4) out.push(signed ? view.getInt32(i, true) : view.getUint32(i, true));
    return out;
  };
  switch (shape) {
    case I32: case U32: case FLAG: {
      if (value.length !== 4) fail('bad_size', `${value.length} bytes, not 4`);
      const [word] = words(shape === I32);
      if (shape !== FLAG) return word;
      if (word > 1) fail('bad_value', `${word}, not 0 or 1`);
      return word === 1;
    }
    case STR:
      try {
        return utf8Decoder.decode(value);
      } catch {
        return fail('not_utf8', 'not valid UTF-8');
      }
    case I32S: return words(true);
    case U32S: return words(false);
    case TOKEN:
      if (value.length !== TOKEN_LEN) fail('bad_size', `a token is ${TOKEN_LEN} bytes`);
      return value.slice();
    case RESUME:
      if (value.length === 0) return null;
      if (value.length !== TOKEN_LEN) fail('bad_size', `a resume token is empty or ${TOKEN_LEN} bytes`);
      return value.slice();
    case PING_BYTES:
      if (value.length > MAX_PING_PAYLOAD) fail('bad_size', `a ping payload is at most ${MAX_PING_PAYLOAD} bytes`);
      return value.slice();
    default:
      return value.slice();
  }
}

// ---- errors of the client ----

/** The server's ERROR answering a request: its code, label and text. */
export class LobbyError extends Error {
  constructor(error) {
    const label = errorLabel(error.code);
    super(`${label}: ${error.text}`);
    this.name = 'LobbyError';
    /** The ERROR code (docs/protocols/general-lobby.md, "ERROR codes"). */
    this.code = error.code;
    /** Its label: `full`, `not_owner`, ... (`other` for a code the table does not define). */
    this.label = label;
    /** The code of the request it answers (0 for a notice). */
    this.request = error.request;
    /** The request's message type, when known. */
    this.requestType = typeOf(error.request);
    /** The server's text. */
    this.text = error.text;
  }
}

/** A refused SIGN_IN: the server's CHALLENGE(1) text ("name taken", ...). */
export class SignInRefused extends Error {
  constructor(text) {
    super(`sign-in refused: ${text}`);
    this.name = 'SignInRefused';
    this.text = text;
  }
}

/** A refused JOIN_REQUEST: JOIN_RESPONSE(0) with the reason ("game full", "refused by the owner"). */
export class JoinRefused extends Error {
  constructor(response) {
    super(`join refused: ${response.reason}`);
    this.name = 'JoinRefused';
    this.game = response.game;
    this.request = response.request;
    this.reason = response.reason;
  }
}

/** The connection closed (or never opened) before the answer came. */
export class ConnectionClosed extends Error {
  constructor(detail = {}) {
    super(detail.notice ? `connection closed: ${detail.notice}` : 'connection closed');
    this.name = 'ConnectionClosed';
    /** The WebSocket close code and reason, when there was a close frame. */
    this.closeCode = detail.closeCode;
    this.closeReason = detail.closeReason;
    /** The text of the server's last notice (ERROR 0), e.g. "idle timeout". */
    this.notice = detail.notice;
  }
}

// ---- the client ----

const OPEN = 1;

/**
 * A member's connection to the general lobby over a WebSocket. Create it with
 * `LobbyClient.connect(url)`; see lobby.d.ts for every method and event.
 */
export class LobbyClient {
  /** Opens a WebSocket to `url` and resolves once the server's HELLO arrived. */
  static connect(url, options = {}) {
    const Socket = options.WebSocket ?? globalThis.WebSocket;
    if (typeof Socket !== 'function') {
      return Promise.reject(new TypeError(
        'no WebSocket: pass options.WebSocket (a WebSocket constructor, e.g. from the "ws" package)',
      ));
    }
    let socket;
    try {
      socket = new Socket(url);
    } catch (error) {
      return Promise.reject(error);
    }
    const client = new LobbyClient(socket, options);
    return client.ready.then(() => client);
  }

  #socket;
  #listeners = new Map();
  #pending = [];
  #pingSeq = 0;
  #joinSeq = 0;
  #maxFrame;
  #keepAlive;
  #closed = null;
  #notice;
  #readyWait;

  /**
   * Wraps a WebSocket (or anything with its `send`, `close`, `readyState`, `binaryType` and
   * `addEventListener`), opened or opening. `LobbyClient.connect` is the usual way in.
   */
  constructor(socket, options = {}) {
    this.#socket = socket;
    this.#maxFrame = options.maxFrame ?? DEFAULT_MAX_FRAME;
    /** The server's HELLO: name and protocol version (undefined until it arrives). */
    this.serverName = undefined;
    this.version = undefined;
    /** This member's id (0 until WELCOME) and its latest resume token. */
    this.member = 0;
    this.token = null;
    /** The name this connection signed in with. */
    this.username = undefined;
    /** True from SYNC_DONE after a WELCOME until the connection closes. */
    this.signedIn = false;
    /** Every member (id -> MEMBER_INFO), every game (id -> GAME_INFO), asks to this owner (ask id -> JOIN_ASK). */
    this.members = new Map();
    this.games = new Map();
    this.asks = new Map();
    /** Resolves when HELLO arrived; rejects if the connection closes first. */
    this.ready = new Promise((resolve, reject) => { this.#readyWait = { resolve, reject }; });
    this.ready.catch(() => {});
    socket.binaryType = 'arraybuffer';
    socket.addEventListener('message', (event) => this.#onMessage(event.data));
    socket.addEventListener('close', (event) => this.#onClose(event));
    socket.addEventListener('error', () => this.#emit('socket_error', {}));
    const every = options.keepAlive ?? 10000;
    if (every > 0) {
      this.#keepAlive = setInterval(() => {
        if (this.#socket.readyState === OPEN) this.ping().catch(() => {});
      }, every);
      this.#keepAlive.unref?.();
    }
  }

  // ---- events ----

  /**
   * Calls `listener(message)` for each server message of `type` (`'chat_from'`, ...), and for
   * the client's own events: `'message'` (every server message), `'members'`, `'games'` and
   * `'asks'` (the map changed), `'close'`, `'wire_error'` (a server frame that did not decode, skipped),
   * `'socket_error'`. Returns a function that removes the listener.
   */
  on(type, listener) {
    if (!this.#listeners.has(type)) this.#listeners.set(type, new Set());
    this.#listeners.get(type).add(listener);
    return () => this.off(type, listener);
  }

  /** Removes a listener added with `on`. */
  off(type, listener) {
    this.#listeners.get(type)?.delete(listener);
  }

  /** Resolves with the next event of `type`. */
  once(type) {
    return new Promise((resolve) => {
      const off = this.on(type, (value) => { off(); resolve(value); });
    });
  }

  #emit(type, value) {
    for (const listener of [...(this.#listeners.get(type) ?? [])]) {
      try {
        listener(value);
      } catch (error) {
        // A listener's bug must not stop the frames behind it: reported the platform's way
        // (the browser's console and error event), or on the console.
        (globalThis.reportError ?? console.error)(error);
      }
    }
  }

  // ---- requests ----

  /**
   * SIGN_IN with a password (empty for a guest, or under `--lobby-login off`), or with a resume
   * token (`options.token`). Resolves with `{ member, token }` once the sync is done.
   */
  signIn(username, password = '', options = {}) {
    const message = { type: 'sign_in', username, password, resume: options.token ?? null };
    return this.#request(message, {
      observe: (m, entry) => { if (m.type === 'welcome') entry.welcome = m; },
      match: (m, entry) => {
        if (m.type === 'sync_done' && entry.welcome) {
          this.username = username;
          return { ok: { member: entry.welcome.member, token: entry.welcome.token } };
        }
        if (m.type === 'challenge' && m.failed) return { err: new SignInRefused(m.text) };
        return undefined;
      },
    });
  }

  /** SIGN_IN with the resume token of the last WELCOME (or the one given). */
  resume(username = this.username, token = this.token) {
    return this.signIn(username, '', { token });
  }

  /** SET_MEMBER: this member's own flags (low 16 bits) and display name. */
  setMember(displayName, flags = 0) {
    return this.#barrier({ type: 'set_member', flags, displayName });
  }

  /** CHAT to the lobby (game 0) or to a game's players; resolves with the echoed CHAT_FROM. */
  chat(text, game = 0) {
    return this.#request({ type: 'chat', game, text }, {
      match: (m) => (m.type === 'chat_from' && m.member === this.member && m.game === game && m.text === text
        ? { ok: m } : undefined),
    });
  }

  /** PRIVATE_CHAT to one member. */
  privateChat(to, text) {
    return this.#barrier({ type: 'private_chat', to, text });
  }

  /** CREATE_GAME; resolves with the new game's GAME_INFO (this member its owner and first player). */
  createGame({ name, maxPlayers = 2, gameType = '', version = '', flags = 0, password = '' }) {
    const message = { type: 'create_game', maxPlayers, gameType, version, flags, name, password };
    return this.#request(message, {
      match: (m, entry, isNew) => (m.type === 'game_info' && isNew && m.owner === this.member ? { ok: m } : undefined),
    });
  }

  /** LIST_GAMES; resolves with the matching games' GAME_INFOs, in id order. */
  listGames({ gameType = '', flagsClear = 0, minFree = 0 } = {}) {
    return this.#request({ type: 'list_games', gameType, flagsClear, minFree }, {
      items: [],
      // The listed GAME_INFOs are one write ending in GAME_LIST_END; broadcasts may come first.
      observe: (m, entry) => { if (m.type === 'game_info') entry.items.push(m); },
      match: (m, entry) => (m.type === 'game_list_end'
        ? { ok: entry.items.slice(Math.max(0, entry.items.length - m.count)) } : undefined),
    });
  }

  /**
   * JOIN_REQUEST; resolves with the JOIN_RESPONSE once accepted (by the owner, at once for a
   * hosted game or under `--lobby-auto-approve`), rejects with `JoinRefused` otherwise.
   */
  joinGame(game, password = '') {
    this.#joinSeq = this.#joinSeq >= 0x7fffffff ? 1 : this.#joinSeq + 1;
    const request = this.#joinSeq;
    return this.#request({ type: 'join_request', game, request, password }, {
      pong: true, // errors come before the PONG; the answer may wait for the owner
      match: (m) => {
        if (m.type !== 'join_response' || m.request !== request) return undefined;
        return m.accepted ? { ok: m } : { err: new JoinRefused(m) };
      },
    });
  }

  /** JOIN_ANSWER, as a game's owner, to a JOIN_ASK (`asks` holds those waiting). */
  answerJoin(ask, accept, reason = '') {
    this.asks.delete(ask);
    this.#emit('asks', this.asks);
    return this.#barrier({ type: 'join_answer', ask, accept, reason });
  }

  /** LEAVE_GAME. */
  leaveGame(game) {
    return this.#barrier({ type: 'leave_game', game });
  }

  /** SET_GAME (owner): flags and password. */
  setGame(game, flags, password = '') {
    return this.#barrier({ type: 'set_game', game, flags, password });
  }

  /** SET_READY: this member's ready flag in a game. */
  setReady(game, ready = true) {
    return this.#barrier({ type: 'set_ready', game, ready });
  }

  /** START_GAME (owner). */
  startGame(game) {
    return this.#barrier({ type: 'start_game', game });
  }

  /** KICK (owner): removes a player. */
  kick(game, member, reason = '') {
    return this.#barrier({ type: 'kick', game, member, reason });
  }

  /** GIVE_OWNER (owner): hands the game to another player. */
  giveOwner(game, member) {
    return this.#barrier({ type: 'give_owner', game, member });
  }

  /** STORE_DATA (owner): stores a value (empty deletes the key). */
  storeData(game, key, value) {
    return this.#barrier({ type: 'store_data', game, key, value });
  }

  /** FETCH_DATA (owner): resolves with the value (empty when absent). */
  fetchData(game, key) {
    return this.#request({ type: 'fetch_data', game, key }, {
      match: (m) => (m.type === 'data_value' && m.game === game && m.key === key ? { ok: m.value } : undefined),
    });
  }

  /** TO_OWNER: relays a message to the game's owner. */
  toOwner(game, appCode, body) {
    return this.#barrier({ type: 'to_owner', game, appCode, body });
  }

  /** TO_ALL: relays a message to every player, this one included. */
  toAll(game, appCode, body) {
    return this.#barrier({ type: 'to_all', game, appCode, body });
  }

  /** TO_PLAYER (owner): relays a message to one player. */
  toPlayer(game, member, appCode, body) {
    return this.#barrier({ type: 'to_player', game, member, appCode, body });
  }

  /** PING; resolves with the round trip in milliseconds. */
  ping(payload = new Uint8Array(0)) {
    const started = Date.now();
    return this.#request({ type: 'ping', payload }, { isPing: true, onPong: () => Date.now() - started });
  }

  /** Sends any client message as it is, with no promise; throws `WireError` if it cannot. */
  send(message) {
    const frame = encode(message);
    if (frame.length - HEADER_LEN > this.#maxFrame) {
      throw new WireError('oversized', {
        code: codeOf(message.type),
        declared: frame.length - HEADER_LEN,
        text: `payload of ${frame.length - HEADER_LEN} bytes, over the server's ${this.#maxFrame}`,
      });
    }
    if (this.#closed || this.#socket.readyState !== OPEN) throw new ConnectionClosed(this.#closed ?? {});
    this.#socket.send(frame);
  }

  /** Closes the connection; pending requests reject with `ConnectionClosed`. */
  close() {
    this.#socket.close(1000);
  }

  // A request the protocol answers only on failure, followed by a PING: resolves at its PONG.
  #barrier(message) {
    return this.#request(message, { pong: true, onPong: () => undefined });
  }

  // Sends `message` (and a PING after it when `pong`), tracking its answer. Entries wait in
  // send order: an ERROR answers the oldest one of its request code not yet passed, a PONG the
  // oldest PING, any other frame the first whose `match` claims it.
  #request(message, entry) {
    return new Promise((resolve, reject) => {
      const full = { ...entry, code: codeOf(message.type), resolve, reject, done: false, passed: false };
      full.awaitsPong = Boolean(entry.pong || entry.isPing);
      try {
        this.send(message);
        if (entry.pong) this.send({ type: 'ping', payload: this.#barrierPayload() });
      } catch (error) {
        reject(error);
        return;
      }
      this.#pending.push(full);
    });
  }

  #barrierPayload() {
    this.#pingSeq = (this.#pingSeq + 1) >>> 0;
    return leWord(this.#pingSeq);
  }

  #settle(entry, outcome) {
    if (entry.done) return;
    entry.done = true;
    if ('err' in outcome) entry.reject(outcome.err);
    else entry.resolve(outcome.ok);
  }

  #drop(entry) {
    const at = this.#pending.indexOf(entry);
    if (at >= 0) this.#pending.splice(at, 1);
  }

  #route(m, isNewGame) {
    if (m.type === 'error') {
      if (m.request === 0) return;
      // A PING dropped (rate limit) belongs to the oldest entry still waiting for a PONG.
      const entry = m.request === CODE.PING
        ? this.#pending.find((e) => e.awaitsPong)
        : this.#pending.find((e) => !e.done && !e.passed && e.code === m.request);
      if (!entry) return;
      this.#settle(entry, { err: new LobbyError(m) });
      if (m.request === CODE.PING) entry.awaitsPong = false;
      if (!entry.awaitsPong) this.#drop(entry);
      return;
    }
    if (m.type === 'pong') {
      const entry = this.#pending.find((e) => e.awaitsPong);
      if (!entry) return;
      entry.awaitsPong = false;
      entry.passed = true;
      if (entry.onPong) this.#settle(entry, { ok: entry.onPong(m) });
      if (entry.done) this.#drop(entry);
      return;
    }
    for (const entry of this.#pending) {
      if (!entry.done) entry.observe?.(m, entry);
    }
    for (const entry of this.#pending) {
      const outcome = entry.done ? undefined : entry.match?.(m, entry, isNewGame);
      if (outcome) {
        this.#settle(entry, outcome);
        if (!entry.awaitsPong) this.#drop(entry);
        return;
      }
    }
  }

  // ---- incoming frames ----

  #onMessage(data) {
    let m;
    try {
      if (typeof data === 'string') throw new WireError('wrong_kind', { text: 'a text message, not binary' });
      m = decode(data, { from: 'server', maxFrame: Infinity });
    } catch (error) {
      this.#emit('wire_error', error);
      return;
    }
    const isNewGame = m.type === 'game_info' && !this.games.has(m.id);
    this.#apply(m);
    this.#route(m, isNewGame);
    this.#emit(m.type, m);
    this.#emit('message', m);
    if (m.type === 'member_info' || m.type === 'member_left') this.#emit('members', this.members);
    if (m.type === 'game_info' || m.type === 'game_closed' || m.type === 'welcome') this.#emit('games', this.games);
    if (m.type === 'join_ask' || m.type === 'game_closed' || m.type === 'welcome') this.#emit('asks', this.asks);
  }

  // Keeps the lobby's state from the frames (docs/protocols/general-lobby.md, "Behaviour").
  #apply(m) {
    switch (m.type) {
      case 'hello':
        this.serverName = m.serverName;
        this.version = m.version;
        this.#readyWait.resolve();
        break;
      case 'welcome':
        // A full sync follows: the state is rebuilt from it.
        this.member = m.member;
        this.token = m.token;
        this.signedIn = false;
        this.members.clear();
        this.games.clear();
        this.asks.clear();
        break;
      case 'sync_done':
        this.signedIn = true;
        break;
      case 'error':
        if (m.request === 0) this.#notice = m.text;
        break;
      case 'member_info':
        this.members.set(m.id, m);
        break;
      case 'member_left':
        this.members.delete(m.id);
        break;
      case 'game_info':
        this.games.set(m.id, m);
        break;
      case 'game_closed':
        this.games.delete(m.id);
        for (const [id, ask] of this.asks) if (ask.game === m.id) this.asks.delete(id);
        break;
      case 'join_ask':
        this.asks.set(m.ask, m);
        break;
      default:
        break;
    }
  }

  #onClose(event) {
    if (this.#closed) return;
    this.#closed = { closeCode: event?.code, closeReason: event?.reason, notice: this.#notice };
    clearInterval(this.#keepAlive);
    this.signedIn = false;
    const error = new ConnectionClosed(this.#closed);
    this.#readyWait.reject(error);
    const pending = this.#pending;
    this.#pending = [];
    for (const entry of pending) this.#settle(entry, { err: error });
    this.#emit('close', error);
  }
}

/** True when a member's flags say it is away (its connection dropped, its grace runs). */
export function isAway(member) {
  return (member.flags & MEMBER_AWAY) !== 0;
}

/** True when `member` is a player of `game` whose ready flag is set. */
export function isReady(game, member) {
  const at = game.players.indexOf(member);
  return at >= 0 && (game.playerFlags[at] & PLAYER_READY) !== 0;
}
