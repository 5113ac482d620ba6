// Tests of lobby.js's LobbyClient (`node --test clients/js/`) against a scripted WebSocket:
// the frames it sends, the state it keeps, the promise each request gets and the typed errors,
// with the server's frames in the orders docs/protocols/general-lobby.md prescribes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  LobbyClient, encode, decode, LobbyError, SignInRefused, JoinRefused, ConnectionClosed, WireError,
  isAway, isReady, MEMBER_AWAY,
} from './lobby.js';

/** A WebSocket stand-in: records what the client sends (decoded), plays the server's frames. */
class ScriptedSocket {
  constructor(url) {
    this.url = url;
    this.readyState = 1;
    this.binaryType = 'blob';
    this.sent = [];
    this.listeners = new Map();
  }

  addEventListener(type, listener) {
    if (!this.listeners.has(type)) this.listeners.set(type, []);
    this.listeners.get(type).push(listener);
  }

  fire(type, event) {
    for (const listener of this.listeners.get(type) ?? []) listener(event);
  }

  send(bytes) {
    assert.ok(bytes instanceof Uint8Array);
    this.sent.push(decode(bytes, { from: 'client' }));
  }

  close(code = 1005, reason = '') {
    this.readyState = 3;
    this.fire('close', { code, reason });
  }

  /** Delivers server messages, one WebSocket message each, as ArrayBuffers. */
  serve(...messages) {
    for (const message of messages) this.fire('message', { data: encode(message).slice().buffer });
  }

  /** The messages sent since the last call. */
  take() {
    const sent = this.sent;
    this.sent = [];
    return sent;
  }
}

const TOKEN = Uint8Array.from({ length: 16 }, (_, i) => i);
const TOKEN2 = Uint8Array.from({ length: 16 }, (_, i) => 100 + i);
const game = (id, owner, players, extra = {}) => ({
  type: 'game_info', id, owner, maxPlayers: 4, name: `game ${id}`, gameType: 'chess', version: '1',
  flags: 0, players, playerFlags: players.map(() => 1), ...extra,
});
const member = (id, username, flags = 0) => ({ type: 'member_info', id, flags, username, displayName: username });
const pong = (ping) => ({ type: 'pong', payload: ping.payload });
const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A client signed in as member 1 ("alice"), with bob (2) and bob's game 1 in the lobby. */
async function signedIn() {
  const socket = new ScriptedSocket('ws://test/lobby');
  const client = new LobbyClient(socket, { keepAlive: 0 });
  socket.serve({ type: 'hello', serverName: 'lobbyd', version: 1 }, { type: 'challenge', text: 'sign in', failed: false });
  await client.ready;
  const signing = client.signIn('alice', 'pw');
  socket.serve(
    { type: 'welcome', member: 1, token: TOKEN },
    member(1, 'alice'),
    member(2, 'bob'),
    game(1, 2, [2]),
    { type: 'sync_done' },
  );
  assert.deepEqual(await signing, { member: 1, token: TOKEN });
  assert.deepEqual(socket.take(), [{ type: 'sign_in', username: 'alice', password: 'pw', resume: null }]);
  return { socket, client };
}

/** A WebSocket constructor over ScriptedSocket, and the sockets it made. */
function socketConstructor() {
  const opened = [];
  const Socket = class extends ScriptedSocket {
    constructor(url) {
      super(url);
      opened.push(this);
    }
  };
  return { Socket, opened };
}

test('connect resolves at HELLO, through a passed-in WebSocket constructor', async () => {
  const { Socket, opened } = socketConstructor();
  const connecting = LobbyClient.connect('ws://127.0.0.1:4244/lobby', { WebSocket: Socket, keepAlive: 0 });
  const [socket] = opened;
  assert.equal(socket.url, 'ws://127.0.0.1:4244/lobby');
  assert.equal(socket.binaryType, 'arraybuffer');
  socket.serve({ type: 'hello', serverName: 'lobbyd', version: 1 });
  const client = await connecting;
  assert.equal(client.serverName, 'lobbyd');
  assert.equal(client.version, 1);
  await assert.rejects(LobbyClient.connect('ws://x/lobby', { WebSocket: null }), TypeError);
});

test('connect rejects with ConnectionClosed when the socket closes before HELLO', async () => {
  const { Socket, opened } = socketConstructor();
  const connecting = LobbyClient.connect('ws://x/lobby', { WebSocket: Socket, keepAlive: 0 });
  const [socket] = opened;
  socket.close(1006);
  const error = await connecting.catch((e) => e);
  assert.ok(error instanceof ConnectionClosed);
  assert.equal(error.closeCode, 1006);
});

test('sign-in: the sync fills members and games; events name each message', async () => {
  const { client, socket } = await signedIn();
  assert.equal(client.member, 1);
  assert.equal(client.signedIn, true);
  assert.deepEqual([...client.members.keys()], [1, 2]);
  assert.deepEqual([...client.games.keys()], [1]);
  const seen = [];
  client.on('message', (m) => seen.push(m.type));
  let membersEvents = 0;
  const off = client.on('members', () => { membersEvents += 1; });
  socket.serve(member(2, 'bob', MEMBER_AWAY), member(3, 'carol'), { type: 'member_left', id: 3 });
  off();
  socket.serve(member(4, 'dave'));
  assert.deepEqual(seen, ['member_info', 'member_info', 'member_left', 'member_info']);
  assert.equal(membersEvents, 3);
  assert.ok(isAway(client.members.get(2)));
  assert.deepEqual([...client.members.keys()], [1, 2, 4]);
  socket.serve({ type: 'game_closed', id: 1 });
  assert.equal(client.games.size, 0);
});

test('sign-in refused: CHALLENGE(1) rejects with SignInRefused and its text', async () => {
  const socket = new ScriptedSocket('ws://test/lobby');
  const client = new LobbyClient(socket, { keepAlive: 0 });
  socket.serve({ type: 'hello', serverName: 'lobbyd', version: 1 });
  const signing = client.signIn('bob', '');
  socket.serve({ type: 'challenge', text: 'name taken', failed: true });
  const error = await signing.catch((e) => e);
  assert.ok(error instanceof SignInRefused);
  assert.equal(error.text, 'name taken');
  assert.equal(client.signedIn, false);
});

test('resume sends the last token and takes the new one', async () => {
  const { client, socket } = await signedIn();
  const resuming = client.resume();
  assert.deepEqual(socket.take(), [{ type: 'sign_in', username: 'alice', password: '', resume: TOKEN }]);
  socket.serve({ type: 'welcome', member: 1, token: TOKEN2 }, member(1, 'alice'), { type: 'sync_done' });
  assert.deepEqual(await resuming, { member: 1, token: TOKEN2 });
  assert.deepEqual(client.token, TOKEN2);
  // The resync replaced the state: bob and his game are not in this sync.
  assert.deepEqual([...client.members.keys()], [1]);
  assert.equal(client.games.size, 0);
});

test('chat resolves at its own echo; an ERROR answering CHAT rejects with the code and text', async () => {
  const { client, socket } = await signedIn();
  const first = client.chat('hi');
  const second = client.chat('again');
  assert.deepEqual(socket.take(), [
    { type: 'chat', game: 0, text: 'hi' },
    { type: 'chat', game: 0, text: 'again' },
  ]);
  let firstDone = false;
  first.then(() => { firstDone = true; });
  socket.serve({ type: 'chat_from', game: 0, member: 2, text: 'hi' }); // bob's line, not the echo
  await tick();
  assert.equal(firstDone, false);
  socket.serve({ type: 'chat_from', game: 0, member: 1, text: 'hi' });
  assert.deepEqual(await first, { type: 'chat_from', game: 0, member: 1, text: 'hi' });
  socket.serve({ type: 'error', code: 10, request: 0x20, text: 'chat rate limit' });
  const error = await second.catch((e) => e);
  assert.ok(error instanceof LobbyError);
  assert.equal(error.code, 10);
  assert.equal(error.label, 'rate_limited');
  assert.equal(error.requestType, 'chat');
  assert.equal(error.text, 'chat rate limit');
  // Game chat and private chat.
  const inGame = client.chat('gg', 1);
  socket.serve({ type: 'chat_from', game: 1, member: 1, text: 'gg' });
  assert.equal((await inGame).game, 1);
  const privately = client.privateChat(2, 'psst');
  const [sent, ping] = socket.take().slice(-2);
  assert.deepEqual(sent, { type: 'private_chat', to: 2, text: 'psst' });
  socket.serve(pong(ping));
  assert.equal(await privately, undefined);
});

test('requests answered only on failure resolve at the PONG that follows them, in order', async () => {
  const { client, socket } = await signedIn();
  const ready = client.setReady(1, false);
  const start = client.startGame(1);
  const sent = socket.take();
  assert.deepEqual(sent.map((m) => m.type), ['set_ready', 'ping', 'start_game', 'ping']);
  assert.deepEqual(sent[0], { type: 'set_ready', game: 1, ready: false });
  assert.notDeepEqual(sent[1].payload, sent[3].payload);
  // SET_READY passes (its PONG), START_GAME is refused before its PONG.
  socket.serve(pong(sent[1]), { type: 'error', code: 4, request: 0x3a, text: 'not the owner' }, pong(sent[3]));
  assert.equal(await ready, undefined);
  const error = await start.catch((e) => e);
  assert.ok(error instanceof LobbyError);
  assert.equal(error.label, 'not_owner');
  // The refused request's PONG was taken by it: the next request gets the next PONG.
  const leave = client.leaveGame(1);
  const [, ping] = socket.take();
  socket.serve(pong(ping));
  assert.equal(await leave, undefined);
  // A dropped barrier PING (frame rate) rejects its request.
  const kick = client.kick(1, 2, 'afk');
  assert.deepEqual(socket.take()[0], { type: 'kick', game: 1, member: 2, reason: 'afk' });
  socket.serve({ type: 'error', code: 10, request: 0x60, text: 'too many frames' });
  assert.equal((await kick.catch((e) => e)).label, 'rate_limited');
  // Every other barrier request sends its message.
  const calls = [
    [() => client.giveOwner(1, 2), { type: 'give_owner', game: 1, member: 2 }],
    [() => client.setGame(1, 3, 'pw'), { type: 'set_game', game: 1, flags: 3, password: 'pw' }],
    [() => client.setMember('Al', 3), { type: 'set_member', flags: 3, displayName: 'Al' }],
    [() => client.storeData(1, 'map', [1, 2]), { type: 'store_data', game: 1, key: 'map', value: Uint8Array.of(1, 2) }],
    [() => client.toOwner(1, 9, [0xaa]), { type: 'to_owner', game: 1, appCode: 9, body: Uint8Array.of(0xaa) }],
    [() => client.toAll(1, 9, [0xaa]), { type: 'to_all', game: 1, appCode: 9, body: Uint8Array.of(0xaa) }],
    [() => client.toPlayer(1, 2, 9, [0xaa]), { type: 'to_player', game: 1, member: 2, appCode: 9, body: Uint8Array.of(0xaa) }],
  ];
  for (const [call, expected] of calls) {
    const done = call();
    const [message, barrier] = socket.take();
    assert.deepEqual(message, expected);
    socket.serve(pong(barrier));
    assert.equal(await done, undefined);
  }
});

test('createGame resolves with the new game this member owns, not another one', async () => {
  const { client, socket } = await signedIn();
  const creating = client.createGame({ name: 'Friday', maxPlayers: 4, gameType: 'chess', version: '1.0' });
  assert.deepEqual(socket.take(), [{
    type: 'create_game', maxPlayers: 4, gameType: 'chess', version: '1.0', flags: 0, name: 'Friday', password: '',
  }]);
  socket.serve(game(1, 1, [2, 1])); // a known game handed to alice
  socket.serve(game(2, 2, [2])); // bob's new game
  socket.serve(game(3, 1, [1], { name: 'Friday' }));
  const created = await creating;
  assert.equal(created.id, 3);
  assert.deepEqual([...client.games.keys()], [1, 2, 3]);
  assert.ok(isReady(created, 1));
  assert.ok(!isReady(created, 2));
  const refused = client.createGame({ name: 'x' });
  socket.serve({ type: 'error', code: 15, request: 0x30, text: 'too many games' });
  assert.equal((await refused.catch((e) => e)).label, 'limit_reached');
});

test('joinGame: the request code ties the JOIN_RESPONSE; accepted resolves, refused rejects', async () => {
  const { client, socket } = await signedIn();
  const joining = client.joinGame(1, 'pw');
  const other = client.joinGame(7);
  const sent = socket.take();
  assert.deepEqual(sent.map((m) => m.type), ['join_request', 'ping', 'join_request', 'ping']);
  assert.deepEqual(sent[0], { type: 'join_request', game: 1, request: 1, password: 'pw' });
  assert.equal(sent[2].request, 2);
  socket.serve(pong(sent[1]), pong(sent[3]));
  // An ERROR answering JOIN_REQUEST now is not theirs: both passed their PONG.
  socket.serve({ type: 'error', code: 10, request: 0x33, text: 'too many frames' });
  socket.serve({ type: 'join_response', game: 7, request: 2, accepted: false, reason: 'unknown game' });
  const refused = await other.catch((e) => e);
  assert.ok(refused instanceof JoinRefused);
  assert.equal(refused.reason, 'unknown game');
  assert.equal(refused.game, 7);
  socket.serve({ type: 'join_response', game: 1, request: 1, accepted: true, reason: '' }, game(1, 2, [2, 1]));
  assert.equal((await joining).accepted, true);
  assert.deepEqual(client.games.get(1).players, [2, 1]);
});

test('the owner hears JOIN_ASK, keeps it in asks, and answers it', async () => {
  const { client, socket } = await signedIn();
  const heard = client.once('join_ask');
  socket.serve({ type: 'join_ask', game: 1, member: 2, ask: 5 });
  assert.deepEqual(await heard, { type: 'join_ask', game: 1, member: 2, ask: 5 });
  assert.deepEqual([...client.asks.keys()], [5]);
  const answering = client.answerJoin(5, false, 'not now');
  const [answer, ping] = socket.take();
  assert.deepEqual(answer, { type: 'join_answer', ask: 5, accept: false, reason: 'not now' });
  assert.equal(client.asks.size, 0);
  socket.serve({ type: 'error', code: 13, request: 0x35, text: 'unknown ask' }, pong(ping));
  assert.equal((await answering.catch((e) => e)).label, 'unknown_id');
  // A closed game takes its asks with it.
  socket.serve({ type: 'join_ask', game: 1, member: 2, ask: 6 }, { type: 'game_closed', id: 1 });
  assert.equal(client.asks.size, 0);
});

test('listGames takes the GAME_INFOs right before GAME_LIST_END, not a broadcast before them', async () => {
  const { client, socket } = await signedIn();
  const listing = client.listGames({ gameType: 'chess', flagsClear: 7, minFree: 1 });
  assert.deepEqual(socket.take(), [{ type: 'list_games', gameType: 'chess', flagsClear: 7, minFree: 1 }]);
  socket.serve(game(5, 2, [2]), game(1, 2, [2]), game(5, 2, [2]), { type: 'game_list_end', count: 2 });
  assert.deepEqual((await listing).map((g) => g.id), [1, 5]);
  const empty = client.listGames();
  socket.serve(game(6, 2, [2]), { type: 'game_list_end', count: 0 });
  assert.deepEqual(await empty, []);
});

test('fetchData, ping and the relayed messages', async () => {
  const { client, socket } = await signedIn();
  const fetching = client.fetchData(1, 'map');
  socket.serve({ type: 'data_value', game: 1, key: 'other', value: Uint8Array.of(9) });
  socket.serve({ type: 'data_value', game: 1, key: 'map', value: Uint8Array.of(1, 2) });
  assert.deepEqual(await fetching, Uint8Array.of(1, 2));
  const pinging = client.ping([7]);
  const sent = socket.take();
  assert.deepEqual(sent[1], { type: 'ping', payload: Uint8Array.of(7) });
  socket.serve(pong(sent[1]));
  assert.equal(typeof (await pinging), 'number');
  const relayed = client.once('game_message');
  socket.serve({ type: 'game_message', game: 1, from: 0, appCode: 2, body: Uint8Array.of(1) });
  assert.equal((await relayed).from, 0);
});

test('a close rejects every pending request with ConnectionClosed and the last notice', async () => {
  const { client, socket } = await signedIn();
  const chat = client.chat('hi');
  const join = client.joinGame(1);
  const closed = client.once('close');
  socket.serve({ type: 'error', code: 0, request: 0, text: 'server shutting down' });
  socket.close(1001, 'going away');
  for (const pending of [chat, join]) {
    const error = await pending.catch((e) => e);
    assert.ok(error instanceof ConnectionClosed);
    assert.equal(error.notice, 'server shutting down');
    assert.equal(error.closeCode, 1001);
  }
  assert.ok((await closed) instanceof ConnectionClosed);
  assert.equal(client.signedIn, false);
  await assert.rejects(client.chat('late'), ConnectionClosed);
});

test('a frame that does not decode is reported and skipped; the client carries on', async () => {
  const { client, socket } = await signedIn();
  const errors = [];
  client.on('wire_error', (e) => errors.push(e.reason));
  socket.fire('message', { data: Uint8Array.of(0x11, 0, 0, 0, 1, 0, 0, 0).buffer });
  socket.fire('message', { data: Uint8Array.of(0x60, 0, 0, 0, 0, 0, 0, 0).buffer });
  socket.fire('message', { data: 'text' });
  assert.deepEqual(errors, ['truncated', 'wrong_direction', 'wrong_kind']);
  socket.serve({ type: 'member_left', id: 2 });
  assert.deepEqual([...client.members.keys()], [1]);
});

test('a request too large for the server, or unencodable, rejects with a WireError and sends nothing', async () => {
  const { client, socket } = await signedIn();
  const error = await client.chat('x'.repeat(20000)).catch((e) => e);
  assert.ok(error instanceof WireError);
  assert.equal(error.reason, 'oversized');
  assert.equal(error.code, 0x20);
  assert.equal((await client.leaveGame(2 ** 40).catch((e) => e)).reason, 'bad_value');
  assert.deepEqual(socket.take(), []);
});

test('a listener that throws does not stop the others or the state', async () => {
  const { client, socket } = await signedIn();
  const reported = [];
  globalThis.reportError = (error) => reported.push(error.message);
  try {
    client.on('member_left', () => { throw new Error('listener bug'); });
    const later = client.once('member_left');
    socket.serve({ type: 'member_left', id: 2 });
    assert.equal((await later).id, 2);
  } finally {
    delete globalThis.reportError;
  }
  assert.deepEqual(reported, ['listener bug']);
  assert.equal(client.members.has(2), false);
});
