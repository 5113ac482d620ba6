// The lobby page (examples/web/index.html) on lobby.js: sign in, the member list, lobby chat,
// the game list, creating a game, asking to join one, the owner's approve/refuse prompt, ready
// and start. At sign-in it connects to ws://<this page's host>/lobby (lobbyd --lobby-web serves this folder
// on its --lobby-ws-port); `?ws=URL` points it elsewhere. Text from the server goes into the page
// through textContent only.

import {
  LobbyClient, LobbyError, SignInRefused, JoinRefused, ConnectionClosed, GAME_IN_PROGRESS,
  GAME_HOSTED, isAway, isReady,
} from './lobby.js';

const $ = (selector) => document.querySelector(selector);
const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

const url = new URLSearchParams(location.search).get('ws')
  ?? `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/lobby`;
let lobby;
/** Games this member asked to join and waits for (game id -> true). */
const asking = new Set();

function status(text, isError = false) {
  $('#status').textContent = text;
  $('#status').classList.toggle('error', isError);
}

/** A failed request, said in words: the server's label and text, or what else went wrong. */
function explain(error) {
  if (error instanceof LobbyError) return `${error.requestType ?? 'request'} refused (${error.label}): ${error.text}`;
  if (error instanceof SignInRefused || error instanceof JoinRefused || error instanceof ConnectionClosed) {
    return error.message;
  }
  return `error: ${error.message}`;
}

/** Runs a request, reporting its failure in the status line. */
async function attempt(request) {
  try {
    return await request;
  } catch (error) {
    status(explain(error), true);
    return undefined;
  }
}

function nameOf(id) {
  if (id === 0) return 'server';
  return lobby.members.get(id)?.displayName ?? `#${id}`;
}

// ---- rendering, from lobby.members / lobby.games / lobby.asks ----

function renderMembers() {
  const list = [...lobby.members.values()];
  $('#member-count').textContent = `(${list.length})`;
  $('#members').replaceChildren(...list.map((m) => {
    const li = el('li', {
      textContent: m.displayName + (m.displayName !== m.username ? ` (${m.username})` : '') + (isAway(m) ? ' (away)' : ''),
      title: `member ${m.id}`,
    });
    li.classList.toggle('me', m.id === lobby.member);
    li.classList.toggle('away', isAway(m));
    li.dataset.id = m.id;
    return li;
  }));
  renderGames(); // player names come from the members
}

function gameCard(game) {
  const mine = game.players.includes(lobby.member);
  const owner = game.owner === lobby.member;
  const started = (game.flags & GAME_IN_PROGRESS) !== 0;
  const full = game.players.length >= game.maxPlayers;
  const players = el('ul', { className: 'players' }, ...game.players.map((id) => {
    const li = el('li', {}, el('span', { className: 'who', textContent: nameOf(id) }));
    li.classList.toggle('ready', isReady(game, id));
    li.classList.toggle('owner', id === game.owner);
    li.dataset.id = id;
    return li;
  }));
  const actions = el('div', { className: 'actions' });
  const button = (label, className, onClick) => {
    const b = el('button', { type: 'button', textContent: label, className });
    b.addEventListener('click', onClick);
    actions.append(b);
    return b;
  };
  if (!mine) {
    const join = button(asking.has(game.id) ? 'Asked…' : 'Ask to join', 'join', () => askToJoin(game));
    join.disabled = asking.has(game.id) || full;
  } else {
    const ready = isReady(game, lobby.member);
    button(ready ? "I'm not ready" : "I'm ready", 'ready secondary', () => attempt(lobby.setReady(game.id, !ready)));
    if (owner) {
      const start = button('Start', 'start', () => attempt(lobby.startGame(game.id)));
      start.disabled = started;
    }
    button('Leave', 'leave danger', () => attempt(lobby.leaveGame(game.id)));
  }
  const state = started ? 'started' : full ? 'full' : 'open';
  const li = el('li', {},
    el('div', { className: 'game-head' },
      el('span', { className: 'game-name', textContent: game.name }),
      el('span', {
        className: 'muted game-state',
        textContent: `${game.players.length}/${game.maxPlayers} · ${state}${game.flags & GAME_HOSTED ? ' · hosted' : ''}`,
      })),
    el('div', { className: 'muted', textContent: `${game.gameType || 'any game'} · owner ${nameOf(game.owner)}` }),
    players,
    actions);
  li.dataset.game = game.id;
  li.classList.toggle('mine', mine);
  return li;
}

function renderGames() {
  $('#games').replaceChildren(...[...lobby.games.values()].map(gameCard));
}

function renderAsks() {
  $('#asks').replaceChildren(...[...lobby.asks.values()].map((ask) => {
    const game = lobby.games.get(ask.game);
    const answer = (accept) => async () => {
      await attempt(lobby.answerJoin(ask.ask, accept, accept ? '' : 'refused by the owner'));
      renderAsks();
    };
    const approve = el('button', { type: 'button', className: 'approve', textContent: 'Approve' });
    approve.addEventListener('click', answer(true));
    const refuse = el('button', { type: 'button', className: 'refuse danger', textContent: 'Refuse' });
    refuse.addEventListener('click', answer(false));
    const li = el('li', {},
      el('span', { textContent: `${nameOf(ask.member)} asks to join ${game?.name ?? `game ${ask.game}`}` }),
      approve, refuse);
    li.dataset.ask = ask.ask;
    return li;
  }));
}

function say(text, { who, className = '' } = {}) {
  const log = $('#chat-log');
  const li = el('li', { className });
  if (who !== undefined) li.append(el('span', { className: 'who', textContent: `${who}:` }));
  li.append(el('span', { className: 'text', textContent: text }));
  log.append(li);
  while (log.children.length > 500) log.firstChild.remove();
  log.scrollTop = log.scrollHeight;
}

// ---- actions ----

async function askToJoin(game) {
  asking.add(game.id);
  renderGames();
  status(`asked to join ${game.name}; waiting for its owner…`);
  try {
    await lobby.joinGame(game.id);
    status(`you joined ${game.name}`);
  } catch (error) {
    status(explain(error), true);
  } finally {
    asking.delete(game.id);
    renderGames();
  }
}

async function signIn(event) {
  event.preventDefault();
  const form = $('#signin-form');
  form.querySelector('button').disabled = true;
  try {
    // Connected at sign-in, not on load: the server closes a connection that has not signed
    // in within its handshake timeout (5 s by default).
    if (!lobby) await connect();
    await lobby.signIn($('#name').value.trim(), $('#password').value);
    form.hidden = true;
    $('#lobby').hidden = false;
    $('#whoami').textContent = `signed in as ${lobby.username} (member ${lobby.member})`;
    status('');
    renderMembers();
    renderAsks();
    $('#chat-text').focus();
  } catch (error) {
    status(error instanceof ConnectionClosed && !lobby
      ? `cannot reach ${url} (is lobbyd running with --lobby-web?)` : explain(error), true);
  } finally {
    form.querySelector('button').disabled = false;
  }
}

async function connect() {
  $('#connection').textContent = `connecting to ${url}…`;
  lobby = await LobbyClient.connect(url);
  $('#connection').textContent = `connected to ${lobby.serverName}`;
  lobby.on('members', renderMembers);
  lobby.on('games', renderGames);
  lobby.on('asks', renderAsks);
  lobby.on('chat_from', (m) => {
    if (m.game === 0) say(m.text, { who: nameOf(m.member), className: m.member === 0 ? 'system' : '' });
    else say(m.text, { who: `${nameOf(m.member)} in ${lobby.games.get(m.game)?.name ?? m.game}` });
  });
  lobby.on('private_from', (m) => say(m.text, { who: `${nameOf(m.from)} (private)`, className: 'private' }));
  lobby.on('game_started', (m) => say(`${lobby.games.get(m.game)?.name ?? `game ${m.game}`} started`, { className: 'system' }));
  lobby.on('kicked', (m) => say(`you were removed from game ${m.game}: ${m.reason}`, { className: 'system' }));
  lobby.on('close', (error) => {
    const wasSignedIn = !$('#lobby').hidden;
    $('#connection').textContent = 'not connected';
    $('#whoami').textContent = '';
    lobby = undefined;
    $('#lobby').hidden = true;
    $('#signin-form').hidden = false;
    if (wasSignedIn) status(`${error.message}; sign in to come back`, true);
  });
}

$('#signin-form').addEventListener('submit', signIn);

$('#chat-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const input = $('#chat-text');
  const text = input.value.trim();
  if (!text) return;
  input.value = '';
  if ((await attempt(lobby.chat(text))) === undefined) input.value = text;
});

$('#create-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const game = await attempt(lobby.createGame({
    name: $('#game-name').value.trim(),
    maxPlayers: Number($('#game-max').value) || 2,
    gameType: 'web',
    version: '1',
  }));
  if (game) {
    $('#game-name').value = '';
    status(`created ${game.name}`);
  }
});

