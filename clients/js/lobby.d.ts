// Types of lobby.js: lobbyd's general lobby (docs/protocols/general-lobby.md) from JavaScript.

export const PROTOCOL_VERSION: 1;
export const HEADER_LEN: 8;
export const DEFAULT_MAX_FRAME: 16384;
export const MAX_PARAM_LEN: 65535;
export const TOKEN_LEN: 16;
export const MAX_PING_PAYLOAD: 64;
export const GAME_LOCKED: 1;
export const GAME_CLOSED: 2;
export const GAME_IN_PROGRESS: 4;
export const GAME_HOSTED: 8;
export const PLAYER_READY: 1;
export const MEMBER_AWAY: 0x10000;

/** Message codes by protocol name (`CODE.CHAT === 0x20`). */
export const CODE: Readonly<Record<
  | 'HELLO' | 'CHALLENGE' | 'SIGN_IN' | 'WELCOME' | 'ERROR' | 'SYNC_DONE' | 'MEMBER_INFO'
  | 'MEMBER_LEFT' | 'SET_MEMBER' | 'CHAT' | 'CHAT_FROM' | 'PRIVATE_CHAT' | 'PRIVATE_FROM'
  | 'CREATE_GAME' | 'GAME_INFO' | 'GAME_CLOSED' | 'JOIN_REQUEST' | 'JOIN_ASK' | 'JOIN_ANSWER'
  | 'JOIN_RESPONSE' | 'LEAVE_GAME' | 'SET_GAME' | 'SET_READY' | 'START_GAME' | 'GAME_STARTED'
  | 'KICK' | 'KICKED' | 'GIVE_OWNER' | 'STORE_DATA' | 'FETCH_DATA' | 'DATA_VALUE' | 'TO_OWNER'
  | 'TO_ALL' | 'TO_PLAYER' | 'GAME_MESSAGE' | 'LIST_GAMES' | 'GAME_LIST_END' | 'PING' | 'PONG',
  number
>>;

/** ERROR codes' labels, indexed by code. */
export const ERROR_LABELS: readonly ErrorLabel[];
export type ErrorLabel =
  | 'notice' | 'not_signed_in' | 'malformed' | 'unknown_game' | 'not_owner' | 'already_in_game'
  | 'full' | 'closed' | 'wrong_password' | 'name_invalid' | 'rate_limited' | 'frame_too_large'
  | 'not_in_game' | 'unknown_id' | 'unknown_code' | 'limit_reached' | 'other';
export function errorLabel(code: number): ErrorLabel;

/** Bytes in: a Uint8Array (Node's Buffer included), an ArrayBuffer, any view, or byte values. */
export type BytesLike = Uint8Array | ArrayBuffer | ArrayBufferView | number[];
export function toBytes(value: BytesLike): Uint8Array;

// ---- messages: `type` is the protocol name in snake case, fields in camelCase ----

export interface Hello { type: 'hello'; serverName: string; version: number }
export interface Challenge { type: 'challenge'; text: string; failed: boolean }
export interface Welcome { type: 'welcome'; member: number; token: Uint8Array }
export interface ErrorMessage { type: 'error'; code: number; request: number; text: string }
export interface SyncDone { type: 'sync_done' }
export interface MemberInfo { type: 'member_info'; id: number; flags: number; username: string; displayName: string }
export interface MemberLeft { type: 'member_left'; id: number }
export interface ChatFrom { type: 'chat_from'; game: number; member: number; text: string }
export interface PrivateFrom { type: 'private_from'; from: number; text: string }
export interface GameInfo {
  type: 'game_info'; id: number; owner: number; maxPlayers: number; name: string; gameType: string;
  version: string; flags: number; players: number[]; playerFlags: number[];
}
export interface GameClosedMessage { type: 'game_closed'; id: number }
export interface JoinAsk { type: 'join_ask'; game: number; member: number; ask: number }
export interface JoinResponse { type: 'join_response'; game: number; request: number; accepted: boolean; reason: string }
export interface GameStarted { type: 'game_started'; game: number; flags: number }
export interface Kicked { type: 'kicked'; game: number; reason: string }
export interface DataValue { type: 'data_value'; game: number; key: string; value: Uint8Array }
export interface GameMessage { type: 'game_message'; game: number; from: number; appCode: number; body: Uint8Array }
export interface GameListEnd { type: 'game_list_end'; count: number }
export interface Pong { type: 'pong'; payload: Uint8Array }

export type ServerMessage =
  | Hello | Challenge | Welcome | ErrorMessage | SyncDone | MemberInfo | MemberLeft | ChatFrom
  | PrivateFrom | GameInfo | GameClosedMessage | JoinAsk | JoinResponse | GameStarted | Kicked
  | DataValue | GameMessage | GameListEnd | Pong;

export type ClientMessage<B = Uint8Array> =
  | { type: 'sign_in'; username: string; password: string; resume: B | null }
  | { type: 'set_member'; flags: number; displayName: string }
  | { type: 'chat'; game: number; text: string }
  | { type: 'private_chat'; to: number; text: string }
  | { type: 'create_game'; maxPlayers: number; gameType: string; version: string; flags: number; name: string; password: string }
  | { type: 'join_request'; game: number; request: number; password: string }
  | { type: 'join_answer'; ask: number; accept: boolean; reason: string }
  | { type: 'leave_game'; game: number }
  | { type: 'set_game'; game: number; flags: number; password: string }
  | { type: 'set_ready'; game: number; ready: boolean }
  | { type: 'start_game'; game: number }
  | { type: 'kick'; game: number; member: number; reason: string }
  | { type: 'give_owner'; game: number; member: number }
  | { type: 'store_data'; game: number; key: string; value: B }
  | { type: 'fetch_data'; game: number; key: string }
  | { type: 'to_owner'; game: number; appCode: number; body: B }
  | { type: 'to_all'; game: number; appCode: number; body: B }
  | { type: 'to_player'; game: number; member: number; appCode: number; body: B }
  | { type: 'list_games'; gameType: string; flagsClear: number; minFree: number }
  | { type: 'ping'; payload: B };

export type Message = ServerMessage | ClientMessage;
export type MessageType = Message['type'];

export const CLIENT_TYPES: readonly ClientMessage['type'][];
export const SERVER_TYPES: readonly ServerMessage['type'][];
export function codeOf(type: MessageType): number;
export function codeOf(type: string): number | undefined;
export function typeOf(code: number): MessageType | undefined;

// ---- the codec ----

export type WireReason =
  | 'truncated' | 'oversized' | 'trailing_bytes' | 'unknown_code' | 'wrong_direction'
  | 'param_truncated' | 'missing_param' | 'extra_param' | 'wrong_kind' | 'bad_size' | 'not_utf8'
  | 'bad_value';

/** Bytes that are not one well-formed message, or a message the wire cannot carry. */
export class WireError extends Error {
  name: 'WireError';
  reason: WireReason;
  /** The frame's code, when known. */
  code?: number;
  /** The declared payload length of an oversized frame. */
  declared?: number;
  /** The field concerned, when encoding or parsing a parameter. */
  field?: string;
}

/** One message (either direction) as one frame. Throws WireError (bad_value, bad_size). */
export function encode(message: ClientMessage<BytesLike> | ServerMessage): Uint8Array;

export interface DecodeOptions {
  /** Who sent the bytes: a code of the other direction is `wrong_direction`. */
  from?: 'server' | 'client';
  /** Bound on the declared payload (default DEFAULT_MAX_FRAME); over it is `oversized`. */
  maxFrame?: number;
}
/** Exactly one frame -> its message; anything else throws WireError. */
export function decode(bytes: BytesLike, options: DecodeOptions & { from: 'server' }): ServerMessage;
export function decode(bytes: BytesLike, options: DecodeOptions & { from: 'client' }): ClientMessage;
export function decode(bytes: BytesLike, options?: DecodeOptions): Message;

// ---- the client's errors ----

/** The server's ERROR answering a request. */
export class LobbyError extends Error {
  name: 'LobbyError';
  constructor(error: { code: number; request: number; text: string });
  code: number;
  label: ErrorLabel;
  request: number;
  requestType: MessageType | undefined;
  text: string;
}
/** CHALLENGE(1): a refused SIGN_IN. */
export class SignInRefused extends Error {
  name: 'SignInRefused';
  text: string;
}
/** JOIN_RESPONSE(0): a refused JOIN_REQUEST. */
export class JoinRefused extends Error {
  name: 'JoinRefused';
  game: number;
  request: number;
  reason: string;
}
/** The connection closed before the answer came (or before HELLO). */
export class ConnectionClosed extends Error {
  name: 'ConnectionClosed';
  closeCode?: number;
  closeReason?: string;
  /** The server's last notice (ERROR 0): "idle timeout", "server shutting down", ... */
  notice?: string;
}

// ---- the client ----

/** What the client needs of a WebSocket (the browser's, Node 22's, or the `ws` package's). */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (event: { code?: number; reason?: string }) => void): void;
  addEventListener(type: 'error', listener: (event: unknown) => void): void;
}

export interface ClientOptions {
  /** The WebSocket constructor (default: globalThis.WebSocket). */
  WebSocket?: new (url: string) => WebSocketLike;
  /** The server's --lobby-max-frame: a larger request is refused before it is sent. */
  maxFrame?: number;
  /** Milliseconds between keep-alive PINGs (default 10 000, under the 30 s idle timeout; 0: none). */
  keepAlive?: number;
}

export interface ClientEvents {
  hello: Hello; challenge: Challenge; welcome: Welcome; error: ErrorMessage; sync_done: SyncDone;
  member_info: MemberInfo; member_left: MemberLeft; chat_from: ChatFrom; private_from: PrivateFrom;
  game_info: GameInfo; game_closed: GameClosedMessage; join_ask: JoinAsk; join_response: JoinResponse;
  game_started: GameStarted; kicked: Kicked; data_value: DataValue; game_message: GameMessage;
  game_list_end: GameListEnd; pong: Pong;
  /** Every server message. */
  message: ServerMessage;
  members: Map<number, MemberInfo>;
  games: Map<number, GameInfo>;
  asks: Map<number, JoinAsk>;
  close: ConnectionClosed;
  /** A server frame that did not decode (skipped). */
  wire_error: WireError;
  socket_error: Record<string, never>;
}

export class LobbyClient {
  static connect(url: string, options?: ClientOptions): Promise<LobbyClient>;
  constructor(socket: WebSocketLike, options?: ClientOptions);
  /** Resolves at HELLO. */
  readonly ready: Promise<void>;
  serverName: string | undefined;
  version: number | undefined;
  /** This member's id, 0 before WELCOME. */
  member: number;
  /** The latest resume token (single-use; each WELCOME brings a new one). */
  token: Uint8Array | null;
  username: string | undefined;
  signedIn: boolean;
  readonly members: Map<number, MemberInfo>;
  readonly games: Map<number, GameInfo>;
  /** JOIN_ASKs waiting for this member's answer, by ask id. */
  readonly asks: Map<number, JoinAsk>;

  on<K extends keyof ClientEvents>(type: K, listener: (value: ClientEvents[K]) => void): () => void;
  off<K extends keyof ClientEvents>(type: K, listener: (value: ClientEvents[K]) => void): void;
  once<K extends keyof ClientEvents>(type: K): Promise<ClientEvents[K]>;

  signIn(username: string, password?: string, options?: { token?: BytesLike | null }): Promise<{ member: number; token: Uint8Array }>;
  resume(username?: string, token?: BytesLike | null): Promise<{ member: number; token: Uint8Array }>;
  setMember(displayName: string, flags?: number): Promise<void>;
  chat(text: string, game?: number): Promise<ChatFrom>;
  privateChat(to: number, text: string): Promise<void>;
  createGame(game: { name: string; maxPlayers?: number; gameType?: string; version?: string; flags?: number; password?: string }): Promise<GameInfo>;
  listGames(filter?: { gameType?: string; flagsClear?: number; minFree?: number }): Promise<GameInfo[]>;
  joinGame(game: number, password?: string): Promise<JoinResponse>;
  answerJoin(ask: number, accept: boolean, reason?: string): Promise<void>;
  leaveGame(game: number): Promise<void>;
  setGame(game: number, flags: number, password?: string): Promise<void>;
  setReady(game: number, ready?: boolean): Promise<void>;
  startGame(game: number): Promise<void>;
  kick(game: number, member: number, reason?: string): Promise<void>;
  giveOwner(game: number, member: number): Promise<void>;
  storeData(game: number, key: string, value: BytesLike): Promise<void>;
  fetchData(game: number, key: string): Promise<Uint8Array>;
  toOwner(game: number, appCode: number, body: BytesLike): Promise<void>;
  toAll(game: number, appCode: number, body: BytesLike): Promise<void>;
  toPlayer(game: number, member: number, appCode: number, body: BytesLike): Promise<void>;
  /** Resolves with the round trip in milliseconds. */
  ping(payload?: BytesLike): Promise<number>;
  /** Any client message as it is, with no promise. */
  send(message: ClientMessage<BytesLike>): void;
  close(): void;
}

export function isAway(member: MemberInfo): boolean;
export function isReady(game: GameInfo, member: number): boolean;
