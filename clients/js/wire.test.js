// Tests of lobby.js's encoder and decoder (`node --test clients/js/`): the golden frames of
// the Rust wire tests (lobbyd-wire/src/general/tests/client.rs and server.rs, shown in
// docs/protocols/general-lobby.md, "Examples"), every parse error those tests check, truncated
// and oversized input, and seeded random round trips of every message.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  encode, decode, WireError, CLIENT_TYPES, SERVER_TYPES, DEFAULT_MAX_FRAME, codeOf, typeOf,
  errorLabel, LobbyError,
} from './lobby.js';

/** Bytes from hex digits, spaces and newlines ignored (as the Rust tests' `hex`). */
function hex(text) {
  const digits = text.replace(/\s+/g, '');
  assert.equal(digits.length % 2, 0, `odd number of hex digits in ${text}`);
  return Uint8Array.from(digits.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}

const TOKEN = Uint8Array.from({ length: 16 }, (_, i) => i);

// One golden frame per client message, as in lobbyd-wire/src/general/tests/client.rs.
const CLIENT_GOLDENS = [
  ['SIGN_IN "alice", "pw", no resume token',
    '03000000 10000000  03 0500 616c696365  03 0200 7077  04 0000',
    { type: 'sign_in', username: 'alice', password: 'pw', resume: null }],
  ['SIGN_IN "alice", "pw", resume token 00 01 .. 0f',
    '03000000 20000000  03 0500 616c696365  03 0200 7077  04 1000 000102030405060708090a0b0c0d0e0f',
    { type: 'sign_in', username: 'alice', password: 'pw', resume: TOKEN }],
  ['SET_MEMBER flags 3, "Al"',
    '12000000 0c000000  02 0400 03000000  03 0200 416c',
    { type: 'set_member', flags: 3, displayName: 'Al' }],
  ['CHAT game 0, "hi"',
    '20000000 0c000000  01 0400 00000000  03 0200 6869',
    { type: 'chat', game: 0, text: 'hi' }],
  ['PRIVATE_CHAT to 2, "yo"',
    '22000000 0c000000  01 0400 02000000  03 0200 796f',
    { type: 'private_chat', to: 2, text: 'yo' }],
  ['CREATE_GAME max 4, "chess", "1.0", flags 1, "Friday", "pw"',
    `30000000 2a000000  02 0400 04000000  03 0500 6368657373  03 0300 312e30
                        02 0400 01000000  03 0600 467269646179  03 0200 7077`,
    { type: 'create_game', maxPlayers: 4, gameType: 'chess', version: '1.0', flags: 1, name: 'Friday', password: 'pw' }],
  ['JOIN_REQUEST game 1, request 7, "pw"',
    '33000000 13000000  01 0400 01000000  01 0400 07000000  03 0200 7077',
    { type: 'join_request', game: 1, request: 7, password: 'pw' }],
  ['JOIN_ANSWER ask 1, accept, "ok"',
    '35000000 13000000  01 0400 01000000  02 0400 01000000  03 0200 6f6b',
    { type: 'join_answer', ask: 1, accept: true, reason: 'ok' }],
  ['LEAVE_GAME game 1',
    '37000000 07000000  01 0400 01000000',
    { type: 'leave_game', game: 1 }],
  ['SET_GAME game 1, flags 3, "pw"',
    '38000000 13000000  01 0400 01000000  02 0400 03000000  03 0200 7077',
    { type: 'set_game', game: 1, flags: 3, password: 'pw' }],
  ['SET_READY game 1, ready',
    '39000000 0e000000  01 0400 01000000  02 0400 01000000',
    { type: 'set_ready', game: 1, ready: true }],
  ['START_GAME game 1',
    '3a000000 07000000  01 0400 01000000',
    { type: 'start_game', game: 1 }],
  ['KICK game 1, member 2, "afk"',
    '3c000000 14000000  01 0400 01000000  01 0400 02000000  03 0300 61666b',
    { type: 'kick', game: 1, member: 2, reason: 'afk' }],
  ['GIVE_OWNER game 1, member 2',
    '3e000000 0e000000  01 0400 01000000  01 0400 02000000',
    { type: 'give_owner', game: 1, member: 2 }],
  ['STORE_DATA game 1, "map", 01 02',
    '40000000 12000000  01 0400 01000000  03 0300 6d6170  04 0200 0102',
    { type: 'store_data', game: 1, key: 'map', value: Uint8Array.of(1, 2) }],
  ['FETCH_DATA game 1, "map"',
    '41000000 0d000000  01 0400 01000000  03 0300 6d6170',
    { type: 'fetch_data', game: 1, key: 'map' }],
  ['TO_OWNER game 1, app code 9, body aa',
    '43000000 12000000  01 0400 01000000  02 0400 09000000  04 0100 aa',
    { type: 'to_owner', game: 1, appCode: 9, body: Uint8Array.of(0xaa) }],
  ['TO_ALL game 1, app code 9, body aa',
    '44000000 12000000  01 0400 01000000  02 0400 09000000  04 0100 aa',
    { type: 'to_all', game: 1, appCode: 9, body: Uint8Array.of(0xaa) }],
  ['TO_PLAYER game 1, member 2, app code 9, body aa',
    '45000000 19000000  01 0400 01000000  01 0400 02000000  02 0400 09000000  04 0100 aa',
    { type: 'to_player', game: 1, member: 2, appCode: 9, body: Uint8Array.of(0xaa) }],
  ['LIST_GAMES "chess", flags clear 3, min free 1',
    '50000000 16000000  03 0500 6368657373  02 0400 03000000  02 0400 01000000',
    { type: 'list_games', gameType: 'chess', flagsClear: 3, minFree: 1 }],
  ['PING 01 02 03 04',
    '60000000 07000000  04 0400 01020304',
    { type: 'ping', payload: Uint8Array.of(1, 2, 3, 4) }],
];

// One golden frame per server message, as in lobbyd-wire/src/general/tests/server.rs.
const SERVER_GOLDENS = [
  ['HELLO "lobbyd", version 1',
    '01000000 10000000  03 0600 6c6f62627964  02 0400 01000000',
    { type: 'hello', serverName: 'lobbyd', version: 1 }],
  ['CHALLENGE "sign in", failed 0',
    '02000000 11000000  03 0700 7369676e20696e  02 0400 00000000',
    { type: 'challenge', text: 'sign in', failed: false }],
  ['WELCOME member 1, token 00 01 .. 0f',
    '04000000 1a000000  01 0400 01000000  04 1000 000102030405060708090a0b0c0d0e0f',
    { type: 'welcome', member: 1, token: TOKEN }],
  ['ERROR 6 (full) answering JOIN_REQUEST (0x33), "full"',
    '05000000 15000000  02 0400 06000000  02 0400 33000000  03 0400 66756c6c',
    { type: 'error', code: 6, request: 0x33, text: 'full' }],
  ['SYNC_DONE',
    '06000000 00000000',
    { type: 'sync_done' }],
  ['MEMBER_INFO id 1, flags 0x10000 (away), "alice", "Al"',
    '10000000 1b000000  01 0400 01000000  02 0400 00000100  03 0500 616c696365  03 0200 416c',
    { type: 'member_info', id: 1, flags: 0x10000, username: 'alice', displayName: 'Al' }],
  ['MEMBER_LEFT id 1',
    '11000000 07000000  01 0400 01000000',
    { type: 'member_left', id: 1 }],
  ['CHAT_FROM game 0, member 1, "hi"',
    '21000000 13000000  01 0400 00000000  01 0400 01000000  03 0200 6869',
    { type: 'chat_from', game: 0, member: 1, text: 'hi' }],
  ['PRIVATE_FROM from 1, "yo"',
    '23000000 0c000000  01 0400 01000000  03 0200 796f',
    { type: 'private_from', from: 1, text: 'yo' }],
  ['GAME_INFO id 1, owner 2, max 4, "Friday", "chess", "1.0", flags 5, players [2, 3], flags [1, 0]',
    `31000000 49000000  01 0400 01000000  01 0400 02000000  02 0400 04000000  03 0600 467269646179
                        03 0500 6368657373  03 0300 312e30  02 0400 05000000
                        04 0800 02000000 03000000  04 0800 01000000 00000000`,
    { type: 'game_info', id: 1, owner: 2, maxPlayers: 4, name: 'Friday', gameType: 'chess', version: '1.0',
      flags: 5, players: [2, 3], playerFlags: [1, 0] }],
  ['GAME_CLOSED id 1',
    '32000000 07000000  01 0400 01000000',
    { type: 'game_closed', id: 1 }],
  ['JOIN_ASK game 1, member 3, ask 5',
    '34000000 15000000  01 0400 01000000  01 0400 03000000  01 0400 05000000',
    { type: 'join_ask', game: 1, member: 3, ask: 5 }],
  ['JOIN_RESPONSE game 1, request 7, refused, "full"',
    '36000000 1c000000  01 0400 01000000  01 0400 07000000  02 0400 00000000  03 0400 66756c6c',
    { type: 'join_response', game: 1, request: 7, accepted: false, reason: 'full' }],
  ['GAME_STARTED game 1, flags 5',
    '3b000000 0e000000  01 0400 01000000  02 0400 05000000',
    { type: 'game_started', game: 1, flags: 5 }],
  ['KICKED game 1, "afk"',
    '3d000000 0d000000  01 0400 01000000  03 0300 61666b',
    { type: 'kicked', game: 1, reason: 'afk' }],
  ['DATA_VALUE game 1, "map", 01 02',
    '42000000 12000000  01 0400 01000000  03 0300 6d6170  04 0200 0102',
    { type: 'data_value', game: 1, key: 'map', value: Uint8Array.of(1, 2) }],
  ['GAME_MESSAGE game 1, from 2, app code 9, body aa',
    '46000000 19000000  01 0400 01000000  01 0400 02000000  02 0400 09000000  04 0100 aa',
    { type: 'game_message', game: 1, from: 2, appCode: 9, body: Uint8Array.of(0xaa) }],
  ['GAME_LIST_END 2',
    '51000000 07000000  02 0400 02000000',
    { type: 'game_list_end', count: 2 }],
  ['PONG 01 02 03 04',
    '61000000 07000000  04 0400 01020304',
    { type: 'pong', payload: Uint8Array.of(1, 2, 3, 4) }],
];

const GOLDENS = [
  ...CLIENT_GOLDENS.map((g) => [...g, 'client']),
  ...SERVER_GOLDENS.map((g) => [...g, 'server']),
];

test('every message type has a golden, in code order', () => {
  const types = (goldens) => [...new Set(goldens.map(([, , m]) => m.type))];
  assert.deepEqual(types(CLIENT_GOLDENS), CLIENT_TYPES);
  assert.deepEqual(types(SERVER_GOLDENS), SERVER_TYPES);
  assert.equal(CLIENT_TYPES.length, 20);
  assert.equal(SERVER_TYPES.length, 19);
});

test('construct: each message encodes to its golden bytes', () => {
  for (const [name, bytes, message] of GOLDENS) {
    assert.deepEqual(encode(message), hex(bytes), name);
  }
});

test('deconstruct: each golden decodes to its message', () => {
  for (const [name, bytes, message, from] of GOLDENS) {
    const frame = hex(bytes);
    assert.equal(codeOf(message.type), new DataView(frame.buffer).getUint32(0, true), name);
    assert.equal(typeOf(codeOf(message.type)), message.type, name);
    assert.deepEqual(decode(frame, { from }), message, name);
    assert.deepEqual(decode(frame), message, name);
    // From an ArrayBuffer and from a view into a larger buffer too.
    assert.deepEqual(decode(frame.slice().buffer, { from }), message, name);
    const padded = new Uint8Array(frame.length + 6);
    padded.set(frame, 3);
    assert.deepEqual(decode(padded.subarray(3, 3 + frame.length), { from }), message, name);
  }
});

/** The reason of the WireError `fn` throws. */
function reason(fn) {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof WireError, `${error} is a WireError`);
    return error.reason;
  }
  return 'no error';
}

test('every client parse error of the Rust tests, with the same bytes', () => {
  const parse = (text) => reason(() => decode(hex(text), { from: 'client' }));
  assert.equal(parse('37000000 07000000 01'), 'truncated');
  assert.equal(parse('99000000 00000000'), 'unknown_code');
  assert.equal(parse('06000000 00000000'), 'wrong_direction');
  assert.equal(parse('37000000 00000000'), 'missing_param');
  assert.equal(parse('37000000 0a000000 01 0400 01000000 04 0000'), 'extra_param');
  assert.equal(parse('37000000 07000000 02 0400 01000000'), 'wrong_kind');
  assert.equal(parse('37000000 06000000 01 0300 010000'), 'bad_size');
  assert.equal(parse('37000000 03000000 01 0400'), 'param_truncated');
  assert.equal(parse('20000000 08000000 01 0400 00000000 03'), 'param_truncated');
  assert.equal(parse('20000000 0b000000 01 0400 00000000 03 0100 c3'), 'not_utf8');
  assert.equal(parse('39000000 0e000000 01 0400 01000000 02 0400 02000000'), 'bad_value');
  // A resume token of 5 bytes; a PING over 64 bytes, and one of exactly 64.
  assert.equal(parse('03000000 0e000000 03 0000 03 0000 04 0500 0102030405'), 'bad_size');
  assert.equal(parse(`60000000 44000000 04 4100 ${'00'.repeat(65)}`), 'bad_size');
  assert.equal(decode(hex(`60000000 43000000 04 4000 ${'00'.repeat(64)}`)).payload.length, 64);
});

test('every server parse error of the Rust tests, with the same bytes', () => {
  const parse = (text) => reason(() => decode(hex(text), { from: 'server' }));
  assert.equal(parse('06000000 01000000'), 'truncated');
  assert.equal(parse('07000000 00000000'), 'unknown_code');
  assert.equal(parse('60000000 03000000 04 0000'), 'wrong_direction');
  assert.equal(parse('11000000 00000000'), 'missing_param');
  assert.equal(parse('06000000 03000000 04 0000'), 'extra_param');
  assert.equal(parse('11000000 07000000 02 0400 01000000'), 'wrong_kind');
  // A WELCOME token of 15 bytes.
  assert.equal(parse('04000000 19000000 01 0400 01000000 04 0f00 000102030405060708090a0b0c0d0e'), 'bad_size');
  // GAME_INFO: a player list of 5 bytes, and two players with one flag.
  const gameInfo = (players, flags) => {
    const body = hex(`01 0400 01000000  01 0400 02000000  02 0400 04000000  03 0000  03 0000  03 0000
                      02 0400 00000000 ${players} ${flags}`);
    const frame = new Uint8Array(8 + body.length);
    new DataView(frame.buffer).setUint32(0, 0x31, true);
    new DataView(frame.buffer).setUint32(4, body.length, true);
    frame.set(body, 8);
    return reason(() => decode(frame, { from: 'server' }));
  };
  assert.equal(gameInfo('04 0500 0200000003', '04 0000'), 'bad_size');
  assert.equal(gameInfo('04 0800 02000000 03000000', '04 0400 01000000'), 'bad_value');
  assert.equal(gameInfo('04 0400 02000000', '04 0400 01000000'), 'no error');
  assert.equal(parse('02000000 0a000000 03 0000 02 0400 02000000'), 'bad_value');
  assert.equal(parse('05000000 12000000 02 0400 01000000 02 0400 03000000 03 0100 ff'), 'not_utf8');
  assert.equal(parse(`61000000 44000000 04 4100 ${'00'.repeat(65)}`), 'bad_size');
});

test('an unknown ERROR code passes through, labelled other', () => {
  const error = decode(hex('05000000 11000000 02 0400 63000000 02 0400 00000000 03 0000'), { from: 'server' });
  assert.deepEqual(error, { type: 'error', code: 99, request: 0, text: '' });
  assert.equal(errorLabel(99), 'other');
  assert.equal(errorLabel(6), 'full');
  const typed = new LobbyError({ code: 6, request: 0x33, text: 'game full' });
  assert.equal(typed.label, 'full');
  assert.equal(typed.requestType, 'join_request');
});

test('truncated input: every cut of every golden is a typed error', () => {
  for (const [name, bytes] of GOLDENS) {
    const frame = hex(bytes);
    for (let cut = 0; cut < frame.length; cut += 1) {
      assert.equal(reason(() => decode(frame.subarray(0, cut))), 'truncated', `${name} cut at ${cut}`);
    }
    // One byte more is not one frame either.
    const longer = new Uint8Array(frame.length + 1);
    longer.set(frame);
    assert.equal(reason(() => decode(longer)), 'trailing_bytes', name);
  }
});

test('oversized input: decided from the 8 header bytes alone, with its code and length', () => {
  // 16 385 declared bytes, one past the default limit, as the Rust reader's test.
  const header = hex('20000000 01400000');
  let caught;
  try {
    decode(header);
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof WireError);
  assert.equal(caught.reason, 'oversized');
  assert.equal(caught.code, 0x20);
  assert.equal(caught.declared, 16385);
  assert.equal(reason(() => decode(hex('ffffffff ffffffff 00'))), 'oversized');
  // Exactly at the limit is only truncated; a smaller limit is the caller's.
  assert.equal(reason(() => decode(hex('20000000 00400000'))), 'truncated');
  assert.equal(reason(() => decode(hex('37000000 07000000 01 0400 01000000'), { maxFrame: 6 })), 'oversized');
  assert.equal(DEFAULT_MAX_FRAME, 16384);
});

test('encoding refuses what the wire cannot carry, with typed errors', () => {
  const encodes = (message) => reason(() => encode(message));
  assert.equal(encodes({ type: 'leave_game', game: 2 ** 31 }), 'bad_value');
  assert.equal(encodes({ type: 'leave_game', game: 1.5 }), 'bad_value');
  assert.equal(encodes({ type: 'leave_game' }), 'bad_value');
  assert.equal(encodes({ type: 'set_member', flags: -1, displayName: 'x' }), 'bad_value');
  assert.equal(encodes({ type: 'set_ready', game: 1, ready: 2 }), 'bad_value');
  assert.equal(encodes({ type: 'chat', game: 0, text: 'x'.repeat(65536) }), 'bad_size');
  assert.equal(encodes({ type: 'chat', game: 0, text: 7 }), 'bad_value');
  assert.equal(encodes({ type: 'sign_in', username: 'a', password: '', resume: new Uint8Array(5) }), 'bad_size');
  assert.equal(encodes({ type: 'welcome', member: 1, token: new Uint8Array(15) }), 'bad_size');
  assert.equal(encodes({ type: 'ping', payload: new Uint8Array(65) }), 'bad_size');
  assert.equal(encodes({ type: 'ping', payload: 'abc' }), 'bad_value');
  assert.equal(encodes({ type: 'game_info', id: 1, owner: 1, maxPlayers: 2, name: '', gameType: '', version: '',
    flags: 0, players: [1, 2], playerFlags: [1] }), 'bad_value');
  assert.equal(encodes({ type: 'chat', game: 0, text: 'x'.repeat(65535) }), 'no error');
  assert.throws(() => encode({ type: 'nonsense' }), TypeError);
  // Bytes as a plain array of byte values, and a token as an ArrayBuffer.
  assert.deepEqual(encode({ type: 'ping', payload: [1, 2, 3, 4] }), hex('60000000 07000000 04 0400 01020304'));
  assert.deepEqual(
    encode({ type: 'sign_in', username: 'alice', password: 'pw', resume: TOKEN.slice().buffer }),
    hex('03000000 20000000 03 0500 616c696365 03 0200 7077 04 1000 000102030405060708090a0b0c0d0e0f'),
  );
});

test('text keeps a leading byte-order mark and any Unicode', () => {
  for (const text of ['\uFEFFhi', 'héllo wörld', '日本語', '🎲🎲', '']) {
    assert.equal(decode(encode({ type: 'chat', game: 0, text })).text, text);
  }
});

// ---- seeded random round trips (the Rust tests' quickcheck, without a framework) ----

/** xorshift32: the same values on every run. */
function random(seed) {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state;
  };
}

function arbitrary(next, shape) {
  const bytes = (max) => Uint8Array.from({ length: next() % (max + 1) }, () => next() & 0xff);
  switch (shape) {
    case 'i32': return next() | 0;
    case 'u32': return next();
    case 'flag': return (next() & 1) === 1;
    case 'str': return String.fromCodePoint(...Array.from({ length: next() % 12 }, () => {
      const pick = next() % 4;
      if (pick === 0) return 0x20 + (next() % 0x5f);
      if (pick === 1) return 0xa0 + (next() % 0x700);
      if (pick === 2) return 0x3040 + (next() % 0x100);
      return 0x1f300 + (next() % 0x100);
    }));
    case 'bytes': return bytes(40);
    case 'ping': return bytes(64);
    case 'token': return Uint8Array.from({ length: 16 }, () => next() & 0xff);
    case 'resume': return next() & 1 ? null : Uint8Array.from({ length: 16 }, () => next() & 0xff);
    default: throw new Error(shape);
  }
}

// The shape of each field, read off the goldens' values and names.
function shapeOf(type, field, value) {
  if (field === 'resume') return 'resume';
  if (field === 'token') return 'token';
  if (type === 'ping' || type === 'pong') return 'ping';
  if (value instanceof Uint8Array) return 'bytes';
  if (typeof value === 'boolean') return 'flag';
  if (typeof value === 'string') return 'str';
  const unsigned = ['flags', 'version', 'maxPlayers', 'code', 'request', 'appCode', 'count', 'flagsClear', 'minFree'];
  if (unsigned.includes(field) && !(type === 'join_request' || type === 'join_response')) return 'u32';
  return 'i32';
}

test('random messages of every type round-trip, and decode back from their own bytes', () => {
  const next = random(0x5eed);
  const templates = new Map(GOLDENS.map(([, , m, from]) => [m.type, [m, from]]));
  for (let round = 0; round < 200; round += 1) {
    for (const [type, [template, from]] of templates) {
      const message = { type };
      for (const [field, value] of Object.entries(template)) {
        if (field === 'type') continue;
        if (field === 'players') {
          const count = next() % 6;
          message.players = Array.from({ length: count }, () => next() | 0);
          message.playerFlags = Array.from({ length: count }, () => next());
        } else if (field !== 'playerFlags') {
          message[field] = arbitrary(next, shapeOf(type, field, value));
        }
      }
      const bytes = encode(message);
      assert.deepEqual(decode(bytes, { from, maxFrame: bytes.length }), message, type);
    }
  }
});

test('arbitrary bytes give a message or a WireError, never anything else', () => {
  const next = random(42);
  const codes = [...CLIENT_TYPES, ...SERVER_TYPES].map(codeOf);
  for (let round = 0; round < 5000; round += 1) {
    const length = next() % 48;
    const bytes = Uint8Array.from({ length }, () => next() & 0xff);
    if (length >= 8 && next() % 4 !== 0) {
      // Mostly a known code and a length that fits, so the bytes reach the parameter parser.
      const view = new DataView(bytes.buffer);
      view.setUint32(0, codes[next() % codes.length], true);
      view.setUint32(4, length - 8, true);
    }
    for (const from of ['client', 'server', undefined]) {
      try {
        decode(bytes, { from });
      } catch (error) {
        assert.ok(error instanceof WireError, `${error} for ${Buffer.from(bytes).toString('hex')}`);
      }
    }
  }
});
