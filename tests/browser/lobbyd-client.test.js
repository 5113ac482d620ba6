// lobby.js in Node against a real lobbyd over its WebSocket port: every request of the client
// answered by the server itself (chat of each kind, members, games, join refused then approved,
// relay, game data, ready, owner hand-over, kick, start, ping, resume, a refused sign-in, the
// shutdown notice), with the server's own ERROR codes as typed errors.
//
// Needs a global WebSocket: Node 22+, or Node 20 with --experimental-websocket (as
// `make test-browser` runs it). Starts its own lobbyd (lobbyd.js); every wait is bounded.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLobbyd } from './lobbyd.js';
import {
  LobbyClient, LobbyError, SignInRefused, JoinRefused, ConnectionClosed, isReady, GAME_IN_PROGRESS,
} from '../../clients/js/lobby.js';

const WAIT = 5000;
let lobbyd;
const clients = [];

before(async () => {
  lobbyd = await startLobbyd();
});

after(async () => {
  for (const client of clients) client.close();
  await lobbyd?.stop();
});

/** `promise`, or a rejection naming `what` after WAIT ms. */
function within(promise, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${WAIT} ms`)), WAIT);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Resolves once `check()` holds after an event of `type` (or at once if it holds already). */
function until(client, type, check, what) {
  if (check()) return Promise.resolve();
  return within(new Promise((resolve) => {
    const off = client.on(type, () => {
      if (check()) { off(); resolve(); }
    });
  }), what);
}

async function member(name) {
  const client = await within(LobbyClient.connect(lobbyd.wsUrl, { keepAlive: 0 }), `${name}'s HELLO`);
  clients.push(client);
  await within(client.signIn(name), `${name}'s sign-in`);
  return client;
}

/** The error a promise rejects with (or a failure if it resolves). */
async function refusal(promise) {
  try {
    await within(promise, 'answer');
  } catch (error) {
    return error;
  }
  assert.fail('the request was not refused');
}

test('lobby.js against lobbyd: every request, its answer and its typed errors', { timeout: 60_000 }, async (t) => {
  if (typeof globalThis.WebSocket !== 'function') {
    t.skip('no global WebSocket: run with Node 22+, or Node 20 with --experimental-websocket');
    return;
  }
  const alice = await member('alice');
  const bob = await member('bob');
  assert.equal(alice.serverName, 'lobbyd');
  assert.equal(alice.version, 1);
  assert.notEqual(alice.member, bob.member);
  await until(alice, 'members', () => alice.members.has(bob.member), 'bob in alice\'s members');
  assert.deepEqual([...bob.members.values()].map((m) => m.username).sort(), ['alice', 'bob']);

  // Chat: the lobby (echoed), private, and a private line to nobody (ERROR 13).
  const heard = bob.once('chat_from');
  assert.equal((await within(alice.chat('hello'), 'echo')).text, 'hello');
  assert.deepEqual(await within(heard, 'bob hears'), { type: 'chat_from', game: 0, member: alice.member, text: 'hello' });
  const whisper = alice.once('private_from');
  await within(bob.privateChat(alice.member, 'psst'), 'PONG after PRIVATE_CHAT');
  assert.deepEqual(await within(whisper, 'private line'), { type: 'private_from', from: bob.member, text: 'psst' });
  const nobody = await refusal(bob.privateChat(9999, 'anyone?'));
  assert.ok(nobody instanceof LobbyError);
  assert.equal(nobody.code, 13);
  assert.equal(nobody.label, 'unknown_id');
  assert.equal(nobody.requestType, 'private_chat');
  const empty = await refusal(bob.chat(''));
  assert.equal(empty.label, 'malformed');

  // Display name.
  await within(alice.setMember('Al'), 'SET_MEMBER');
  await until(bob, 'members', () => bob.members.get(alice.member)?.displayName === 'Al', 'the new display name');

  // A game: created, listed, a join refused by the owner, then approved.
  const game = await within(alice.createGame({ name: 'Friday', maxPlayers: 3, gameType: 'chess', version: '1.0' }), 'GAME_INFO');
  assert.deepEqual([game.owner, game.players, game.name], [alice.member, [alice.member], 'Friday']);
  await until(bob, 'games', () => bob.games.has(game.id), 'the game at bob');
  const listed = await within(bob.listGames({ gameType: 'chess' }), 'GAME_LIST_END');
  assert.deepEqual(listed.map((g) => g.id), [game.id]);
  assert.deepEqual(await within(bob.listGames({ gameType: 'go' }), 'empty list'), []);
  const unknown = await refusal(bob.joinGame(9999));
  assert.ok(unknown instanceof JoinRefused);
  assert.equal(unknown.reason, 'unknown game');

  let asked = alice.once('join_ask');
  const refused = refusal(bob.joinGame(game.id)); // handled from now on
  const ask = await within(asked, 'JOIN_ASK');
  assert.deepEqual([ask.game, ask.member], [game.id, bob.member]);
  assert.ok(alice.asks.has(ask.ask));
  await within(alice.answerJoin(ask.ask, false, 'not now'), 'JOIN_ANSWER passes');
  const no = await refused;
  assert.ok(no instanceof JoinRefused);
  assert.equal(no.reason, 'not now');
  const late = await refusal(alice.answerJoin(ask.ask, true));
  assert.equal(late.label, 'unknown_id');

  asked = alice.once('join_ask');
  const joining = bob.joinGame(game.id);
  await within(alice.answerJoin((await within(asked, 'second JOIN_ASK')).ask, true), 'approval');
  assert.equal((await within(joining, 'JOIN_RESPONSE')).accepted, true);
  for (const client of [alice, bob]) {
    await until(client, 'games', () => client.games.get(game.id)?.players.length === 2, 'two players');
    assert.deepEqual(client.games.get(game.id).players, [alice.member, bob.member]);
  }
  const again = await refusal(bob.joinGame(game.id));
  assert.equal(again.reason, 'already in the game');

  // Game chat and relay.
  const gameLine = alice.once('chat_from');
  await within(bob.chat('gg', game.id), 'game chat echo');
  assert.equal((await within(gameLine, 'game chat')).game, game.id);
  let relayed = alice.once('game_message');
  await within(bob.toOwner(game.id, 7, [1, 2, 3]), 'TO_OWNER');
  assert.deepEqual(await within(relayed, 'TO_OWNER relayed'),
    { type: 'game_message', game: game.id, from: bob.member, appCode: 7, body: Uint8Array.of(1, 2, 3) });
  relayed = bob.once('game_message');
  await within(alice.toPlayer(game.id, bob.member, 8, new Uint8Array([9])), 'TO_PLAYER');
  assert.equal((await within(relayed, 'TO_PLAYER relayed')).appCode, 8);
  relayed = Promise.all([alice.once('game_message'), bob.once('game_message')]);
  await within(bob.toAll(game.id, 9, []), 'TO_ALL');
  assert.deepEqual((await within(relayed, 'TO_ALL to both')).map((m) => m.appCode), [9, 9]);
  const notOwner = await refusal(bob.toPlayer(game.id, alice.member, 1, []));
  assert.equal(notOwner.label, 'not_owner');

  // Game data: the owner's.
  await within(alice.storeData(game.id, 'map', [4, 5]), 'STORE_DATA');
  assert.deepEqual(await within(alice.fetchData(game.id, 'map'), 'DATA_VALUE'), Uint8Array.of(4, 5));
  assert.deepEqual(await within(alice.fetchData(game.id, 'none'), 'empty DATA_VALUE'), new Uint8Array(0));
  assert.equal((await refusal(bob.fetchData(game.id, 'map'))).label, 'not_owner');

  // Ready, owner hand-over, kick, start.
  await within(bob.setReady(game.id, false), 'SET_READY');
  await until(alice, 'games', () => !isReady(alice.games.get(game.id), bob.member), 'bob not ready');
  await within(alice.giveOwner(game.id, bob.member), 'GIVE_OWNER');
  await until(alice, 'games', () => alice.games.get(game.id).owner === bob.member, 'bob owner');
  assert.equal((await refusal(alice.startGame(game.id))).label, 'not_owner');
  const kicked = alice.once('kicked');
  await within(bob.kick(game.id, alice.member, 'bye'), 'KICK');
  assert.deepEqual(await within(kicked, 'KICKED'), { type: 'kicked', game: game.id, reason: 'bye' });
  const started = bob.once('game_started');
  await within(bob.startGame(game.id), 'START_GAME');
  assert.equal((await within(started, 'GAME_STARTED')).game, game.id);
  assert.ok((bob.games.get(game.id).flags & GAME_IN_PROGRESS) !== 0);
  assert.equal((await refusal(alice.leaveGame(game.id))).label, 'not_in_game');
  await within(bob.setGame(game.id, 2), 'SET_GAME');
  await within(bob.leaveGame(game.id), 'LEAVE_GAME');
  await until(alice, 'games', () => !alice.games.has(game.id), 'the game closed');
  assert.equal(typeof (await within(alice.ping([1, 2]), 'PONG')), 'number');

  // A name in use is refused; a dropped member resumes with its token.
  const carol = await within(LobbyClient.connect(lobbyd.wsUrl, { keepAlive: 0 }), 'HELLO');
  clients.push(carol);
  const taken = await refusal(carol.signIn('bob'));
  assert.ok(taken instanceof SignInRefused);
  assert.equal(taken.text, 'name taken');
  const token = bob.token;
  const bobId = bob.member;
  bob.close();
  await until(alice, 'members', () => ((alice.members.get(bobId)?.flags ?? 0) & 0x10000) !== 0, 'bob away');
  const back = await within(LobbyClient.connect(lobbyd.wsUrl, { keepAlive: 0 }), 'HELLO');
  clients.push(back);
  const resumed = await within(back.resume('bob', token), 'resume');
  assert.equal(resumed.member, bobId);
  assert.notDeepEqual(resumed.token, token);
  await until(alice, 'members', () => (alice.members.get(bobId).flags & 0x10000) === 0, 'bob back');

  // The server's shutdown notice reaches each client as ConnectionClosed.
  const closing = within(alice.once('close'), 'close');
  await lobbyd.stop();
  const closed = await closing;
  assert.ok(closed instanceof ConnectionClosed);
  assert.equal(closed.notice, 'server shutting down');
});
